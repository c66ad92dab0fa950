//! Serializing a [`ModuleDef`]: the FlatBuffer (with the `flatbuffers` crate's builder), and
//! the container around it, laid out as IREE 3.13 lays it out (facts sheet §2).
//!
//! - Bare: the size-prefixed FlatBuffer at byte 0, zero padding to 64, then each external
//!   segment at a 64-aligned offset from that point.
//! - ZIP: a 64-byte local header for `module.fb` (a `0xCAFE` padding record and a zip64 sizes
//!   record in its extra field), the FlatBuffer padded so that its prefix plus 4 is a multiple
//!   of 64, then one stored entry per external segment, each payload 64-aligned by its own
//!   header's padding, then a zip64 central directory.
//!
//! In both, external offsets count from the 64-aligned end of the FlatBuffer, so they can be
//! written into the FlatBuffer before its size is known.

use std::io::{self, Write};

use flatbuffers::{FlatBufferBuilder, ForwardsUOffset, Push, PushAlignment, WIPOffset};

use super::container::{Container, RODATA_ALIGNMENT};
use super::model::{AttrDef, FunctionSignatureDef, LocationDef, ModuleDef};
use super::schema::*;

/// Alignment of embedded data and bytecode inside the FlatBuffer, relative to its start
/// (IREE aligns rodata to at least 16; 64 covers larger requests).
const EMBEDDED_ALIGNMENT: usize = 64;

/// One byte of a vector whose data must start `EMBEDDED_ALIGNMENT`-aligned.
#[derive(Clone, Copy)]
struct AlignedByte(u8);

impl Push for AlignedByte {
    type Output = u8;

    unsafe fn push(&self, dst: &mut [u8], _written_len: usize) {
        dst[0] = self.0;
    }

    fn size() -> usize {
        1
    }

    fn alignment() -> PushAlignment {
        PushAlignment::new(EMBEDDED_ALIGNMENT)
    }
}

type Offset<T> = WIPOffset<T>;
type TableOffset = Offset<flatbuffers::TableFinishedWIPOffset>;
/// What a vector of table offsets is, once written.
type TableVector<'b> =
    Offset<flatbuffers::Vector<'b, ForwardsUOffset<flatbuffers::TableFinishedWIPOffset>>>;

fn aligned_bytes<'b>(
    builder: &mut FlatBufferBuilder<'b>,
    bytes: &[u8],
) -> Offset<flatbuffers::Vector<'b, u8>> {
    let aligned: Vec<AlignedByte> = bytes.iter().copied().map(AlignedByte).collect();
    builder.create_vector(&aligned)
}

fn attrs<'b>(builder: &mut FlatBufferBuilder<'b>, attrs: &[AttrDef]) -> TableVector<'b> {
    let tables: Vec<TableOffset> = attrs
        .iter()
        .map(|a| {
            let key = builder.create_string(&a.key);
            let value = builder.create_string(&a.value);
            let start = builder.start_table();
            builder.push_slot_always(attr::KEY, key);
            builder.push_slot_always(attr::VALUE, value);
            builder.end_table(start)
        })
        .collect();
    builder.create_vector(&tables)
}

fn signature(builder: &mut FlatBufferBuilder<'_>, def: &FunctionSignatureDef) -> TableOffset {
    let cconv = def
        .calling_convention
        .as_deref()
        .map(|c| builder.create_string(c));
    let attrs = (!def.attrs.is_empty()).then(|| attrs(builder, &def.attrs));
    let start = builder.start_table();
    if let Some(cconv) = cconv {
        builder.push_slot_always(signature::CALLING_CONVENTION, cconv);
    }
    if let Some(attrs) = attrs {
        builder.push_slot_always(signature::ATTRS, attrs);
    }
    builder.end_table(start)
}

fn tables<'b>(
    builder: &mut FlatBufferBuilder<'b>,
    tables: &[TableOffset],
) -> Option<TableVector<'b>> {
    (!tables.is_empty()).then(|| builder.create_vector(tables))
}

