//! The `iree.vm.BytecodeModuleDef` schema (`iree-bytecode-module-def.fbs`): field slots, and
//! its structural verification with the `flatbuffers` crate's verifier.
//!
//! A table field with id `n` lives at vtable offset `4 + 2n`; a union field takes two ids, its
//! type byte first. The verifier checks every offset, length, string (UTF-8 and NUL), alignment,
//! union tag and the nesting depth before anything is read.

use std::borrow::Cow;

use flatbuffers::{
    ErrorTraceDetail, ForwardsUOffset, InvalidFlatbuffer, SimpleToVerifyInSlice, SkipSizePrefix,
    Vector, Verifiable, Verifier, VerifierOptions,
};

use super::{FieldPath, VmfbError, VmfbErrorKind};

/// The vtable offset of field id `id`.
const fn slot(id: u16) -> u16 {
    4 + 2 * id
}

pub(crate) mod module {
    use super::slot;
    pub const NAME: u16 = slot(0);
    pub const VERSION: u16 = slot(1);
    pub const REQUIREMENTS: u16 = slot(2);
    pub const ATTRS: u16 = slot(3);
    pub const TYPES: u16 = slot(4);
    pub const DEPENDENCIES: u16 = slot(5);
    pub const IMPORTED_FUNCTIONS: u16 = slot(6);
    pub const EXPORTED_FUNCTIONS: u16 = slot(7);
    pub const FUNCTION_SIGNATURES: u16 = slot(8);
    pub const RODATA_SEGMENTS: u16 = slot(9);
    pub const RWDATA_SEGMENTS: u16 = slot(10);
    pub const MODULE_STATE: u16 = slot(11);
    pub const FUNCTION_DESCRIPTORS: u16 = slot(12);
    pub const BYTECODE_VERSION: u16 = slot(13);
    pub const BYTECODE_DATA: u16 = slot(14);
    pub const DEBUG_DATABASE: u16 = slot(15);
}

pub(crate) mod attr {
    use super::slot;
    pub const KEY: u16 = slot(0);
    pub const VALUE: u16 = slot(1);
}

pub(crate) mod type_def {
    use super::slot;
    pub const FULL_NAME: u16 = slot(0);
}

pub(crate) mod signature {
    use super::slot;
    pub const CALLING_CONVENTION: u16 = slot(0);
    pub const ATTRS: u16 = slot(1);
}

pub(crate) mod dependency {
    use super::slot;
    pub const NAME: u16 = slot(0);
    pub const MINIMUM_VERSION: u16 = slot(1);
    pub const FLAGS: u16 = slot(2);
}

pub(crate) mod import {
    use super::slot;
    pub const FULL_NAME: u16 = slot(0);
    pub const SIGNATURE: u16 = slot(1);
    pub const FLAGS: u16 = slot(2);
}

pub(crate) mod export {
    use super::slot;
    pub const LOCAL_NAME: u16 = slot(0);
    pub const INTERNAL_ORDINAL: u16 = slot(1);
}

pub(crate) mod rodata {
    use super::slot;
    pub const COMPRESSION_TYPE_TYPE: u16 = slot(0);
    pub const COMPRESSION_TYPE: u16 = slot(1);
    pub const EMBEDDED_DATA: u16 = slot(2);
    pub const EXTERNAL_DATA_OFFSET: u16 = slot(3);
    pub const EXTERNAL_DATA_LENGTH: u16 = slot(4);
}

pub(crate) mod rwdata {
    use super::slot;
    pub const BYTE_SIZE: u16 = slot(0);
}

pub(crate) mod module_state {
    use super::slot;
    pub const GLOBAL_BYTES_CAPACITY: u16 = slot(0);
    pub const GLOBAL_REF_COUNT: u16 = slot(1);
}

pub(crate) mod call_site_loc {
    use super::slot;
    pub const CALLEE: u16 = slot(0);
    pub const CALLER: u16 = slot(1);
}

pub(crate) mod file_line_col_loc {
    use super::slot;
    pub const FILENAME: u16 = slot(0);
    pub const LINE: u16 = slot(1);
    pub const COLUMN: u16 = slot(2);
}

pub(crate) mod fused_loc {
    use super::slot;
    pub const METADATA: u16 = slot(0);
    pub const LOCATIONS: u16 = slot(1);
}

pub(crate) mod name_loc {
    use super::slot;
    pub const NAME: u16 = slot(0);
    pub const CHILD_LOCATION: u16 = slot(1);
}

