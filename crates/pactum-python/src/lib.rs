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
//!   export's `iree.abi` signature;
//! - `pactum.mlir.open(path: str) -> Function`, for `python/pactum/mlir.py`: opens an
//!   MLIR-compiled shared library ([`pactum_mlir::MlirLibrary::open`]) and returns a function
//!   `(declaration: str, copy_mismatched: bool) -> [function, name, signature, result_types,
//!   packed]` that looks up one of its functions ([`pactum_mlir::MlirLibrary::function`],
//!   [`pactum_mlir::MlirFunction::into_function_packing_scalars`]: several scalar results come
//!   back as one `bytes`, which Python unpacks far faster than a `tvm_ffi.Array`);
//! - `pactum.tensor.bitcast(x: Tensor, dtype) -> Tensor` ([`pactum::Tensor::view_as`]), for
//!   element types NumPy lacks (`bfloat16`);
//! - `pactum.iree.load_module(source, options) -> Module` and `pactum.iree.inspect_source(source)`
//!   (`src/load.rs`), behind `pactum.iree.load`: a module from a path, bytes or a tensor
//!   of bytes, with a device, linked modules, parameter scopes and a trace callback;
//! - `pactum.sig.{detect,render,cconv,matches,convert,explain,explain_json}`, for
//!   `python/pactum/sig.py`: what `pactum sig` does ([`pactum_iree::sig`]), each
//!   taking the signature text and its format (`None`: detected) and returning a string
//!   (`explain_json`: the JSON of [`sig::Explanation::to_json`]; `matches`: a bool). Bad
//!   input is a `ValueError` whose message names the byte offset;
//! - `pactum.iree.native_module` and `pactum.iree.native_module_invoke` ([`native_module`]):
//!   modules whose functions are Python callables, for `pactum.iree.NativeModule`;
//! - `pactum.iree.parameter_index*` ([`parameters`]): parameter indexes built in memory or
//!   read from archives, for `pactum.iree.ParameterIndex`.

use core::ffi::c_int;

use pactum::{Any, AnyView, Array, DataType, Error, ErrorKind, Function, Result, Tensor};
use pactum_iree::sig::{self, Format, SigError};
use pactum_iree::signature::cconv::CheckError;
use pactum_iree::vmfb::VmfbFile;
use pactum_mlir::{LayoutMismatch, MlirLibrary};

mod load;
pub mod native_module;
pub mod parameters;

/// The global behind `pactum.iree.inspect`.
pub const INSPECT: &str = "pactum.iree.inspect";
/// The global behind `pactum.mlir.load` (python/pactum/mlir.py).
pub const MLIR_OPEN: &str = "pactum.mlir.open";
/// The global behind `pactum.mlir.bitcast`.
pub const BITCAST: &str = "pactum.tensor.bitcast";

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
    register(MLIR_OPEN, || Function::from_typed(mlir_open))?;
    register(BITCAST, || {
        Function::from_typed(|x: Tensor, dtype: DataType| x.view_as(dtype))
    })?;
    register_sig()?;
    load::register()?;
    native_module::register()?;
    parameters::register()?;
    Ok(())
}

/// The format named by `from` (`None`: detect it).
fn format(from: Option<String>) -> Result<Option<Format>> {
    Ok(from.map(|name| name.parse::<Format>()).transpose()?)
}

/// `pactum.sig.*` (python/pactum/sig.py): thin calls of [`pactum_iree::sig`].
fn register_sig() -> Result<()> {
    register("pactum.sig.detect", || {
        Function::from_typed(|text: String, from: Option<String>| -> Result<String> {
            Ok(sig::detect(&text, format(from)?)?.key().to_owned())
        })
    })?;
    register("pactum.sig.render", || {
        Function::from_typed(|text: String, from: Option<String>| -> Result<String> {
            Ok(sig::render(&text, format(from)?)?)
        })
    })?;
    register("pactum.sig.cconv", || {
        Function::from_typed(
            |text: String, from: Option<String>, check: Option<String>| -> Result<String> {
                Ok(sig::cconv(&text, format(from)?, check.as_deref())?.to_string())
            },
        )
    })?;
    register("pactum.sig.matches", || {
        Function::from_typed(
            |text: String, from: Option<String>, cconv: String| -> Result<bool> {
                match sig::cconv(&text, format(from)?, Some(&cconv)) {
                    Ok(_) => Ok(true),
                    Err(SigError::Check(CheckError::Mismatch(_))) => Ok(false),
                    Err(error) => Err(error.into()),
                }
            },
        )
    })?;
    register("pactum.sig.convert", || {
        Function::from_typed(
            |text: String, from: Option<String>, to: String, name: String| -> Result<String> {
                Ok(sig::convert(
                    &text,
                    format(from)?,
                    to.parse::<Format>()?,
                    &name,
                )?)
            },
        )
    })?;
    register("pactum.sig.explain", || {
        Function::from_typed(|text: String, from: Option<String>| -> Result<String> {
            Ok(sig::explain(&text, format(from)?)?.to_string())
        })
    })?;
    register("pactum.sig.explain_json", || {
        Function::from_typed(|text: String, from: Option<String>| -> Result<String> {
            Ok(sig::explain(&text, format(from)?)?.to_json().to_string())
        })
    })
}

/// Registers `make()` as global `name` unless the runtime already has one.
fn register(name: &str, make: impl FnOnce() -> Function) -> Result<()> {
    if Function::get_global(name).is_none() {
        make().register_global(name, false)?;
    }
    Ok(())
}

/// `pactum.mlir.open(path)`: the library at `path`, as a function looking up its functions by
/// declaration. The closure owns the library; every function it returns keeps it loaded too.
fn mlir_open(path: String) -> Result<Function> {
    // SAFETY: the Python caller vouches for the library and for the declarations it passes,
    // as for any module it loads (python/pactum/mlir.py says so); nothing in a shared library
    // says what its functions take.
    let library = unsafe { MlirLibrary::open(&path)? };
    Ok(Function::from_typed(
        move |declaration: String, copy_mismatched: bool| -> Result<Array> {
            let mut function = library.function(&declaration)?;
            if copy_mismatched {
                function = function.with_layout_mismatch(LayoutMismatch::Copy);
            }
            let name = Any::from(function.name());
            let packed = Any::from(function.packs_scalar_results());
            let signature = function.signature();
            let text = Any::from(signature.to_string());
            let results = Array::new(signature.results.iter().map(|ty| Any::from(ty.to_string())));
            Ok(Array::new([
                Any::from(function.into_function_packing_scalars()),
                name,
                text,
                Any::from(results),
                packed,
            ]))
        },
    ))
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
