//! IREE VM bytecode modules (`.vmfb`): a verified, zero-copy reader and a writer.
//!
//! A `.vmfb` is a FlatBuffer of schema `iree.vm.BytecodeModuleDef` (identifier `IREE`), either
//! bare (size prefix at byte 0) or, by default since IREE 3.x, wrapped as the first entry of a
//! ZIP archive whose later entries hold the large read-only data. [`VmfbFile`] maps the file,
//! [`BytecodeModule`] verifies everything before the first access and then reads fields in place;
//! read-only data is only touched when asked for. [`ModuleDef`] is the owned form, which
//! [`write`](ModuleDef::write) serializes in either container.
//!
//! ```no_run
//! use pactum_iree::vmfb::VmfbFile;
//!
//! let file = VmfbFile::open("model.vmfb")?;
//! let module = file.module()?;
//! for export in module.exports() {
//!     let signature = module.export_signature(&export);
//!     println!("{} {:?}", export.local_name, signature.and_then(|s| s.calling_convention));
//! }
//! # Ok::<(), pactum_iree::vmfb::VmfbError>(())
//! ```

use std::fmt;

mod container;
mod model;
mod reader;
mod schema;
mod views;
mod writer;

pub use container::{Container, ContainerLayout};
pub use model::{
    AttrDef, DebugDatabaseDef, DependencyDef, ExportDef, FunctionSignatureDef, ImportDef,
    LocationDef, ModuleDef, ModuleStateDef, RodataDef, SourceMapDef,
};
pub use views::{
    Attr, BytecodeModule, DebugDatabase, Dependency, Export, FeatureBits, FunctionDescriptor,
    FunctionSignature, FunctionSourceMap, Import, Location, ModuleState, RodataSegment,
    RodataStorage, SourceLocation, VmfbFile,
};

/// The bytecode version IREE 3.13 writes and accepts: major 17, minor 0.
pub const BYTECODE_VERSION: u32 = 17 << 16;

/// A `.vmfb` that cannot be read: what is wrong, where (a field path such as
/// `exported_functions[3].local_name`), and at which byte of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmfbError {
    /// The path of the field in the module, empty for the container itself.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// The byte offset in the file, when one applies.
    pub offset: Option<u64>,
}

impl VmfbError {
    pub(crate) fn new(
        path: impl Into<String>,
        message: impl Into<String>,
        offset: Option<u64>,
    ) -> VmfbError {
        VmfbError {
            path: path.into(),
            message: message.into(),
            offset,
        }
    }

    pub(crate) fn at(offset: usize, message: impl Into<String>) -> VmfbError {
        VmfbError::new("", message, Some(offset as u64))
    }
}

/// `exported_functions[3].local_name: string runs past the end of the buffer at 0x1f40`.
impl fmt::Display for VmfbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(offset) = self.offset {
            write!(f, " at {offset:#x}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VmfbError {}

impl From<VmfbError> for pactum::Error {
    fn from(error: VmfbError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}
