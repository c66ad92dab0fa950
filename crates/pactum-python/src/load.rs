//! `pactum.iree.load_module(source, options) -> Module` and `pactum.iree.inspect_source(source)
//! -> str`, the globals behind `pactum.iree.load` (python/pactum/iree.py): one module loaded in
//! a context with the device, linked modules, parameter scopes and trace callback the options
//! name, through [`IreeModule::builder`].
//!
//! `source` (and each linked module) is a path (`str`), a `Bytes`, or a one-dimensional
//! contiguous CPU tensor of bytes (`uint8`/`int8`). A tensor is read in place, without a copy:
//! the module keeps it alive, and its caller promises that nothing writes its memory while
//! any module loaded from it lives (python/pactum/iree.py hands over only memory Python cannot
//! write: `bytes`, read-only mappings; it copies anything else first).
//!
//! `options` is a `Map` whose keys are all optional:
//! - `"device"`: `"local-task"` (default: the shared worker pool, or a pool of `"threads"`
//!   workers), `"local-sync"` (the calling thread, [`Workers::CallerThread`]), or `"vulkan"`
//!   / `"vulkan://N"` (the Vulkan loader's first / `N`-th device, one per process, shared by
//!   every module loaded on it);
//! - `"threads"`: `None` or the worker count of a `local-task` device's own pool;
//! - `"modules"`: an `Array` of modules registered before the loaded one, in order: paths,
//!   bytes, tensors (as `source`) or `pactum.iree.NativeModule` objects;
//! - `"parameters"`: an `Array` of `[scope, archive]` pairs, the archive a path (read by
//!   [`ParameterIndex::open`]) or a `pactum.iree.ParameterIndex` object;
//! - `"trace"`: `None` or a `Function` called with `(key: str, tensors: Array)` for each
//!   `hal.buffer_view.trace` the program runs ([`ModuleBuilder::trace_sink`]);
//! - `"allow_casts"`: whether the exports convert tensors of another element type than their
//!   signature declares ([`StructuredFunction::allow_casts`]; default: refused).
//!
//! Errors are `ValueError`s (`TypeError`s for a value of the wrong kind) naming the option and
//! item they are about; a module that fails to load is named by its path (the builder's
//! errors do that).

use std::sync::{Arc, Mutex};

use pactum::sys::dlpack::DLDeviceType;
use pactum::{
    Any, AnyView, Array, Bytes, DataType, Error, ErrorKind, FromAnyView, Function, Map, Obj,
    Result, Tensor,
};
use pactum_iree::hal::{HalBufferView, TraceSink, VulkanDevice, Workers};
use pactum_iree::module::{
    DeviceChoice, IreeModule, LinkedModule, ModuleBuilder, NativeModuleObject,
    ParameterIndexObject, VMFB_KIND, buffer_view_to_tensor,
};
use pactum_iree::parameters::ParameterIndex;
use pactum_iree::status::{StatusCode, StatusError};
use pactum_iree::structured::StructuredFunction;
use pactum_iree::vmfb::VmfbFile;

/// The global behind `pactum.iree.load`.
pub const LOAD_MODULE: &str = "pactum.iree.load_module";
/// The global behind `pactum.iree.inspect` of a module given by its bytes.
pub const INSPECT_SOURCE: &str = "pactum.iree.inspect_source";

/// The device names `"device"` accepts (and `vulkan://N`).
const DEVICES: [&str; 3] = ["local-task", "local-sync", "vulkan"];