fn location(
    builder: &mut FlatBufferBuilder<'_>,
    location: &LocationDef,
) -> Option<(u8, TableOffset)> {
    Some(match location {
        LocationDef::None => return None,
        LocationDef::CallSite { callee, caller } => {
            let start = builder.start_table();
            builder.push_slot(call_site_loc::CALLEE, *callee, 0);
            builder.push_slot(call_site_loc::CALLER, *caller, 0);
            (LOCATION_CALL_SITE, builder.end_table(start))
        }
        LocationDef::FileLineCol {
            filename,
            line,
            column,
        } => {
            let filename = builder.create_string(filename);
            let start = builder.start_table();
            builder.push_slot_always(file_line_col_loc::FILENAME, filename);
            builder.push_slot(file_line_col_loc::LINE, *line, 0);
            builder.push_slot(file_line_col_loc::COLUMN, *column, 0);
            (LOCATION_FILE_LINE_COL, builder.end_table(start))
        }
        LocationDef::Fused {
            metadata,
            locations,
        } => {
            let metadata = metadata.as_deref().map(|m| builder.create_string(m));
            let locations = builder.create_vector(locations);
            let start = builder.start_table();
            if let Some(metadata) = metadata {
                builder.push_slot_always(fused_loc::METADATA, metadata);
            }
            builder.push_slot_always(fused_loc::LOCATIONS, locations);
            (LOCATION_FUSED, builder.end_table(start))
        }
        LocationDef::Name {
            name,
            child_location,
        } => {
            let name = builder.create_string(name);
            let start = builder.start_table();
            builder.push_slot_always(name_loc::NAME, name);
            builder.push_slot(name_loc::CHILD_LOCATION, *child_location, 0);
            (LOCATION_NAME, builder.end_table(start))
        }
    })
}

/// A vector of 4-byte-aligned records, written as raw little-endian bytes.
#[derive(Clone, Copy)]
struct Record<const N: usize>([u8; N]);

impl<const N: usize> Push for Record<N> {
    type Output = Record<N>;

    unsafe fn push(&self, dst: &mut [u8], _written_len: usize) {
        dst[..N].copy_from_slice(&self.0);
    }

    fn size() -> usize {
        N
    }

    fn alignment() -> PushAlignment {
        PushAlignment::new(4)
    }
}

/// Where each external segment goes, relative to the rodata base, and (for ZIP) its entry.
struct ExternalPlacement {
    /// Offset of the entry's local header (ZIP) or payload (bare) from the rodata base.
    entry: u64,
    /// Offset of the payload from the rodata base.
    payload: u64,
    /// The ZIP local header (empty for bare files).
    header: Vec<u8>,
    /// The entry name.
    name: String,
    /// The payload's CRC-32 (ZIP only).
    crc: u32,
}

const MODULE_ENTRY: &str = "module.fb";

