//! pactum-npy's integration tests, in one binary (a test binary costs a link of the crate and
//! all its dependencies): one module per area. None needs a process of its own.

mod hostile;
mod npy_numpy;
