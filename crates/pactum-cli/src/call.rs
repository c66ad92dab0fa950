//! `pactum call LIB.so|MODULE.vmfb FUNC ARG... [--out DIR] [--mlir DECLARATION]
//! [--device local-task|local-sync|vulkan|vulkan://N]`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use pactum::sys::tvm_ffi::TVMFFITypeIndex;
use pactum::{Any, AnyView, Array, Function, Map, Module, Tensor};
use pactum_mlir::MlirLibrary;

use crate::library;
use pactum_cli::args::{self, CallArg};
use pactum_iree::hal::{VulkanDevice, Workers};
use pactum_iree::module::{DeviceChoice, IreeModule};
use pactum_iree::signature::Type;
use pactum_iree::structured::StructuredFunction;

/// The device of a `.vmfb` call, named as iree-run-module's `--device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// Native dispatches on the process-wide pool of worker threads (`local-task`).
    LocalTask,
    /// Native dispatches on the calling thread only (`local-sync`).
    LocalSync,
    /// The Vulkan loader's `N`-th device (`vulkan` is `vulkan://0`), for modules compiled
    /// with `--iree-hal-target-device=vulkan`.
    Vulkan(usize),
}

impl Device {
    /// Parses `local-task`, `local-sync`, `vulkan` or `vulkan://N`.
    pub fn parse(text: &str) -> Result<Device> {
        match text {
            "local-task" => Ok(Device::LocalTask),
            "local-sync" => Ok(Device::LocalSync),
            _ => match pactum_iree::hal::vulkan::parse_device_name(text) {
                Some(Ok(index)) => Ok(Device::Vulkan(index)),
                Some(Err(e)) => Err(anyhow!("{e}")),
                None => Err(anyhow!(
                    "unknown device `{text}` (expected local-task, local-sync, vulkan or vulkan://N)"
                )),
            },
        }
    }

    /// The device a context runs on (opening a Vulkan device: an error names what is
    /// missing).
    pub fn choice(self) -> Result<DeviceChoice> {
        Ok(match self {
            Device::LocalTask => DeviceChoice::Local(Workers::shared()),
            Device::LocalSync => DeviceChoice::Local(Workers::CallerThread),
            Device::Vulkan(index) => {
                DeviceChoice::Vulkan(VulkanDevice::open(index).map_err(|e| anyhow!("{e}"))?)
            }
        })
    }
}

/// How a `.vmfb` is loaded: its device, the modules loaded before it in its context
/// (`--module`) and its parameter archives (`--parameters=[SCOPE=]FILE`).
#[derive(Default)]
pub struct VmfbOptions {
    /// Who runs compiled (llvm-cpu) dispatches.
    pub device: Option<Device>,
    /// Modules linked before the called one, in order.
    pub modules: Vec<PathBuf>,
    /// `[SCOPE=]FILE` parameter archives.
    pub parameters: Vec<String>,
}

impl VmfbOptions {
    fn is_empty(&self) -> bool {
        self.device.is_none() && self.modules.is_empty() && self.parameters.is_empty()
    }
}

