//! The `vulkan-spirv-fb` executable format, read in safe code: IREE's 64-byte executable
//! header (magic `VKE1`, version 0, the FlatBuffer's length) and the FlatBuffer it wraps, an
//! `iree.hal.vulkan.ExecutableDef` (file identifier `VKE1`):
//!
//! - `ExecutableDef`: `pipelines` (0), `descriptor_set_layouts` (1), `pipeline_layouts` (2),
//!   `shader_modules` (3), `source_files` (4, debug information, not read);
//! - `PipelineDef` (one per export, in ordinal order): `shader_module_ordinal` (0),
//!   `entry_point` (1), `pipeline_layout_ordinal` (2), `subgroup_size` (3, 0 for none),
//!   `debug_info` (4, not read);
//! - `DescriptorSetLayoutDef`: `bindings` (0), each a `DescriptorSetLayoutBindingDef`:
//!   `binding` (0), `descriptor_type` (1, a `VkDescriptorType`), `descriptor_count` (2),
//!   `stage_flags` (3);
//! - `PipelineLayoutDef`: `descriptor_set_layout_ordinals` (0, `[uint32]`),
//!   `push_constant_ranges` (1, `VkPushConstantRange` structs of three `uint32`s);
//! - `ShaderModuleDef`: `spirv_code` (0, `[uint32]`).
//!
//! Every offset, length and ordinal is checked as it is read; a bad one is an
//! `INVALID_ARGUMENT` error naming the field and its byte offset in the executable, never a
//! panic. Nothing here talks to Vulkan: [`ExecutableDef::parse`] gives plain values that the
//! loader turns into Vulkan objects.

#![forbid(unsafe_code)]

use crate::status::{StatusCode, StatusError};

/// The magic (and FlatBuffer file identifier) of Vulkan executables.
pub const VULKAN_EXECUTABLE_IDENTIFIER: &[u8; 4] = b"VKE1";

/// The size of IREE's executable header before the FlatBuffer.
pub const EXECUTABLE_HEADER_BYTES: usize = 64;

/// `VK_DESCRIPTOR_TYPE_STORAGE_BUFFER`, the only descriptor type IREE's dispatches bind.
pub const STORAGE_BUFFER: u32 = 7;

/// The first word of every SPIR-V module.
pub const SPIRV_MAGIC: u32 = 0x0723_0203;

/// The most of anything (pipelines, layouts, bindings, sets) one executable may declare: far
/// above what IREE emits, low enough that a hostile count cannot make the loader allocate
/// without bound before it finds the data missing.
pub const MAX_ENTRIES: usize = 1 << 16;

/// One binding of a descriptor set layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutBinding {
    /// The binding number in its set.
    pub binding: u32,
    /// The `VkDescriptorType` (IREE binds storage buffers, type 7).
    pub descriptor_type: u32,
    /// The number of descriptors (1 for IREE's bindings).
    pub descriptor_count: u32,
    /// `VkShaderStageFlags`.
    pub stage_flags: u32,
}

/// A push constant range (`VkPushConstantRange`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushConstantRange {
    /// `VkShaderStageFlags`.
    pub stage_flags: u32,
    /// Offset in bytes.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
}

/// A pipeline layout: the descriptor set layouts of sets 0, 1, ... (ordinals into
/// [`ExecutableDef::descriptor_set_layouts`]) and the push constant ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineLayoutDef {
    /// Set `i` uses descriptor set layout `set_layouts[i]`.
    pub set_layouts: Vec<u32>,
    /// The push constant ranges.
    pub push_constant_ranges: Vec<PushConstantRange>,
}

/// One export: a compute pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineDef {
    /// The shader module holding the entry point.
    pub shader_module: u32,
    /// The entry point's name (the export's name).
    pub entry_point: String,
    /// The pipeline layout.
    pub pipeline_layout: u32,
    /// The required subgroup size (0: none).
    pub subgroup_size: u32,
}

