//! Modules written in Rust: [`NativeModule`].

use std::borrow::Cow;
use std::fmt;

use super::error::StatusCode;
use super::value::Value;

/// One function of a native module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeFunction {
    /// The name within the module (`frob` for `optional_ext.frob`).
    pub name: Cow<'static, str>,
    /// The calling convention (`0i_i`); variadic spans (`C…D`) are allowed.
    pub cconv: Cow<'static, str>,
}

impl NativeFunction {
    /// A function named `name` with calling convention `cconv`.
    pub fn new(name: impl Into<Cow<'static, str>>, cconv: impl Into<Cow<'static, str>>) -> Self {
        NativeFunction {
            name: name.into(),
            cconv: cconv.into(),
        }
    }
}

/// The error a native function returns: an IREE status and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeError {
    /// The status.
    pub status: StatusCode,
    /// What went wrong.
    pub message: String,
}

impl NativeError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> NativeError {
        NativeError {
            status,
            message: message.into(),
        }
    }
}

impl fmt::Display for NativeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for NativeError {}

/// A module implemented in Rust, which bytecode modules registered after it can import.
///
/// Arguments arrive flattened in calling-convention order. A variadic span (`C…D`) arrives as
/// an `I32` count followed by the values of each tuple. Results must match the function's
/// result kinds exactly, or the call traps.
pub trait NativeModule: Send + Sync {
    /// The module name (`hal`).
    fn name(&self) -> &str;

    /// The module version, compared with importers' minimum versions.
    fn version(&self) -> u32 {
        0
    }

    /// The functions, in a fixed order; `call` receives an index into this slice.
    fn functions(&self) -> &[NativeFunction];

    /// Reference type names this module provides (`hal.buffer_view`), registered with it so
    /// that bytecode type tables naming them resolve.
    fn ref_types(&self) -> Vec<String> {
        Vec::new()
    }

    /// Calls function `index` with `args`.
    fn call(&self, index: usize, args: &[Value]) -> Result<Vec<Value>, NativeError>;
}