pub(crate) mod source_map {
    use super::slot;
    pub const LOCAL_NAME: u16 = slot(0);
    pub const LOCATIONS: u16 = slot(1);
}

pub(crate) mod debug_database {
    use super::slot;
    pub const LOCATION_TABLE_TYPE: u16 = slot(0);
    pub const LOCATION_TABLE: u16 = slot(1);
    pub const FUNCTIONS: u16 = slot(2);
}

/// `CompressionTypeDef` union tags.
pub(crate) const COMPRESSION_NONE: u8 = 0;
pub(crate) const COMPRESSION_UNCOMPRESSED: u8 = 1;

/// `LocationTypeDef` union tags.
pub(crate) const LOCATION_NONE: u8 = 0;
pub(crate) const LOCATION_CALL_SITE: u8 = 1;
pub(crate) const LOCATION_FILE_LINE_COL: u8 = 2;
pub(crate) const LOCATION_FUSED: u8 = 3;
pub(crate) const LOCATION_NAME: u8 = 4;

/// Size of the `FunctionDescriptor` struct: i32, i32, u32, i16 x 4.
pub(crate) const FUNCTION_DESCRIPTOR_SIZE: usize = 20;
/// Size of the `BytecodeLocationDef` struct: i32, i32.
pub(crate) const BYTECODE_LOCATION_SIZE: usize = 8;

/// A `FunctionDescriptor` as stored: 20 bytes, 4-aligned.
#[repr(C, align(4))]
pub(crate) struct FunctionDescriptorBytes([u8; FUNCTION_DESCRIPTOR_SIZE]);
impl SimpleToVerifyInSlice for FunctionDescriptorBytes {}

/// A `BytecodeLocationDef` as stored: 8 bytes, 4-aligned.
#[repr(C, align(4))]
pub(crate) struct BytecodeLocationBytes([u8; BYTECODE_LOCATION_SIZE]);
impl SimpleToVerifyInSlice for BytecodeLocationBytes {}

type Str = ForwardsUOffset<&'static str>;
type Tables<T> = ForwardsUOffset<Vector<'static, ForwardsUOffset<T>>>;
type Scalars<T> = ForwardsUOffset<Vector<'static, T>>;
type Result = std::result::Result<(), InvalidFlatbuffer>;

macro_rules! table {
    ($name:ident, |$table:ident| $body:expr) => {
        pub(crate) struct $name;
        impl Verifiable for $name {
            fn run_verifier(verifier: &mut Verifier, pos: usize) -> Result {
                let $table = verifier.visit_table(pos)?;
                let table = $body;
                table.finish();
                Ok(())
            }
        }
    };
}

table!(AttrDefV, |t| t
    .visit_field::<Str>("key", attr::KEY, false)?
    .visit_field::<Str>("value", attr::VALUE, false)?);

table!(TypeDefV, |t| t.visit_field::<Str>(
    "full_name",
    type_def::FULL_NAME,
    false
)?);

table!(FunctionSignatureDefV, |t| t
    .visit_field::<Str>("calling_convention", signature::CALLING_CONVENTION, false)?
    .visit_field::<Tables<AttrDefV>>(
        "attrs",
        signature::ATTRS,
        false
    )?);

table!(ModuleDependencyDefV, |t| t
    .visit_field::<Str>("name", dependency::NAME, false)?
    .visit_field::<u32>("minimum_version", dependency::MINIMUM_VERSION, false)?
    .visit_field::<u32>("flags", dependency::FLAGS, false)?);

table!(ImportFunctionDefV, |t| t
    .visit_field::<Str>("full_name", import::FULL_NAME, false)?
    .visit_field::<ForwardsUOffset<FunctionSignatureDefV>>("signature", import::SIGNATURE, false)?
    .visit_field::<u32>("flags", import::FLAGS, false)?);

table!(ExportFunctionDefV, |t| t
    .visit_field::<Str>("local_name", export::LOCAL_NAME, false)?
    .visit_field::<i32>(
        "internal_ordinal",
        export::INTERNAL_ORDINAL,
        false
    )?);

table!(UncompressedDataDefV, |t| t);

