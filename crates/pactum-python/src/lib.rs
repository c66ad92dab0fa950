//! The native half of the `pactum` Python package (`python/`): a TVM FFI module library that
//! Python loads into the official `apache-tvm-ffi` runtime with `tvm_ffi.load_module`.
//!
//! It holds no pactum logic of its own. Loading it binds pactum to the official
//! `libtvm_ffi.so` (runtime case 1 of docs/ARCHITECTURE.md, "One runtime per process"), and
//! its one export, [`pactum_init`], registers what the Python side needs:
//! - `pactum.Module.from_functions`, which the official runtime lacks, from a small C++ shim
//!   (`shim/served_module.cc`, a `tvm::ffi::ModuleObj` subclass), so that
//!   [`pactum::Module::from_impl`] works under the official runtime;
//! - `ffi.Module.load_from_file.vmfb` ([`pactum_iree::module::register_vmfb_loader`]), so
//!   `tvm_ffi.load_module("model.vmfb")` returns a module whose exports pactum's VM runs;
//! - `pactum.iree.inspect(path: str) -> str`, the JSON of `pactum inspect --json FILE.vmfb`
//!   ([`pactum_iree::vmfb::inspect::report`]), from which `python/pactum/iree.py` reads each
//!   export's `iree.abi` signature.

use core::ffi::c_int;

use pactum::{AnyView, Error, ErrorKind, Function, Result};
use pactum_iree::vmfb::VmfbFile;

/// The global behind `pactum.iree.inspect`.
pub const INSPECT: &str = "pactum.iree.inspect";

unsafe extern "C" {
    /// `shim/served_module.cc`: registers `pactum.Module.from_functions` unless present.
    fn pactum_python_register_module_bridge() -> c_int;
}

/// Registers `pactum.Module.from_functions` (unless the runtime has it) and the `.vmfb` loader.
/// Idempotent; `import pactum` calls it once.
#[pactum::export]
pub fn pactum_init() -> Result<()> {
    // SAFETY: takes no arguments; reports failure through the runtime's error slot.
    if unsafe { pactum_python_register_module_bridge() } != 0 {
        return Err(Error::take_raised().unwrap_or_else(|| {
            Error::new(
                ErrorKind::RUNTIME_ERROR,
                "registering pactum.Module.from_functions failed without an error",
            )
        }));
    }
    pactum_iree::module::register_vmfb_loader()?;
    if Function::get_global(INSPECT).is_none() {
        Function::from_packed(|args: &[AnyView<'_>]| {
            let [path] = args else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("{INSPECT}(path: str) takes 1 argument, got {}", args.len()),
                ));
            };
            Ok(inspect(path.get::<&str>()?)?.into())
        })
        .register_global(INSPECT, false)?;
    }
    Ok(())
}

/// The JSON text of `pactum inspect --json path` for a `.vmfb`.
fn inspect(path: &str) -> Result<pactum::String> {
    let invalid =
        |e: &dyn std::fmt::Display| Error::new(ErrorKind::VALUE_ERROR, format!("{path}: {e}"));
    let file = VmfbFile::open(path).map_err(|e| invalid(&e))?;
    let module = file.module().map_err(|e| invalid(&e))?;
    let report = pactum_iree::vmfb::inspect::report(&module);
    Ok(pactum::String::from(report.to_string().as_str()))
}
