//! pactum's Rust test suite (one binary; the process runs pactum's built-in runtime).

mod any;
mod errors;
mod functions;
mod iree_buffer;
mod iree_function_abi;
mod iree_structured;
mod modules;
mod objects;
mod stress;
mod support;
mod tensors;