/// Runs a call and prints its result; tensors go to `out` when given. With `mlir`, the
/// function is an MLIR-compiled one called through the memref convention with that signature.
/// `vmfb` (`.vmfb` modules only) picks who runs compiled (llvm-cpu) dispatches, the modules
/// linked before it and its parameter archives.
/// `named` holds `NAME=VALUE` pairs (`--named`), for `.vmfb` exports only.
pub fn run(
    library_path: &Path,
    function: &str,
    raw_args: &[String],
    named: &[String],
    out: Option<&Path>,
    mlir: Option<&str>,
    vmfb: VmfbOptions,
) -> Result<()> {
    if !library_path.exists() {
        return Err(anyhow!("{}: no such file", library_path.display()));
    }
    let is_vmfb = crate::vmfb::looks_like_vmfb(&crate::inspect::head(library_path)?);
    if !is_vmfb && !named.is_empty() {
        return Err(anyhow!(
            "--named is for the iree.abi named arguments of .vmfb exports, not shared libraries"
        ));
    }
    if is_vmfb {
        if mlir.is_some() {
            return Err(anyhow!(
                "--mlir is for MLIR-compiled shared libraries, not .vmfb modules"
            ));
        }
        let module = load_vmfb(library_path, &vmfb)?;
        // `NAME=VALUE` where NAME is one of the export's iree.abi named arguments passes that
        // argument by name, as --named does; any other argument fills the next position.
        let names = named_parameters(&module, function)?;
        let (bare_named, positional): (Vec<&String>, Vec<&String>) =
            raw_args.iter().partition(|raw| {
                raw.split_once('=')
                    .is_some_and(|(name, _)| names.iter().any(|n| n == name))
            });
        let args = parse_positional(positional.into_iter())?;
        let named = parse_named(named.iter().chain(bare_named), args.len())?;
        let result = call_vmfb(&module, function, &args, &named)?;
        return print_outcome(&args, &result, out);
    }
    let args = parse_positional(raw_args.iter())?;
    let callee = match mlir {
        _ if vmfb.device.is_some() => {
            return Err(anyhow!(
                "--device is for .vmfb modules (local-task, local-sync or vulkan), not shared libraries"
            ));
        }
        _ if !vmfb.is_empty() => {
            return Err(anyhow!(
                "--module and --parameters are for .vmfb modules, not shared libraries"
            ));
        }
        // SAFETY: the user names the library and gives its function's declaration on the
        // command line, as they choose any library `pactum call` loads.
        Some(declaration) => unsafe { MlirLibrary::open(library_path) }
            .and_then(|library| library.function_named(function, declaration))
            .map_err(|e| anyhow!("{e}"))?
            .into_function(),
        None => tvm_ffi_function(library_path, function)?,
    };
    let values: Vec<Any> = args.iter().map(CallArg::to_any).collect();
    let views: Vec<AnyView<'_>> = values.iter().map(Any::view).collect();
    let result = callee
        .call(&views)
        .map_err(|e| anyhow!("{function} failed: {e}"))?;
    print_outcome(&args, &result, out)
}

/// The call arguments, in order.
fn parse_positional<'a>(raw: impl Iterator<Item = &'a String>) -> Result<Vec<CallArg>> {
    raw.enumerate().map(|(i, a)| args::parse(a, i)).collect()
}

/// `NAME=VALUE` pairs (from --named, or bare ones naming an iree.abi named argument); values
/// are numbered after the `positional` arguments in messages.
fn parse_named<'a>(
    pairs: impl Iterator<Item = &'a String>,
    positional: usize,
) -> Result<Vec<(String, CallArg)>> {
    pairs
        .map(|pair| {
            let (name, value) = pair
                .split_once('=')
                .filter(|(name, _)| !name.is_empty())
                .ok_or_else(|| anyhow!("--named `{pair}`: expected NAME=VALUE"))?;
            let value =
                args::parse(value, positional).with_context(|| format!("argument {name}"))?;
            Ok((name.to_owned(), value))
        })
        .collect()
}

