//! Hostile native executables: the ELF checks of the `llvm-cpu` loader
//! ([`check_elf_executable`], the same checks [`LocalExecutable::load`] makes before it maps
//! anything) on the embedded ELF of `multi_export_llvm_cpu.vmfb`, mutated. Every single-byte
//! change outside the code, and every truncation, is accepted or refused cleanly (no panic,
//! within a time bound); targeted changes are refused with the exact error and byte offset.
//! Mutated ELFs are never mapped or run: only the unmodified one and the targeted refusals go
//! through `LocalExecutable::load`.
#![cfg(target_arch = "x86_64")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pactum_iree::hal::{
    ElfError, HalExecutable, LocalExecutable, check_elf_executable, embedded_elf_format,
};
use pactum_iree::vm::{Limits, StatusCode};

const LIMIT: Duration = Duration::from_secs(60);

fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(data[at..at + 2].try_into().unwrap())
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
}

fn put_u64(data: &mut [u8], at: usize, value: u64) {
    data[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The embedded ELF of `multi_export_llvm_cpu.vmfb`: from its magic to the end of its section
/// header table.
fn embedded_elf() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vmfb/multi_export_llvm_cpu.vmfb");
    let vmfb = std::fs::read(path).unwrap();
    let start = vmfb
        .windows(4)
        .position(|w| w == b"\x7fELF")
        .expect("an embedded ELF");
    let elf = &vmfb[start..];
    let shoff = u64_at(elf, 0x28) as usize;
    let (shentsize, shnum) = (u16_at(elf, 0x3a) as usize, u16_at(elf, 0x3c) as usize);
    elf[..shoff + shentsize * shnum].to_vec()
}

/// The parts of the ELF the tests change.
struct Layout {
    phoff: usize,
    /// Program headers: (type, flags, file offset, file size).
    programs: Vec<(u32, u32, usize, usize)>,
    /// The dynamic section's file offset and its entries (tag, value).
    dynamic: (usize, Vec<(u64, u64)>),
    /// The relocation table's file offset and size.
    rela: (usize, usize),
}

fn layout(elf: &[u8]) -> Layout {
    let phoff = u64_at(elf, 0x20) as usize;
    let phnum = u16_at(elf, 0x38) as usize;
    let programs: Vec<(u32, u32, usize, usize)> = (0..phnum)
        .map(|k| {
            let at = phoff + 56 * k;
            (
                u32_at(elf, at),
                u32_at(elf, at + 4),
                u64_at(elf, at + 8) as usize,
                u64_at(elf, at + 32) as usize,
            )
        })
        .collect();
    let &(_, _, dyn_offset, dyn_size) = programs.iter().find(|p| p.0 == 2).unwrap();
    let entries: Vec<(u64, u64)> = (0..dyn_size / 16)
        .map(|k| {
            let at = dyn_offset + 16 * k;
            (u64_at(elf, at), u64_at(elf, at + 8))
        })
        .collect();
    let tag = |t: u64| entries.iter().find(|e| e.0 == t).map(|e| e.1).unwrap();
    // DT_RELA is an address: the file offset of the loadable segment holding it.
    let (rela, rela_size) = (tag(7), tag(8) as usize);
    let rela_offset = (0..phnum)
        .map(|k| phoff + 56 * k)
        .filter(|&at| u32_at(elf, at) == 1)
        .find_map(|at| {
            let (offset, vaddr, filesz) = (
                u64_at(elf, at + 8),
                u64_at(elf, at + 16),
                u64_at(elf, at + 32),
            );
            (vaddr <= rela && rela < vaddr + filesz).then(|| (rela - vaddr + offset) as usize)
        })
        .unwrap();
    Layout {
        phoff,
        programs,
        dynamic: (dyn_offset, entries),
        rela: (rela_offset, rela_size),
    }
}

fn refused(elf: &[u8]) -> ElfError {
    check_elf_executable(elf).expect_err("the checker must refuse it")
}

/// `LocalExecutable::load` refuses it too, with the checker's error and `status`.
fn create_refuses(elf: &[u8], error: &ElfError, status: StatusCode) {
    let format = embedded_elf_format().unwrap();
    let refusal = LocalExecutable::load(&format, elf.to_vec(), &[], Limits::default())
        .expect_err("create must refuse it");
    assert_eq!(refusal.status, status, "{}", refusal.message);
    assert!(
        refusal.message.contains(&error.to_string()),
        "{} does not contain {error}",
        refusal.message
    );
}

#[test]
fn the_unmodified_elf_is_accepted_and_loads() {
    let elf = embedded_elf();
    let summary = check_elf_executable(&elf).unwrap();
    assert!(summary.segments.len() >= 2, "{summary:?}");
    assert!(
        summary
            .segments
            .iter()
            .any(|(range, protection)| protection == "r-x" && range.contains(&summary.query)),
        "{summary:?}"
    );
    assert!(summary.relocations > 0, "{summary:?}");
    assert!(summary.image_bytes >= elf.len() as u64 / 2, "{summary:?}");
    let format = embedded_elf_format().unwrap();
    let executable = LocalExecutable::load(&format, elf, &[], Limits::default()).unwrap();
    assert!(executable.export_count() >= 1);
    assert!(executable.lookup("nope").is_none());
}

#[test]
fn every_byte_flip_outside_the_code_is_accepted_or_refused_cleanly() {
    let elf = embedded_elf();
    let layout = layout(&elf);
    let code: Vec<(usize, usize)> = layout
        .programs
        .iter()
        .filter(|p| p.0 == 1 && p.1 & 1 != 0)
        .map(|p| (p.2, p.2 + p.3))
        .collect();
    assert_eq!(code.len(), 1, "one executable segment");
    // The regions the brief names: the ELF header, the program headers, the dynamic section
    // and the relocation table; and then everything else that is not code (symbols, strings,
    // hash table, data, section headers).
    let named = [
        (0, 64),
        (layout.phoff, layout.phoff + 56 * layout.programs.len()),
        (
            layout.dynamic.0,
            layout.dynamic.0 + 16 * layout.dynamic.1.len(),
        ),
        (layout.rela.0, layout.rela.0 + layout.rela.1),
    ];
    let in_code = |k: usize| code.iter().any(|&(s, e)| s <= k && k < e);
    let mut offsets: Vec<usize> = named.iter().flat_map(|&(s, e)| s..e).collect();
    offsets.extend((0..elf.len()).filter(|&k| !in_code(k)));
    offsets.sort_unstable();
    offsets.dedup();
    assert!(offsets.iter().all(|&k| !in_code(k)));

    let started = Instant::now();
    let (mut accepted, mut refusals) = (0, 0);
    let mut mutated = elf.clone();
    for &k in &offsets {
        mutated[k] ^= 0xff;
        match check_elf_executable(&mutated) {
            Ok(summary) => {
                accepted += 1;
                // Whatever it accepts keeps the loader's invariants.
                assert!(
                    summary.segments.iter().all(|(_, p)| p != "rwx"),
                    "byte {k}: {summary:?}"
                );
                assert!(
                    summary
                        .segments
                        .iter()
                        .any(|(r, p)| p.ends_with('x') && r.contains(&summary.query)),
                    "byte {k}: {summary:?}"
                );
                assert!(summary.image_bytes <= 1 << 30, "byte {k}");
            }
            Err(error) => {
                refusals += 1;
                // (Its offset may lie outside the file: a mutated e_phoff is what was wrong.)
                assert!(!error.message.is_empty(), "byte {k}");
            }
        }
        mutated[k] ^= 0xff;
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{} byte flips: {accepted} accepted, {refusals} refused in {elapsed:?}",
        offsets.len()
    );
    assert!(elapsed < LIMIT, "{elapsed:?}");
    assert!(refusals > 100, "{refusals} refusals");
    assert!(accepted > 0, "flips in unused bytes are accepted");
}

#[test]
fn extreme_values_in_every_field_are_refused_cleanly() {
    // Every 2-, 4- and 8-byte field of the header, program headers, dynamic section and
    // relocation table (at their natural alignments) set to values that overflow arithmetic.
    let elf = embedded_elf();
    let layout = layout(&elf);
    let regions = [
        (0, 64),
        (layout.phoff, layout.phoff + 56 * layout.programs.len()),
        (
            layout.dynamic.0,
            layout.dynamic.0 + 16 * layout.dynamic.1.len(),
        ),
        (layout.rela.0, layout.rela.0 + layout.rela.1),
    ];
    let values = [
        0,
        1,
        0x7fff_ffff_ffff_ffff,
        0x8000_0000_0000_0000,
        u64::MAX - 7,
        u64::MAX,
    ];
    let started = Instant::now();
    let mut tried = 0;
    for (start, end) in regions {
        for width in [2usize, 4, 8] {
            for at in (start..end).step_by(width) {
                for value in values {
                    let mut m = elf.clone();
                    m[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
                    let _ = check_elf_executable(&m);
                    tried += 1;
                }
            }
        }
    }
    assert!(tried > 1000, "{tried}");
    assert!(started.elapsed() < LIMIT, "{:?}", started.elapsed());
}

#[test]
fn every_truncation_is_refused_cleanly() {
    let elf = embedded_elf();
    let layout = layout(&elf);
    // Past the end of the last segment's file bytes nothing the loader reads is missing.
    let needed = layout
        .programs
        .iter()
        .filter(|p| p.0 == 1)
        .map(|p| p.2 + p.3)
        .max()
        .unwrap();
    let started = Instant::now();
    for len in 0..elf.len() {
        let result = check_elf_executable(&elf[..len]);
        if len < needed {
            assert!(result.is_err(), "truncated to {len} bytes");
        }
    }
    assert!(started.elapsed() < LIMIT);
}

#[test]
fn hostile_elfs_are_refused_with_the_exact_error() {
    let elf = embedded_elf();
    let layout = layout(&elf);
    let phoff = layout.phoff as u64;
    let (dyn_offset, _) = layout.dynamic;
    let segment = |k: usize| phoff + 56 * k as u64;
    let code_index = layout
        .programs
        .iter()
        .position(|p| p.0 == 1 && p.1 & 1 != 0)
        .unwrap();
    let check = |name: &str,
                 mutated: &[u8],
                 offset: Option<u64>,
                 message: &str,
                 unsupported: bool,
                 status: StatusCode| {
        let error = refused(mutated);
        eprintln!("HOSTILE {name}: {error}");
        assert_eq!(
            error,
            ElfError {
                offset,
                message: message.to_owned(),
                unsupported
            },
            "{name}"
        );
        create_refuses(mutated, &error, status);
    };

    // Another machine (AArch64).
    let mut m = elf.clone();
    m[18..20].copy_from_slice(&183u16.to_le_bytes());
    check(
        "machine",
        &m,
        Some(18),
        "ELF machine 183 is not this host's (62, x86_64)",
        true,
        StatusCode::Unimplemented,
    );

    // An executable (ET_EXEC), not a position-independent library.
    let mut m = elf.clone();
    m[16..18].copy_from_slice(&2u16.to_le_bytes());
    check(
        "ET_EXEC",
        &m,
        Some(16),
        "ELF type 2 is not ET_DYN (a position-independent library)",
        false,
        StatusCode::InvalidArgument,
    );

    // The code segment writable as well (PF_R | PF_W | PF_X).
    let mut m = elf.clone();
    let at = segment(code_index) as usize;
    m[at + 4..at + 8].copy_from_slice(&7u32.to_le_bytes());
    check(
        "W+X",
        &m,
        Some(segment(code_index)),
        &format!("segment {code_index} is writable and executable at once (refused)"),
        true,
        StatusCode::Unimplemented,
    );

    // The first relocation an absolute one (R_X86_64_64) against symbol 1.
    let mut m = elf.clone();
    let (rela_at, _) = layout.rela;
    let rela_address = layout.dynamic.1.iter().find(|e| e.0 == 7).unwrap().1;
    put_u64(&mut m, rela_at + 8, (1 << 32) | 1);
    check(
        "R_X86_64_64",
        &m,
        None,
        &format!(
            "relocation 0 (at address {rela_address:#x}) has type 1 and symbol 1: only \
             R_X86_64_RELATIVE relocations are supported"
        ),
        true,
        StatusCode::Unimplemented,
    );

    // A needed library: the first dynamic entry's tag becomes DT_NEEDED.
    let mut m = elf.clone();
    put_u64(&mut m, dyn_offset, 1);
    check(
        "DT_NEEDED",
        &m,
        Some(dyn_offset as u64),
        "the ELF needs a shared library (DT_NEEDED): embedded executables may not import \
         anything",
        true,
        StatusCode::Unimplemented,
    );

    // The code segment's file bytes start at the end of the file.
    let mut m = elf.clone();
    let at = segment(code_index) as usize;
    put_u64(&mut m, at + 8, elf.len() as u64);
    let filesz = layout.programs[code_index].3;
    check(
        "segment past EOF",
        &m,
        Some(segment(code_index)),
        &format!(
            "segment {code_index} reads file bytes {}+{filesz}, past the end of the {}-byte ELF",
            elf.len(),
            elf.len()
        ),
        false,
        StatusCode::InvalidArgument,
    );

    // Truncated inside the last loadable segment.
    let (last, &(_, _, offset, size)) = layout
        .programs
        .iter()
        .enumerate()
        .filter(|(_, p)| p.0 == 1)
        .max_by_key(|(_, p)| p.2 + p.3)
        .unwrap();
    let cut = offset + size / 2;
    check(
        "truncated",
        &elf[..cut],
        Some(segment(last)),
        &format!(
            "segment {last} reads file bytes {offset}+{size}, past the end of the {cut}-byte ELF"
        ),
        false,
        StatusCode::InvalidArgument,
    );

    // The query symbol renamed in .dynstr (`jree_hal_...`).
    let name = b"iree_hal_executable_library_query\0";
    let at = elf
        .windows(name.len())
        .position(|w| w == name)
        .expect("the query symbol's name");
    let mut m = elf.clone();
    m[at] = b'j';
    check(
        "no query symbol",
        &m,
        Some(dyn_offset as u64),
        "the ELF does not export `iree_hal_executable_library_query`",
        false,
        StatusCode::InvalidArgument,
    );

    // Not an ELF at all, and nothing.
    for (name, data) in [("empty", &b""[..]), ("text", &b"hello, world"[..])] {
        let error = refused(data);
        assert_eq!(error.offset, Some(0), "{name}: {error}");
        assert!(
            error.message.starts_with("not an ELF64 file"),
            "{name}: {error}"
        );
    }
}

/// A small file may claim a huge memory image (`p_memsz`): checking it must not allocate or
/// touch that memory, only loading it would.
#[test]
fn a_huge_claimed_image_is_checked_without_allocating_it() {
    let elf = embedded_elf();
    let layout = layout(&elf);
    let last_load = (0..layout.programs.len())
        .rev()
        .find(|&k| layout.programs[k].0 == 1)
        .unwrap();
    let mut huge = elf.clone();
    // p_memsz of the last PT_LOAD: just under the 1 GiB limit past its address.
    let at = layout.phoff + 56 * last_load;
    let vaddr = u64_at(&huge, at + 16);
    put_u64(&mut huge, at + 40, (1 << 30) - vaddr - 4096);
    let start = pactum_testing::hostile::Stopwatch::start();
    for _ in 0..100 {
        let summary = check_elf_executable(&huge).unwrap();
        assert!(summary.image_bytes > 1 << 29);
    }
    start.assert_within("100 checks", pactum_testing::hostile::LIMIT);
}
