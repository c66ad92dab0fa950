//! Zero-copy views of a verified module.

use std::fmt;
use std::path::Path;

use super::container::{self, Container, ContainerLayout};
use super::reader::{Buffer, Table, VectorAt};
use super::schema::{self, *};
use super::{FieldPath, IoFailure, IoOperation, NameOf, VmfbError, VmfbErrorKind};
use crate::function_abi::{AttributeError, FunctionAbi};
use crate::signature::ParseError;
use crate::signature::cconv::CallingConvention;

/// The bytes of a `.vmfb`: mapped from a file, owned, or shared with their owner.
pub struct VmfbFile {
    bytes: Bytes,
}

enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
    Shared(std::sync::Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl fmt::Debug for VmfbFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VmfbFile")
            .field("len", &self.bytes().len())
            .finish()
    }
}

impl VmfbFile {
    /// Maps the file at `path`. Nothing is read until a module is asked for, and read-only data
    /// segments only when their bytes are.
    pub fn open(path: impl AsRef<Path>) -> Result<VmfbFile, VmfbError> {
        let path = path.as_ref();
        let io = |operation| {
            move |error| {
                VmfbError::new(
                    VmfbErrorKind::Io(IoFailure {
                        operation,
                        file: path.to_owned(),
                        error: std::sync::Arc::new(error),
                    }),
                    FieldPath::root(),
                    None,
                )
            }
        };
        let file = std::fs::File::open(path).map_err(io(IoOperation::Open))?;
        let len = file.metadata().map_err(io(IoOperation::Stat))?.len();
        if len == 0 {
            // An empty mapping is an error on Linux; an empty file is simply too short.
            return Ok(VmfbFile {
                bytes: Bytes::Owned(Vec::new()),
            });
        }
        // SAFETY: the mapping is read-only and private. Another process truncating the file
        // while we hold it can still fault the process (as with any mapped file); pactum never
        // writes through it.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io(IoOperation::Map))?;
        Ok(VmfbFile {
            bytes: Bytes::Mapped(map),
        })
    }

    /// A module held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> VmfbFile {
        VmfbFile {
            bytes: Bytes::Owned(bytes),
        }
    }

    /// A module read in place from bytes someone else owns (a binding's buffer), without a
    /// copy; they stay alive as long as the file (and every module loaded from it) does.
    pub fn from_shared(bytes: std::sync::Arc<dyn AsRef<[u8]> + Send + Sync>) -> VmfbFile {
        VmfbFile {
            bytes: Bytes::Shared(bytes),
        }
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(map) => map,
            Bytes::Owned(bytes) => bytes,
            Bytes::Shared(bytes) => (**bytes).as_ref(),
        }
    }

    /// Locates and verifies the module.
    pub fn module(&self) -> Result<BytecodeModule<'_>, VmfbError> {
        BytecodeModule::parse(self.bytes())
    }
}

/// `FeatureBits`: what a module (or function) needs from the VM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FeatureBits(pub u32);

impl FeatureBits {
    /// 32-bit floating point.
    pub const EXT_F32: u32 = 1 << 0;
    /// 64-bit floating point.
    pub const EXT_F64: u32 = 1 << 1;
    /// Cooperative yields (IREE 3.x).
    pub const YIELD: u32 = 1 << 2;
    /// Unwinding (IREE 3.x).
    pub const UNWIND: u32 = 1 << 3;

    /// The names of the set bits, and `0x..` for unknown ones.
    pub fn names(self) -> Vec<String> {
        let mut names = Vec::new();
        for (bit, name) in [
            (Self::EXT_F32, "EXT_F32"),
            (Self::EXT_F64, "EXT_F64"),
            (Self::YIELD, "YIELD"),
            (Self::UNWIND, "UNWIND"),
        ] {
            if self.0 & bit != 0 {
                names.push(name.to_owned());
            }
        }
        let unknown = self.0 & !0xF;
        if unknown != 0 {
            names.push(format!("{unknown:#x}"));
        }
        names
    }
}