/// Registers [`LOAD_MODULE`] and [`INSPECT_SOURCE`] (unless present).
pub fn register() -> Result<()> {
    register_global(LOAD_MODULE, || {
        Function::from_packed(|args: &[AnyView<'_>]| {
            let (source, options) = match args {
                [source] => (source, None),
                [source, options] => (source, Some(options)),
                _ => {
                    return Err(Error::new(
                        ErrorKind::TYPE_ERROR,
                        format!(
                            "{LOAD_MODULE}(source, options: Map) takes 2 arguments, got {}",
                            args.len()
                        ),
                    ));
                }
            };
            let options = match options {
                Some(options) if options.type_index() != 0 => {
                    Some(options.get::<Map>().map_err(|_| {
                        type_error(format!(
                            "options: expected a Map, got {}",
                            options.type_key()
                        ))
                    })?)
                }
                _ => None,
            };
            if let Some(options) = &options {
                check_keys(options)?;
            }
            let allow_casts = option(options.as_ref(), "allow_casts")
                .map(|a| typed::<bool>(&a, "allow_casts", "a bool"))
                .transpose()?
                .unwrap_or(false);
            let module = load_module(source, options.as_ref())?;
            Ok(pactum::Module::from_impl(Arc::new(LoadedModule {
                module,
                allow_casts,
            }))?
            .into())
        })
    })?;
    register_global(INSPECT_SOURCE, || {
        Function::from_packed(|args: &[AnyView<'_>]| {
            let [source] = args else {
                return Err(type_error(format!(
                    "{INSPECT_SOURCE}(source) takes 1 argument, got {}",
                    args.len()
                )));
            };
            let (file, name) = match module_source(source, "source")? {
                Source::Path(path) => {
                    let file =
                        VmfbFile::open(&path).map_err(|e| value_error(format!("{path}: {e}")))?;
                    (Arc::new(file), path)
                }
                Source::File(file) => (file, "<bytes>".to_owned()),
            };
            let module = file
                .module()
                .map_err(|e| value_error(format!("{name}: {e}")))?;
            let report = pactum_iree::vmfb::inspect::report(&module);
            Ok(Any::from(pactum::String::from(report.to_string().as_str())))
        })
    })
}

/// Registers `make()` as global `name` unless the runtime already has one.
fn register_global(name: &str, make: impl FnOnce() -> Function) -> Result<()> {
    if Function::get_global(name).is_none() {
        make().register_global(name, false)?;
    }
    Ok(())
}

/// A loaded module served as a TVM FFI module of kind `vmfb` (as the `.vmfb` loader serves
/// one), its structured exports converting tensors of other element types when
/// `allow_casts`.
struct LoadedModule {
    module: IreeModule,
    allow_casts: bool,
}

impl pactum::ModuleImpl for LoadedModule {
    fn kind(&self) -> &str {
        VMFB_KIND
    }

    fn get_function(&self, name: &str) -> Result<Option<Function>> {
        if !self.module.export_names().any(|export| export == name) {
            return Ok(None);
        }
        match self.module.signature(name)? {
            Some(signature) if self.allow_casts => {
                let flat = self.module.flat_function(name)?;
                Ok(Some(
                    StructuredFunction::from_iree_abi(flat, signature)?
                        .allow_casts(true)
                        .into_function(),
                ))
            }
            _ => self.module.function(name).map(Some),
        }
    }
}

fn type_error(message: String) -> Error {
    Error::new(ErrorKind::TYPE_ERROR, message)
}

fn value_error(message: String) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, message)
}

/// Where a module comes from.
enum Source {
    Path(String),
    File(Arc<VmfbFile>),
}

/// A tensor's bytes, read in place (see the module docs for who keeps them unwritten).
struct TensorBytes {
    tensor: Tensor,
    len: usize,
}

impl AsRef<[u8]> for TensorBytes {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // `module_source` checked that the tensor is a contiguous CPU tensor of `len` one-byte
        // elements; `self` holds the tensor, whose producer keeps the memory alive until it is
        // released; the global's caller promises nothing writes it meanwhile (module docs).
        // SAFETY: `len` readable, live, unwritten bytes at the data pointer, as said above.
        unsafe { std::slice::from_raw_parts(self.tensor.data_ptr().cast::<u8>(), self.len) }
    }
}

/// An FFI `Bytes` object's bytes (immutable, shared without a copy).
struct FfiBytes(Bytes);

