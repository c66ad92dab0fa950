//! [`Context`]: modules linked in registration order, their state, and invocations.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::bytecode::LoadedModule;
use super::code::Kind;
use super::error::{LinkError, VmError};
use super::interp::{self, Entry, Globals, ImportTarget, Instance, Stack};
use super::limits::Limits;
use super::native::{NativeFunction, NativeModule};
use super::value::Value;
use super::verify::{Sig, kind_of};
use crate::memory_budget::MemoryBudget;
use crate::signature::cconv::CallingConvention;
use crate::vmfb::VmfbFile;

/// Where a bytecode module comes from: a `.vmfb` file (mapped or in memory), or its bytes.
pub enum ModuleSource {
    /// A file, shared: rodata buffers keep it alive.
    File(Arc<VmfbFile>),
}

impl From<VmfbFile> for ModuleSource {
    fn from(file: VmfbFile) -> ModuleSource {
        ModuleSource::File(Arc::new(file))
    }
}

impl From<Arc<VmfbFile>> for ModuleSource {
    fn from(file: Arc<VmfbFile>) -> ModuleSource {
        ModuleSource::File(file)
    }
}

impl From<Vec<u8>> for ModuleSource {
    fn from(bytes: Vec<u8>) -> ModuleSource {
        ModuleSource::File(Arc::new(VmfbFile::from_bytes(bytes)))
    }
}

impl From<&[u8]> for ModuleSource {
    fn from(bytes: &[u8]) -> ModuleSource {
        ModuleSource::from(bytes.to_vec())
    }
}

enum Registered {
    Bytecode {
        name: String,
        version: u32,
        instance: u32,
        exports: HashMap<String, u32>,
        sigs: Vec<Sig>,
        cconvs: Vec<String>,
    },
    Native {
        module: Arc<dyn NativeModule>,
        /// Each function's signature, parsed from its calling convention: at registration, or
        /// when an import or a lookup first needs it for a module whose conventions follow
        /// its types ([`NativeModule::conventions_follow_types`]).
        sigs: Box<[OnceLock<Sig>]>,
    },
}

impl Registered {
    fn name(&self) -> &str {
        match self {
            Registered::Bytecode { name, .. } => name,
            Registered::Native { module, .. } => module.name(),
        }
    }

    fn version(&self) -> u32 {
        match self {
            Registered::Bytecode { version, .. } => *version,
            Registered::Native { module, .. } => module.version(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Bytecode { instance: u32, function: u32 },
    Native { module: usize, index: usize },
}

/// A function of a context, found by [`Context::lookup_export`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    context: u64,
    name: String,
    cconv: String,
    target: Target,
    /// `None` for a variadic native function (arguments are not checked).
    params: Option<Vec<Kind>>,
    results: Vec<Kind>,
}

impl Function {
    /// `module.func`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The calling convention (`0iIfF_FIf`).
    pub fn cconv(&self) -> &str {
        &self.cconv
    }

    /// The number of results.
    pub fn result_count(&self) -> usize {
        self.results.len()
    }
}

/// Register storage and frames for invocations, kept by a caller that makes many calls (a
/// worker thread running the workgroups of dispatches) so that no call allocates them anew.
/// It holds nothing between calls: references are released when a call returns.
#[derive(Default)]
pub struct CallStack(Stack);

impl fmt::Debug for CallStack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallStack")
    }
}

static NEXT_CONTEXT: AtomicU64 = AtomicU64::new(1);

/// A set of modules linked in registration order, with each bytecode module's state.
///
/// Imports resolve by full name (`module.func`) against modules registered earlier. A
/// context can be shared between threads; invocations run concurrently, each on its own
/// register stack, and see each other's global writes as relaxed atomic byte stores.
pub struct Context {
    id: u64,
    limits: Limits,
    memory: Option<Arc<MemoryBudget>>,
    ref_types: HashSet<String>,
    modules: Vec<Registered>,
    instances: Vec<Instance>,
    stack: Mutex<Stack>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field(
                "modules",
                &self
                    .modules
                    .iter()
                    .map(Registered::name)
                    .collect::<Vec<_>>(),
            )
            .field("limits", &self.limits)
            .finish()
    }
}

fn sig_of(cconv: &str) -> Result<Sig, String> {
    let parsed = CallingConvention::parse(cconv).map_err(|e| e.to_string())?;
    Ok(Sig {
        args: parsed.args().to_vec(),
        results: parsed.results().to_vec(),
    })
}