/// A parsed `vulkan-spirv-fb` executable, every ordinal checked against its list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutableDef {
    /// The exports, in ordinal order.
    pub pipelines: Vec<PipelineDef>,
    /// The descriptor set layouts, each a list of bindings.
    pub descriptor_set_layouts: Vec<Vec<LayoutBinding>>,
    /// The pipeline layouts.
    pub pipeline_layouts: Vec<PipelineLayoutDef>,
    /// The SPIR-V of each shader module, as 32-bit words.
    pub shader_modules: Vec<Vec<u32>>,
}

fn bad(what: &str, offset: usize, message: impl std::fmt::Display) -> StatusError {
    StatusError::new(
        StatusCode::InvalidArgument,
        format!("vulkan-spirv-fb executable: {what} at byte {offset}: {message}"),
    )
}

/// The FlatBuffer, with reads that check every offset. Positions are relative to the
/// FlatBuffer; errors report them relative to the executable (`base` added).
#[derive(Clone, Copy)]
struct Flat<'a> {
    bytes: &'a [u8],
    base: usize,
}

#[derive(Clone, Copy)]
struct Table<'a> {
    flat: Flat<'a>,
    pos: usize,
    vtable: usize,
    vtable_len: usize,
    /// What the table is, for errors (`pipelines[2]`).
    name: &'a str,
}

impl<'a> Flat<'a> {
    fn at(&self, pos: usize) -> usize {
        self.base + pos
    }

    fn read<const N: usize>(&self, pos: usize, what: &str) -> Result<[u8; N], StatusError> {
        pos.checked_add(N)
            .and_then(|end| self.bytes.get(pos..end))
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                bad(
                    what,
                    self.at(pos.min(self.bytes.len())),
                    format!(
                        "{N} bytes past the end of the {}-byte FlatBuffer",
                        self.bytes.len()
                    ),
                )
            })
    }

    fn u16(&self, pos: usize, what: &str) -> Result<u16, StatusError> {
        self.read(pos, what).map(u16::from_le_bytes)
    }

    fn u32(&self, pos: usize, what: &str) -> Result<u32, StatusError> {
        self.read(pos, what).map(u32::from_le_bytes)
    }

    /// The position an unsigned offset stored at `pos` points to, inside the buffer.
    fn follow(&self, pos: usize, what: &str) -> Result<usize, StatusError> {
        let target = pos.saturating_add(self.u32(pos, what)? as usize);
        if target >= self.bytes.len() {
            return Err(bad(
                what,
                self.at(pos),
                format!("offset points to byte {target}, past the FlatBuffer's end"),
            ));
        }
        Ok(target)
    }

    fn table(&self, pos: usize, name: &'a str) -> Result<Table<'a>, StatusError> {
        let soffset = i32::from_le_bytes(self.read(pos, name)?);
        let vtable = i64::try_from(pos)
            .ok()
            .and_then(|p| usize::try_from(p - i64::from(soffset)).ok())
            .filter(|&v| v < self.bytes.len())
            .ok_or_else(|| {
                bad(
                    name,
                    self.at(pos),
                    "vtable offset points outside the FlatBuffer",
                )
            })?;
        let vtable_len = usize::from(self.u16(vtable, name)?);
        let table_len = usize::from(self.u16(vtable + 2, name)?);
        if vtable_len < 4 || vtable_len % 2 != 0 || vtable + vtable_len > self.bytes.len() {
            return Err(bad(
                name,
                self.at(vtable),
                format!("bad vtable length {vtable_len}"),
            ));
        }
        if pos + table_len > self.bytes.len() {
            return Err(bad(
                name,
                self.at(pos),
                format!("table of {table_len} bytes runs past the end"),
            ));
        }
        Ok(Table {
            flat: *self,
            pos,
            vtable,
            vtable_len,
            name,
        })
    }
}

