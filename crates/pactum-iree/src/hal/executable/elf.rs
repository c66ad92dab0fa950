//! The embedded ELF inside an `llvm-cpu` executable, read and checked in safe code: its
//! loadable segments, their protections, its relocations and the address of
//! `iree_hal_executable_library_query`, laid out as a memory image that `mapping` only has to
//! copy and protect.
//!
//! What IREE's compiler emits (and all this loader accepts): a little-endian ELF64 `ET_DYN`
//! for the host's machine, position independent, `PT_LOAD` segments, a `PT_DYNAMIC` with
//! `DT_HASH`, `DT_SYMTAB`, `DT_STRTAB` and `DT_RELA`, relative relocations only, no needed
//! libraries, no symbol imports, no initialisers, no thread-local storage. Anything else is
//! refused with the byte offset (in the ELF) of what was wrong.

use std::fmt;
use std::ops::Range;

use object::Endianness;
use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};

/// The symbol the loader calls.
pub const QUERY_SYMBOL: &str = pactum_sys::iree_hal::IREE_HAL_EXECUTABLE_LIBRARY_EXPORT_NAME;

/// The largest image (sum of the segments' address span) accepted.
pub const MAX_IMAGE_BYTES: u64 = 1 << 30;

/// What the host's architecture calls its machine and relocations.
#[derive(Debug, Clone, Copy)]
pub struct Arch {
    /// IREE's name for it, as in `embedded-elf-<name>`.
    pub name: &'static str,
    /// `e_machine`.
    pub machine: u16,
    /// The relative relocation type (`B + A`).
    pub relative: u32,
    /// The name of the relative relocation, for errors.
    pub relative_name: &'static str,
}

/// The architecture pactum runs on.
#[cfg(target_arch = "x86_64")]
pub const HOST_ARCH: Option<Arch> = Some(Arch {
    name: "x86_64",
    machine: elf::EM_X86_64,
    relative: elf::R_X86_64_RELATIVE,
    relative_name: "R_X86_64_RELATIVE",
});

/// The architecture pactum runs on.
#[cfg(target_arch = "aarch64")]
pub const HOST_ARCH: Option<Arch> = Some(Arch {
    name: "arm_64",
    machine: elf::EM_AARCH64,
    relative: elf::R_AARCH64_RELATIVE,
    relative_name: "R_AARCH64_RELATIVE",
});

/// The architecture pactum runs on: none that embedded ELFs are loaded on.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const HOST_ARCH: Option<Arch> = None;

/// Why an embedded ELF was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfError {
    /// The byte offset in the ELF file of what was wrong, when there is one.
    pub offset: Option<u64>,
    /// What was wrong.
    pub message: String,
    /// Whether the file is well formed but uses something pactum does not support.
    pub unsupported: bool,
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "embedded ELF: {}", self.message)?;
        if let Some(offset) = self.offset {
            write!(f, " (at byte {offset})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ElfError {}

fn bad(offset: impl Into<Option<u64>>, message: impl Into<String>) -> ElfError {
    ElfError {
        offset: offset.into(),
        message: message.into(),
        unsupported: false,
    }
}

fn unsupported(offset: impl Into<Option<u64>>, message: impl Into<String>) -> ElfError {
    ElfError {
        unsupported: true,
        ..bad(offset, message)
    }
}

/// Memory protection of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Protection {
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Executable.
    pub execute: bool,
}

impl fmt::Display for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = |on: bool, c: char| if on { c } else { '-' };
        write!(
            f,
            "{}{}{}",
            flag(self.read, 'r'),
            flag(self.write, 'w'),
            flag(self.execute, 'x')
        )
    }
}

/// A loadable segment.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Its addresses, relative to the image base.
    pub memory: Range<u64>,
    /// Its protection.
    pub protection: Protection,
}

/// A checked ELF, laid out as an image at base 0 and not yet relocated.
#[derive(Debug, Clone)]
pub struct ElfImage {
    /// The ELF file.
    file: Vec<u8>,
    /// Each loadable segment's address, file offset and file size (all checked).
    loads: Vec<(u64, u64, u64)>,
    /// The image's size: the end of the highest segment.
    pub span: u64,
    /// The loadable segments.
    pub segments: Vec<Segment>,
    /// The range made read-only once relocated (`PT_GNU_RELRO`).
    pub relro: Option<Range<u64>>,
    /// Where each relative relocation writes, and its addend.
    pub relocations: Vec<(u64, u64)>,
    /// The address of `iree_hal_executable_library_query`.
    pub query: u64,
}