/// `EXT_F32|YIELD`, or `0`.
impl fmt::Display for FeatureBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names();
        if names.is_empty() {
            f.write_str("0")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// A key/value attribute (`AttrDef`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr<'a> {
    /// The key (empty when absent).
    pub key: &'a str,
    /// The value (empty when absent).
    pub value: &'a str,
}

/// A function signature (`FunctionSignatureDef`): the calling convention and reflection
/// attributes.
#[derive(Clone, Copy, Debug)]
pub struct FunctionSignature<'a> {
    /// The calling-convention string, e.g. `0rf_rI`.
    pub calling_convention: Option<&'a str>,
    table: Table<'a>,
}

impl<'a> FunctionSignature<'a> {
    fn new(table: Table<'a>) -> FunctionSignature<'a> {
        FunctionSignature {
            calling_convention: table.str(signature::CALLING_CONVENTION),
            table,
        }
    }

    /// The reflection attributes, in stored order (IREE sorts them by key).
    pub fn attrs(&self) -> impl ExactSizeIterator<Item = Attr<'a>> + 'a {
        attrs(self.table.vector(signature::ATTRS))
    }

    /// The attribute `key`, when present.
    pub fn attr(&self, key: &str) -> Option<&'a str> {
        self.attrs().find(|a| a.key == key).map(|a| a.value)
    }

    /// The calling convention, parsed.
    pub fn cconv(&self) -> Option<Result<CallingConvention, ParseError>> {
        self.calling_convention.map(CallingConvention::parse)
    }

    /// The ABI attributes (`iree.abi`, `iree.abi.declaration`, `fv`/`f`, ...), parsed.
    pub fn abi(&self) -> Result<FunctionAbi, AttributeError> {
        FunctionAbi::from_pairs(self.attrs().map(|a| (a.key, a.value)))
    }
}

fn attrs(vector: Option<VectorAt<'_>>) -> impl ExactSizeIterator<Item = Attr<'_>> + '_ {
    let len = vector.map_or(0, VectorAt::len);
    (0..len).map(move |i| {
        let table = vector.map(|v| v.table(i));
        Attr {
            key: table.and_then(|t| t.str(attr::KEY)).unwrap_or(""),
            value: table.and_then(|t| t.str(attr::VALUE)).unwrap_or(""),
        }
    })
}

/// A module this one depends on (`ModuleDependencyDef`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dependency<'a> {
    /// The module name, e.g. `hal`.
    pub name: &'a str,
    /// The lowest version that satisfies it.
    pub minimum_version: u32,
    /// `ModuleDependencyFlagBits`: 1 = REQUIRED (the default), 2 = OPTIONAL.
    pub flags: u32,
}

impl Dependency<'_> {
    /// Whether the dependency is optional.
    pub fn is_optional(&self) -> bool {
        self.flags & 2 != 0
    }
}

/// An imported function (`ImportFunctionDef`).
#[derive(Clone, Copy, Debug)]
pub struct Import<'a> {
    /// The fully qualified name, e.g. `hal.buffer_view.create`.
    pub full_name: &'a str,
    /// Its signature, when recorded.
    pub signature: Option<FunctionSignature<'a>>,
    /// `ImportFlagBits`: 1 = REQUIRED (the default), 2 = OPTIONAL.
    pub flags: u32,
}

impl Import<'_> {
    /// Whether the import may be missing at load time.
    pub fn is_optional(&self) -> bool {
        self.flags & 2 != 0
    }
}

/// An exported function (`ExportFunctionDef`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Export<'a> {
    /// The exported name.
    pub local_name: &'a str,
    /// The index of its signature and descriptor (0 when absent).
    pub internal_ordinal: i32,
}

/// Where a read-only segment's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RodataStorage<'a> {
    /// Inside the FlatBuffer.
    Embedded(&'a [u8]),
    /// In the file, after the FlatBuffer: `offset` from the rodata base, `length` bytes.
    External {
        /// Offset from the 64-aligned end of the FlatBuffer.
        offset: u64,
        /// Length in bytes.
        length: u64,
    },
}

