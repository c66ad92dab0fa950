//! [`ModuleBuilder`]: one module's context made of several modules (IREE's repeated
//! `--module`), with the device's workers, the limits and a trace sink chosen.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pactum::{Error, ErrorKind, Result};

use super::{Export, Inner, IreeModule, positional_by_declaration, vm_error};
use crate::check::CheckModule;
use crate::hal::{HalDevice, HalModule, LocalDevice, TraceSink, Workers};
use crate::parameters::{
    IO_PARAMETERS_MODULE_NAME, IoParametersModule, ParameterIndex, ParameterProvider,
};
use crate::vm::{Context, Limits, NativeModule};
use crate::vmfb::VmfbFile;

/// The device a context's `hal` module runs programs on.
#[derive(Clone, Debug)]
pub enum DeviceChoice {
    /// The local CPU device, its ELF dispatches run by these workers
    /// ([`Workers::shared`]: `local-task`; [`Workers::CallerThread`]: `local-sync`).
    Local(Workers),
    /// A Vulkan device (IREE's `vulkan`), for modules compiled with
    /// `--iree-hal-target-device=vulkan`. Each context gets a clone charging its own memory
    /// budget; the Vulkan device and its queue are shared.
    #[cfg(feature = "vulkan")]
    Vulkan(crate::hal::VulkanDevice),
}

impl From<Workers> for DeviceChoice {
    fn from(workers: Workers) -> DeviceChoice {
        DeviceChoice::Local(workers)
    }
}

#[cfg(feature = "vulkan")]
impl From<crate::hal::VulkanDevice> for DeviceChoice {
    fn from(device: crate::hal::VulkanDevice) -> DeviceChoice {
        DeviceChoice::Vulkan(device)
    }
}

/// A module registered in the context before the one that is called, in the order given:
/// its exports are what later modules may import.
#[derive(Clone)]
pub enum LinkedModule {
    /// A bytecode module (`.vmfb`), with the file it came from for error messages.
    Bytecode {
        /// The module's bytes.
        file: Arc<VmfbFile>,
        /// Where it was read from, if from a file.
        path: Option<PathBuf>,
    },
    /// A module whose functions are host code (Rust, or Python through pactum's package).
    Native(Arc<dyn NativeModule>),
}

impl std::fmt::Debug for LinkedModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkedModule::Bytecode { path, .. } => f
                .debug_struct("Bytecode")
                .field("path", path)
                .finish_non_exhaustive(),
            LinkedModule::Native(module) => f.debug_tuple("Native").field(&module.name()).finish(),
        }
    }
}

/// Builds an [`IreeModule`] whose context holds other modules too, as `iree-run-module
/// --module=a.vmfb --module=b.vmfb` loads `a` then `b` and calls into the last.
///
/// The context gets IREE's `hal` module over one [`LocalDevice`] (shared by every bytecode
/// module in it), `check` when a module imports it, `io_parameters` over the scopes given
/// with [`parameters`](Self::parameters) when a module imports it, then the linked modules in
/// the order added, then the module loaded last, whose exports the [`IreeModule`] serves.
///
/// ```
/// use pactum_iree::hal::Workers;
/// use pactum_iree::module::IreeModule;
///
/// let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vmfb");
/// let module = IreeModule::builder()
///     .workers(Workers::CallerThread)
///     .load(format!("{fixtures}/vm_direct.vmfb"))?;
/// assert_eq!(module.context_modules(), ["hal", "vm_direct"]);
/// # Ok::<(), pactum::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ModuleBuilder {
    limits: Limits,
    /// `None`: the local device on the process-wide pool ([`Workers::shared`]), made when a
    /// module is loaded, not by the builder, so a program choosing the caller's thread never
    /// starts its threads.
    device: Option<DeviceChoice>,
    linked: Vec<LinkedModule>,
    trace_sink: Option<TraceSinkSlot>,
    parameters: ParameterProvider,
}

#[derive(Clone)]
struct TraceSinkSlot(TraceSink);

impl std::fmt::Debug for TraceSinkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceSink")
    }
}

impl Default for ModuleBuilder {
    fn default() -> Self {
        ModuleBuilder::new()
    }
}