impl ModuleDef {
    /// Serializes the module into `container`. External segments follow the FlatBuffer.
    pub fn write(&self, container: Container) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_to(container, &mut out);
        out
    }

    /// Serializes the module into `container`, streaming to `out`.
    pub fn write_to(&self, container: Container, out: &mut impl Write) -> io::Result<()> {
        // Place the external segments first: their offsets go into the FlatBuffer.
        let mut placements = Vec::new();
        let mut cursor = 0u64;
        for (i, segment) in self.rodata.iter().enumerate().filter(|(_, s)| s.external) {
            let name = format!("rodata_{i}.bin");
            match container {
                Container::Zip => {
                    // The rodata base is 64-aligned, so aligning relative to it suffices.
                    let header =
                        local_header(&name, segment.data.len() as u64, crc(&segment.data), cursor);
                    let payload = cursor + header.len() as u64;
                    placements.push(ExternalPlacement {
                        entry: cursor,
                        payload,
                        header,
                        crc: crc(&segment.data),
                        name,
                    });
                    cursor = payload + segment.data.len() as u64;
                }
                Container::FlatBuffer => {
                    let payload = cursor.div_ceil(RODATA_ALIGNMENT) * RODATA_ALIGNMENT;
                    placements.push(ExternalPlacement {
                        entry: payload,
                        payload,
                        header: Vec::new(),
                        crc: 0,
                        name,
                    });
                    cursor = payload + segment.data.len() as u64;
                }
            }
        }
        let mut flatbuffer = self.flatbuffer(&placements);
        let fb_start = match container {
            Container::Zip => 64u64,
            Container::FlatBuffer => 0,
        };
        if container == Container::Zip {
            // IREE pads the prefix so that prefix + 4 is a multiple of 64.
            let padded = flatbuffer.len().div_ceil(64) * 64;
            flatbuffer.resize(padded, 0);
            let prefix = (padded - 4) as u32;
            flatbuffer[..4].copy_from_slice(&prefix.to_le_bytes());
        }
        let rodata_base =
            (fb_start + flatbuffer.len() as u64).div_ceil(RODATA_ALIGNMENT) * RODATA_ALIGNMENT;

        let mut out = Counting { out, written: 0 };
        let mut central = Vec::new();
        let mut entries = 0u64;
        if container == Container::Zip {
            let fb_crc = crc(&flatbuffer);
            let header = local_header(MODULE_ENTRY, flatbuffer.len() as u64, fb_crc, 0);
            central.extend(central_header(
                MODULE_ENTRY,
                flatbuffer.len() as u64,
                fb_crc,
                0,
            ));
            entries += 1;
            out.emit(&header)?;
        }
        out.emit(&flatbuffer)?;
        let external = self.rodata.iter().filter(|s| s.external);
        for (segment, placement) in external.zip(&placements) {
            let entry = rodata_base + placement.entry;
            // Zero fill up to the entry: padding to the next 64-byte boundary.
            if entry > out.written {
                out.emit(&vec![0u8; (entry - out.written) as usize])?;
            }
            if container == Container::Zip {
                central.extend(central_header(
                    &placement.name,
                    segment.data.len() as u64,
                    placement.crc,
                    entry,
                ));
                entries += 1;
                out.emit(&placement.header)?;
            }
            out.emit(&segment.data)?;
        }
        if container == Container::Zip {
            let directory_offset = out.written;
            out.emit(&central)?;
            let record_offset = out.written;
            out.emit(&zip64_end_records(
                entries,
                central.len() as u64,
                directory_offset,
                record_offset,
            ))?;
        }
        Ok(())
    }

    /// The size-prefixed FlatBuffer, with the external segments at `placements`.
    fn flatbuffer(&self, placements: &[ExternalPlacement]) -> Vec<u8> {
        let mut b = FlatBufferBuilder::with_capacity(1024 + self.bytecode_data.len());
        let name = b.create_string(&self.name);
        let module_attrs = (!self.attrs.is_empty()).then(|| attrs(&mut b, &self.attrs));
        let types: Vec<TableOffset> = self
            .types
            .iter()
            .map(|t| {
                let full_name = b.create_string(t);
                let start = b.start_table();
                b.push_slot_always(type_def::FULL_NAME, full_name);
                b.end_table(start)
            })
            .collect();
        let types = tables(&mut b, &types);
        let dependencies: Vec<TableOffset> = self
            .dependencies
            .iter()
            .map(|d| {
                let name = b.create_string(&d.name);
                let start = b.start_table();
                b.push_slot_always(dependency::NAME, name);
                b.push_slot(dependency::MINIMUM_VERSION, d.minimum_version, 0);
                b.push_slot(dependency::FLAGS, d.flags, 1);
                b.end_table(start)
            })
            .collect();
        let dependencies = tables(&mut b, &dependencies);
        let imports: Vec<TableOffset> = self
            .imports
            .iter()
            .map(|i| {
                let full_name = b.create_string(&i.full_name);
                let sig = i.signature.as_ref().map(|s| signature(&mut b, s));
                let start = b.start_table();
                b.push_slot_always(import::FULL_NAME, full_name);
                if let Some(sig) = sig {
                    b.push_slot_always(import::SIGNATURE, sig);
                }
                b.push_slot(import::FLAGS, i.flags, 1);
                b.end_table(start)
            })
            .collect();
        let imports = tables(&mut b, &imports);
        let exports: Vec<TableOffset> = self
            .exports
            .iter()
            .map(|e| {
                let local_name = b.create_string(&e.local_name);
                let start = b.start_table();
                b.push_slot_always(export::LOCAL_NAME, local_name);
                b.push_slot(export::INTERNAL_ORDINAL, e.internal_ordinal, 0);
                b.end_table(start)
            })
            .collect();
        let exports = tables(&mut b, &exports);
        let signatures: Vec<TableOffset> = self
            .function_signatures
            .iter()
            .map(|s| signature(&mut b, s))
            .collect();
        let signatures = tables(&mut b, &signatures);
        let mut external = placements.iter();
        let rodata: Vec<TableOffset> = self
            .rodata
            .iter()
            .map(|segment| {
                let compression = (segment.compression == COMPRESSION_UNCOMPRESSED).then(|| {
                    let start = b.start_table();
                    b.end_table(start)
                });
                let (embedded, external) = if segment.external {
                    (
                        None,
                        external
                            .next()
                            .map(|p| (p.payload, segment.data.len() as u64)),
                    )
                } else {
                    (Some(aligned_bytes(&mut b, &segment.data)), None)
                };
                let start = b.start_table();
                if let Some(compression) = compression {
                    b.push_slot_always(rodata::COMPRESSION_TYPE_TYPE, COMPRESSION_UNCOMPRESSED);
                    b.push_slot_always(rodata::COMPRESSION_TYPE, compression);
                }
                if let Some(embedded) = embedded {
                    b.push_slot_always(rodata::EMBEDDED_DATA, embedded);
                }
                if let Some((offset, length)) = external {
                    b.push_slot(rodata::EXTERNAL_DATA_OFFSET, offset, 0);
                    b.push_slot(rodata::EXTERNAL_DATA_LENGTH, length, 0);
                }
                b.end_table(start)
            })
            .collect();
        let rodata = tables(&mut b, &rodata);
        let rwdata: Vec<TableOffset> = self
            .rwdata
            .iter()
            .map(|&size| {
                let start = b.start_table();
                b.push_slot(rwdata::BYTE_SIZE, size, 0);
                b.end_table(start)
            })
            .collect();
        let rwdata = tables(&mut b, &rwdata);
        let module_state = self.module_state.map(|state| {
            let start = b.start_table();
            b.push_slot(
                module_state::GLOBAL_BYTES_CAPACITY,
                state.global_bytes_capacity,
                0,
            );
            b.push_slot(module_state::GLOBAL_REF_COUNT, state.global_ref_count, 0);
            b.end_table(start)
        });
        let descriptors = (!self.function_descriptors.is_empty()).then(|| {
            let records: Vec<Record<FUNCTION_DESCRIPTOR_SIZE>> = self
                .function_descriptors
                .iter()
                .map(|d| {
                    let mut bytes = [0u8; FUNCTION_DESCRIPTOR_SIZE];
                    bytes[0..4].copy_from_slice(&d.bytecode_offset.to_le_bytes());
                    bytes[4..8].copy_from_slice(&d.bytecode_length.to_le_bytes());
                    bytes[8..12].copy_from_slice(&d.requirements.0.to_le_bytes());
                    bytes[12..14].copy_from_slice(&d.reserved.to_le_bytes());
                    bytes[14..16].copy_from_slice(&d.block_count.to_le_bytes());
                    bytes[16..18].copy_from_slice(&d.i32_register_count.to_le_bytes());
                    bytes[18..20].copy_from_slice(&d.ref_register_count.to_le_bytes());
                    Record(bytes)
                })
                .collect();
            b.create_vector(&records)
        });
        let bytecode =
            (!self.bytecode_data.is_empty()).then(|| aligned_bytes(&mut b, &self.bytecode_data));
        let debug_database = self.debug_database.as_ref().map(|db| {
            let mut tags = Vec::with_capacity(db.locations.len());
            let mut values = Vec::with_capacity(db.locations.len());
            for l in &db.locations {
                match location(&mut b, l) {
                    Some((tag, table)) => {
                        tags.push(tag);
                        values.push(Some(table));
                    }
                    None => {
                        tags.push(LOCATION_NONE);
                        values.push(None);
                    }
                }
            }
            let functions: Vec<TableOffset> = db
                .functions
                .iter()
                .map(|f| {
                    let local_name = f.local_name.as_deref().map(|n| b.create_string(n));
                    let records: Vec<Record<BYTECODE_LOCATION_SIZE>> = f
                        .locations
                        .iter()
                        .map(|l| {
                            let mut bytes = [0u8; BYTECODE_LOCATION_SIZE];
                            bytes[0..4].copy_from_slice(&l.bytecode_offset.to_le_bytes());
                            bytes[4..8].copy_from_slice(&l.location.to_le_bytes());
                            Record(bytes)
                        })
                        .collect();
                    let locations = b.create_vector(&records);
                    let start = b.start_table();
                    if let Some(local_name) = local_name {
                        b.push_slot_always(source_map::LOCAL_NAME, local_name);
                    }
                    b.push_slot_always(source_map::LOCATIONS, locations);
                    b.end_table(start)
                })
                .collect();
            let functions = tables(&mut b, &functions);
            // A vector of unions: NONE entries hold offset 0, as IREE writes them.
            let location_values = (!values.is_empty()).then(|| {
                b.start_vector::<ForwardsUOffset<TableOffset>>(values.len());
                for value in values.iter().rev() {
                    match value {
                        Some(table) => {
                            b.push(*table);
                        }
                        None => {
                            b.push(0u32);
                        }
                    }
                }
                b.end_vector::<ForwardsUOffset<TableOffset>>(values.len())
            });
            let location_types = (!tags.is_empty()).then(|| b.create_vector(&tags));
            let start = b.start_table();
            if let (Some(types), Some(values)) = (location_types, location_values) {
                b.push_slot_always(debug_database::LOCATION_TABLE_TYPE, types);
                b.push_slot_always(debug_database::LOCATION_TABLE, values);
            }
            if let Some(functions) = functions {
                b.push_slot_always(debug_database::FUNCTIONS, functions);
            }
            b.end_table(start)
        });

        let start = b.start_table();
        b.push_slot_always(module::NAME, name);
        b.push_slot(module::VERSION, self.version, 0);
        b.push_slot(module::REQUIREMENTS, self.requirements.0, 0);
        if let Some(attrs) = module_attrs {
            b.push_slot_always(module::ATTRS, attrs);
        }
        if let Some(v) = types {
            b.push_slot_always(module::TYPES, v);
        }
        if let Some(v) = dependencies {
            b.push_slot_always(module::DEPENDENCIES, v);
        }
        if let Some(v) = imports {
            b.push_slot_always(module::IMPORTED_FUNCTIONS, v);
        }
        if let Some(v) = exports {
            b.push_slot_always(module::EXPORTED_FUNCTIONS, v);
        }
        if let Some(v) = signatures {
            b.push_slot_always(module::FUNCTION_SIGNATURES, v);
        }
        if let Some(v) = rodata {
            b.push_slot_always(module::RODATA_SEGMENTS, v);
        }
        if let Some(v) = rwdata {
            b.push_slot_always(module::RWDATA_SEGMENTS, v);
        }
        if let Some(v) = module_state {
            b.push_slot_always(module::MODULE_STATE, v);
        }
        if let Some(v) = descriptors {
            b.push_slot_always(module::FUNCTION_DESCRIPTORS, v);
        }
        b.push_slot(module::BYTECODE_VERSION, self.bytecode_version, 0);
        if let Some(v) = bytecode {
            b.push_slot_always(module::BYTECODE_DATA, v);
        }
        if let Some(v) = debug_database {
            b.push_slot_always(module::DEBUG_DATABASE, v);
        }
        let root = b.end_table(start);
        b.finish_size_prefixed(root, Some("IREE"));
        b.finished_data().to_vec()
    }
}