/// A read-only data segment (`RodataSegmentDef`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RodataSegment<'a> {
    /// Where the bytes are.
    pub storage: RodataStorage<'a>,
    /// The compression union's tag: 0 none recorded, 1 `UncompressedDataDef`.
    pub compression: u8,
}

impl RodataSegment<'_> {
    /// The size in bytes.
    pub fn len(&self) -> u64 {
        match self.storage {
            RodataStorage::Embedded(bytes) => bytes.len() as u64,
            RodataStorage::External { length, .. } => length,
        }
    }

    /// Whether the segment is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the bytes live outside the FlatBuffer.
    pub fn is_external(&self) -> bool {
        matches!(self.storage, RodataStorage::External { .. })
    }
}

/// `ModuleStateDef`: the module's globals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModuleState {
    /// Bytes of value globals.
    pub global_bytes_capacity: i32,
    /// Number of reference globals.
    pub global_ref_count: i32,
}

/// `FunctionDescriptor`: where a function's bytecode is and what it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunctionDescriptor {
    /// Offset into `bytecode_data`.
    pub bytecode_offset: i32,
    /// Length in bytes.
    pub bytecode_length: i32,
    /// Features the function needs.
    pub requirements: FeatureBits,
    /// Reserved (0).
    pub reserved: i16,
    /// Number of blocks.
    pub block_count: i16,
    /// Number of i32 registers.
    pub i32_register_count: i16,
    /// Number of ref registers.
    pub ref_register_count: i16,
}

/// One entry of the debug database's location table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location<'a> {
    /// A NONE entry.
    None,
    /// `CallSiteLocDef`: two location indices.
    CallSite {
        /// The callee's location.
        callee: i32,
        /// The caller's location.
        caller: i32,
    },
    /// `FileLineColLocDef`.
    FileLineCol {
        /// The file.
        filename: &'a str,
        /// The line.
        line: i32,
        /// The column.
        column: i32,
    },
    /// `FusedLocDef`: several locations.
    Fused {
        /// Extra data.
        metadata: Option<&'a str>,
        /// Location indices.
        locations: Vec<i32>,
    },
    /// `NameLocDef`.
    Name {
        /// The name.
        name: &'a str,
        /// The location it names.
        child_location: i32,
    },
}

/// `BytecodeLocationDef`: a bytecode offset and a location-table index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    /// Offset in the function's bytecode.
    pub bytecode_offset: i32,
    /// Index into the location table.
    pub location: i32,
}

/// `FunctionSourceMapDef`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSourceMap<'a> {
    /// The function's name.
    pub local_name: Option<&'a str>,
    /// Its bytecode locations.
    pub locations: Vec<SourceLocation>,
}

/// `DebugDatabaseDef`.
#[derive(Clone, Copy, Debug)]
pub struct DebugDatabase<'a> {
    table: Table<'a>,
}

impl<'a> DebugDatabase<'a> {
    /// The location table.
    pub fn locations(&self) -> Vec<Location<'a>> {
        let (Some(types), Some(values)) = (
            self.table.vector(debug_database::LOCATION_TABLE_TYPE),
            self.table.vector(debug_database::LOCATION_TABLE),
        ) else {
            return Vec::new();
        };
        (0..types.len())
            .map(|i| {
                if values.offset(i) == 0 {
                    return Location::None;
                }
                let t = values.table(i);
                match types.u8(i) {
                    LOCATION_CALL_SITE => Location::CallSite {
                        callee: t.i32(call_site_loc::CALLEE, 0),
                        caller: t.i32(call_site_loc::CALLER, 0),
                    },
                    LOCATION_FILE_LINE_COL => Location::FileLineCol {
                        filename: t.str(file_line_col_loc::FILENAME).unwrap_or(""),
                        line: t.i32(file_line_col_loc::LINE, 0),
                        column: t.i32(file_line_col_loc::COLUMN, 0),
                    },
                    LOCATION_FUSED => Location::Fused {
                        metadata: t.str(fused_loc::METADATA),
                        locations: t
                            .vector(fused_loc::LOCATIONS)
                            .map_or_else(Vec::new, |v| (0..v.len()).map(|j| v.i32(j)).collect()),
                    },
                    LOCATION_NAME => Location::Name {
                        name: t.str(name_loc::NAME).unwrap_or(""),
                        child_location: t.i32(name_loc::CHILD_LOCATION, 0),
                    },
                    _ => Location::None,
                }
            })
            .collect()
    }

    /// The per-function source maps.
    pub fn functions(&self) -> Vec<FunctionSourceMap<'a>> {
        let Some(vector) = self.table.vector(debug_database::FUNCTIONS) else {
            return Vec::new();
        };
        (0..vector.len())
            .map(|i| {
                let t = vector.table(i);
                FunctionSourceMap {
                    local_name: t.str(source_map::LOCAL_NAME),
                    locations: t.vector(source_map::LOCATIONS).map_or_else(Vec::new, |v| {
                        (0..v.len())
                            .map(|j| {
                                let r = v.record(j, BYTECODE_LOCATION_SIZE);
                                SourceLocation {
                                    bytecode_offset: r.i32(0),
                                    location: r.i32(4),
                                }
                            })
                            .collect()
                    }),
                }
            })
            .collect()
    }
}