impl<'a> Table<'a> {
    /// The position of field `id`, when present.
    fn field(&self, id: usize) -> Result<Option<usize>, StatusError> {
        let slot = 4 + 2 * id;
        if slot + 2 > self.vtable_len {
            return Ok(None);
        }
        match self.flat.u16(self.vtable + slot, self.name)? {
            0 => Ok(None),
            offset => Ok(Some(self.pos + usize::from(offset))),
        }
    }

    fn u32(&self, id: usize, field: &str) -> Result<u32, StatusError> {
        match self.field(id)? {
            Some(pos) => self.flat.u32(pos, &format!("{}.{field}", self.name)),
            None => Ok(0),
        }
    }

    /// Vector field `id`: its element count and the position of its first element, each
    /// element `element_size` bytes, all inside the buffer. An absent vector is empty.
    fn vector(
        &self,
        id: usize,
        field: &str,
        element_size: usize,
    ) -> Result<(usize, usize), StatusError> {
        let what = format!("{}.{field}", self.name);
        let Some(pos) = self.field(id)? else {
            return Ok((0, 0));
        };
        let at = self.flat.follow(pos, &what)?;
        let len = self.flat.u32(at, &what)? as usize;
        let start = at + 4;
        let fits = len
            .checked_mul(element_size)
            .and_then(|bytes| start.checked_add(bytes))
            .is_some_and(|end| end <= self.flat.bytes.len());
        if !fits {
            return Err(bad(
                &what,
                self.flat.at(at),
                format!("vector of {len} elements of {element_size} bytes runs past the end"),
            ));
        }
        if len > MAX_ENTRIES && element_size != 4 {
            return Err(bad(
                &what,
                self.flat.at(at),
                format!("{len} entries (at most {MAX_ENTRIES})"),
            ));
        }
        Ok((len, start))
    }

    fn u32s(&self, id: usize, field: &str) -> Result<Vec<u32>, StatusError> {
        let (len, start) = self.vector(id, field, 4)?;
        let bytes = &self.flat.bytes[start..start + 4 * len];
        Ok(bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect())
    }

    fn string(&self, id: usize, field: &str) -> Result<String, StatusError> {
        let what = format!("{}.{field}", self.name);
        let (len, start) = self.vector(id, field, 1)?;
        if len == 0 && self.field(id)?.is_none() {
            return Err(bad(&what, self.flat.at(self.pos), "missing"));
        }
        let bytes = &self.flat.bytes[start..start + len];
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| bad(&what, self.flat.at(start), format!("not UTF-8: {e}")))
    }

    /// The tables of vector field `id`.
    fn tables(&self, id: usize, field: &'a str) -> Result<Vec<Table<'a>>, StatusError> {
        let (len, start) = self.vector(id, field, 4)?;
        if len > MAX_ENTRIES {
            return Err(bad(
                field,
                self.flat.at(start),
                format!("{len} entries (at most {MAX_ENTRIES})"),
            ));
        }
        (0..len)
            .map(|i| {
                let at = self.flat.follow(start + 4 * i, field)?;
                self.flat.table(at, field)
            })
            .collect()
    }
}

/// The FlatBuffer inside an executable's bytes, after IREE's 64-byte header (magic `VKE1`,
/// `u32` version 0, `u64` content length).
pub fn flatbuffer_of(data: &[u8]) -> Result<&[u8], StatusError> {
    if data.len() < EXECUTABLE_HEADER_BYTES {
        return Err(bad(
            "header",
            0,
            format!(
                "{} bytes, less than the {EXECUTABLE_HEADER_BYTES}-byte header",
                data.len()
            ),
        ));
    }
    if &data[..4] != VULKAN_EXECUTABLE_IDENTIFIER {
        return Err(bad("header magic", 0, "is not `VKE1`"));
    }
    let version = u32::from_le_bytes([data[4], data[5], data[6], data[7]]);
    if version != 0 {
        return Err(StatusError::new(
            StatusCode::Incompatible,
            format!("vulkan-spirv-fb executable: header version {version} is not 0"),
        ));
    }
    let mut size = [0u8; 8];
    size.copy_from_slice(&data[8..16]);
    let size = u64::from_le_bytes(size);
    let available = (data.len() - EXECUTABLE_HEADER_BYTES) as u64;
    if size == 0 || size > available {
        return Err(bad(
            "header content size",
            8,
            format!("{size} bytes, but {available} follow the header"),
        ));
    }
    Ok(&data[EXECUTABLE_HEADER_BYTES..EXECUTABLE_HEADER_BYTES + size as usize])
}

