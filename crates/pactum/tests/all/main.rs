//! pactum's Rust test suite (one binary; the process runs pactum's built-in runtime).

mod any;
mod containers;
mod errors;
mod functions;
mod modules;
mod objects;
mod stress;
mod support;
mod tensors;
