//! pactum's Rust test suite: one binary, one module per area; the process runs pactum's built-in
//! runtime. Tests that need a process of their own are listed in `tests/README.md`.

mod any;
mod containers;
mod errors;
mod functions;
mod hostile;
mod modules;
mod objects;
mod stress;
mod support;
mod tensors;