/// Whether the SPIR-V `code` declares a `GLCompute` entry point (`OpEntryPoint`, opcode 15,
/// execution model 5) named `name`: the driver is given only names the module declares.
/// Instructions are walked by their word counts; a malformed stream simply ends the walk.
fn has_compute_entry_point(code: &[u32], name: &str) -> bool {
    const OP_ENTRY_POINT: u32 = 15;
    const GL_COMPUTE: u32 = 5;
    // After the header: magic, version, generator, bound, schema.
    let mut at = 5;
    while let Some(&first) = code.get(at) {
        let (count, opcode) = ((first >> 16) as usize, first & 0xffff);
        if count == 0 {
            return false;
        }
        let Some(words) = code.get(at..at + count) else {
            return false;
        };
        if opcode == OP_ENTRY_POINT && words.get(1) == Some(&GL_COMPUTE) {
            // The name: a NUL-terminated UTF-8 literal from word 3, little-endian bytes.
            let bytes: Vec<u8> = words[3.min(words.len())..]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take_while(|&b| b != 0)
                .collect();
            if bytes == name.as_bytes() {
                return true;
            }
        }
        at += count;
    }
    false
}

impl ExecutableDef {
    /// Parses an executable's bytes (header and FlatBuffer), checking every ordinal.
    pub fn parse(data: &[u8]) -> Result<ExecutableDef, StatusError> {
        let bytes = flatbuffer_of(data)?;
        let flat = Flat {
            bytes,
            base: EXECUTABLE_HEADER_BYTES,
        };
        if bytes.get(4..8) != Some(&VULKAN_EXECUTABLE_IDENTIFIER[..]) {
            return Err(bad("file identifier", flat.at(4), "is not `VKE1`"));
        }
        let root_at = flat.follow(0, "root offset")?;
        let root = flat.table(root_at, "ExecutableDef")?;

        let mut descriptor_set_layouts = Vec::new();
        for (i, layout) in root.tables(1, "descriptor_set_layouts")?.iter().enumerate() {
            let mut bindings = Vec::new();
            for binding in layout.tables(0, "bindings")? {
                let binding = LayoutBinding {
                    binding: binding.u32(0, "binding")?,
                    descriptor_type: binding.u32(1, "descriptor_type")?,
                    descriptor_count: binding.u32(2, "descriptor_count")?,
                    stage_flags: binding.u32(3, "stage_flags")?,
                };
                if binding.descriptor_type != STORAGE_BUFFER || binding.descriptor_count != 1 {
                    return Err(bad(
                        &format!("descriptor_set_layouts[{i}].bindings"),
                        flat.at(layout.pos),
                        format!(
                            "binding {} is {} descriptors of type {}; pactum binds one storage \
                             buffer (type {STORAGE_BUFFER}) per binding",
                            binding.binding, binding.descriptor_count, binding.descriptor_type
                        ),
                    ));
                }
                if bindings
                    .iter()
                    .any(|b: &LayoutBinding| b.binding == binding.binding)
                {
                    return Err(bad(
                        &format!("descriptor_set_layouts[{i}].bindings"),
                        flat.at(layout.pos),
                        format!("binding {} is declared twice", binding.binding),
                    ));
                }
                bindings.push(binding);
            }
            descriptor_set_layouts.push(bindings);
        }

        let mut pipeline_layouts = Vec::new();
        for (i, layout) in root.tables(2, "pipeline_layouts")?.iter().enumerate() {
            let set_layouts = layout.u32s(0, "descriptor_set_layout_ordinals")?;
            if let Some(&bad_set) = set_layouts
                .iter()
                .find(|&&s| s as usize >= descriptor_set_layouts.len())
            {
                return Err(bad(
                    &format!("pipeline_layouts[{i}].descriptor_set_layout_ordinals"),
                    flat.at(layout.pos),
                    format!(
                        "ordinal {bad_set} but the executable has {} descriptor set layouts",
                        descriptor_set_layouts.len()
                    ),
                ));
            }
            let (count, start) = layout.vector(1, "push_constant_ranges", 12)?;
            let push_constant_ranges = (0..count)
                .map(|k| {
                    let at = start + 12 * k;
                    let word = |n: usize| flat.u32(at + 4 * n, "push_constant_ranges");
                    let range = PushConstantRange {
                        stage_flags: word(0)?,
                        offset: word(1)?,
                        size: word(2)?,
                    };
                    if range.offset % 4 != 0 || range.size % 4 != 0 || range.size == 0 {
                        return Err(bad(
                            &format!("pipeline_layouts[{i}].push_constant_ranges[{k}]"),
                            flat.at(at),
                            format!(
                                "offset {} and size {} must be multiples of 4, the size not 0",
                                range.offset, range.size
                            ),
                        ));
                    }
                    Ok(range)
                })
                .collect::<Result<Vec<_>, StatusError>>()?;
            pipeline_layouts.push(PipelineLayoutDef {
                set_layouts,
                push_constant_ranges,
            });
        }

        let mut shader_modules = Vec::new();
        for (i, module) in root.tables(3, "shader_modules")?.iter().enumerate() {
            let code = module.u32s(0, "spirv_code")?;
            if code.first() != Some(&SPIRV_MAGIC) {
                return Err(bad(
                    &format!("shader_modules[{i}].spirv_code"),
                    flat.at(module.pos),
                    "is empty or does not start with the SPIR-V magic number",
                ));
            }
            shader_modules.push(code);
        }

        let mut pipelines = Vec::new();
        for (i, pipeline) in root.tables(0, "pipelines")?.iter().enumerate() {
            let def = PipelineDef {
                shader_module: pipeline.u32(0, "shader_module_ordinal")?,
                entry_point: pipeline.string(1, "entry_point")?,
                pipeline_layout: pipeline.u32(2, "pipeline_layout_ordinal")?,
                subgroup_size: pipeline.u32(3, "subgroup_size")?,
            };
            let check = |ordinal: u32, count: usize, field: &str| {
                if ordinal as usize >= count {
                    Err(bad(
                        &format!("pipelines[{i}].{field}"),
                        flat.at(pipeline.pos),
                        format!("ordinal {ordinal} but the executable has {count}"),
                    ))
                } else {
                    Ok(())
                }
            };
            check(
                def.shader_module,
                shader_modules.len(),
                "shader_module_ordinal",
            )?;
            check(
                def.pipeline_layout,
                pipeline_layouts.len(),
                "pipeline_layout_ordinal",
            )?;
            if !has_compute_entry_point(
                &shader_modules[def.shader_module as usize],
                &def.entry_point,
            ) {
                return Err(bad(
                    &format!("pipelines[{i}].entry_point"),
                    flat.at(pipeline.pos),
                    format!(
                        "shader module {} has no compute entry point named {:?}",
                        def.shader_module, def.entry_point
                    ),
                ));
            }
            if def.subgroup_size != 0 && !def.subgroup_size.is_power_of_two() {
                return Err(bad(
                    &format!("pipelines[{i}].subgroup_size"),
                    flat.at(pipeline.pos),
                    format!("{} is not a power of two", def.subgroup_size),
                ));
            }
            pipelines.push(def);
        }
        if pipelines.is_empty() {
            return Err(bad(
                "pipelines",
                flat.at(root.pos),
                "the executable exports nothing",
            ));
        }
        Ok(ExecutableDef {
            pipelines,
            descriptor_set_layouts,
            pipeline_layouts,
            shader_modules,
        })
    }

