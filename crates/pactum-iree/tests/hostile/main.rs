//! pactum-iree's hostile-input tests: every refusal that could cost time must come back within a
//! wall-clock limit. They are a binary of their own so that they never run next to the tests of
//! `all` that keep every core busy (the IREE runs: several `iree-run-module` processes at a time,
//! each with its own worker threads); see `tests/README.md`.

#[path = "../vm/asm.rs"]
mod asm;
mod elf_hostile;
mod hostile;
mod vm_hostile;