/// The names of export `function`'s iree.abi named arguments (none without an iree.abi
/// signature).
fn named_parameters(module: &IreeModule, function: &str) -> Result<Vec<String>> {
    let signature = module.signature(function).map_err(|e| anyhow!("{e}"))?;
    Ok(signature
        .map(|signature| {
            signature
                .args
                .iter()
                .filter_map(|arg| match arg {
                    Type::Named(name, _) => Some(name.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default())
}

/// An IREE bytecode module, run by pactum's VM, its compiled (llvm-cpu) dispatches on
/// `options.device`, after the modules it links, with its parameter archives.
fn load_vmfb(path: &Path, options: &VmfbOptions) -> Result<IreeModule> {
    let device = options.device.unwrap_or(Device::LocalTask);
    let mut builder = IreeModule::builder()
        .limits(pactum_iree::vm::Limits::default())
        .device(device.choice()?);
    builder = crate::tool::add_parameters(builder, &options.parameters)?;
    for module in &options.modules {
        builder = builder.module_file(module).map_err(|e| anyhow!("{e}"))?;
    }
    builder.load(path).map_err(|e| anyhow!("{e}"))
}

/// Calls export `function` as iree-run-module does: plain numbers convert to the declared
/// parameter types, and the arguments fill the parameters in order. Where the export's
/// `iree.abi` names a parameter (a `["named", ...]` record, which the library and IREE's
/// Python binding take by keyword only), the argument in its position is passed by that
/// name; `named` arguments are passed by name.
fn call_vmfb(
    module: &IreeModule,
    function: &str,
    args: &[CallArg],
    named: &[(String, CallArg)],
) -> Result<Any> {
    let failed = |e: pactum::Error| anyhow!("{function} failed: {e}");
    let values: Vec<Any> = args.iter().map(CallArg::to_any).collect();
    let named_values: Vec<(&str, Any)> = named
        .iter()
        .map(|(name, value)| (name.as_str(), value.to_any()))
        .collect();
    let Some(signature) = module.signature(function).map_err(|e| anyhow!("{e}"))? else {
        if let Some((name, _)) = named.first() {
            return Err(anyhow!(
                "--named {name}: export `{function}` records no iree.abi signature, so its \
                 arguments have no names; pass them in order"
            ));
        }
        let views: Vec<AnyView<'_>> = values.iter().map(Any::view).collect();
        let callee = module.function(function).map_err(|e| anyhow!("{e}"))?;
        return callee.call(&views).map_err(failed);
    };
    let names: Vec<&str> = signature
        .args
        .iter()
        .filter_map(|arg| match arg {
            Type::Named(name, _) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    if let Some((name, _)) = named
        .iter()
        .find(|(name, _)| !names.contains(&name.as_str()))
    {
        return Err(anyhow!(
            "--named {name}: export `{function}` has no iree.abi named argument `{name}` (its \
             named arguments: {}); pass the others in order",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
    }
    let flat = module.flat_function(function).map_err(|e| anyhow!("{e}"))?;
    let structured = StructuredFunction::from_iree_abi(flat, signature).map_err(failed)?;
    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    for (index, value) in values.iter().enumerate() {
        match signature.args.get(index) {
            Some(Type::Named(name, _)) => keywords.push((name.as_str(), value.view())),
            _ => positional.push(value.view()),
        }
    }
    keywords.extend(
        named_values
            .iter()
            .map(|(name, value)| (*name, value.view())),
    );
    structured.call(&positional, &keywords).map_err(failed)
}

/// The `__tvm_ffi_<function>` export of a library.
fn tvm_ffi_function(library_path: &Path, function: &str) -> Result<Function> {
    let module = Module::load(library::loadable(library_path))
        .map_err(|e| anyhow!("cannot load {}: {e}", library_path.display()))?;
    if let Some(callee) = module.get_function(function).map_err(|e| anyhow!("{e}"))? {
        return Ok(callee);
    }
    let mlir = library::mlir_function_names(library_path).unwrap_or_default();
    if mlir.iter().any(|name| name == function) {
        return Err(anyhow!(
            "`{function}` in {} is an MLIR function (_mlir_ciface_{function}); its types are \
             not recorded in the library, so pass its declaration: --mlir 'func.func \
             @{function}(...) -> ...'",
            library_path.display()
        ));
    }
    let available = library::export_names(library_path).unwrap_or_default();
    Err(anyhow!(
        "{} has no function `{function}`{}",
        library_path.display(),
        if available.is_empty() {
            String::new()
        } else {
            format!(" (it exports: {})", available.join(", "))
        }
    ))
}

/// Prints the result and, with `out`, saves tensor results and tensor arguments.
fn print_outcome(args: &[CallArg], result: &Any, out: Option<&Path>) -> Result<()> {
    if let Some(out) = out {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    }
    let mut printer = Printer {
        out,
        next_result: 0,
    };
    println!("{}", printer.render(result)?);
    if let Some(out) = out {
        for (index, arg) in args.iter().enumerate() {
            if let CallArg::Tensor { tensor, path } = arg {
                let file = out.join(format!("arg_{index}.npy"));
                let note = save(&file, tensor)?;
                println!(
                    "argument {index} ({}) after the call -> {}{note}",
                    path.display(),
                    file.display()
                );
            }
        }
    }
    Ok(())
}

/// Renders results; tensors are saved as `result_<i>.npy` in call order when `out` is set.
struct Printer<'a> {
    out: Option<&'a Path>,
    next_result: usize,
}

impl Printer<'_> {
    fn render(&mut self, value: &Any) -> Result<String> {
        Ok(match TVMFFITypeIndex(value.type_index()) {
            TVMFFITypeIndex::NONE => "None".to_owned(),
            TVMFFITypeIndex::INT => value.get::<i64>()?.to_string(),
            TVMFFITypeIndex::BOOL => value.get::<bool>()?.to_string(),
            TVMFFITypeIndex::FLOAT => format!("{:?}", value.get::<f64>()?),
            TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                format!("{:?}", value.get::<&str>().unwrap_or("<invalid UTF-8>"))
            }
            TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES => {
                format!("b\"{}\"", value.get::<&[u8]>()?.escape_ascii())
            }
            TVMFFITypeIndex::DATA_TYPE => value.get::<pactum::DataType>()?.to_string(),
            TVMFFITypeIndex::DEVICE => value.get::<pactum::Device>()?.to_string(),
            TVMFFITypeIndex::TENSOR => self.tensor(&value.clone().cast::<Tensor>()?)?,
            TVMFFITypeIndex::ARRAY => {
                let array = value.clone().cast::<Array>()?;
                let items = array
                    .iter()
                    .map(|v| self.render(v))
                    .collect::<Result<Vec<_>>>()?;
                format!("[{}]", items.join(", "))
            }
            TVMFFITypeIndex::MAP => {
                let map = value.clone().cast::<Map>()?;
                let mut items = Vec::new();
                for (k, v) in map.iter() {
                    items.push(format!("{}: {}", self.render(k)?, self.render(v)?));
                }
                format!("{{{}}}", items.join(", "))
            }
            _ => format!("<{}>", value.type_key()),
        })
    }

    fn tensor(&mut self, tensor: &Tensor) -> Result<String> {
        let dims = tensor
            .shape()
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join("x");
        let description = format!(
            "Tensor[{}, {}] on {}",
            tensor.dtype(),
            if dims.is_empty() {
                "scalar".to_owned()
            } else {
                dims
            },
            tensor.device()
        );
        let index = self.next_result;
        self.next_result += 1;
        match self.out {
            Some(out) => {
                let file = out.join(format!("result_{index}.npy"));
                let note = save(&file, tensor)?;
                Ok(format!("{description} -> {}{note}", file.display()))
            }
            None => Ok(format!(
                "{description} (pass --out DIR to save it as result_{index}.npy)"
            )),
        }
    }
}

/// Saves a tensor as `.npy`. The types `ml_dtypes` gives NumPy (`bfloat16`, the `float8_*`
/// types, `int4`...) are written under their names, which `numpy.load` reads with
/// `ml_dtypes` imported; the returned note says so.
fn save(file: &Path, tensor: &Tensor) -> Result<&'static str> {
    use pactum::sys::dlpack::DLDataTypeCode;
    let dtype = tensor.dtype();
    let standard = matches!(
        dtype.code,
        DLDataTypeCode::INT
            | DLDataTypeCode::UINT
            | DLDataTypeCode::FLOAT
            | DLDataTypeCode::BOOL
            | DLDataTypeCode::COMPLEX
    ) && dtype.bits % 8 == 0;
    pactum_npy::write_file(file, tensor).map_err(|e| anyhow!("writing {}: {e}", file.display()))?;
    Ok(if standard {
        ""
    } else {
        " (an ml_dtypes type: numpy.load reads it with ml_dtypes imported)"
    })
}
