//! A bytecode module loaded for the VM: every function verified and pre-decoded, the type
//! table resolved, one read-only buffer per rodata segment.

use std::sync::Arc;

use super::buffer::{ByteSource, VmBuffer};
use super::code::FunctionCode;
use super::error::{FunctionName, LinkError, VerifyRule, VmError};
use super::value::VmType;
use super::verify::{self, ModuleInfo, Sig};
use crate::signature::cconv::CallingConvention;
use crate::vmfb::{BYTECODE_VERSION, BytecodeModule, VmfbFile};

/// An import of a loaded module.
#[derive(Clone, Debug)]
pub struct ImportDecl {
    /// `module.func`.
    pub full_name: String,
    /// Its calling convention.
    pub sig: Sig,
    /// The convention as written.
    pub cconv: String,
    /// Whether it may stay unresolved.
    pub optional: bool,
}

/// A dependency of a loaded module.
#[derive(Clone, Debug)]
pub struct DependencyDecl {
    /// The module depended on.
    pub name: String,
    /// The lowest version that satisfies it.
    pub minimum_version: u32,
    /// Whether it may be missing.
    pub optional: bool,
}

/// A verified module, ready to be instantiated in a context.
pub struct LoadedModule {
    /// The module name.
    pub name: String,
    /// The module version.
    pub version: u32,
    /// Verified functions by internal ordinal.
    pub functions: Arc<[FunctionCode]>,
    /// Calling conventions by internal ordinal.
    pub sigs: Vec<Sig>,
    /// Calling-convention strings by internal ordinal.
    pub cconvs: Vec<String>,
    /// The resolved type table.
    pub types: Arc<[VmType]>,
    /// Read-only buffers over the rodata segments.
    pub rodata: Arc<[Arc<VmBuffer>]>,
    /// Exports: name and internal ordinal.
    pub exports: Vec<(String, u32)>,
    /// Imports by ordinal.
    pub imports: Vec<ImportDecl>,
    /// Dependencies.
    pub dependencies: Vec<DependencyDecl>,
    /// Bytes of value globals.
    pub global_bytes: usize,
    /// Number of ref globals.
    pub global_refs: usize,
}

fn parse_sig(cconv: Option<&str>) -> Result<Sig, String> {
    let text = cconv.unwrap_or("");
    let parsed = CallingConvention::parse(text).map_err(|e| e.to_string())?;
    Ok(Sig {
        args: parsed.args().to_vec(),
        results: parsed.results().to_vec(),
    })
}