table!(RodataSegmentDefV, |t| t
    .visit_union::<u8, _>(
        "compression_type_type",
        rodata::COMPRESSION_TYPE_TYPE,
        "compression_type",
        rodata::COMPRESSION_TYPE,
        false,
        |tag, verifier, pos| match tag {
            COMPRESSION_UNCOMPRESSED => verifier
                .verify_union_variant::<ForwardsUOffset<UncompressedDataDefV>>(
                    "UncompressedDataDef",
                    pos
                ),
            COMPRESSION_NONE => Ok(()),
            _ => Err(unknown_union_tag("CompressionTypeDef", tag, pos)),
        },
    )?
    .visit_field::<Scalars<u8>>("embedded_data", rodata::EMBEDDED_DATA, false)?
    .visit_field::<u64>("external_data_offset", rodata::EXTERNAL_DATA_OFFSET, false)?
    .visit_field::<u64>(
        "external_data_length",
        rodata::EXTERNAL_DATA_LENGTH,
        false
    )?);

table!(RwdataSegmentDefV, |t| t.visit_field::<i32>(
    "byte_size",
    rwdata::BYTE_SIZE,
    false
)?);

table!(ModuleStateDefV, |t| t
    .visit_field::<i32>(
        "global_bytes_capacity",
        module_state::GLOBAL_BYTES_CAPACITY,
        false
    )?
    .visit_field::<i32>(
        "global_ref_count",
        module_state::GLOBAL_REF_COUNT,
        false
    )?);

table!(CallSiteLocDefV, |t| t
    .visit_field::<i32>("callee", call_site_loc::CALLEE, false)?
    .visit_field::<i32>("caller", call_site_loc::CALLER, false)?);

table!(FileLineColLocDefV, |t| t
    .visit_field::<Str>("filename", file_line_col_loc::FILENAME, false)?
    .visit_field::<i32>("line", file_line_col_loc::LINE, false)?
    .visit_field::<i32>(
        "column",
        file_line_col_loc::COLUMN,
        false
    )?);

table!(FusedLocDefV, |t| t
    .visit_field::<Str>("metadata", fused_loc::METADATA, false)?
    .visit_field::<Scalars<i32>>(
        "locations",
        fused_loc::LOCATIONS,
        false
    )?);

table!(NameLocDefV, |t| t
    .visit_field::<Str>("name", name_loc::NAME, false)?
    .visit_field::<i32>(
        "child_location",
        name_loc::CHILD_LOCATION,
        false
    )?);

table!(FunctionSourceMapDefV, |t| t
    .visit_field::<Str>("local_name", source_map::LOCAL_NAME, false)?
    .visit_field::<Scalars<BytecodeLocationBytes>>(
        "locations",
        source_map::LOCATIONS,
        false
    )?);

/// `DebugDatabaseDef`, whose `location_table` is a vector of unions: a vector of type bytes
/// and a vector of table offsets of the same length. A NONE entry may hold offset 0 (IREE
/// 3.13 writes one), so each element is checked according to its own tag.
pub(crate) struct DebugDatabaseDefV;

impl Verifiable for DebugDatabaseDefV {
    fn run_verifier(verifier: &mut Verifier, pos: usize) -> Result {
        let mut table = verifier
            .visit_table(pos)?
            .visit_field::<Scalars<u8>>(
                "location_table_type",
                debug_database::LOCATION_TABLE_TYPE,
                false,
            )?
            .visit_field::<Scalars<u32>>("location_table", debug_database::LOCATION_TABLE, false)?
            .visit_field::<Tables<FunctionSourceMapDefV>>(
                "functions",
                debug_database::FUNCTIONS,
                false,
            )?;
        let types = table.deref(debug_database::LOCATION_TABLE_TYPE)?;
        let values = table.deref(debug_database::LOCATION_TABLE)?;
        let verifier = table.verifier();
        match (types, values) {
            (None, None) => {}
            (Some(types), Some(values)) => {
                // Both vectors were range-checked above.
                let types = types + verifier.get_uoffset(types)? as usize;
                let values = values + verifier.get_uoffset(values)? as usize;
                let count = verifier.get_uoffset(types)? as usize;
                if verifier.get_uoffset(values)? as usize != count {
                    return Err(InvalidFlatbuffer::new_inconsistent_union::<()>(
                        "location_table",
                        "location_table_type (a different length)",
                    )
                    .unwrap_err());
                }
                for i in 0..count {
                    let tag = verifier.get_u8(types + 4 + i)?;
                    let element = values + 4 + 4 * i;
                    let offset = verifier.get_uoffset(element)? as usize;
                    if tag == LOCATION_NONE {
                        continue;
                    }
                    if offset == 0 {
                        return Err(InvalidFlatbuffer::new_missing_required::<()>(format!(
                            "location_table[{i}] (tag {tag} has no table)"
                        ))
                        .unwrap_err());
                    }
                    let target = element + offset;
                    let name = |variant: &str| format!("location_table[{i}] as {variant}");
                    match tag {
                        LOCATION_CALL_SITE => verifier.verify_union_variant::<CallSiteLocDefV>(
                            name("CallSiteLocDef"),
                            target,
                        )?,
                        LOCATION_FILE_LINE_COL => verifier
                            .verify_union_variant::<FileLineColLocDefV>(
                                name("FileLineColLocDef"),
                                target,
                            )?,
                        LOCATION_FUSED => verifier
                            .verify_union_variant::<FusedLocDefV>(name("FusedLocDef"), target)?,
                        LOCATION_NAME => verifier
                            .verify_union_variant::<NameLocDefV>(name("NameLocDef"), target)?,
                        _ => return Err(unknown_union_tag("LocationTypeDef", tag, types + 4 + i)),
                    }
                }
            }
            _ => {
                return Err(InvalidFlatbuffer::new_inconsistent_union::<()>(
                    "location_table",
                    "location_table_type",
                )
                .unwrap_err());
            }
        }
        table.finish();
        Ok(())
    }
}