impl AsRef<[u8]> for FfiBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// `value` as a module source; `what` names it in errors.
fn module_source(value: &AnyView<'_>, what: &str) -> Result<Source> {
    if let Ok(path) = value.get::<&str>() {
        return Ok(Source::Path(path.to_owned()));
    }
    if let Ok(bytes) = value.get::<Bytes>() {
        return Ok(Source::File(Arc::new(VmfbFile::from_shared(Arc::new(
            FfiBytes(bytes),
        )))));
    }
    if let Ok(tensor) = value.get::<Tensor>() {
        let dtype = tensor.dtype();
        if tensor.device().device_type != DLDeviceType::CPU
            || !(dtype == DataType::U8 || dtype == DataType::I8)
            || tensor.ndim() != 1
            || !tensor.is_contiguous()
        {
            return Err(type_error(format!(
                "{what}: a module's bytes must be a one-dimensional contiguous CPU tensor of \
                 uint8, got a {}-dimensional {} tensor on {}",
                tensor.ndim(),
                dtype,
                tensor.device()
            )));
        }
        let len = usize::try_from(tensor.numel())
            .map_err(|_| value_error(format!("{what}: tensor too large")))?;
        return Ok(Source::File(Arc::new(VmfbFile::from_shared(Arc::new(
            TensorBytes { tensor, len },
        )))));
    }
    Err(type_error(format!(
        "{what}: expected a path (str), bytes or a uint8 tensor, got {}",
        value.type_key()
    )))
}

/// The keys `options` may have.
const OPTION_KEYS: [&str; 6] = [
    "device",
    "threads",
    "modules",
    "parameters",
    "trace",
    "allow_casts",
];

/// Refuses keys of `options` that name no option (a misspelt one would be ignored otherwise).
fn check_keys(options: &Map) -> Result<()> {
    for key in options.keys() {
        let known = key
            .view()
            .get::<&str>()
            .is_ok_and(|key| OPTION_KEYS.contains(&key));
        if !known {
            return Err(value_error(format!(
                "options: unknown key {key:?} (expected some of: {})",
                OPTION_KEYS.join(", ")
            )));
        }
    }
    Ok(())
}

/// Option `key` of `options`, `None` when absent or `None`.
fn option(options: Option<&Map>, key: &str) -> Option<Any> {
    let value = options?.get(&Any::from(key).view())?;
    (value.type_index() != 0).then_some(value)
}

/// `value` as a `T`; a TypeError `{what}: expected {expected}, got <its type>` when it is
/// another type.
fn typed<'a, T: FromAnyView<'a>>(value: &'a Any, what: &str, expected: &str) -> Result<T> {
    value.get::<T>().map_err(|_| {
        type_error(format!(
            "{what}: expected {expected}, got {}",
            value.type_key()
        ))
    })
}

/// The Vulkan devices opened so far, by the loader's index: one per process, shared by every
/// module loaded on it (each context's clone charges its own budget).
fn vulkan_device(index: usize) -> Result<VulkanDevice> {
    static OPENED: Mutex<Vec<(usize, VulkanDevice)>> = Mutex::new(Vec::new());
    let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, device)) = opened.iter().find(|(i, _)| *i == index) {
        return Ok(device.clone());
    }
    let device =
        VulkanDevice::open(index).map_err(|e| value_error(format!("device: {}", e.message)))?;
    opened.push((index, device.clone()));
    Ok(device)
}

/// The device `device` and `threads` name.
fn device_choice(device: Option<&str>, threads: Option<i64>) -> Result<DeviceChoice> {
    if let Some(index) = device.and_then(pactum_iree::hal::vulkan::parse_device_name) {
        let index = index.map_err(|e| value_error(format!("device: {}", e.message)))?;
        if threads.is_some() {
            return Err(value_error(
                "threads: applies to local-task only, not to a Vulkan device".to_owned(),
            ));
        }
        return Ok(DeviceChoice::Vulkan(vulkan_device(index)?));
    }
    workers(device, threads).map(DeviceChoice::Local)
}

/// The workers `device` and `threads` name.
fn workers(device: Option<&str>, threads: Option<i64>) -> Result<Workers> {
    match (device.unwrap_or("local-task"), threads) {
        ("local-task", None) => Ok(Workers::shared()),
        ("local-task", Some(threads)) => usize::try_from(threads)
            .map_err(|_| {
                value_error(format!(
                    "threads: {threads} worker threads: expected 1 to 255"
                ))
            })
            .and_then(|n| {
                Workers::with_threads(n).map_err(|e| value_error(format!("threads: {}", e.message)))
            }),
        ("local-sync", None) => Ok(Workers::CallerThread),
        ("local-sync", Some(_)) => Err(value_error(
            "threads: the local-sync device runs everything on the calling thread; threads \
             applies to local-task only"
                .to_owned(),
        )),
        (other, _) => Err(value_error(format!(
            "device: unknown device {other:?} (expected one of: {}, vulkan://N)",
            DEVICES.join(", ")
        ))),
    }
}