/// The signature of a native function's calling convention. Conventions written in the
/// program (`&'static str`, as every built-in module's ~60 are) are parsed once per process
/// and remembered: each new context registering `hal` would otherwise parse them all again.
/// The table only ever holds the program's own strings, so it stays as small as they are.
fn native_sig_of(function: &NativeFunction) -> Result<Sig, String> {
    let Cow::Borrowed(text) = function.cconv else {
        return sig_of(&function.cconv);
    };
    static PARSED: OnceLock<Mutex<HashMap<&'static str, Sig>>> = OnceLock::new();
    let parsed = PARSED.get_or_init(Mutex::default);
    let remembered = parsed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(text)
        .cloned();
    if let Some(sig) = remembered {
        return Ok(sig);
    }
    // An error is not remembered: it is reported again, the same, on the next registration.
    let sig = sig_of(text)?;
    parsed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(text, sig.clone());
    Ok(sig)
}

/// The index of native function `name` among the `registered` functions the module had when
/// it was registered: the last of that name, as a table filled in order would answer. A scan
/// rather than a table: a module has a few dozen functions, and a program looks up only the
/// ones it imports.
fn native_function_index(
    module: &dyn NativeModule,
    registered: usize,
    name: &str,
) -> Option<usize> {
    let functions = module.functions();
    functions[..registered.min(functions.len())]
        .iter()
        .rposition(|f| f.name == name)
}

/// The signature of `module`'s function `index`, parsed on first use and kept in `sigs[index]`.
/// A malformed convention is the module's link error, naming the function.
fn native_sig_at<'a>(
    module: &dyn NativeModule,
    sigs: &'a [OnceLock<Sig>],
    index: usize,
) -> Result<&'a Sig, VmError> {
    if let Some(sig) = sigs[index].get() {
        return Ok(sig);
    }
    // A module whose list of functions shrank after registration (a `NativeModule` is a
    // user's trait) is refused here rather than indexed past its end.
    let functions = module.functions();
    let Some(function) = functions.get(index) else {
        return Err(VmError::Link {
            module: module.name().to_owned(),
            error: LinkError::BadCallingConvention {
                function: format!("#{index}"),
                reason: format!(
                    "the module lists {} functions, fewer than when it was registered",
                    functions.len()
                ),
            },
        });
    };
    let sig = native_sig_of(function).map_err(|reason| VmError::Link {
        module: module.name().to_owned(),
        error: LinkError::BadCallingConvention {
            function: function.name.to_string(),
            reason,
        },
    })?;
    Ok(sigs[index].get_or_init(|| sig))
}

fn split_name(full: &str) -> Option<(&str, &str)> {
    full.split_once('.')
}

impl Context {
    /// An empty context with these limits.
    pub fn new(limits: Limits) -> Context {
        Context {
            id: NEXT_CONTEXT.fetch_add(1, Ordering::Relaxed),
            memory: limits.memory.map(MemoryBudget::new),
            limits,
            ref_types: HashSet::new(),
            modules: Vec::new(),
            instances: Vec::new(),
            stack: Mutex::new(Stack::default()),
        }
    }

    /// The names of the registered modules, in registration order.
    pub fn module_names(&self) -> Vec<String> {
        self.modules.iter().map(|m| m.name().to_owned()).collect()
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The memory budget, when the limits set one.
    pub fn memory_budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.memory.as_ref()
    }

    /// Registers a reference type name (without `!`: `hal.fence`) so that type tables naming
    /// it resolve.
    pub fn register_ref_type(&mut self, name: impl Into<String>) {
        self.ref_types.insert(name.into());
    }

    fn check_new_name(&self, name: &str) -> Result<(), VmError> {
        if name.is_empty() || name.contains('.') {
            return Err(VmError::Link {
                module: name.to_owned(),
                error: LinkError::BadModuleName(name.to_owned()),
            });
        }
        if self.modules.iter().any(|m| m.name() == name) {
            return Err(VmError::Link {
                module: name.to_owned(),
                error: LinkError::DuplicateModule(name.to_owned()),
            });
        }
        Ok(())
    }

    /// Registers a native module: later modules may import its functions. A module whose
    /// typed functions' signatures do not imply their declared calling conventions
    /// ([`NativeModule::check_signatures`]) is refused with [`LinkError::NativeSignature`];
    /// one with a malformed convention, with [`LinkError::BadCallingConvention`]. The
    /// conventions of a module whose conventions follow its types
    /// ([`NativeModule::conventions_follow_types`]) are parsed when first imported or looked
    /// up, the others here.
    pub fn register_native(&mut self, module: Arc<dyn NativeModule>) -> Result<(), VmError> {
        let name = module.name().to_owned();
        self.check_new_name(&name)?;
        module.check_signatures().map_err(|m| VmError::Link {
            module: name.clone(),
            error: LinkError::NativeSignature {
                function: m.function,
                declared: m.declared,
                implied: m.implied,
            },
        })?;
        let sigs: Box<[OnceLock<Sig>]> =
            module.functions().iter().map(|_| OnceLock::new()).collect();
        if !module.conventions_follow_types() {
            for index in 0..sigs.len() {
                native_sig_at(&*module, &sigs, index)?;
            }
        }
        for ty in module.ref_types() {
            self.ref_types.insert(ty);
        }
        self.modules.push(Registered::Native { module, sigs });
        Ok(())
    }

