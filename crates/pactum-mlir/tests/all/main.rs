//! pactum-mlir's integration tests, in one binary (a test binary costs a link of the crate and
//! all its dependencies): one module per area. None needs a process of its own. `table` (the
//! call table and the MLIR test libraries, built once per process) is shared with the CLI's
//! tests.

mod hostile;
mod mlir_calls;
#[path = "../mlir/table.rs"]
mod table;
