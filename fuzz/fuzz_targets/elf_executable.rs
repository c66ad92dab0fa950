//! The ELF checks of the `llvm-cpu` loader (`pactum_iree::hal::check_elf_executable`) on
//! any bytes (an embedded ELF mutated by the fuzzer): an error, or a summary that keeps the
//! loader's invariants. Only the checker runs: nothing is mapped, no code is called. Never a
//! panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pactum_iree::hal::check_elf_executable;

fuzz_target!(|data: &[u8]| {
    let Ok(summary) = check_elf_executable(data) else {
        return;
    };
    assert!(summary.image_bytes <= 1 << 30, "{summary:?}");
    assert!(
        summary.segments.iter().all(|(_, protection)| protection != "rwx"),
        "{summary:?}"
    );
    assert!(
        summary
            .segments
            .iter()
            .any(|(range, protection)| protection.ends_with('x') && range.contains(&summary.query)),
        "{summary:?}"
    );
});
