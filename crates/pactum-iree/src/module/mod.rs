//! IREE modules as pactum functions: a `.vmfb` loaded into a VM [`Context`], each export a
//! packed [`Function`] that takes and returns pactum values.
//!
//! Arguments convert by the export's calling convention: `i`/`I` take ints (and bools),
//! `f`/`F` floats or ints, `r` a reference (`None`, a value returned by an earlier call, a
//! list as an `Array`, bytes as a `!vm.buffer`, a CPU [`Tensor`] as a `!hal.buffer_view`
//! copied into a HAL buffer). Results convert back: integers, floats, lists as `Array`s,
//! buffers as `Bytes`, buffer views as `Tensor`s, and any other reference as an
//! [`Obj<VmRef>`] that can be passed back into calls.
//!
//! Every module's context holds IREE's `hal` module ([`HalModule`](crate::hal::HalModule)) over a
//! [`LocalDevice`](crate::hal::LocalDevice),
//! so modules compiled for the `vmvx` backend (run by pactum's VM) and for `llvm-cpu` (machine
//! code, run by pactum's ELF loader) both run in-process. ELF dispatches run on
//! [`Workers::shared`], the process-wide pool (IREE's `local-task`), unless the module is
//! loaded with other [`Workers`] ([`IreeModule::load_with`]; [`Workers::CallerThread`] is
//! IREE's `local-sync`). Every call returns when its work is done: async exports included.
//!
//! One result is returned as itself, several as an `Array`, none as `None`. A wrong call
//! (count, kind, range) is a `TypeError` or `ValueError` naming the argument.
//!
//! A module that imports IREE's `check` module (a test program of the `check` dialect) gets
//! one ([`CheckModule`]) in its context, so its expectations are evaluated rather than
//! skipped: a call during which an expectation failed is an `AssertionError` naming the
//! failed checks (the call runs to its end first, as IREE's failures are not fatal). To run a
//! module's test functions as `iree-check-module` does, use [`crate::check::run_tests`].
//!
//! An export with `iree.abi` reflection is wrapped by the structured-call binder
//! ([`StructuredFunction`]), so it takes nested dicts, lists and keyword arguments as the V1
//! ABI describes.
//!
//! ```
//! use pactum_iree::module::IreeModule;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vmfb/vm_direct.vmfb");
//! let module = IreeModule::load(path)?;
//! let frob = module.function("frob_or_double")?;
//! assert_eq!(frob.call_typed::<_, i64>((21,))?, 42);
//! # Ok::<(), pactum::Error>(())
//! ```

use std::path::Path;
use std::sync::Arc;

use pactum::{
    Any, AnyView, Array, Bytes, DataType, Error, ErrorKind, Function, List, Obj, Result, Tensor,
};
use pactum_sys::dlpack::{DLDataTypeCode, DLDeviceType};
use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use crate::check::CheckModule;
use crate::hal::{
    DENSE_ROW_MAJOR, HalBuffer, HalBufferView, HalElementType, HalFence, Timeout, Workers, hal_ref,
};
use crate::host_memory::{BlockCache, HostMemory};
use crate::status::StatusCode;

use crate::signature::Signature;
use crate::structured::StructuredFunction;
use crate::vm::{
    Context, ElementType, Function as VmFunction, Limits, Ref, Value, VmBuffer, VmList,
};

mod builder;

pub use builder::{DeviceChoice, LinkedModule, ModuleBuilder};

/// A VM reference that pactum has no value type for (a HAL object, an opaque ref), held as an
/// FFI object so that it can be passed back into calls.
#[derive(Debug)]
pub struct VmRef(pub Ref);

pactum::object_type!(VmRef, "pactum.iree.VmRef");

/// A parameter index as an FFI object (`pactum.iree.ParameterIndex`), so that bindings (the
/// Python package) can build one and hand it to a load.
#[derive(Debug, Default)]
pub struct ParameterIndexObject(pub std::sync::Mutex<crate::parameters::ParameterIndex>);

pactum::object_type!(ParameterIndexObject, "pactum.iree.ParameterIndex");

/// A native module as an FFI object (`pactum.iree.NativeModule`), so that bindings (the Python
/// package) can hand modules written in their language to a load.
pub struct NativeModuleObject(pub Arc<dyn crate::vm::NativeModule>);

impl std::fmt::Debug for NativeModuleObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NativeModuleObject")
            .field(&self.0.name())
            .finish()
    }
}

pactum::object_type!(NativeModuleObject, "pactum.iree.NativeModule");

/// A `.vmfb` module loaded in its own VM context.
#[derive(Clone)]
pub struct IreeModule {
    inner: Arc<Inner>,
}

struct Inner {
    context: Context,
    name: String,
    exports: Vec<Export>,
    workers: Workers,
    /// The `hal` device's IREE identifier (`local-task`, `local-sync`, `vulkan`).
    device_id: String,
    /// The `check` module, when the module imports it.
    check: Option<Arc<CheckModule>>,
}

struct Export {
    name: String,
    function: VmFunction,
    /// The user-level signature its reflection records (`iree.abi`, or SIP), if any.
    signature: Option<Signature>,
    /// Whether it follows the coarse-fences model (`iree.abi.model`): an async export whose
    /// last two arguments are a wait fence and a signal fence, which the caller makes.
    coarse_fences: bool,
}