fn field(e: Result<u64, ()>, offset: u64, what: &str) -> Result<u64, ElfError> {
    e.map_err(|()| bad(offset, format!("{what} overflows")))
}

impl ElfImage {
    /// Reads and checks `data` for `arch`.
    pub fn parse(data: &[u8], arch: Arch) -> Result<ElfImage, ElfError> {
        let header = elf::FileHeader64::<Endianness>::parse(data)
            .map_err(|e| bad(0, format!("not an ELF64 file: {e}")))?;
        let endian = header
            .endian()
            .map_err(|e| bad(5, format!("bad byte order: {e}")))?;
        if endian != Endianness::Little {
            return Err(unsupported(5, "big-endian ELF"));
        }
        if header.e_type(endian) != elf::ET_DYN {
            return Err(bad(
                16,
                format!(
                    "ELF type {} is not ET_DYN (a position-independent library)",
                    header.e_type(endian)
                ),
            ));
        }
        if header.e_machine(endian) != arch.machine {
            return Err(unsupported(
                18,
                format!(
                    "ELF machine {} is not this host's ({}, {})",
                    header.e_machine(endian),
                    arch.machine,
                    arch.name
                ),
            ));
        }
        let phoff = header.e_phoff(endian);
        let programs = header
            .program_headers(endian, data)
            .map_err(|e| bad(phoff, format!("bad program headers: {e}")))?;

        let mut segments = Vec::new();
        let mut loads = Vec::new();
        let mut dynamic = None;
        let mut relro = None;
        for (index, program) in programs.iter().enumerate() {
            let at = phoff + 56 * index as u64;
            let vaddr = program.p_vaddr(endian);
            let memsz = program.p_memsz(endian);
            let end = vaddr
                .checked_add(memsz)
                .filter(|&e| e <= MAX_IMAGE_BYTES)
                .ok_or_else(|| {
                    bad(
                        at,
                        format!(
                            "program header {index} spans {vaddr:#x}+{memsz:#x}, beyond the \
                             {MAX_IMAGE_BYTES}-byte limit"
                        ),
                    )
                })?;
            match program.p_type(endian) {
                elf::PT_LOAD => {
                    let flags = program.p_flags(endian);
                    let protection = Protection {
                        read: flags & elf::PF_R != 0,
                        write: flags & elf::PF_W != 0,
                        execute: flags & elf::PF_X != 0,
                    };
                    if protection.write && protection.execute {
                        return Err(unsupported(
                            at,
                            format!("segment {index} is writable and executable at once (refused)"),
                        ));
                    }
                    let file = file_range(program.file_range(endian), data.len(), at, index)?;
                    if file.1 > memsz {
                        return Err(bad(
                            at,
                            format!(
                                "segment {index} has {} file bytes for {memsz} bytes of memory",
                                file.1
                            ),
                        ));
                    }
                    if let Some(other) = segments
                        .iter()
                        .position(|s: &Segment| s.memory.start < end && vaddr < s.memory.end)
                    {
                        return Err(bad(
                            at,
                            format!("segment {index} overlaps loadable segment {other}"),
                        ));
                    }
                    segments.push(Segment {
                        memory: vaddr..end,
                        protection,
                    });
                    loads.push((vaddr, file));
                }
                elf::PT_DYNAMIC => dynamic = Some((index, at, program)),
                elf::PT_GNU_RELRO => relro = Some(vaddr..end),
                elf::PT_TLS => {
                    return Err(unsupported(
                        at,
                        "thread-local storage (PT_TLS) is not supported",
                    ));
                }
                elf::PT_INTERP => {
                    return Err(unsupported(at, "an interpreter (PT_INTERP) was requested"));
                }
                _ => {}
            }
        }
        if segments.is_empty() {
            return Err(bad(phoff, "no loadable segment"));
        }
        let span = segments.iter().map(|s| s.memory.end).max().unwrap_or(0);
        // The image is not materialised here (a 100-byte file may claim a gigabyte of
        // memory): its tables are read from the file through the segments.
        let loads: Vec<(u64, u64, u64)> = loads
            .iter()
            .map(|&(vaddr, (offset, size))| (vaddr, offset, size))
            .collect();

        let (index, at, program) =
            dynamic.ok_or_else(|| bad(phoff, "no dynamic section (PT_DYNAMIC)"))?;
        let entries = program
            .dynamic(endian, data)
            .map_err(|e| {
                bad(
                    at,
                    format!("bad dynamic section (program header {index}): {e}"),
                )
            })?
            .unwrap_or(&[]);
        let dyn_offset = program.p_offset(endian);
        let mut tags = DynamicTags::default();
        for (k, entry) in entries.iter().enumerate() {
            let at = dyn_offset + 16 * k as u64;
            let tag = entry.d_tag(endian) as u32;
            let value = entry.d_val(endian);
            match tag {
                elf::DT_NULL => break,
                elf::DT_NEEDED => {
                    return Err(unsupported(
                        at,
                        "the ELF needs a shared library (DT_NEEDED): embedded executables \
                         may not import anything",
                    ));
                }
                elf::DT_RELA => tags.rela = Some(value),
                elf::DT_RELASZ => tags.rela_size = value,
                elf::DT_RELAENT => tags.rela_entry = Some((value, at)),
                elf::DT_REL | elf::DT_RELSZ if value != 0 => {
                    return Err(unsupported(
                        at,
                        "REL relocations (DT_REL) are not supported",
                    ));
                }
                elf::DT_JMPREL | elf::DT_PLTRELSZ if value != 0 => {
                    return Err(unsupported(
                        at,
                        "PLT relocations (DT_JMPREL): the ELF imports functions",
                    ));
                }
                elf::DT_TEXTREL => {
                    return Err(unsupported(at, "text relocations (DT_TEXTREL) are refused"));
                }
                elf::DT_INIT | elf::DT_INIT_ARRAY | elf::DT_PREINIT_ARRAY if value != 0 => {
                    return Err(unsupported(
                        at,
                        "initialisers (DT_INIT, DT_INIT_ARRAY) are not supported",
                    ));
                }
                elf::DT_SYMTAB => tags.symtab = Some(value),
                elf::DT_STRTAB => tags.strtab = Some(value),
                elf::DT_STRSZ => tags.strsz = value,
                elf::DT_HASH => tags.hash = Some(value),
                _ => {}
            }
        }

        let image = Reader {
            data,
            loads: &loads,
            dynamic_at: dyn_offset,
        };
        let mut relocations = Vec::new();
        if let Some(rela) = tags.rela {
            if let Some((entry, at)) = tags.rela_entry {
                if entry != 24 {
                    return Err(bad(at, format!("DT_RELAENT is {entry}, not 24")));
                }
            }
            if tags.rela_size % 24 != 0 {
                return Err(bad(
                    dyn_offset,
                    format!("DT_RELASZ {} is not a multiple of 24", tags.rela_size),
                ));
            }
            for k in 0..tags.rela_size / 24 {
                let entry = field(
                    rela.checked_add(24 * k).ok_or(()),
                    dyn_offset,
                    "relocation address",
                )?;
                let offset = image.u64(entry, "relocation")?;
                let info = image.u64(entry.saturating_add(8), "relocation")?;
                let addend = image.u64(entry.saturating_add(16), "relocation")?;
                let kind = (info & 0xffff_ffff) as u32;
                let symbol = info >> 32;
                if kind == 0 {
                    continue; // R_*_NONE
                }
                if kind != arch.relative || symbol != 0 {
                    return Err(unsupported(
                        None,
                        format!(
                            "relocation {k} (at address {entry:#x}) has type {kind} and symbol \
                             {symbol}: only {} relocations are supported",
                            arch.relative_name
                        ),
                    ));
                }
                let inside = offset.checked_add(8).is_some_and(|end| {
                    segments
                        .iter()
                        .any(|s| s.memory.start <= offset && end <= s.memory.end)
                });
                if !inside {
                    return Err(bad(
                        None,
                        format!(
                            "relocation {k} writes at {offset:#x}, outside the loadable segments"
                        ),
                    ));
                }
                if addend >= span {
                    return Err(bad(
                        None,
                        format!("relocation {k} points at {addend:#x}, outside the image"),
                    ));
                }
                relocations.push((offset, addend));
            }
        }

        let query = find_symbol(&image, &tags, QUERY_SYMBOL)?;
        if !segments
            .iter()
            .any(|s| s.protection.execute && s.memory.contains(&query))
        {
            return Err(bad(
                None,
                format!("`{QUERY_SYMBOL}` at {query:#x} is not in an executable segment"),
            ));
        }
        Ok(ElfImage {
            file: data.to_vec(),
            loads,
            span,
            segments,
            relro,
            relocations,
            query,
        })
    }