table!(BytecodeModuleDefV, |t| t
    .visit_field::<Str>("name", module::NAME, true)?
    .visit_field::<u32>("version", module::VERSION, false)?
    .visit_field::<u32>("requirements", module::REQUIREMENTS, false)?
    .visit_field::<Tables<AttrDefV>>("attrs", module::ATTRS, false)?
    .visit_field::<Tables<TypeDefV>>("types", module::TYPES, false)?
    .visit_field::<Tables<ModuleDependencyDefV>>("dependencies", module::DEPENDENCIES, false)?
    .visit_field::<Tables<ImportFunctionDefV>>(
        "imported_functions",
        module::IMPORTED_FUNCTIONS,
        false
    )?
    .visit_field::<Tables<ExportFunctionDefV>>(
        "exported_functions",
        module::EXPORTED_FUNCTIONS,
        false
    )?
    .visit_field::<Tables<FunctionSignatureDefV>>(
        "function_signatures",
        module::FUNCTION_SIGNATURES,
        false
    )?
    .visit_field::<Tables<RodataSegmentDefV>>("rodata_segments", module::RODATA_SEGMENTS, false)?
    .visit_field::<Tables<RwdataSegmentDefV>>("rwdata_segments", module::RWDATA_SEGMENTS, false)?
    .visit_field::<ForwardsUOffset<ModuleStateDefV>>("module_state", module::MODULE_STATE, false)?
    .visit_field::<Scalars<FunctionDescriptorBytes>>(
        "function_descriptors",
        module::FUNCTION_DESCRIPTORS,
        false
    )?
    .visit_field::<u32>("bytecode_version", module::BYTECODE_VERSION, false)?
    .visit_field::<Scalars<u8>>("bytecode_data", module::BYTECODE_DATA, false)?
    .visit_field::<ForwardsUOffset<DebugDatabaseDefV>>(
        "debug_database",
        module::DEBUG_DATABASE,
        false
    )?);

/// An unknown union tag: reported as an unaligned read would be, with its position, since the
/// crate has no variant for it; [`to_vmfb_error`] decodes it with [`parse_unknown_union_tag`].
fn unknown_union_tag(union: &'static str, tag: u8, pos: usize) -> InvalidFlatbuffer {
    InvalidFlatbuffer::Unaligned {
        position: pos,
        unaligned_type: Cow::Owned(format!("{UNKNOWN_TAG}{union}{TAG}{tag}")),
        error_trace: Default::default(),
    }
}

const UNKNOWN_TAG: &str = "\u{0}unknown ";
const TAG: &str = " tag ";

/// The union and the tag of an error made by [`unknown_union_tag`].
fn parse_unknown_union_tag(unaligned_type: &str) -> Option<(&str, u8)> {
    let (union, tag) = unaligned_type.strip_prefix(UNKNOWN_TAG)?.rsplit_once(TAG)?;
    Some((union, tag.parse().ok()?))
}