impl std::fmt::Debug for IreeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IreeModule")
            .field("name", &self.inner.name)
            .field("workers", &self.inner.workers)
            .field("device", &self.inner.device_id)
            .field(
                "exports",
                &self
                    .inner
                    .exports
                    .iter()
                    .map(|e| &e.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn vm_error(error: crate::vm::VmError) -> Error {
    Error::from(error)
}

impl IreeModule {
    /// Loads, verifies and links the module at `path` with the default [`Limits`]; ELF
    /// dispatches run on the shared worker pool. For other workers, limits, linked modules or
    /// parameters, see [`IreeModule::builder`].
    pub fn load(path: impl AsRef<Path>) -> Result<IreeModule> {
        IreeModule::builder().load(path)
    }

    /// Loads the module at `path` with `limits` on every call (stack depth, instructions,
    /// memory); ELF dispatches run on the shared worker pool.
    pub fn load_with_limits(path: impl AsRef<Path>, limits: Limits) -> Result<IreeModule> {
        IreeModule::builder().limits(limits).load(path)
    }

    /// Loads the module at `path` with `limits` on every call, its ELF (`llvm-cpu`)
    /// dispatches run by `workers`: [`Workers::shared`] (IREE's `local-task`),
    /// [`Workers::CallerThread`] (`local-sync`: the calling thread only, nothing shared) or a
    /// pool of its own ([`Workers::with_threads`]). `vmvx` dispatches always run on the
    /// calling thread.
    ///
    /// ```
    /// use pactum_iree::hal::Workers;
    /// use pactum_iree::module::IreeModule;
    /// use pactum_iree::vm::Limits;
    ///
    /// let path = concat!(
    ///     env!("CARGO_MANIFEST_DIR"),
    ///     "/tests/fixtures/vmfb/multi_export_llvm_cpu.vmfb"
    /// );
    /// let module = IreeModule::load_with(path, Limits::default(), Workers::CallerThread)?;
    /// assert_eq!(module.workers().device_name(), "local-sync");
    /// assert_eq!(module.function("add")?.call_typed::<_, i64>((7, 35))?, 42);
    /// # Ok::<(), pactum::Error>(())
    /// ```
    pub fn load_with(
        path: impl AsRef<Path>,
        limits: Limits,
        workers: Workers,
    ) -> Result<IreeModule> {
        IreeModule::builder()
            .limits(limits)
            .workers(workers)
            .load(path)
    }

    /// Loads a module from its bytes (either container); ELF dispatches run on the shared
    /// worker pool.
    pub fn from_bytes(bytes: Vec<u8>, limits: Limits) -> Result<IreeModule> {
        IreeModule::builder().limits(limits).load_bytes(bytes)
    }

    /// Loads a module from its bytes, its ELF dispatches run by `workers` (see
    /// [`load_with`](Self::load_with)).
    pub fn from_bytes_with(bytes: Vec<u8>, limits: Limits, workers: Workers) -> Result<IreeModule> {
        IreeModule::builder()
            .limits(limits)
            .workers(workers)
            .load_bytes(bytes)
    }

    /// A builder for a module loaded with other modules in its context (IREE's repeated
    /// `--module`), other workers or limits, or a trace sink.
    pub fn builder() -> ModuleBuilder {
        ModuleBuilder::new()
    }

    /// Who runs the module's ELF dispatches (on a Vulkan device, none do:
    /// [`Workers::CallerThread`]).
    pub fn workers(&self) -> &Workers {
        &self.inner.workers
    }

    /// The IREE identifier of the device the module runs on (`local-task`, `local-sync`,
    /// `vulkan`).
    pub fn device_id(&self) -> &str {
        &self.inner.device_id
    }

    /// The names of the modules in this module's context, in registration order: the
    /// native ones (`hal`, and `check` when imported), the linked ones, then this one.
    pub fn context_modules(&self) -> Vec<String> {
        self.inner.context.module_names()
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The exported function names, in the module's order.
    pub fn export_names(&self) -> impl Iterator<Item = &str> {
        self.inner.exports.iter().map(|e| e.name.as_str())
    }

    /// The VM calling convention of export `name` (`0iI_f`).
    pub fn calling_convention(&self, name: &str) -> Result<&str> {
        Ok(self.export(name)?.function.cconv())
    }

    /// The user-level signature export `name`'s reflection records, if any.
    pub fn signature(&self, name: &str) -> Result<Option<&Signature>> {
        Ok(self.export(name)?.signature.as_ref())
    }

    fn export(&self, name: &str) -> Result<&Export> {
        self.inner
            .exports
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.export_names().collect();
                Error::new(
                    ErrorKind::ATTRIBUTE_ERROR,
                    format!(
                        "module `{}` has no export `{name}` (it exports: {})",
                        self.inner.name,
                        names.join(", ")
                    ),
                )
            })
    }

    /// Export `name` as a packed function: structured (nested values, keyword arguments) when
    /// its reflection records an `iree.abi` signature, flat otherwise.
    pub fn function(&self, name: &str) -> Result<Function> {
        let flat = self.flat_function(name)?;
        match &self.export(name)?.signature {
            Some(signature) => {
                Ok(StructuredFunction::from_iree_abi(flat, signature)?.into_function())
            }
            None => Ok(flat),
        }
    }

    /// Export `name` as a packed function over its flat calling convention.
    pub fn flat_function(&self, name: &str) -> Result<Function> {
        let export = self.export(name)?;
        let mut cconv = Cconv::parse(export.function.cconv())?;
        if export.coarse_fences {
            // The wait and signal fences are the caller's to make: pactum makes them, so users
            // call an async export like any other.
            let user = cconv
                .args
                .len()
                .checked_sub(2)
                .filter(|_| cconv.args.ends_with(b"rr"));
            let Some(user) = user else {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!(
                        "export `{name}` follows the coarse-fences model but its calling \
                         convention {} does not end with two fences",
                        export.function.cconv()
                    ),
                ));
            };
            cconv.args.truncate(user);
            cconv.fences = true;
        }
        let module = self.clone();
        let function = export.function.clone();
        let display = format!("{}.{name}", self.inner.name);
        Ok(Function::from_packed(move |args: &[AnyView<'_>]| {
            module.call_flat(&display, &function, &cconv, args)
        }))
    }

    /// Calls export `name` with `args` (see [`function`](Self::function)).
    pub fn call(&self, name: &str, args: &[AnyView<'_>]) -> Result<Any> {
        self.function(name)?.call(args)
    }

    /// Calls export `name` with VM values as they are, as IREE's tools (iree-run-module)
    /// pass them: integers and floats of the calling convention's kinds, tensors as
    /// `hal.buffer_view` references. The wait and signal fences of a coarse-fences export are
    /// made here, after `args`. Returns the VM results; a failed `check` expectation is an
    /// `AssertionError`, as for [`call`](Self::call).
    pub fn invoke_values(&self, name: &str, args: Vec<Value>) -> Result<Vec<Value>> {
        let export = self.export(name)?;
        let display = format!("{}.{name}", self.inner.name);
        self.invoke_prepared(&display, &export.function, export.coarse_fences, args)
    }

    /// The calling-convention kinds (`i`, `I`, `f`, `F`, `r`) of the arguments a caller of
    /// export `name` passes (without the two fences of a coarse-fences export, which
    /// [`invoke_values`](Self::invoke_values) makes) and of its results.
    pub fn value_kinds(&self, name: &str) -> Result<(String, String)> {
        let export = self.export(name)?;
        let body = export.function.cconv();
        let body = body.strip_prefix('0').unwrap_or(body);
        let (args, results) = body.split_once('_').unwrap_or((body, ""));
        let mut args: String = args.chars().filter(|c| *c != 'v').collect();
        if export.coarse_fences && args.ends_with("rr") {
            args.truncate(args.len() - 2);
        }
        Ok((args, results.chars().filter(|c| *c != 'v').collect()))
    }

    /// Invokes `function` with `values`, adding a wait and a signal fence when `fences`, and
    /// reports failed `check` expectations and an unreached signal fence as errors.
    fn invoke_prepared(
        &self,
        display: &str,
        function: &VmFunction,
        fences: bool,
        mut values: Vec<Value>,
    ) -> Result<Vec<Value>> {
        // The call starts at once (an empty wait fence) and the module signals the signal
        // fence; the local device finishes every queue operation before it returns (a pool's
        // workgroups included), so it is reached when the call returns, unless the program
        // failed it or never signalled it: both are errors of the call, as iree-run-module
        // reports a failed fence.
        let signal = fences.then(HalFence::pending);
        if let Some(signal) = &signal {
            values.push(hal_ref(HalFence::empty()));
            values.push(hal_ref(signal.clone()));
        }
        let results = self.inner.context.invoke(function, &values);
        if let Some(check) = &self.inner.check {
            let failures = check.take_failures();
            if !failures.is_empty() {
                let mut message = format!("{display}: {} expectation(s) failed:", failures.count());
                for failure in &failures.recorded {
                    message.push_str(&format!("\n  {}: {}", failure.check, failure.headline()));
                }
                if failures.unrecorded > 0 {
                    message.push_str(&format!("\n  ({} more)", failures.unrecorded));
                }
                if let Err(error) = &results {
                    message.push_str(&format!("\nand the call failed: {error}"));
                }
                return Err(Error::new(ErrorKind::ASSERTION_ERROR, message));
            }
        }
        let results = results.map_err(vm_error)?;
        if let Some(signal) = signal {
            signal.wait(Timeout::IMMEDIATE).map_err(|e| {
                let what = if e.status == StatusCode::DeadlineExceeded {
                    "returned without signalling its signal fence".to_owned()
                } else {
                    format!("failed its signal fence: {e}")
                };
                Error::new(ErrorKind::RUNTIME_ERROR, format!("{display} {what}"))
            })?;
        }
        Ok(results)
    }

    fn call_flat(
        &self,
        display: &str,
        function: &VmFunction,
        cconv: &Cconv,
        args: &[AnyView<'_>],
    ) -> Result<Any> {
        if args.len() != cconv.args.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "{display} takes {} argument(s) ({}), got {}",
                    cconv.args.len(),
                    cconv.describe_args(),
                    args.len()
                ),
            ));
        }
        let values = args
            .iter()
            .zip(&cconv.args)
            .enumerate()
            .map(|(index, (arg, kind))| {
                to_value(arg, *kind).map_err(|e| {
                    Error::new(
                        ErrorKind::custom(&e.kind()),
                        format!("{display}: argument {index}: {}", e.message()),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let results = self.invoke_prepared(display, function, cconv.fences, values)?;
        let mut results = results
            .into_iter()
            .map(from_value)
            .collect::<Result<Vec<_>>>()?;
        Ok(match results.len() {
            0 => Any::none(),
            1 => results.remove(0),
            _ => Any::from(Array::new(results)),
        })
    }
}

/// A signature read from an `iree.abi.declaration` alone, its arguments positional: the
/// names there come from `iree.abi.name` (or the source's argument names) and only document
/// the arguments. IREE's callers (iree-run-module, and iree.runtime, which reads only the
/// `iree.abi` JSON for keywords) pass such arguments by position, so a name never makes one
/// keyword-only; a `["named", ...]` record of `iree.abi` JSON does.
fn positional_by_declaration(signature: Signature) -> Signature {
    Signature {
        args: signature
            .args
            .into_iter()
            .map(|arg| match arg {
                crate::signature::Type::Named(_, inner) => *inner,
                other => other,
            })
            .collect(),
        results: signature.results,
    }
}

/// The argument and result kinds of a calling convention (`0iIfFr_...`).
#[derive(Clone, Debug)]
struct Cconv {
    args: Vec<u8>,
    /// Whether a wait fence and a signal fence follow the arguments (coarse-fences model).
    fences: bool,
}

impl Cconv {
    fn parse(text: &str) -> Result<Cconv> {
        let body = text.strip_prefix('0').unwrap_or(text);
        let args = body.split('_').next().unwrap_or("");
        if args.bytes().any(|b| matches!(b, b'C' | b'D')) {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("calling convention `{text}`: variadic exports cannot be called"),
            ));
        }
        Ok(Cconv {
            args: args.bytes().filter(|&b| b != b'v').collect(),
            fences: false,
        })
    }

    fn describe_args(&self) -> String {
        let names: Vec<&str> = self.args.iter().map(|&k| kind_name(k)).collect();
        names.join(", ")
    }
}

fn kind_name(kind: u8) -> &'static str {
    match kind {
        b'i' => "i32",
        b'I' => "i64",
        b'f' => "f32",
        b'F' => "f64",
        _ => "ref",
    }
}