    /// Loads, verifies and links a bytecode module, allocates its state and runs its
    /// `__init` export, if any. Returns the module's name.
    pub fn load_bytecode(&mut self, source: impl Into<ModuleSource>) -> Result<String, VmError> {
        let ModuleSource::File(file) = source.into();
        let types = &self.ref_types;
        let loaded = LoadedModule::load(file, &|name| types.contains(name))?;
        let name = loaded.name.clone();
        self.check_new_name(&name)?;
        let link = |error| VmError::Link {
            module: name.clone(),
            error,
        };
        let mut skipped = HashSet::new();
        for dep in &loaded.dependencies {
            let found = self
                .modules
                .iter()
                .find(|m| m.name() == dep.name)
                .map(Registered::version);
            match found {
                Some(v) if v >= dep.minimum_version => {}
                _ if dep.optional => {
                    skipped.insert(dep.name.clone());
                }
                found => {
                    return Err(link(LinkError::Dependency {
                        name: dep.name.clone(),
                        minimum_version: dep.minimum_version,
                        found,
                    }));
                }
            }
        }
        let mut imports = Vec::with_capacity(loaded.imports.len());
        for import in &loaded.imports {
            let target = match split_name(&import.full_name) {
                Some((module, _)) if skipped.contains(module) => None,
                Some((module, function)) => self.resolve(module, function, import, &link)?,
                None => None,
            };
            match target {
                Some(t) => imports.push(t),
                None if import.optional => imports.push(ImportTarget::Unresolved),
                None => return Err(link(LinkError::UnresolvedImport(import.full_name.clone()))),
            }
        }
        let globals = Globals::new(
            loaded.global_bytes,
            loaded.global_refs,
            self.memory.as_ref(),
        )
        .ok_or_else(|| {
            link(LinkError::ModuleState(format!(
                "{} bytes and {} ref globals exceed the memory budget",
                loaded.global_bytes, loaded.global_refs
            )))
        })?;
        let instance = self.instances.len() as u32;
        self.instances.push(Instance {
            name: name.clone(),
            functions: loaded.functions.clone(),
            types: loaded.types.clone(),
            rodata: loaded.rodata.clone(),
            globals,
            imports,
        });
        self.modules.push(Registered::Bytecode {
            name: name.clone(),
            version: loaded.version,
            instance,
            exports: loaded.exports.iter().cloned().collect(),
            sigs: loaded.sigs.clone(),
            cconvs: loaded.cconvs.clone(),
        });
        if let Ok(init) = self.lookup_export(&format!("{name}.__init")) {
            if let Err(e) = self.invoke(&init, &[]) {
                self.modules.pop();
                self.instances.pop();
                return Err(e);
            }
        }
        Ok(name)
    }

    fn resolve(
        &self,
        module: &str,
        function: &str,
        import: &super::bytecode::ImportDecl,
        link: &dyn Fn(LinkError) -> VmError,
    ) -> Result<Option<ImportTarget>, VmError> {
        let Some(registered) = self.modules.iter().find(|m| m.name() == module) else {
            return Ok(None);
        };
        let (target, sig, cconv) = match registered {
            Registered::Bytecode {
                instance,
                exports,
                sigs,
                cconvs,
                ..
            } => {
                let Some(&ordinal) = exports.get(function) else {
                    return Ok(None);
                };
                let target = ImportTarget::Bytecode {
                    instance: *instance,
                    function: ordinal,
                };
                (
                    target,
                    &sigs[ordinal as usize],
                    cconvs[ordinal as usize].clone(),
                )
            }
            Registered::Native {
                module: native,
                sigs,
            } => {
                let Some(index) = native_function_index(&**native, sigs.len(), function) else {
                    return Ok(None);
                };
                let sig = native_sig_at(&**native, sigs, index)?;
                let target = ImportTarget::Native {
                    module: native.clone(),
                    index,
                    name: import.full_name.clone(),
                };
                let cconv = native
                    .functions()
                    .get(index)
                    .map_or_else(String::new, |f| f.cconv.to_string());
                (target, sig, cconv)
            }
        };
        if *sig != import.sig {
            return Err(link(LinkError::ImportSignature {
                import: import.full_name.clone(),
                expected: import.cconv.clone(),
                found: cconv,
            }));
        }
        Ok(Some(target))
    }

