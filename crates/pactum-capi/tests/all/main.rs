//! pactum-capi's integration tests, in one binary (a test binary costs a link of the crate and
//! all its dependencies): one module per area. None needs a process of its own.

mod boundary;
mod c_suite;
mod cxx_abi;
mod hostile_c;
mod python_official;
mod python_upstream;
mod support;
mod vmfb_c;