fn int_of(arg: &AnyView<'_>, kind: u8) -> Result<i64> {
    arg.get::<i64>().map_err(|_| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "expected an int ({}), got {}",
                kind_name(kind),
                arg.type_key()
            ),
        )
    })
}

fn float_of(arg: &AnyView<'_>, kind: u8) -> Result<f64> {
    match arg.get::<f64>() {
        Ok(value) => Ok(value),
        Err(_) => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "expected a float ({}), got {}",
                kind_name(kind),
                arg.type_key()
            ),
        )),
    }
}

/// One argument as a VM value of `kind`.
fn to_value(arg: &AnyView<'_>, kind: u8) -> Result<Value> {
    Ok(match kind {
        b'i' => {
            let value = int_of(arg, kind)?;
            // i32 parameters are signless: any value of 32 bits, signed or not.
            let value = i32::try_from(value)
                .or_else(|_| u32::try_from(value).map(|v| v as i32))
                .map_err(|_| {
                    Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!("{value} does not fit in 32 bits (i32)"),
                    )
                })?;
            Value::I32(value)
        }
        b'I' => Value::I64(int_of(arg, kind)?),
        b'f' => Value::F32(float_of(arg, kind)? as f32),
        b'F' => Value::F64(float_of(arg, kind)?),
        _ => Value::Ref(to_ref(arg, 0)?),
    })
}

