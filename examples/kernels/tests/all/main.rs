//! The example kernels' integration tests, in one binary (a test binary costs a link of the
//! crate and all its dependencies): one module per host (`tests/README.md`). None needs a
//! process of its own: the Python and C hosts run in child processes, and the Rust host loads
//! the library into this process, which runs pactum's built-in runtime.

mod c_host;
mod python_host;
mod rust_host;
mod support;