impl LoadedModule {
    /// Reads, verifies and pre-decodes the module in `file`. `is_registered` says whether a
    /// reference type name (without `!`) is known.
    pub fn load(
        file: Arc<VmfbFile>,
        is_registered: &dyn Fn(&str) -> bool,
    ) -> Result<LoadedModule, VmError> {
        let module = file.module()?;
        let name = module.name().to_owned();
        let link = |error| VmError::Link {
            module: name.clone(),
            error,
        };
        let version = module.bytecode_version();
        if version >> 16 != BYTECODE_VERSION >> 16 || version & 0xFFFF > BYTECODE_VERSION & 0xFFFF {
            return Err(link(LinkError::BytecodeVersion(version)));
        }
        let requirements = module.requirements().0;
        if requirements & !verify::AVAILABLE_FEATURES != 0 {
            return Err(link(LinkError::Requirements(
                requirements & !verify::AVAILABLE_FEATURES,
            )));
        }
        let mut types = Vec::new();
        for type_name in module.types() {
            match VmType::resolve(type_name, is_registered) {
                Some(t) => types.push(t),
                None => return Err(link(LinkError::UnknownType(type_name.to_owned()))),
            }
        }
        let state = module.module_state().unwrap_or_default();
        let (Ok(global_bytes), Ok(global_refs)) = (
            usize::try_from(state.global_bytes_capacity),
            usize::try_from(state.global_ref_count),
        ) else {
            return Err(link(LinkError::ModuleState(format!(
                "negative sizes ({} bytes, {} refs)",
                state.global_bytes_capacity, state.global_ref_count
            ))));
        };
        let rodata =
            load_rodata(&file, &module).map_err(|reason| link(LinkError::ModuleState(reason)))?;

        let descriptors: Vec<_> = module.function_descriptors().collect();
        let exports: Vec<(String, u32)> = module
            .exports()
            .map(|e| (e.local_name.to_owned(), e.internal_ordinal as u32))
            .collect();
        let function_name = |ordinal: usize| -> Option<String> {
            module
                .function_name(ordinal)
                .map(str::to_owned)
                .or_else(|| {
                    exports
                        .iter()
                        .find(|(_, o)| *o as usize == ordinal)
                        .map(|(n, _)| n.clone())
                })
        };
        let mut sigs = Vec::with_capacity(descriptors.len());
        let mut cconvs = Vec::with_capacity(descriptors.len());
        for ordinal in 0..descriptors.len() {
            let cconv = module
                .function_signature(ordinal)
                .and_then(|s| s.calling_convention);
            let sig = parse_sig(cconv).map_err(|reason| VmError::Verify {
                module: name.clone(),
                function: match function_name(ordinal) {
                    Some(n) => FunctionName::Named(n),
                    None => FunctionName::Ordinal(ordinal as u32),
                },
                offset: 0,
                rule: VerifyRule::CallingConvention,
                detail: reason,
            })?;
            sigs.push(sig);
            cconvs.push(cconv.unwrap_or("").to_owned());
        }
        let mut imports = Vec::new();
        for import in module.imports() {
            let cconv = import.signature.and_then(|s| s.calling_convention);
            let sig = parse_sig(cconv).map_err(|reason| {
                link(LinkError::BadCallingConvention {
                    function: import.full_name.to_owned(),
                    reason,
                })
            })?;
            imports.push(ImportDecl {
                full_name: import.full_name.to_owned(),
                sig,
                cconv: cconv.unwrap_or("").to_owned(),
                optional: import.is_optional(),
            });
        }
        let import_sigs: Vec<Sig> = imports.iter().map(|i| i.sig.clone()).collect();
        let info = ModuleInfo {
            module: &name,
            types: &types,
            global_bytes: global_bytes as u64,
            global_refs: global_refs as u64,
            rodata_count: rodata.len() as u64,
            functions: &sigs,
            imports: &import_sigs,
        };
        let bytecode = module.bytecode_data();
        let mut functions = Vec::with_capacity(descriptors.len());
        for (ordinal, descriptor) in descriptors.iter().enumerate() {
            let start = usize::try_from(descriptor.bytecode_offset).unwrap_or(usize::MAX);
            let len = usize::try_from(descriptor.bytecode_length).unwrap_or(0);
            let code = start
                .checked_add(len)
                .and_then(|end| bytecode.get(start..end))
                .unwrap_or(&[]);
            functions.push(verify::verify_function(
                &info,
                ordinal as u32,
                function_name(ordinal),
                descriptor,
                code,
            )?);
        }
        let dependencies = module
            .dependencies()
            .map(|d| DependencyDecl {
                name: d.name.to_owned(),
                minimum_version: d.minimum_version,
                optional: d.is_optional(),
            })
            .collect();
        Ok(LoadedModule {
            version: module.version(),
            name,
            functions: functions.into(),
            sigs,
            cconvs,
            types: types.into(),
            rodata,
            exports,
            imports,
            dependencies,
            global_bytes,
            global_refs,
        })
    }
}

fn load_rodata(
    file: &Arc<VmfbFile>,
    module: &BytecodeModule<'_>,
) -> Result<Arc<[Arc<VmBuffer>]>, String> {
    let owner: Arc<dyn ByteSource> = file.clone();
    let mut out = Vec::new();
    for (index, segment) in module.rodata_segments().enumerate() {
        if segment.compression > 1 {
            return Err(format!(
                "rodata segment {index} is compressed ({})",
                segment.compression
            ));
        }
        let range = module
            .rodata_file_range(index)
            .ok_or_else(|| format!("rodata segment {index} is outside the file"))?;
        let buffer = VmBuffer::read_only(owner.clone(), range)
            .ok_or_else(|| format!("rodata segment {index} is outside the file"))?;
        out.push(Arc::new(buffer));
    }
    Ok(out.into())
}