/// A reference argument: `None`, a [`VmRef`], a list (`Array` or `List`) or bytes.
fn to_ref(arg: &AnyView<'_>, depth: usize) -> Result<Option<Ref>> {
    if depth > 64 {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "lists nested deeper than 64 levels",
        ));
    }
    // The common kinds by type index first: a failed `get` formats an error message, which
    // cost more than the rest of a small call.
    match TVMFFITypeIndex(arg.type_index()) {
        TVMFFITypeIndex::NONE => return Ok(None),
        TVMFFITypeIndex::TENSOR | TVMFFITypeIndex::DL_TENSOR_PTR => {
            let tensor = arg.get::<Tensor>()?;
            return Ok(Some(Ref::Object(Arc::new(tensor_to_buffer_view(&tensor)?))));
        }
        TVMFFITypeIndex::ARRAY => {
            let array = arg.get::<Array>()?;
            return list_ref(array.iter().map(Any::view), depth).map(Some);
        }
        TVMFFITypeIndex::LIST => {
            let list = arg.get::<List>()?;
            let items = list.to_vec();
            return list_ref(items.iter().map(Any::view), depth).map(Some);
        }
        TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES | TVMFFITypeIndex::BYTE_ARRAY_PTR => {
            let bytes = arg.get::<&[u8]>()?;
            return Ok(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))));
        }
        _ => {}
    }
    if let Ok(vm_ref) = arg.get::<Obj<VmRef>>() {
        return Ok(Some(vm_ref.0.clone()));
    }
    if let Ok(bytes) = arg.get::<&[u8]>() {
        return Ok(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))));
    }
    if let Ok(tensor) = arg.get::<Tensor>() {
        return Ok(Some(Ref::Object(Arc::new(tensor_to_buffer_view(&tensor)?))));
    }
    Err(Error::new(
        ErrorKind::TYPE_ERROR,
        format!(
            "expected a reference (None, a list, bytes or a VM value), got {}",
            arg.type_key()
        ),
    ))
}