/// Verifies the size-prefixed FlatBuffer `buffer` (which starts at byte `base` of the file).
pub(crate) fn verify(buffer: &[u8], base: usize) -> std::result::Result<(), VmfbError> {
    let options = VerifierOptions {
        // The schema nests four tables deep; anything deeper is malformed.
        max_depth: 16,
        // Every table needs at least a 4-byte offset to it and a vtable.
        max_tables: buffer.len() / 4 + 1,
        max_apparent_size: (1usize << 31).max(buffer.len().saturating_mul(4)),
        ignore_missing_null_terminator: false,
    };
    let mut verifier = Verifier::new(&options, buffer);
    <SkipSizePrefix<ForwardsUOffset<BytecodeModuleDefV>>>::run_verifier(&mut verifier, 0)
        .map_err(|error| to_vmfb_error(&error, base, buffer.len()))
}

/// The crate's error as a kind, a path into the module and a file offset.
fn to_vmfb_error(error: &InvalidFlatbuffer, base: usize, len: usize) -> VmfbError {
    let trace = match error {
        InvalidFlatbuffer::MissingRequiredField { error_trace, .. }
        | InvalidFlatbuffer::InconsistentUnion { error_trace, .. }
        | InvalidFlatbuffer::Utf8Error { error_trace, .. }
        | InvalidFlatbuffer::MissingNullTerminator { error_trace, .. }
        | InvalidFlatbuffer::Unaligned { error_trace, .. }
        | InvalidFlatbuffer::RangeOutOfBounds { error_trace, .. }
        | InvalidFlatbuffer::SignedOffsetOutOfBounds { error_trace, .. } => error_trace.as_ref(),
        _ => &[],
    };
    let mut path = FieldPath::root();
    let mut innermost = None;
    for detail in trace.iter().rev() {
        match detail {
            ErrorTraceDetail::TableField {
                field_name,
                position,
            } => {
                path = path.field(field_name.clone());
                innermost = Some(*position);
            }
            ErrorTraceDetail::VectorElement { index, position } => {
                path = path.index(*index);
                innermost = Some(*position);
            }
            ErrorTraceDetail::UnionVariant { variant, position } => {
                path = path.variant(variant.clone());
                innermost = Some(*position);
            }
        }
    }
    // Positions come from the data (a vtable length, an offset) and can point past the buffer;
    // an offset in a message must be a place in the file, so those fall back to the field.
    let file = |pos: usize| {
        let pos = if pos <= len {
            pos
        } else {
            innermost.filter(|&p| p <= len).unwrap_or(len)
        };
        Some((base + pos) as u64)
    };
    let (kind, offset) = match error {
        InvalidFlatbuffer::MissingRequiredField { required, .. } => (
            VmfbErrorKind::MissingRequiredField {
                field: required.to_string(),
            },
            innermost.and_then(file),
        ),
        InvalidFlatbuffer::InconsistentUnion {
            field, field_type, ..
        } => (
            VmfbErrorKind::InconsistentUnion {
                field: field.to_string(),
                type_field: field_type.to_string(),
            },
            innermost.and_then(file),
        ),
        InvalidFlatbuffer::Utf8Error { range, error, .. } => (
            VmfbErrorKind::InvalidUtf8 { error: *error },
            file(range.start),
        ),
        InvalidFlatbuffer::MissingNullTerminator { range, .. } => {
            (VmfbErrorKind::MissingNulTerminator, file(range.end))
        }
        InvalidFlatbuffer::Unaligned {
            position,
            unaligned_type,
            ..
        } => (
            match parse_unknown_union_tag(unaligned_type) {
                Some((union, tag)) => VmfbErrorKind::UnknownUnionTag {
                    union: union.to_owned(),
                    tag,
                },
                None => VmfbErrorKind::Misaligned {
                    type_name: unaligned_type.to_string(),
                },
            },
            file(*position),
        ),
        InvalidFlatbuffer::RangeOutOfBounds { range, .. } => (
            VmfbErrorKind::OutOfBounds {
                range: (base + range.start) as u64..base.saturating_add(range.end) as u64,
                buffer_end: (base + len) as u64,
            },
            file(range.start),
        ),
        InvalidFlatbuffer::SignedOffsetOutOfBounds {
            soffset, position, ..
        } => (
            VmfbErrorKind::VtableOutOfBounds { soffset: *soffset },
            file(*position),
        ),
        InvalidFlatbuffer::TooManyTables => (VmfbErrorKind::TooManyTables, None),
        InvalidFlatbuffer::ApparentSizeTooLarge => (VmfbErrorKind::ApparentSizeTooLarge, None),
        InvalidFlatbuffer::DepthLimitReached => (VmfbErrorKind::TooDeep, None),
    };
    VmfbError::new(kind, path, offset)
}