/// A writer that counts the bytes written, for offsets.
struct Counting<'w, W: Write> {
    out: &'w mut W,
    written: u64,
}

impl<W: Write> Counting<'_, W> {
    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

fn crc(bytes: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(bytes);
    hasher.finalize()
}

const ZIP_VERSION: u16 = 45; // 4.5: zip64
const DOS_DATE_1980_01_01: u16 = (1 << 5) | 1;

/// A stored entry's local header, padded (extra record `0xCAFE`) so that the payload that
/// follows starts 64-aligned when the header starts at `position` (mod 64).
fn local_header(name: &str, size: u64, crc: u32, position: u64) -> Vec<u8> {
    let fixed = 30 + name.len() + 4 + 20; // header, name, padding record header, zip64 record
    let padding = (64 - (position as usize + fixed) % 64) % 64;
    let mut h = Vec::with_capacity(fixed + padding);
    h.extend(0x0403_4b50u32.to_le_bytes());
    h.extend(ZIP_VERSION.to_le_bytes());
    h.extend(0u16.to_le_bytes()); // flags
    h.extend(0u16.to_le_bytes()); // stored
    h.extend(0u16.to_le_bytes()); // time
    h.extend(DOS_DATE_1980_01_01.to_le_bytes());
    h.extend(crc.to_le_bytes());
    h.extend(u32::MAX.to_le_bytes()); // sizes are in the zip64 record
    h.extend(u32::MAX.to_le_bytes());
    h.extend((name.len() as u16).to_le_bytes());
    h.extend(((4 + padding + 20) as u16).to_le_bytes());
    h.extend(name.as_bytes());
    h.extend(0xCAFEu16.to_le_bytes());
    h.extend((padding as u16).to_le_bytes());
    h.extend(std::iter::repeat_n(0u8, padding));
    h.extend(0x0001u16.to_le_bytes());
    h.extend(16u16.to_le_bytes());
    h.extend(size.to_le_bytes());
    h.extend(size.to_le_bytes());
    h
}