/// A verified bytecode module, read in place from its file's bytes.
#[derive(Clone, Copy, Debug)]
pub struct BytecodeModule<'a> {
    file: &'a [u8],
    layout_container: Container,
    flatbuffer_start: usize,
    rodata_base: u64,
    root: Table<'a>,
}

impl<'a> BytecodeModule<'a> {
    /// Locates the FlatBuffer in `file` (either container), verifies its structure, and checks
    /// what the runtime relies on: non-empty names, export ordinals, descriptor and external
    /// data ranges.
    pub fn parse(file: &'a [u8]) -> Result<BytecodeModule<'a>, VmfbError> {
        let layout = container::locate(file)?;
        let buffer = &file[layout.flatbuffer.clone()];
        schema::verify(buffer, layout.flatbuffer.start)?;
        let module = BytecodeModule {
            file,
            layout_container: layout.container,
            flatbuffer_start: layout.flatbuffer.start,
            rodata_base: layout.rodata_base,
            root: Buffer(buffer).root(),
        };
        module.check()?;
        Ok(module)
    }

    /// The container and where things are in the file.
    pub fn layout(&self) -> ContainerLayout {
        let end = self.flatbuffer_start + Buffer(self.flatbuffer()).u32(0) as usize + 4;
        ContainerLayout {
            container: self.layout_container,
            flatbuffer: self.flatbuffer_start..end,
            rodata_base: self.rodata_base,
        }
    }

    /// The container kind.
    pub fn container(&self) -> Container {
        self.layout_container
    }

    fn flatbuffer(&self) -> &'a [u8] {
        let size = Buffer(&self.file[self.flatbuffer_start..]).u32(0) as usize;
        &self.file[self.flatbuffer_start..self.flatbuffer_start + 4 + size]
    }