    /// The image relocated to load at address `base`: every segment's file bytes at its
    /// address, zeros elsewhere, relocations applied. `None` when the memory is not there.
    pub fn relocated(&self, base: u64) -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(self.span as usize).ok()?;
        bytes.resize(self.span as usize, 0);
        for &(vaddr, offset, size) in &self.loads {
            let (vaddr, offset, size) = (vaddr as usize, offset as usize, size as usize);
            bytes[vaddr..vaddr + size].copy_from_slice(&self.file[offset..offset + size]);
        }
        for &(offset, addend) in &self.relocations {
            let at = offset as usize;
            bytes[at..at + 8].copy_from_slice(&base.wrapping_add(addend).to_le_bytes());
        }
        Some(bytes)
    }

    /// Whether `address` (relative to the base) is inside an executable segment.
    pub fn is_code(&self, address: u64) -> bool {
        self.segments
            .iter()
            .any(|s| s.protection.execute && s.memory.contains(&address))
    }
}

/// The dynamic entries the loader uses.
#[derive(Debug, Default)]
struct DynamicTags {
    rela: Option<u64>,
    rela_size: u64,
    rela_entry: Option<(u64, u64)>,
    symtab: Option<u64>,
    strtab: Option<u64>,
    strsz: u64,
    hash: Option<u64>,
}