/// A list argument's items as a `!vm.list<?>`.
fn list_ref<'a>(items: impl Iterator<Item = AnyView<'a>>, depth: usize) -> Result<Ref> {
    let values = items
        .enumerate()
        .map(|(i, view)| {
            element_value(&view, depth).map_err(|e| {
                Error::new(
                    ErrorKind::custom(&e.kind()),
                    format!("element {i}: {}", e.message()),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let list = VmList::from_values(ElementType::Variant, values)
        .map_err(|e| Error::new(ErrorKind::VALUE_ERROR, e.to_string()))?;
    Ok(Ref::List(Arc::new(list)))
}

/// An element of a list argument: ints as i64, floats as f64, bools as i32, anything else as
/// a reference.
fn element_value(item: &AnyView<'_>, depth: usize) -> Result<Value> {
    match item.type_index() {
        1 => Ok(Value::I64(item.get::<i64>()?)),
        2 => Ok(Value::I32(i32::from(item.get::<bool>()?))),
        3 => Ok(Value::F64(item.get::<f64>()?)),
        _ => Ok(Value::Ref(to_ref(item, depth + 1)?)),
    }
}

/// A VM result as a pactum value.
fn from_value(value: Value) -> Result<Any> {
    Ok(match value {
        Value::I32(v) => Any::from(i64::from(v)),
        Value::I64(v) => Any::from(v),
        Value::F32(v) => Any::from(f64::from(v)),
        Value::F64(v) => Any::from(v),
        Value::Ref(None) => Any::none(),
        Value::Ref(Some(Ref::Buffer(buffer))) => Any::from(Bytes::new(&buffer.to_vec())),
        Value::Ref(Some(Ref::List(list))) => {
            let items = list
                .to_values()
                .into_iter()
                .map(|item| item.map_or_else(|| Ok(Any::none()), from_value))
                .collect::<Result<Vec<_>>>()?;
            Any::from(Array::new(items))
        }
        Value::Ref(Some(other)) => match other.downcast_ref::<HalBufferView>() {
            // The view itself must be the caller's only (a global may hold the same view).
            Some(view) => match buffer_view_as_tensor(view, ref_is_unique(&other))? {
                Some(tensor) => Any::from(tensor),
                None => Any::from(Obj::new(VmRef(other))),
            },
            None => Any::from(Obj::new(VmRef(other))),
        },
    })
}

/// The 8-bit float types IREE 3.13 has, as DLPack codes and HAL element types (the DLPack
/// names are `ml_dtypes`' names: `float8_e4m3fn`).
const FLOAT8_TYPES: [(DLDataTypeCode, HalElementType); 5] = [
    (DLDataTypeCode::FLOAT8_E5M2, HalElementType::F8E5M2),
    (DLDataTypeCode::FLOAT8_E4M3FN, HalElementType::F8E4M3FN),
    (DLDataTypeCode::FLOAT8_E5M2FNUZ, HalElementType::F8E5M2FNUZ),
    (DLDataTypeCode::FLOAT8_E4M3FNUZ, HalElementType::F8E4M3FNUZ),
    (DLDataTypeCode::FLOAT8_E8M0FNU, HalElementType::F8E8M0FNU),
];

/// The HAL element type of a pactum data type: integers are signless, as the compiler's
/// tensors are (IREE takes any integer of the same width for them); booleans are IREE's
/// 8-bit `bool8` (what the compiler asserts for `i1` tensors, and what `iree-run-module`
/// parses `i1` as); integers narrower than a byte (`int4`, `uint2`) are the packed sub-byte
/// types; the 8-bit floats are IREE's `f8E4M3FN` and its kin.
pub fn hal_element_type(dtype: DataType) -> Option<HalElementType> {
    if dtype.lanes != 1 {
        return None;
    }
    let bits = u32::from(dtype.bits);
    let numerical = match dtype.code {
        DLDataTypeCode::FLOAT if matches!(bits, 16 | 32 | 64) => 0x21,
        DLDataTypeCode::BFLOAT if bits == 16 => 0x22,
        DLDataTypeCode::INT if matches!(bits, 2 | 4 | 8 | 16 | 32 | 64) => 0x10,
        DLDataTypeCode::UINT if matches!(bits, 2 | 4 | 8 | 16 | 32 | 64) => 0x12,
        DLDataTypeCode::BOOL if bits == 8 => return Some(HalElementType::BOOL8),
        code if bits == 8 => {
            let (_, ty) = FLOAT8_TYPES.iter().find(|(c, _)| *c == code)?;
            return Some(*ty);
        }
        _ => return None,
    };
    Some(HalElementType(numerical << 24 | bits))
}

/// The pactum data type of a HAL element type (`None` for types pactum has none for).
/// Sub-byte integers become `int4`/`uint2`... tensors of one element a byte, as `ml_dtypes`
/// holds them.
pub fn data_type(element_type: HalElementType) -> Option<DataType> {
    let bits = element_type.bit_count();
    let code = match (element_type.numerical_type(), bits) {
        (0x10 | 0x13, 1) | (0x13, 8) => return Some(DataType::BOOL),
        (0x10 | 0x11, 2 | 4 | 8 | 16 | 32 | 64) => DLDataTypeCode::INT,
        (0x12, 2 | 4 | 8 | 16 | 32 | 64) => DLDataTypeCode::UINT,
        (0x21, 16 | 32 | 64) => DLDataTypeCode::FLOAT,
        (0x22, 16) => DLDataTypeCode::BFLOAT,
        _ => {
            let (code, _) = FLOAT8_TYPES.iter().find(|(_, ty)| *ty == element_type)?;
            *code
        }
    };
    Some(DataType::scalar(code, bits as u8))
}

/// Sub-byte elements, one a byte (the value's bits in the low bits, as `ml_dtypes` stores
/// `int4`), packed as IREE packs them: element `k` in the bits `(k * bits) % 8` up of byte
/// `k * bits / 8`.
fn pack_sub_byte(elements: &[u8], bits: u32) -> Vec<u8> {
    let per_byte = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    elements
        .chunks(per_byte)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u8, |byte, (i, &e)| byte | (e & mask) << (i as u32 * bits))
        })
        .collect()
}

/// The inverse of [`pack_sub_byte`]: `count` elements, one a byte.
fn unpack_sub_byte(packed: &[u8], bits: u32, count: usize) -> Vec<u8> {
    let per_byte = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    (0..count)
        .map(|k| {
            let byte = packed.get(k / per_byte).copied().unwrap_or(0);
            (byte >> ((k % per_byte) as u32 * bits)) & mask
        })
        .collect()
}

/// The unsigned integer type of the same size, to move elements as plain bits.
fn bits_type(dtype: DataType) -> Result<DataType> {
    Ok(match dtype.element_bytes() {
        Some(1) => DataType::U8,
        Some(2) => DataType::U16,
        Some(4) => DataType::U32,
        Some(8) => DataType::U64,
        _ => {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!("tensors of {dtype} cannot be passed to IREE modules"),
            ));
        }
    })
}