    /// The module name.
    pub fn name(&self) -> &'a str {
        self.root.str(module::NAME).unwrap_or("")
    }

    /// The module version (0 when absent).
    pub fn version(&self) -> u32 {
        self.root.u32(module::VERSION, 0)
    }

    /// What the module needs from the VM.
    pub fn requirements(&self) -> FeatureBits {
        FeatureBits(self.root.u32(module::REQUIREMENTS, 0))
    }

    /// Module-level reflection attributes.
    pub fn attrs(&self) -> impl ExactSizeIterator<Item = Attr<'a>> + 'a {
        attrs(self.root.vector(module::ATTRS))
    }

    /// The names of the types the module uses.
    pub fn types(&self) -> impl ExactSizeIterator<Item = &'a str> + 'a {
        let vector = self.root.vector(module::TYPES);
        (0..vector.map_or(0, VectorAt::len)).map(move |i| {
            vector
                .and_then(|v| v.table(i).str(type_def::FULL_NAME))
                .unwrap_or("")
        })
    }

    /// The modules this one depends on.
    pub fn dependencies(&self) -> impl ExactSizeIterator<Item = Dependency<'a>> + 'a {
        let vector = self.root.vector(module::DEPENDENCIES);
        (0..vector.map_or(0, VectorAt::len)).map(move |i| {
            let t = vector.map(|v| v.table(i));
            Dependency {
                name: t.and_then(|t| t.str(dependency::NAME)).unwrap_or(""),
                minimum_version: t.map_or(0, |t| t.u32(dependency::MINIMUM_VERSION, 0)),
                flags: t.map_or(1, |t| t.u32(dependency::FLAGS, 1)),
            }
        })
    }

    /// The imported functions.
    pub fn imports(&self) -> impl ExactSizeIterator<Item = Import<'a>> + 'a {
        let vector = self.root.vector(module::IMPORTED_FUNCTIONS);
        (0..vector.map_or(0, VectorAt::len)).map(move |i| {
            let t = vector.map(|v| v.table(i));
            Import {
                full_name: t.and_then(|t| t.str(import::FULL_NAME)).unwrap_or(""),
                signature: t
                    .and_then(|t| t.table(import::SIGNATURE))
                    .map(FunctionSignature::new),
                flags: t.map_or(1, |t| t.u32(import::FLAGS, 1)),
            }
        })
    }

    /// The exported functions.
    pub fn exports(&self) -> impl ExactSizeIterator<Item = Export<'a>> + 'a {
        let vector = self.root.vector(module::EXPORTED_FUNCTIONS);
        (0..vector.map_or(0, VectorAt::len)).map(move |i| {
            let t = vector.map(|v| v.table(i));
            Export {
                local_name: t.and_then(|t| t.str(export::LOCAL_NAME)).unwrap_or(""),
                internal_ordinal: t.map_or(0, |t| t.i32(export::INTERNAL_ORDINAL, 0)),
            }
        })
    }

    /// The export named `name`.
    pub fn export(&self, name: &str) -> Option<Export<'a>> {
        self.exports().find(|e| e.local_name == name)
    }

    /// The signatures of all internal functions, by ordinal.
    pub fn function_signatures(&self) -> impl Iterator<Item = FunctionSignature<'a>> + 'a {
        let vector = self.root.vector(module::FUNCTION_SIGNATURES);
        (0..vector.map_or(0, VectorAt::len))
            .filter_map(move |i| vector.map(|v| FunctionSignature::new(v.table(i))))
    }

    /// The signature of an export.
    pub fn export_signature(&self, export: &Export<'_>) -> Option<FunctionSignature<'a>> {
        let vector = self.root.vector(module::FUNCTION_SIGNATURES)?;
        let ordinal = usize::try_from(export.internal_ordinal).ok()?;
        (ordinal < vector.len()).then(|| FunctionSignature::new(vector.table(ordinal)))
    }

    /// The read-only data segments (their bytes are not touched).
    pub fn rodata_segments(&self) -> impl ExactSizeIterator<Item = RodataSegment<'a>> + 'a {
        let vector = self.root.vector(module::RODATA_SEGMENTS);
        (0..vector.map_or(0, VectorAt::len)).map(move |i| match vector.map(|v| v.table(i)) {
            Some(t) => segment(t),
            None => RodataSegment {
                storage: RodataStorage::Embedded(&[]),
                compression: 0,
            },
        })
    }

    /// The bytes of read-only segment `index` (for an external segment, a slice of the mapped
    /// file: reading it is what pages it in).
    pub fn rodata(&self, index: usize) -> Option<&'a [u8]> {
        let segment = self.rodata_segments().nth(index)?;
        match segment.storage {
            RodataStorage::Embedded(bytes) => Some(bytes),
            RodataStorage::External { offset, length } => {
                let (start, end) = self.external_range(offset, length)?;
                self.file.get(start..end)
            }
        }
    }

    /// Where the bytes of read-only segment `index` are in the file (for embedded segments,
    /// inside the FlatBuffer), so that a caller holding the file can view them without a copy.
    pub fn rodata_file_range(&self, index: usize) -> Option<std::ops::Range<usize>> {
        let bytes = self.rodata(index)?;
        let start = (bytes.as_ptr() as usize).checked_sub(self.file.as_ptr() as usize)?;
        let end = start.checked_add(bytes.len())?;
        (end <= self.file.len()).then_some(start..end)
    }

    /// The local name of internal function `ordinal` from the debug database, when kept.
    pub fn function_name(&self, ordinal: usize) -> Option<&'a str> {
        let vector = self
            .root
            .table(module::DEBUG_DATABASE)?
            .vector(debug_database::FUNCTIONS)?;
        if ordinal >= vector.len() {
            return None;
        }
        vector
            .table(ordinal)
            .str(source_map::LOCAL_NAME)
            .filter(|s| !s.is_empty())
    }

    /// The signature of internal function `ordinal`.
    pub fn function_signature(&self, ordinal: usize) -> Option<FunctionSignature<'a>> {
        let vector = self.root.vector(module::FUNCTION_SIGNATURES)?;
        (ordinal < vector.len()).then(|| FunctionSignature::new(vector.table(ordinal)))
    }

    fn external_range(&self, offset: u64, length: u64) -> Option<(usize, usize)> {
        let start = self.rodata_base.checked_add(offset)?;
        let end = start.checked_add(length)?;
        (end <= self.file.len() as u64).then_some((start as usize, end as usize))
    }

    /// Sizes of the read-write data segments.
    pub fn rwdata_segments(&self) -> impl ExactSizeIterator<Item = i32> + 'a {
        let vector = self.root.vector(module::RWDATA_SEGMENTS);
        (0..vector.map_or(0, VectorAt::len))
            .map(move |i| vector.map_or(0, |v| v.table(i).i32(rwdata::BYTE_SIZE, 0)))
    }

    /// The module's global storage, when recorded.
    pub fn module_state(&self) -> Option<ModuleState> {
        self.root.table(module::MODULE_STATE).map(|t| ModuleState {
            global_bytes_capacity: t.i32(module_state::GLOBAL_BYTES_CAPACITY, 0),
            global_ref_count: t.i32(module_state::GLOBAL_REF_COUNT, 0),
        })
    }

    /// The function descriptors, by ordinal.
    pub fn function_descriptors(&self) -> impl ExactSizeIterator<Item = FunctionDescriptor> + 'a {
        let vector = self.root.vector(module::FUNCTION_DESCRIPTORS);
        (0..vector.map_or(0, VectorAt::len)).map(move |i| {
            vector.map_or_else(FunctionDescriptor::default, |v| {
                let r = v.record(i, FUNCTION_DESCRIPTOR_SIZE);
                FunctionDescriptor {
                    bytecode_offset: r.i32(0),
                    bytecode_length: r.i32(4),
                    requirements: FeatureBits(r.u32(8)),
                    reserved: r.i16(12),
                    block_count: r.i16(14),
                    i32_register_count: r.i16(16),
                    ref_register_count: r.i16(18),
                }
            })
        })
    }

    /// The bytecode version (`major << 16 | minor`; 0 when absent).
    pub fn bytecode_version(&self) -> u32 {
        self.root.u32(module::BYTECODE_VERSION, 0)
    }

    /// All functions' bytecode.
    pub fn bytecode_data(&self) -> &'a [u8] {
        self.root
            .vector(module::BYTECODE_DATA)
            .map_or(&[], |v| v.bytes(1))
    }

    /// The bytecode of the function with this ordinal.
    pub fn function_bytecode(&self, ordinal: usize) -> Option<&'a [u8]> {
        let descriptor = self.function_descriptors().nth(ordinal)?;
        let start = usize::try_from(descriptor.bytecode_offset).ok()?;
        let end = start.checked_add(usize::try_from(descriptor.bytecode_length).ok()?)?;
        self.bytecode_data().get(start..end)
    }

    /// The debug database, when the module keeps one.
    pub fn debug_database(&self) -> Option<DebugDatabase<'a>> {
        self.root
            .table(module::DEBUG_DATABASE)
            .map(|table| DebugDatabase { table })
    }

    /// The checks of IREE's own module verifier that go beyond FlatBuffer structure.
    fn check(&self) -> Result<(), VmfbError> {
        let fail = |path: FieldPath, kind: VmfbErrorKind| Err(VmfbError::new(kind, path, None));
        let empty = |of| VmfbErrorKind::EmptyName { of };
        let root = FieldPath::root;
        if self.name().is_empty() {
            return fail(root().field("name"), empty(NameOf::Module));
        }
        for (i, name) in self.types().enumerate() {
            if name.is_empty() {
                return fail(
                    root().field("types").index(i).field("full_name"),
                    empty(NameOf::Type),
                );
            }
        }
        for (i, dependency) in self.dependencies().enumerate() {
            if dependency.name.is_empty() {
                return fail(
                    root().field("dependencies").index(i).field("name"),
                    empty(NameOf::Dependency),
                );
            }
        }
        for (i, import) in self.imports().enumerate() {
            if import.full_name.is_empty() {
                return fail(
                    root()
                        .field("imported_functions")
                        .index(i)
                        .field("full_name"),
                    empty(NameOf::Import),
                );
            }
        }
        let descriptors = self.function_descriptors().len();
        let signatures = self
            .root
            .vector(module::FUNCTION_SIGNATURES)
            .map_or(0, VectorAt::len);
        if signatures != descriptors {
            return fail(
                root().field("function_signatures"),
                VmfbErrorKind::SignatureCountMismatch {
                    signatures,
                    descriptors,
                },
            );
        }
        for (i, export) in self.exports().enumerate() {
            let at = || root().field("exported_functions").index(i);
            if export.local_name.is_empty() {
                return fail(at().field("local_name"), empty(NameOf::Export));
            }
            if export.internal_ordinal < 0 || export.internal_ordinal as usize >= descriptors {
                return fail(
                    at().field("internal_ordinal"),
                    VmfbErrorKind::OrdinalOutOfRange {
                        ordinal: export.internal_ordinal,
                        functions: descriptors,
                    },
                );
            }
        }
        for (i, segment) in self.rodata_segments().enumerate() {
            if let RodataStorage::External { offset, length } = segment.storage
                && self.external_range(offset, length).is_none()
            {
                return fail(
                    root().field("rodata_segments").index(i),
                    self.external_data_out_of_file(offset, length),
                );
            }
        }
        let data = self.bytecode_data().len();
        for (i, d) in self.function_descriptors().enumerate() {
            let in_range = usize::try_from(d.bytecode_offset)
                .ok()
                .zip(usize::try_from(d.bytecode_length).ok())
                .and_then(|(start, len)| start.checked_add(len))
                .is_some_and(|end| end <= data);
            if !in_range || d.bytecode_length <= 0 {
                return fail(
                    root().field("function_descriptors").index(i),
                    VmfbErrorKind::BytecodeOutOfRange {
                        offset: d.bytecode_offset,
                        length: d.bytecode_length,
                        data_len: data,
                    },
                );
            }
        }
        Ok(())
    }

    /// The error for an external segment at `offset`, `length` bytes long, that the file does
    /// not hold.
    pub(crate) fn external_data_out_of_file(&self, offset: u64, length: u64) -> VmfbErrorKind {
        VmfbErrorKind::ExternalDataOutOfFile {
            offset,
            length,
            rodata_base: self.rodata_base,
            file_len: self.file.len() as u64,
        }
    }
}

fn segment(table: Table<'_>) -> RodataSegment<'_> {
    let compression = table.u8(rodata::COMPRESSION_TYPE_TYPE, 0);
    let storage = match table.vector(rodata::EMBEDDED_DATA) {
        Some(vector) => RodataStorage::Embedded(vector.bytes(1)),
        None => RodataStorage::External {
            offset: table.u64(rodata::EXTERNAL_DATA_OFFSET, 0),
            length: table.u64(rodata::EXTERNAL_DATA_LENGTH, 0),
        },
    };
    RodataSegment {
        storage,
        compression,
    }
}

impl Import<'_> {
    /// The calling convention, parsed.
    pub fn cconv(&self) -> Option<Result<CallingConvention, ParseError>> {
        self.signature.and_then(|s| s.cconv())
    }
}