fn central_header(name: &str, size: u64, crc: u32, offset: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(46 + name.len() + 28);
    h.extend(0x0201_4b50u32.to_le_bytes());
    h.extend(ZIP_VERSION.to_le_bytes()); // made by
    h.extend(ZIP_VERSION.to_le_bytes()); // needed
    h.extend(0u16.to_le_bytes());
    h.extend(0u16.to_le_bytes());
    h.extend(0u16.to_le_bytes());
    h.extend(DOS_DATE_1980_01_01.to_le_bytes());
    h.extend(crc.to_le_bytes());
    h.extend(u32::MAX.to_le_bytes());
    h.extend(u32::MAX.to_le_bytes());
    h.extend((name.len() as u16).to_le_bytes());
    h.extend(28u16.to_le_bytes()); // extra: zip64 record with sizes and offset
    h.extend(0u16.to_le_bytes()); // comment
    h.extend(0u16.to_le_bytes()); // disk
    h.extend(0u16.to_le_bytes()); // internal attributes
    h.extend(0u32.to_le_bytes()); // external attributes
    h.extend(u32::MAX.to_le_bytes()); // offset is in the zip64 record
    h.extend(name.as_bytes());
    h.extend(0x0001u16.to_le_bytes());
    h.extend(24u16.to_le_bytes());
    h.extend(size.to_le_bytes());
    h.extend(size.to_le_bytes());
    h.extend(offset.to_le_bytes());
    h
}

