//! pactum-cli's integration tests, in one binary (a test binary costs a link of the crate and
//! all its dependencies): one module per area. None needs a process of its own: they run the
//! `pactum` command in child processes.

mod calling;
mod cli;
mod element_types;
mod hostile_cli;
mod mlir_call;
mod run_vs_iree;
mod test_command;
mod vmfb_inspect;
mod vulkan;
