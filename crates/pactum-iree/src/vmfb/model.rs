//! The owned form of a module: built programmatically or copied from a [`BytecodeModule`],
//! edited, and written back with [`ModuleDef::write`].

use super::views::{
    BytecodeModule, FeatureBits, FunctionDescriptor, FunctionSignature, Location, ModuleState,
    RodataStorage, SourceLocation,
};
use super::{FieldPath, VmfbError};

/// A key/value attribute.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttrDef {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

impl AttrDef {
    /// An attribute.
    pub fn new(key: impl Into<String>, value: impl Into<String>) -> AttrDef {
        AttrDef {
            key: key.into(),
            value: value.into(),
        }
    }
}

/// A function signature: calling convention and reflection attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionSignatureDef {
    /// The calling convention (`0rf_rI`).
    pub calling_convention: Option<String>,
    /// Reflection attributes. IREE stores them sorted by key; [`ModuleDef::write`] keeps the
    /// order given.
    pub attrs: Vec<AttrDef>,
}

impl FunctionSignatureDef {
    /// Sets attribute `key` (replacing it, or inserting it in key order).
    pub fn set_attr(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.attrs.iter_mut().find(|a| a.key == key) {
            Some(attr) => attr.value = value,
            None => {
                let at = self.attrs.partition_point(|a| a.key.as_str() < key);
                self.attrs.insert(at, AttrDef::new(key, value));
            }
        }
    }

    fn from_view(view: &FunctionSignature<'_>) -> FunctionSignatureDef {
        FunctionSignatureDef {
            calling_convention: view.calling_convention.map(str::to_owned),
            attrs: view.attrs().map(|a| AttrDef::new(a.key, a.value)).collect(),
        }
    }
}

/// A module dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DependencyDef {
    /// The module name.
    pub name: String,
    /// The lowest acceptable version.
    pub minimum_version: u32,
    /// 1 = REQUIRED, 2 = OPTIONAL.
    pub flags: u32,
}

/// An imported function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportDef {
    /// The fully qualified name.
    pub full_name: String,
    /// Its signature.
    pub signature: Option<FunctionSignatureDef>,
    /// 1 = REQUIRED, 2 = OPTIONAL.
    pub flags: u32,
}

/// An exported function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportDef {
    /// The exported name.
    pub local_name: String,
    /// The index of its signature and descriptor.
    pub internal_ordinal: i32,
}

/// A read-only data segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RodataDef {
    /// The bytes.
    pub data: Vec<u8>,
    /// Whether the writer puts them after the FlatBuffer (as IREE does for 4 KiB and more)
    /// rather than inside it.
    pub external: bool,
    /// The compression union's tag (0 none, 1 `UncompressedDataDef`).
    pub compression: u8,
}

/// The module's globals.
pub type ModuleStateDef = ModuleState;

/// A location-table entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocationDef {
    /// A NONE entry.
    None,
    /// `CallSiteLocDef`.
    CallSite {
        /// Callee location index.
        callee: i32,
        /// Caller location index.
        caller: i32,
    },
    /// `FileLineColLocDef`.
    FileLineCol {
        /// The file.
        filename: String,
        /// The line.
        line: i32,
        /// The column.
        column: i32,
    },
    /// `FusedLocDef`.
    Fused {
        /// Extra data.
        metadata: Option<String>,
        /// Location indices.
        locations: Vec<i32>,
    },
    /// `NameLocDef`.
    Name {
        /// The name.
        name: String,
        /// The named location's index.
        child_location: i32,
    },
}

/// A function's source map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceMapDef {
    /// The function name.
    pub local_name: Option<String>,
    /// Bytecode offsets and location indices.
    pub locations: Vec<SourceLocation>,
}

/// The debug database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugDatabaseDef {
    /// The location table.
    pub locations: Vec<LocationDef>,
    /// Per-function source maps.
    pub functions: Vec<SourceMapDef>,
}

