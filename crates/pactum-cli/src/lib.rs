//! The library half of the `pactum` command: the parts worth testing and fuzzing on their own.
//!
//! ```
//! let argument = pactum_cli::args::parse("2.5:f32", 0)?;
//! assert!(matches!(argument, pactum_cli::args::CallArg::Float(v) if v == 2.5));
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod args;