    /// The function `module.func`: an export of a bytecode module or a native function.
    pub fn lookup_export(&self, full_name: &str) -> Result<Function, VmError> {
        let not_found = || VmError::NotFound(full_name.to_owned());
        let (module, function) = split_name(full_name).ok_or_else(not_found)?;
        let (index, registered) = self
            .modules
            .iter()
            .enumerate()
            .find(|(_, m)| m.name() == module)
            .ok_or_else(not_found)?;
        let (target, sig, cconv) = match registered {
            Registered::Bytecode {
                instance,
                exports,
                sigs,
                cconvs,
                ..
            } => {
                let &ordinal = exports.get(function).ok_or_else(not_found)?;
                (
                    Target::Bytecode {
                        instance: *instance,
                        function: ordinal,
                    },
                    &sigs[ordinal as usize],
                    cconvs[ordinal as usize].clone(),
                )
            }
            Registered::Native { module, sigs } => {
                let i =
                    native_function_index(&**module, sigs.len(), function).ok_or_else(not_found)?;
                (
                    Target::Native {
                        module: index,
                        index: i,
                    },
                    native_sig_at(&**module, sigs, i)?,
                    module
                        .functions()
                        .get(i)
                        .map_or_else(String::new, |f| f.cconv.to_string()),
                )
            }
        };
        let params: Option<Vec<Kind>> = sig.args.iter().map(kind_of).collect();
        let results: Vec<Kind> = sig.results.iter().filter_map(kind_of).collect();
        Ok(Function {
            context: self.id,
            name: full_name.to_owned(),
            cconv,
            target,
            params,
            results,
        })
    }

    /// Calls `function` with `args`, checked against its calling convention (the count, and
    /// each argument's kind), and returns its results.
    pub fn invoke(&self, function: &Function, args: &[Value]) -> Result<Vec<Value>, VmError> {
        self.invoke_with(function, args, None)
    }

    /// [`Context::invoke`] with the registers and frames in `stack` (reused between calls)
    /// rather than the context's own or a new one.
    pub fn invoke_on(
        &self,
        function: &Function,
        args: &[Value],
        stack: &mut CallStack,
    ) -> Result<Vec<Value>, VmError> {
        self.invoke_with(function, args, Some(&mut stack.0))
    }

    fn invoke_with(
        &self,
        function: &Function,
        args: &[Value],
        stack: Option<&mut Stack>,
    ) -> Result<Vec<Value>, VmError> {
        if function.context != self.id {
            return Err(VmError::ForeignFunction(function.name.clone()));
        }
        if let Some(params) = &function.params {
            if params.len() != args.len() {
                return Err(VmError::ArgumentCount {
                    function: function.name.clone(),
                    expected: params.len(),
                    got: args.len(),
                });
            }
            for (argument, (kind, value)) in params.iter().zip(args).enumerate() {
                if kind.char() != value.kind_char() {
                    return Err(VmError::BadCall {
                        function: function.name.clone(),
                        argument,
                        expected: kind.name().to_owned(),
                        got: value.kind_name().to_owned(),
                    });
                }
            }
        }
        match function.target {
            Target::Native { module, index } => match &self.modules[module] {
                Registered::Native { module, .. } => {
                    module.call(index, args).map_err(|e| VmError::Native {
                        function: function.name.clone(),
                        status: e.status,
                        message: e.message,
                    })
                }
                Registered::Bytecode { .. } => Err(VmError::NotFound(function.name.clone())),
            },
            Target::Bytecode {
                instance,
                function: ordinal,
            } => {
                let entry = Entry {
                    instance,
                    function: ordinal,
                    args,
                };
                if let Some(stack) = stack {
                    return interp::invoke(
                        &self.instances,
                        entry,
                        &self.limits,
                        self.memory.as_ref(),
                        stack,
                    );
                }
                // Reuse the context's register stack when no other invocation holds it.
                match self.stack.try_lock() {
                    Ok(mut stack) => interp::invoke(
                        &self.instances,
                        entry,
                        &self.limits,
                        self.memory.as_ref(),
                        &mut stack,
                    ),
                    Err(_) => {
                        let mut stack = Stack::default();
                        interp::invoke(
                            &self.instances,
                            entry,
                            &self.limits,
                            self.memory.as_ref(),
                            &mut stack,
                        )
                    }
                }
            }
        }
    }

    /// Looks up and calls `module.func`.
    pub fn call(&self, full_name: &str, args: &[Value]) -> Result<Vec<Value>, VmError> {
        let function = self.lookup_export(full_name)?;
        self.invoke(&function, args)
    }
}

/// Runs each bytecode module's `__deinit` export, if any, in reverse registration order
/// (errors are ignored: there is no caller to tell).
impl Drop for Context {
    fn drop(&mut self) {
        let names: Vec<String> = self
            .modules
            .iter()
            .rev()
            .filter(|m| matches!(m, Registered::Bytecode { .. }))
            .map(|m| format!("{}.__deinit", m.name()))
            .collect();
        for name in names {
            if let Ok(deinit) = self.lookup_export(&name) {
                let _ = self.invoke(&deinit, &[]);
            }
        }
    }
}