fn load_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::VALUE_ERROR,
        format!("cannot load {}: {error}", path.display()),
    )
}

impl ModuleBuilder {
    /// Default limits, the shared worker pool (`local-task`), nothing linked.
    pub fn new() -> ModuleBuilder {
        ModuleBuilder {
            limits: Limits::default(),
            device: None,
            linked: Vec::new(),
            trace_sink: None,
            parameters: ParameterProvider::new(),
        }
    }

    /// The limits of every call (stack depth, instructions, memory, waits).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Who runs ELF dispatches (see [`IreeModule::load_with`]): the local device with
    /// `workers`, the same as `.device(workers)`.
    pub fn workers(mut self, workers: Workers) -> Self {
        self.device = Some(DeviceChoice::Local(workers));
        self
    }

    /// The device programs run on: the local CPU device with its workers (the default, on
    /// the shared pool), or a Vulkan device.
    pub fn device(mut self, device: impl Into<DeviceChoice>) -> Self {
        self.device = Some(device.into());
        self
    }

    /// Where `hal.buffer_view.trace` sends what programs trace (modules compiled with
    /// `--iree-flow-trace-dispatch-tensors`); without a sink tracing does nothing.
    pub fn trace_sink(mut self, sink: TraceSink) -> Self {
        self.trace_sink = Some(TraceSinkSlot(sink));
        self
    }

    /// Adds a parameter index under `scope` (`""` for the unnamed scope), for the
    /// `io_parameters` module that programs compiled with external weights import
    /// (iree-run-module's `--parameters=SCOPE=FILE`).
    pub fn parameters(mut self, scope: impl Into<String>, index: ParameterIndex) -> Self {
        self.parameters.add(scope, index);
        self
    }

    /// Links the bytecode module at `path` (read now; a missing or corrupt file is an error
    /// naming it).
    pub fn module_file(mut self, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = VmfbFile::open(path).map_err(|e| load_error(path, e))?;
        self.linked.push(LinkedModule::Bytecode {
            file: Arc::new(file),
            path: Some(path.to_owned()),
        });
        Ok(self)
    }

    /// Links the bytecode module in `bytes`.
    pub fn module_bytes(mut self, bytes: Vec<u8>) -> Self {
        self.linked.push(LinkedModule::Bytecode {
            file: Arc::new(VmfbFile::from_bytes(bytes)),
            path: None,
        });
        self
    }

    /// Links a native module (registered in the order added, among the bytecode ones).
    pub fn native_module(mut self, module: Arc<dyn NativeModule>) -> Self {
        self.linked.push(LinkedModule::Native(module));
        self
    }

    /// Links `module`.
    pub fn link(mut self, module: LinkedModule) -> Self {
        self.linked.push(module);
        self
    }

    /// The modules linked so far, in order.
    pub fn linked(&self) -> &[LinkedModule] {
        &self.linked
    }

    /// Loads the module at `path` last, in a context holding everything linked before it.
    /// Errors name the file they are about.
    pub fn load(self, path: impl AsRef<Path>) -> Result<IreeModule> {
        let path = path.as_ref();
        let file = VmfbFile::open(path).map_err(|e| load_error(path, e))?;
        self.build(Arc::new(file), Some(path))
    }

    /// Loads the module in `bytes` last (either container).
    pub fn load_bytes(self, bytes: Vec<u8>) -> Result<IreeModule> {
        self.build(Arc::new(VmfbFile::from_bytes(bytes)), None)
    }

    /// Loads the module in `file` last.
    pub fn load_file(self, file: Arc<VmfbFile>) -> Result<IreeModule> {
        self.build(file, None)
    }