    /// Where each dispatch binding of export `ordinal` goes: `(set, binding)` in the order of
    /// the dispatch's bindings (set 0's bindings as listed, then set 1's, ...).
    pub fn binding_slots(&self, ordinal: usize) -> Vec<(u32, u32)> {
        let Some(pipeline) = self.pipelines.get(ordinal) else {
            return Vec::new();
        };
        let layout = &self.pipeline_layouts[pipeline.pipeline_layout as usize];
        layout
            .set_layouts
            .iter()
            .enumerate()
            .flat_map(|(set, &l)| {
                self.descriptor_set_layouts[l as usize]
                    .iter()
                    .map(move |b| (set as u32, b.binding))
            })
            .collect()
    }

    /// The bytes of push constants export `ordinal` takes (the end of its highest range).
    pub fn push_constant_bytes(&self, ordinal: usize) -> u32 {
        self.pipelines
            .get(ordinal)
            .map(|p| &self.pipeline_layouts[p.pipeline_layout as usize])
            .map_or(0, |l| {
                l.push_constant_ranges
                    .iter()
                    .map(|r| r.offset.saturating_add(r.size))
                    .max()
                    .unwrap_or(0)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_foreign_data_are_refused_with_the_place() {
        let e = ExecutableDef::parse(b"VKE1").unwrap_err();
        assert!(e.message.contains("less than the 64-byte header"), "{e}");
        let mut data = vec![0u8; 80];
        data[..4].copy_from_slice(b"ELF!");
        let e = ExecutableDef::parse(&data).unwrap_err();
        assert!(e.message.contains("magic"), "{e}");
        data[..4].copy_from_slice(b"VKE1");
        data[8] = 200;
        let e = ExecutableDef::parse(&data).unwrap_err();
        assert!(e.message.contains("content size at byte 8"), "{e}");
        data[8] = 16;
        // A root offset pointing past the end.
        data[64] = 0xff;
        let e = ExecutableDef::parse(&data).unwrap_err();
        assert_eq!(e.status, StatusCode::InvalidArgument, "{e}");
    }

    #[test]
    fn entry_points_are_found_by_name_and_execution_model() {
        let name = |text: &[u8; 8]| {
            [
                u32::from_le_bytes([text[0], text[1], text[2], text[3]]),
                u32::from_le_bytes([text[4], text[5], text[6], text[7]]),
            ]
        };
        let module = |model: u32| {
            let mut code = vec![SPIRV_MAGIC, 0x0001_0300, 0, 10, 0];
            // OpCapability Shader, then OpEntryPoint GLCompute %4 "main_fn".
            code.extend([(2 << 16) | 17, 1]);
            code.extend([(5 << 16) | 15, model, 4]);
            code.extend(name(b"main_fn\0"));
            code
        };
        assert!(has_compute_entry_point(&module(5), "main_fn"));
        assert!(!has_compute_entry_point(&module(5), "main"));
        assert!(!has_compute_entry_point(&module(5), "main_fn2"));
        // A vertex shader's entry point is not a compute pipeline's.
        assert!(!has_compute_entry_point(&module(0), "main_fn"));
        // A stream cut inside the instruction, or with a zero word count, ends the walk.
        let code = module(5);
        assert!(!has_compute_entry_point(&code[..code.len() - 1], "main_fn"));
        let mut zero = module(5);
        zero[5] = 0;
        assert!(!has_compute_entry_point(&zero, "main_fn"));
    }

    #[test]
    fn every_truncation_of_a_tiny_executable_is_an_error_not_a_panic() {
        // Arbitrary bytes after a valid header never panic.
        for n in 0..64u8 {
            let mut data = vec![0u8; 64 + 64];
            data[..4].copy_from_slice(b"VKE1");
            data[8] = 64;
            for (i, b) in data[64..].iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(n).wrapping_add(n);
            }
            let _ = ExecutableDef::parse(&data);
        }
    }
}