/// Bounds-checked reads of the image by address, from the file bytes of the segment that
/// holds them.
struct Reader<'a> {
    data: &'a [u8],
    loads: &'a [(u64, u64, u64)],
    dynamic_at: u64,
}

impl Reader<'_> {
    fn slice(&self, address: u64, len: u64, what: &str) -> Result<&[u8], ElfError> {
        let end = address.checked_add(len);
        end.and_then(|end| {
            let &(vaddr, offset, _) = self
                .loads
                .iter()
                .find(|&&(vaddr, _, size)| vaddr <= address && end <= vaddr + size)?;
            let start = offset + (address - vaddr);
            self.data.get(start as usize..(start + len) as usize)
        })
        .ok_or_else(|| {
            bad(
                self.dynamic_at,
                format!("{what} at {address:#x}+{len} is not in the file bytes of a segment"),
            )
        })
    }

    fn u64(&self, address: u64, what: &str) -> Result<u64, ElfError> {
        let b = self.slice(address, 8, what)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn u32(&self, address: u64, what: &str) -> Result<u32, ElfError> {
        let b = self.slice(address, 4, what)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }
}

/// The value of dynamic symbol `name`, defined in the ELF.
fn find_symbol(image: &Reader<'_>, tags: &DynamicTags, name: &str) -> Result<u64, ElfError> {
    let at = image.dynamic_at;
    let (Some(symtab), Some(strtab), Some(hash)) = (tags.symtab, tags.strtab, tags.hash) else {
        return Err(bad(
            at,
            "the dynamic section lacks DT_SYMTAB, DT_STRTAB or DT_HASH",
        ));
    };
    let strings = image.slice(strtab, tags.strsz, "string table")?;
    // DT_HASH: nbucket, nchain, ...; nchain is the number of symbols. Addresses come from
    // the file: they saturate, so a hostile one is out of the image rather than wrapping.
    let count = image.u32(hash.saturating_add(4), "hash table")?;
    for k in 0..u64::from(count) {
        let entry = symtab.saturating_add(24 * k);
        let name_offset = image.u32(entry, "symbol")? as usize;
        let section = image.slice(entry.saturating_add(6), 2, "symbol")?;
        let value = image.u64(entry.saturating_add(8), "symbol")?;
        let symbol_name = strings
            .get(name_offset..)
            .and_then(|s| s.split(|&b| b == 0).next())
            .ok_or_else(|| {
                bad(
                    at,
                    format!("symbol {k} has a name outside the string table"),
                )
            })?;
        if symbol_name == name.as_bytes() {
            if section == [0, 0] {
                return Err(unsupported(
                    at,
                    format!("`{name}` is imported, not defined"),
                ));
            }
            return Ok(value);
        }
    }
    Err(bad(at, format!("the ELF does not export `{name}`")))
}

/// A segment's file range `(offset, size)`, checked against the file's length.
fn file_range(
    range: (u64, u64),
    len: usize,
    at: u64,
    index: usize,
) -> Result<(u64, u64), ElfError> {
    let (offset, size) = range;
    match offset.checked_add(size) {
        Some(end) if end <= len as u64 => Ok(range),
        _ => Err(bad(
            at,
            format!(
                "segment {index} reads file bytes {offset}+{size}, past the end of the \
                 {len}-byte ELF"
            ),
        )),
    }
}