/// A whole module, owned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleDef {
    /// The module name (required, non-empty).
    pub name: String,
    /// The module version.
    pub version: u32,
    /// What the module needs from the VM.
    pub requirements: FeatureBits,
    /// Module-level reflection attributes.
    pub attrs: Vec<AttrDef>,
    /// Type names.
    pub types: Vec<String>,
    /// Module dependencies.
    pub dependencies: Vec<DependencyDef>,
    /// Imported functions.
    pub imports: Vec<ImportDef>,
    /// Exported functions.
    pub exports: Vec<ExportDef>,
    /// One signature per internal function.
    pub function_signatures: Vec<FunctionSignatureDef>,
    /// Read-only data segments.
    pub rodata: Vec<RodataDef>,
    /// Read-write segment sizes.
    pub rwdata: Vec<i32>,
    /// Globals.
    pub module_state: Option<ModuleStateDef>,
    /// One descriptor per internal function.
    pub function_descriptors: Vec<FunctionDescriptor>,
    /// `major << 16 | minor`.
    pub bytecode_version: u32,
    /// All functions' bytecode.
    pub bytecode_data: Vec<u8>,
    /// Debug information.
    pub debug_database: Option<DebugDatabaseDef>,
}

impl ModuleDef {
    /// Copies a module, read-only data included.
    pub fn from_module(module: &BytecodeModule<'_>) -> Result<ModuleDef, VmfbError> {
        let mut rodata = Vec::new();
        for (i, segment) in module.rodata_segments().enumerate() {
            let data = module.rodata(i).ok_or_else(|| {
                let (offset, length) = match segment.storage {
                    RodataStorage::External { offset, length } => (offset, length),
                    RodataStorage::Embedded(bytes) => (0, bytes.len() as u64),
                };
                VmfbError::new(
                    module.external_data_out_of_file(offset, length),
                    FieldPath::root().field("rodata_segments").index(i),
                    None,
                )
            })?;
            rodata.push(RodataDef {
                data: data.to_vec(),
                external: matches!(segment.storage, RodataStorage::External { .. }),
                compression: segment.compression,
            });
        }
        Ok(ModuleDef {
            name: module.name().to_owned(),
            version: module.version(),
            requirements: module.requirements(),
            attrs: module
                .attrs()
                .map(|a| AttrDef::new(a.key, a.value))
                .collect(),
            types: module.types().map(str::to_owned).collect(),
            dependencies: module
                .dependencies()
                .map(|d| DependencyDef {
                    name: d.name.to_owned(),
                    minimum_version: d.minimum_version,
                    flags: d.flags,
                })
                .collect(),
            imports: module
                .imports()
                .map(|i| ImportDef {
                    full_name: i.full_name.to_owned(),
                    signature: i.signature.as_ref().map(FunctionSignatureDef::from_view),
                    flags: i.flags,
                })
                .collect(),
            exports: module
                .exports()
                .map(|e| ExportDef {
                    local_name: e.local_name.to_owned(),
                    internal_ordinal: e.internal_ordinal,
                })
                .collect(),
            function_signatures: module
                .function_signatures()
                .map(|s| FunctionSignatureDef::from_view(&s))
                .collect(),
            rodata,
            rwdata: module.rwdata_segments().collect(),
            module_state: module.module_state(),
            function_descriptors: module.function_descriptors().collect(),
            bytecode_version: module.bytecode_version(),
            bytecode_data: module.bytecode_data().to_vec(),
            debug_database: module.debug_database().map(|db| DebugDatabaseDef {
                locations: db
                    .locations()
                    .into_iter()
                    .map(|l| match l {
                        Location::None => LocationDef::None,
                        Location::CallSite { callee, caller } => {
                            LocationDef::CallSite { callee, caller }
                        }
                        Location::FileLineCol {
                            filename,
                            line,
                            column,
                        } => LocationDef::FileLineCol {
                            filename: filename.to_owned(),
                            line,
                            column,
                        },
                        Location::Fused {
                            metadata,
                            locations,
                        } => LocationDef::Fused {
                            metadata: metadata.map(str::to_owned),
                            locations,
                        },
                        Location::Name {
                            name,
                            child_location,
                        } => LocationDef::Name {
                            name: name.to_owned(),
                            child_location,
                        },
                    })
                    .collect(),
                functions: db
                    .functions()
                    .into_iter()
                    .map(|f| SourceMapDef {
                        local_name: f.local_name.map(str::to_owned),
                        locations: f.locations,
                    })
                    .collect(),
            }),
        })
    }

    /// The signature of the export named `name`, for editing its reflection attributes.
    pub fn export_signature_mut(&mut self, name: &str) -> Option<&mut FunctionSignatureDef> {
        let ordinal = self
            .exports
            .iter()
            .find(|e| e.local_name == name)?
            .internal_ordinal;
        self.function_signatures
            .get_mut(usize::try_from(ordinal).ok()?)
    }
}