/// The zip64 end of central directory record, its locator, and the classic record.
fn zip64_end_records(
    entries: u64,
    directory_size: u64,
    directory_offset: u64,
    record_offset: u64,
) -> Vec<u8> {
    let mut r = Vec::with_capacity(56 + 20 + 22);
    r.extend(0x0606_4b50u32.to_le_bytes());
    r.extend(44u64.to_le_bytes());
    r.extend(ZIP_VERSION.to_le_bytes());
    r.extend(ZIP_VERSION.to_le_bytes());
    r.extend(0u32.to_le_bytes());
    r.extend(0u32.to_le_bytes());
    r.extend(entries.to_le_bytes());
    r.extend(entries.to_le_bytes());
    r.extend(directory_size.to_le_bytes());
    r.extend(directory_offset.to_le_bytes());
    r.extend(0x0706_4b50u32.to_le_bytes());
    r.extend(0u32.to_le_bytes());
    r.extend(record_offset.to_le_bytes());
    r.extend(1u32.to_le_bytes());
    r.extend(0x0605_4b50u32.to_le_bytes());
    r.extend(0u16.to_le_bytes());
    r.extend(0u16.to_le_bytes());
    r.extend((entries.min(0xFFFF) as u16).to_le_bytes());
    r.extend((entries.min(0xFFFF) as u16).to_le_bytes());
    r.extend((directory_size.min(0xFFFF_FFFF) as u32).to_le_bytes());
    r.extend(u32::MAX.to_le_bytes());
    r.extend(0u16.to_le_bytes());
    r
}
