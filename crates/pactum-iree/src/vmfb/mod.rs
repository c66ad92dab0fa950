//! IREE VM bytecode modules (`.vmfb`): a verified, zero-copy reader and a writer.
//!
//! A `.vmfb` is a FlatBuffer of schema `iree.vm.BytecodeModuleDef` (identifier `IREE`), either
//! bare (size prefix at byte 0) or, by default since IREE 3.x, wrapped as the first entry of a
//! ZIP archive whose later entries hold the large read-only data. [`VmfbFile`] maps the file,
//! [`BytecodeModule`] verifies everything before the first access and then reads fields in place;
//! read-only data is only touched when asked for. [`ModuleDef`] is the owned form, which
//! [`write`](ModuleDef::write) serializes in either container.
//!
//! A file that cannot be read is a [`VmfbError`]: a [`VmfbErrorKind`] to match on (the file, the
//! container, the FlatBuffer's structure, or IREE's own module checks), the [`FieldPath`] of
//! the field (`exported_functions[3].local_name`) and the byte offset in the file.
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

mod container;
mod error;
pub mod inspect;
mod model;
mod reader;
mod schema;
mod views;
mod writer;

pub use container::{Container, ContainerLayout};
pub use error::{FieldPath, FieldStep, IoFailure, IoOperation, NameOf, VmfbError, VmfbErrorKind};
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