/// A trace sink calling `callback(key, [tensors])`.
fn trace_sink(callback: Function) -> TraceSink {
    Arc::new(move |key: &str, views: &[&HalBufferView]| {
        let tensors = views
            .iter()
            .map(|view| {
                Ok(match buffer_view_to_tensor(view)? {
                    Some(tensor) => Any::from(tensor),
                    // An element type or encoding pactum has no tensor for.
                    None => Any::none(),
                })
            })
            .collect::<Result<Vec<Any>>>()
            .and_then(|tensors| {
                let key = Any::from(key);
                let tensors = Any::from(Array::new(tensors));
                callback.call(&[key.view(), tensors.view()])
            });
        tensors.map(drop).map_err(|error| {
            StatusError::new(
                StatusCode::Internal,
                format!("the trace callback failed on {key:?}: {error}"),
            )
        })
    })
}

/// Loads `source` as the options say.
fn load_module(source: &AnyView<'_>, options: Option<&Map>) -> Result<IreeModule> {
    let source = module_source(source, "source")?;
    let device = option(options, "device");
    let device = device
        .as_ref()
        .map(|d| typed::<&str>(d, "device", "a str").map(str::to_owned))
        .transpose()?;
    let threads = option(options, "threads")
        .map(|t| typed::<i64>(&t, "threads", "an int"))
        .transpose()?;
    let mut builder = ModuleBuilder::new().device(device_choice(device.as_deref(), threads)?);
    if let Some(modules) = option(options, "modules") {
        let modules = typed::<Array>(&modules, "modules", "an Array")?;
        for (index, module) in modules.iter().enumerate() {
            let what = format!("modules[{index}]");
            let view = module.view();
            if let Ok(native) = view.get::<Obj<NativeModuleObject>>() {
                builder = builder.native_module(native.0.clone());
                continue;
            }
            builder = match module_source(&view, &what)? {
                Source::Path(path) => builder.module_file(path)?,
                Source::File(file) => builder.link(LinkedModule::Bytecode { file, path: None }),
            };
        }
    }
    if let Some(parameters) = option(options, "parameters") {
        let parameters = typed::<Array>(
            &parameters,
            "parameters",
            "an Array of [scope, archive] pairs",
        )?;
        for (index, pair) in parameters.iter().enumerate() {
            let what = format!("parameters[{index}]");
            let pair = pair
                .view()
                .get::<Array>()
                .ok()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| {
                    type_error(format!(
                        "{what}: expected a [scope, archive] pair, got {}",
                        pair.type_key()
                    ))
                })?;
            let items: Vec<Any> = pair.iter().cloned().collect();
            let scope = items[0]
                .view()
                .get::<&str>()
                .map(str::to_owned)
                .map_err(|_| {
                    type_error(format!(
                        "{what}: the scope must be a str, got {}",
                        items[0].type_key()
                    ))
                })?;
            let archive = items[1].view();
            let index = if let Ok(path) = archive.get::<&str>() {
                ParameterIndex::open(path).map_err(|e| value_error(format!("{what}: {e}")))?
            } else if let Ok(object) = archive.get::<Obj<ParameterIndexObject>>() {
                object.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
            } else {
                return Err(type_error(format!(
                    "{what}: the archive must be a path (str) or a pactum.iree.ParameterIndex, \
                     got {}",
                    archive.type_key()
                )));
            };
            builder = builder.parameters(scope, index);
        }
    }
    if let Some(trace) = option(options, "trace") {
        let callback = typed::<Function>(&trace, "trace", "a Function")?;
        builder = builder.trace_sink(trace_sink(callback));
    }
    match source {
        Source::Path(path) => builder.load(path),
        Source::File(file) => builder.load_file(file),
    }
}