/// The elements of a CPU tensor as little-endian bytes, row-major.
fn tensor_bytes(tensor: &Tensor) -> Result<Vec<u8>> {
    let compact = tensor.to_contiguous()?;
    let bits = compact.view_as(bits_type(compact.dtype())?)?;
    Ok(match bits.dtype().bits {
        8 => bits.to_vec::<u8>()?,
        16 => bits
            .to_vec::<u16>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        32 => bits
            .to_vec::<u32>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        _ => bits
            .to_vec::<u64>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    })
}

/// A CPU tensor as a dense row-major buffer view: over the tensor's own memory, without a
/// copy, where IREE's heap allocator could import it; a copy elsewhere.
///
/// What IREE does, and so what this does:
/// - IREE's local devices allocate from a heap allocator whose `import_buffer` takes an
///   `IREE_HAL_EXTERNAL_BUFFER_TYPE_HOST_ALLOCATION` and wraps its pointer without a copy
///   (`iree_hal_heap_buffer_wrap`, runtime/src/iree/hal/allocator_heap.c, buffer_heap.c),
///   calling the caller's release callback when the last reference to the buffer goes. The
///   wrap refuses memory not aligned to `IREE_HAL_HEAP_BUFFER_ALIGNMENT` (64 bytes: compiled
///   code assumes it of every binding) with `OUT_OF_RANGE`. The memory is used in place: a
///   program that writes its argument (an in-place result, `hal.tensor.alias`) writes the
///   caller's memory, when imported with write access.
/// - Here the same: a contiguous tensor whose first element is 64-byte aligned, of a type a
///   byte or wider, becomes a buffer over its memory ([`HostMemory::borrowed`]) that holds a
///   reference to the tensor until the buffer's last user drops it (the caller may drop its
///   own at once). A program writing the argument writes the tensor, as with IREE's import.
///   Results over that memory are copied out (a result tensor takes a buffer's memory over
///   only when the memory is the buffer's own), so a result never aliases an input.
/// - Everything else is copied into a new buffer, as IREE would have to: misaligned or
///   strided tensors (IREE's import refuses them), sub-byte types (packed here, a byte an
///   element in the tensor), empty tensors, big-endian hosts. IREE's Python runtime copies
///   every NumPy argument (`HalAllocator::AllocateBufferCopy`: an allocation and a
///   host-to-device transfer, runtime/bindings/python/hal.cc).
/// - Memory that must never be written is not handed to this function as it is: `pactum.iree`
///   copies read-only NumPy arrays first (DLPack refuses to export them), and `pactum run`
///   maps `.npy` files copy-on-write (as parameter archives are mapped), so a program's
///   writes stay in private pages.
pub fn tensor_to_buffer_view(tensor: &Tensor) -> Result<HalBufferView> {
    if tensor.device().device_type != DLDeviceType::CPU {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            format!(
                "IREE modules run on pactum's local CPU device: expected a CPU tensor, got one \
                 on {}",
                tensor.device()
            ),
        ));
    }
    let element_type = hal_element_type(tensor.dtype()).ok_or_else(|| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "tensors of {} cannot be passed to IREE modules",
                tensor.dtype()
            ),
        )
    })?;
    let shape = tensor.shape().iter().map(|&d| d.max(0) as u64).collect();
    if let Some(buffer) = imported_buffer(tensor, element_type) {
        let hal = |e: crate::status::StatusError| Error::new(ErrorKind::VALUE_ERROR, e.message);
        return HalBufferView::new(buffer, shape, element_type, DENSE_ROW_MAJOR).map_err(hal);
    }
    copied_buffer_view(tensor, element_type, shape)
}