    fn build(self, file: Arc<VmfbFile>, path: Option<&Path>) -> Result<IreeModule> {
        // The error's kind is kept (a link failure stays what it was); its message names
        // the file it is about.
        let name_error = |error: Error, at: Option<&Path>| match at {
            Some(path) => Error::new(
                ErrorKind::custom(&error.kind()),
                format!("{}: {}", path.display(), error.message()),
            ),
            None => error,
        };
        let module = file.module().map_err(|e| name_error(e.into(), path))?;
        let mut signatures = Vec::new();
        for export in module.exports() {
            let (signature, coarse_fences) = match module.export_signature(&export).map(|s| s.abi())
            {
                Some(Ok(abi)) => (
                    abi.signature().and_then(|s| s.ok()).map(|signature| {
                        if abi.iree_abi.is_none() && abi.sip.is_none() && abi.raw.is_none() {
                            positional_by_declaration(signature)
                        } else {
                            signature
                        }
                    }),
                    abi.model.as_deref() == Some("coarse-fences"),
                ),
                _ => (None, false),
            };
            signatures.push((export.local_name.to_owned(), signature, coarse_fences));
        }
        // Every bytecode module's imports decide which optional native modules the context
        // needs, as iree-run-module registers them for the whole module list.
        let mut imported_modules = Vec::new();
        let mut note_imports = |file: &VmfbFile, at: Option<&Path>| -> Result<()> {
            let module = file.module().map_err(|e| name_error(e.into(), at))?;
            for import in module.imports() {
                if let Some((name, _)) = import.full_name.split_once('.')
                    && !imported_modules.iter().any(|m| m == name)
                {
                    imported_modules.push(name.to_owned());
                }
            }
            Ok(())
        };
        for linked in &self.linked {
            if let LinkedModule::Bytecode { file, path } = linked {
                note_imports(file, path.as_deref())?;
            }
        }
        note_imports(&file, path)?;
        let imports = |name: &str| imported_modules.iter().any(|m| m == name);

        let mut context = Context::new(self.limits.clone());
        let budget = context.memory_budget().cloned();
        let (workers, device): (Workers, Arc<dyn HalDevice>) = match self.device {
            None | Some(DeviceChoice::Local(_)) => {
                let workers = match self.device {
                    Some(DeviceChoice::Local(workers)) => workers,
                    _ => Workers::shared(),
                };
                let device = LocalDevice::new(workers.clone())
                    .with_memory_budget(budget)
                    .with_vmvx_limits(self.limits.clone());
                (workers, Arc::new(device))
            }
            #[cfg(feature = "vulkan")]
            Some(DeviceChoice::Vulkan(device)) => (
                Workers::CallerThread,
                Arc::new(device.with_memory_budget(budget)),
            ),
        };
        let device_id = device.id().to_owned();
        let mut hal = HalModule::with_wait_limit(device, self.limits.max_wait);
        if let Some(TraceSinkSlot(sink)) = self.trace_sink {
            hal = hal.with_trace_sink(sink);
        }
        context.register_native(Arc::new(hal)).map_err(vm_error)?;
        let check = imports("check").then(|| Arc::new(CheckModule::new()));
        if let Some(check) = &check {
            context.register_native(check.clone()).map_err(vm_error)?;
        }
        // As iree-run-module, the parameters module is registered for programs that import
        // it, whether or not parameters were given: a missing scope or key is then the
        // call's error, naming it.
        if imports(IO_PARAMETERS_MODULE_NAME) {
            let parameters = IoParametersModule::with_wait_limit(
                Arc::new(self.parameters),
                self.limits.max_wait,
            );
            context
                .register_native(Arc::new(parameters))
                .map_err(vm_error)?;
        }
        for linked in self.linked {
            match linked {
                LinkedModule::Bytecode { file, path } => {
                    context
                        .load_bytecode(file)
                        .map_err(|e| name_error(vm_error(e), path.as_deref()))?;
                }
                LinkedModule::Native(module) => {
                    context.register_native(module).map_err(vm_error)?;
                }
            }
        }
        let name = context
            .load_bytecode(file.clone())
            .map_err(|e| name_error(vm_error(e), path))?;
        let exports = signatures
            .into_iter()
            .map(|(export, signature, coarse_fences)| {
                let function = context
                    .lookup_export(&format!("{name}.{export}"))
                    .map_err(vm_error)?;
                Ok(Export {
                    name: export,
                    function,
                    signature,
                    coarse_fences,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(IreeModule {
            inner: Arc::new(Inner {
                context,
                name,
                exports,
                workers,
                device_id,
                check,
            }),
        })
    }
}
