//! An [`ElfImage`] placed in memory: one anonymous mapping, the relocated image copied in,
//! then every page given its segment's protection (read-only after relocation for
//! `PT_GNU_RELRO`, nothing for gaps). No page is ever writable and executable at once: the
//! image is written while the mapping is read-write, and code pages become read-execute
//! only afterwards.

use std::ptr::NonNull;

use super::elf::{ElfError, ElfImage, Protection};

/// A loaded image; unmapped when dropped.
#[derive(Debug)]
pub struct CodeMapping {
    base: NonNull<u8>,
    len: usize,
    /// The relocated image, as copied in: the library's read-only tables are read from here
    /// by safe code instead of through raw pointers.
    image: Vec<u8>,
}

// SAFETY: after `load` the mapping is never written by Rust code; it holds code and
// read-only data (plus the library's own writable data, which only its code touches).
unsafe impl Send for CodeMapping {}
// SAFETY: as above.
unsafe impl Sync for CodeMapping {}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s.is_power_of_two())
        .unwrap_or(4096)
}

fn os_error(what: &str) -> ElfError {
    ElfError {
        offset: None,
        message: format!("{what} failed: {}", std::io::Error::last_os_error()),
        unsupported: false,
    }
}

/// The protection of every page: the union of the segments touching it, read-only for the
/// pages wholly inside RELRO. Refuses a page that would be writable and executable.
fn page_protections(
    image: &ElfImage,
    pages: usize,
    page: usize,
) -> Result<Vec<Protection>, ElfError> {
    let mut protections = vec![Protection::default(); pages];
    for (index, segment) in image.segments.iter().enumerate() {
        let first = segment.memory.start as usize / page;
        let end = (segment.memory.end as usize).div_ceil(page);
        for (k, p) in protections[first..end].iter_mut().enumerate() {
            p.read |= segment.protection.read;
            p.write |= segment.protection.write;
            p.execute |= segment.protection.execute;
            if p.write && p.execute {
                return Err(ElfError {
                    offset: None,
                    message: format!(
                        "segment {index} shares page {} with a segment of other permissions: \
                         it would be writable and executable",
                        first + k
                    ),
                    unsupported: true,
                });
            }
        }
    }
    if let Some(relro) = &image.relro {
        let first = (relro.start as usize).div_ceil(page);
        let end = (relro.end as usize / page).min(pages);
        for p in protections.iter_mut().take(end).skip(first) {
            p.write = false;
        }
    }
    Ok(protections)
}

fn prot_bits(p: Protection) -> libc::c_int {
    let mut bits = libc::PROT_NONE;
    if p.read {
        bits |= libc::PROT_READ;
    }
    if p.write {
        bits |= libc::PROT_WRITE;
    }
    if p.execute {
        bits |= libc::PROT_EXEC;
    }
    bits
}

impl CodeMapping {
    /// Maps, relocates and protects `image`.
    pub fn load(image: &ElfImage) -> Result<CodeMapping, ElfError> {
        let page = page_size();
        let len = (image.span as usize).div_ceil(page).max(1) * page;
        let protections = page_protections(image, len / page, page)?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is affected.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        let base = NonNull::new(raw.cast::<u8>()).ok_or_else(|| os_error("mmap"))?;
        // From here on `mapping` unmaps on every error path.
        let mut mapping = CodeMapping {
            base,
            len,
            image: Vec::new(),
        };
        let relocated = image
            .relocated(base.as_ptr() as u64)
            .ok_or_else(|| os_error("allocating the image"))?;
        // SAFETY: the mapping is `len >= relocated.len()` bytes, read-write, and ours alone.
        unsafe {
            std::ptr::copy_nonoverlapping(relocated.as_ptr(), base.as_ptr(), relocated.len());
        }
        let mut start = 0;
        while start < protections.len() {
            let mut end = start + 1;
            while end < protections.len() && protections[end] == protections[start] {
                end += 1;
            }
            // SAFETY: pages start..end lie inside our mapping.
            let status = unsafe {
                libc::mprotect(
                    base.as_ptr().add(start * page).cast(),
                    (end - start) * page,
                    prot_bits(protections[start]),
                )
            };
            if status != 0 {
                return Err(os_error("mprotect"));
            }
            start = end;
        }
        mapping.image = relocated;
        Ok(mapping)
    }

    /// The load address.
    pub fn base(&self) -> u64 {
        self.base.as_ptr() as u64
    }

    /// The relocated image (what the mapping holds, as loaded).
    pub fn image(&self) -> &[u8] {
        &self.image
    }

    /// The offset in the image of absolute address `address`, if it is inside.
    pub fn offset_of(&self, address: u64) -> Option<u64> {
        address
            .checked_sub(self.base())
            .filter(|&o| o < self.image.len() as u64)
    }
}

impl Drop for CodeMapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` is exactly the mapping made in `load`, unmapped once; nothing
        // borrowed from it outlives `self` (executables keep their mapping alive while any
        // function pointer into it may be called).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