/// A buffer over `tensor`'s own memory, holding a reference to it, when IREE's heap allocator
/// could import that memory (see [`tensor_to_buffer_view`]); `None` when it must be copied.
fn imported_buffer(tensor: &Tensor, element_type: HalElementType) -> Option<HalBuffer> {
    if !cfg!(target_endian = "little") || element_type.is_sub_byte() || !tensor.is_contiguous() {
        return None;
    }
    let length = usize::try_from(tensor.numel())
        .ok()?
        .checked_mul(tensor.dtype().element_bytes()?)?;
    let data = tensor.data_ptr().cast::<u8>();
    // A contiguous CPU tensor holds `length` bytes at its data pointer (its first element),
    // allocated, readable and writable while the tensor lives. Concurrent writes by others
    // are the caller's to prevent, as for every tensor handed to a call (DLPack's contract;
    // IREE's import makes the same one). The block holds a reference to the tensor while any
    // buffer or view uses the bytes.
    // SAFETY: the bytes stay valid and writable for the block's life, as said above.
    let memory = unsafe { HostMemory::borrowed(data, length, Box::new(tensor.clone())) }?;
    Some(HalBuffer::borrowed(memory))
}

/// The most bytes of freed argument copies kept for reuse ([`argument_copies`]).
const ARGUMENT_COPY_CACHE_BYTES: usize = 64 << 20;

/// Freed blocks of argument copies, kept for the next call's copies of the same size: a model
/// called in a loop with arguments that must be copied (a NumPy array is 16 bytes past a
/// 64-byte boundary) then maps no fresh pages and takes no page faults for them each call, as
/// IREE's allocator reuses freed heap memory. Every byte of a reused block is overwritten by
/// the copy, so nothing of an earlier call's arguments is ever read.
fn argument_copies() -> &'static Arc<BlockCache> {
    static CACHE: std::sync::OnceLock<Arc<BlockCache>> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| BlockCache::new(ARGUMENT_COPY_CACHE_BYTES))
}

/// A CPU tensor copied into a new HAL buffer, as a dense row-major view of `shape`.
fn copied_buffer_view(
    tensor: &Tensor,
    element_type: HalElementType,
    shape: Vec<u64>,
) -> Result<HalBufferView> {
    let hal = |e: crate::status::StatusError| Error::new(ErrorKind::VALUE_ERROR, e.message);
    let buffer = if cfg!(target_endian = "little") {
        // The tensor's bytes are already the little-endian bytes IREE reads: one copy, from
        // the tensor (or a compact copy of a strided one) into the HAL buffer.
        let compact;
        let source = if tensor.is_contiguous() {
            tensor
        } else {
            compact = tensor.to_contiguous()?;
            &compact
        };
        let element = source.dtype().element_bytes().ok_or_else(|| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "tensors of {} cannot be passed to IREE modules",
                    source.dtype()
                ),
            )
        })?;
        let length = usize::try_from(source.numel())
            .ok()
            .and_then(|n| n.checked_mul(element))
            .ok_or_else(|| Error::new(ErrorKind::VALUE_ERROR, "tensor too large"))?;
        let buffer =
            HalBuffer::allocate_in(length as i64, None, Some(argument_copies())).map_err(hal)?;
        if length > 0 {
            let (target, _) = buffer.raw_range(0, length as i64).map_err(hal)?;
            // SAFETY: a contiguous CPU tensor holds `length` bytes at its data pointer, and the
            // buffer was just allocated with `length` bytes, shared with nothing yet.
            unsafe {
                std::ptr::copy_nonoverlapping(source.data_ptr().cast::<u8>(), target, length);
            }
        }
        buffer
    } else {
        HalBuffer::from_bytes(&tensor_bytes(tensor)?, None).map_err(hal)?
    };
    // Sub-byte elements are a byte each in the tensor (as `ml_dtypes` holds them) and packed
    // in the buffer, as IREE's programs read them.
    let buffer = if element_type.is_sub_byte() {
        let packed = pack_sub_byte(&buffer.to_vec(), element_type.bit_count());
        HalBuffer::from_bytes(&packed, None).map_err(hal)?
    } else {
        buffer
    };
    HalBufferView::new(buffer, shape, element_type, DENSE_ROW_MAJOR).map_err(hal)
}

/// Whether `r` is the only reference to its object.
fn ref_is_unique(r: &Ref) -> bool {
    match r {
        Ref::Object(o) => Arc::strong_count(o) == 1 && Arc::weak_count(o) == 0,
        _ => false,
    }
}

/// A dense buffer view copied into a new CPU tensor; `None` when pactum has no data type for
/// its elements or it is not dense row-major.
pub fn buffer_view_to_tensor(view: &HalBufferView) -> Result<Option<Tensor>> {
    buffer_view_as_tensor(view, false)
}

/// [`buffer_view_to_tensor`], or, when `may_take` (nothing else holds the view) and nothing
/// else holds its buffer's allocation, a tensor over the buffer's own bytes, keeping the
/// buffer alive (no copy).
fn buffer_view_as_tensor(view: &HalBufferView, may_take: bool) -> Result<Option<Tensor>> {
    let Some(dtype) = data_type(view.element_type) else {
        return Ok(None);
    };
    if view.encoding_type != DENSE_ROW_MAJOR {
        return Ok(None);
    }
    let shape = view
        .shape
        .iter()
        .map(|&d| i64::try_from(d))
        .collect::<std::result::Result<Vec<i64>, _>>()
        .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "buffer view dimension too large"))?;
    let length = HalBufferView::byte_length(&view.shape, view.element_type)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n as u64 <= view.buffer.len())
        .ok_or_else(|| Error::new(ErrorKind::VALUE_ERROR, "buffer view larger than its buffer"))?;
    if view.element_type.is_sub_byte() {
        // Packed in the buffer, a byte each in the tensor (as `ml_dtypes` holds them).
        let count = usize::try_from(view.element_count())
            .map_err(|_| Error::new(ErrorKind::VALUE_ERROR, "buffer view too large"))?;
        let mut packed = view.buffer.to_vec();
        packed.truncate(length);
        let elements = unpack_sub_byte(&packed, view.element_type.bit_count(), count);
        let tensor = Tensor::empty(&shape, dtype)?;
        if count > 0 {
            // SAFETY: the new tensor holds `count` one-byte elements at its data pointer and
            // shares its memory with nothing.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    elements.as_ptr(),
                    tensor.data_ptr().cast::<u8>(),
                    count,
                );
            }
        }
        return Ok(Some(tensor));
    }
    if cfg!(target_endian = "little") {
        let element = dtype.element_bytes().unwrap_or(1);
        if let Some(data) = view.buffer.exclusive_ptr().filter(|_| may_take) {
            if (data as usize) % element == 0 {
                // Nothing else holds the buffer's allocation (the VM has let go of it): the
                // tensor takes it over, without a copy, and keeps it alive.
                let buffer = view.buffer.clone();
                let strides = compact_strides(&shape);
                // SAFETY: the buffer holds `length` bytes at `data` (checked above), which stay
                // valid while the buffer lives, and the release closure owns a handle to it.
                return unsafe {
                    Tensor::from_raw_parts(
                        data.cast(),
                        dtype,
                        pactum::Device::CPU,
                        &shape,
                        &strides,
                        move || drop(buffer),
                    )
                }
                .map(Some);
            }
        }
        let tensor = Tensor::empty(&shape, dtype)?;
        if length > 0 {
            let (source, _) = view
                .buffer
                .raw_range(0, length as i64)
                .map_err(|e| Error::new(ErrorKind::VALUE_ERROR, e.message))?;
            // SAFETY: the buffer holds `length` bytes at `source`; the new tensor holds as many
            // and shares nothing with it.
            unsafe {
                std::ptr::copy_nonoverlapping(source, tensor.data_ptr().cast::<u8>(), length);
            }
        }
        return Ok(Some(tensor));
    }
    let tensor = Tensor::empty(&shape, dtype)?;
    let bytes = view.to_bytes();
    let bits = tensor.view_as(bits_type(dtype)?)?;
    let size = dtype.element_bytes().unwrap_or(1);
    match size {
        1 => bits.copy_from_slice(&bytes)?,
        2 => bits.copy_from_slice(
            &bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect::<Vec<_>>(),
        )?,
        4 => bits.copy_from_slice(
            &bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<_>>(),
        )?,
        _ => bits.copy_from_slice(
            &bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect::<Vec<_>>(),
        )?,
    }
    Ok(Some(tensor))
}

/// Row-major strides, in elements, of `shape`.
fn compact_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1].max(1);
    }
    strides
}

/// The global function that loads `.vmfb` files for `ffi.ModuleLoadFromFile` (and so for
/// [`pactum::Module::load`]): `(path: str, format: str) -> Module`, like
/// `ffi.Module.load_from_file.so`.
pub const VMFB_LOADER: &str = "ffi.Module.load_from_file.vmfb";

/// The kind `ffi.ModuleGetKind` reports for modules the `.vmfb` loader makes.
pub const VMFB_KIND: &str = "vmfb";

/// An [`IreeModule`] served as a TVM FFI module (kind [`VMFB_KIND`]): each export by name as
/// [`IreeModule::function`] gives it, an unknown name `None`.
struct VmfbModuleImpl(IreeModule);

impl pactum::ModuleImpl for VmfbModuleImpl {
    fn kind(&self) -> &str {
        VMFB_KIND
    }

    fn get_function(&self, name: &str) -> Result<Option<Function>> {
        if self.0.export_names().any(|export| export == name) {
            self.0.function(name).map(Some)
        } else {
            Ok(None)
        }
    }
}

impl IreeModule {
    /// This module as a TVM FFI [`pactum::Module`] of kind `vmfb` (see
    /// [`pactum::Module::from_impl`], which needs pactum's own runtime).
    pub fn into_module(self) -> Result<pactum::Module> {
        pactum::Module::from_impl(Arc::new(VmfbModuleImpl(self)))
    }
}

/// Registers [`VMFB_LOADER`], so that `ffi.ModuleLoadFromFile` (and [`pactum::Module::load`])
/// loads a `.vmfb` the way it loads a shared library: an [`IreeModule`] with default
/// [`Limits`], served as a module of kind `vmfb`.
///
/// Idempotent: a loader already registered under that name (by an earlier call, or by anyone
/// else) is kept. Needs pactum's own runtime to make the modules; under the official
/// `libtvm_ffi.so` the registration succeeds but each load reports
/// [`pactum::Module::from_impl`]'s error.
pub fn register_vmfb_loader() -> Result<()> {
    static REGISTERING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = REGISTERING.lock().unwrap_or_else(|p| p.into_inner());
    if Function::get_global(VMFB_LOADER).is_some() {
        return Ok(());
    }
    let loader = Function::from_packed(|args: &[AnyView<'_>]| {
        let path = match args {
            [path, _] | [path] => path.get::<&str>()?,
            _ => {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "{VMFB_LOADER}(path: str, format: str) takes 2 arguments, got {}",
                        args.len()
                    ),
                ));
            }
        };
        Ok(IreeModule::load(path)?.into_module()?.into())
    });
    loader.register_global(VMFB_LOADER, false)
}
