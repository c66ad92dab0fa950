//! `.gguf` files (versions 2 and 3), indexed as IREE's gguf parser indexes them: every tensor
//! is a data entry keyed by its name, in file order; its length is computed from its shape
//! and ggml type (the format does not store it), and its bytes start at the tensor data
//! (after the header, aligned to `general.alignment`, 32 by default) plus the tensor's offset.
//!
//! Layout (little-endian): `magic "GGUF" | version u32 | tensor_count u64 | kv_count u64`,
//! then `kv_count` metadata pairs `key string | type u32 | value` (strings are a `u64` length
//! and bytes; arrays are `type u32 | count u64 | values`), then `tensor_count` tensor infos
//! `name string | n_dims u32 | dims [u64; n_dims] | ggml_type u32 | offset u64`.

use std::sync::Arc;

use super::index::{ParameterEntry, ParameterError, ParameterIndex, ParameterStorage, SharedBytes};

const DEFAULT_ALIGNMENT: u64 = 32;

/// Metadata value types.
const TYPE_STRING: u32 = 8;
const TYPE_ARRAY: u32 = 9;

/// The byte size of a fixed-size metadata value type.
fn scalar_size(value_type: u32) -> Option<u64> {
    Some(match value_type {
        0 | 1 | 7 => 1, // u8, i8, bool
        2 | 3 => 2,     // u16, i16
        4..=6 => 4,     // u32, i32, f32
        10..=12 => 8,   // u64, i64, f64
        _ => return None,
    })
}

/// (elements per block, bytes per block) of the ggml tensor types IREE's parser knows.
fn ggml_block(ggml_type: u32) -> Option<(u64, u64)> {
    Some(match ggml_type {
        0 => (1, 4),     // F32
        1 => (1, 2),     // F16
        2 => (32, 18),   // Q4_0
        3 => (32, 20),   // Q4_1
        6 => (32, 22),   // Q5_0
        7 => (32, 24),   // Q5_1
        8 => (32, 34),   // Q8_0
        9 => (32, 40),   // Q8_1
        10 => (256, 84), // Q2_K
        11 => (256, 110),
        12 => (256, 144),
        13 => (256, 176),
        14 => (256, 210),
        15 => (256, 292), // Q8_K
        16 => (1, 1),     // I8
        17 => (1, 2),     // I16
        18 => (1, 4),     // I32
        _ => return None,
    })
}

/// A bounds-checked reader over the file.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: u64,
}

impl<'a> Cursor<'a> {
    fn truncated(&self, what: &str, needed: u64) -> ParameterError {
        ParameterError::at(
            self.at,
            format!(
                "GGUF file truncated reading {what}: {needed} bytes needed, {} left",
                (self.bytes.len() as u64).saturating_sub(self.at)
            ),
        )
    }

    fn take(&mut self, what: &str, length: u64) -> Result<&'a [u8], ParameterError> {
        let bytes = super::index::read_range(self.bytes, self.at, length)
            .ok_or_else(|| self.truncated(what, length))?;
        self.at += length;
        Ok(bytes)
    }

    fn u32(&mut self, what: &str) -> Result<u32, ParameterError> {
        let b = self.take(what, 4)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    fn u64(&mut self, what: &str) -> Result<u64, ParameterError> {
        let b = self.take(what, 8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    fn string(&mut self, what: &str) -> Result<&'a [u8], ParameterError> {
        let length = self.u64(what)?;
        self.take(what, length)
    }

    /// Skips `count` values of `value_type` (an array's elements).
    fn skip_array(&mut self, key: &str, value_type: u32, count: u64) -> Result<(), ParameterError> {
        let at = self.at;
        match value_type {
            TYPE_STRING => {
                // Every string takes at least its 8-byte length: the loop ends with the file.
                for _ in 0..count {
                    self.string("a metadata array string")?;
                }
                Ok(())
            }
            TYPE_ARRAY => Err(ParameterError::at(
                at,
                format!("GGUF metadata `{key}`: nested arrays are not supported (nor by IREE)"),
            )),
            other => {
                let size = scalar_size(other).ok_or_else(|| {
                    ParameterError::at(
                        at,
                        format!("GGUF metadata `{key}`: unknown array element type {other}"),
                    )
                })?;
                let total = count.checked_mul(size).ok_or_else(|| {
                    ParameterError::at(
                        at,
                        format!("GGUF metadata `{key}`: array of {count} elements is too large"),
                    )
                })?;
                self.take("a metadata array", total).map(|_| ())
            }
        }
    }
}

/// One tensor info, as read.
struct TensorInfo<'a> {
    at: u64,
    name: &'a [u8],
    dims: &'a [u8],
    ggml_type: u32,
    offset: u64,
}

impl<'a> Cursor<'a> {
    fn tensor_info(&mut self) -> Result<TensorInfo<'a>, ParameterError> {
        let at = self.at;
        let name = self.string("a tensor name")?;
        let n_dims = self.u32("a tensor's dimension count")?;
        let dims = self.take("a tensor's dimensions", u64::from(n_dims) * 8)?;
        let ggml_type = self.u32("a tensor's type")?;
        let offset = self.u64("a tensor's offset")?;
        Ok(TensorInfo {
            at,
            name,
            dims,
            ggml_type,
            offset,
        })
    }
}

fn utf8(bytes: &[u8], at: u64, what: &str) -> Result<String, ParameterError> {
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| ParameterError::at(at, format!("GGUF {what} {bytes:02x?} is not UTF-8")))
}

/// Reads the tensors of the GGUF file in `source` into an index.
pub(super) fn read(source: &SharedBytes) -> Result<ParameterIndex, ParameterError> {
    let bytes: &[u8] = (**source).as_ref();
    let mut cursor = Cursor { bytes, at: 0 };
    if cursor.take("the magic", 4)? != b"GGUF" {
        return Err(ParameterError::at(0, "GGUF magic missing"));
    }
    let version = cursor.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(ParameterError::at(
            4,
            format!("GGUF version {version} is not supported (2 and 3 are)"),
        ));
    }
    let tensor_count = cursor.u64("the tensor count")?;
    let kv_count = cursor.u64("the metadata count")?;
    let mut index = ParameterIndex::new();
    // As IREE: without tensors the metadata is not read.
    if tensor_count == 0 {
        return Ok(index);
    }

    let mut alignment = DEFAULT_ALIGNMENT;
    // Every pair takes at least 13 bytes: the loop ends with the file.
    for _ in 0..kv_count {
        let key_at = cursor.at;
        let key = utf8(cursor.string("a metadata key")?, key_at, "metadata key")?;
        let value_type = cursor.u32("a metadata type")?;
        let value_at = cursor.at;
        if key == "general.alignment" && value_type != 4 {
            return Err(ParameterError::at(
                value_at - 4,
                format!("GGUF general.alignment has type {value_type}, must be uint32 (4)"),
            ));
        }
        match value_type {
            TYPE_STRING => {
                cursor.string("a metadata string")?;
            }
            TYPE_ARRAY => {
                let element_type = cursor.u32("an array's element type")?;
                let count = cursor.u64("an array's length")?;
                cursor.skip_array(&key, element_type, count)?;
            }
            other => {
                let size = scalar_size(other).ok_or_else(|| {
                    ParameterError::at(
                        value_at - 4,
                        format!("GGUF metadata `{key}`: unknown value type {other}"),
                    )
                })?;
                let value = cursor.take("a metadata value", size)?;
                if key == "general.alignment" {
                    let value = u64::from(u32::from_le_bytes(value.try_into().unwrap_or_default()));
                    if !value.is_power_of_two() {
                        return Err(ParameterError::at(
                            value_at,
                            format!("GGUF general.alignment {value} is not a power of two"),
                        ));
                    }
                    alignment = value;
                }
            }
        }
    }

    // The tensor data starts after the tensor infos, which are variable-sized: one pass to
    // find where they end, one to add the entries.
    let infos_at = cursor.at;
    for _ in 0..tensor_count {
        cursor.tensor_info()?;
    }
    let file_len = bytes.len() as u64;
    let data_start = cursor.at.next_multiple_of(alignment);
    let data_len = file_len.saturating_sub(data_start);
    cursor.at = infos_at;
    for _ in 0..tensor_count {
        let info = cursor.tensor_info()?;
        let name = utf8(info.name, info.at, "tensor name")?;
        let (block_elements, block_bytes) = ggml_block(info.ggml_type).ok_or_else(|| {
            ParameterError::at(
                info.at,
                format!(
                    "GGUF tensor `{name}`: ggml type {} is not supported",
                    info.ggml_type
                ),
            )
        })?;
        let too_large = || {
            ParameterError::at(
                info.at,
                format!("GGUF tensor `{name}`: its size overflows 64 bits"),
            )
        };
        let elements = info
            .dims
            .chunks_exact(8)
            .map(|d| u64::from_le_bytes(d.try_into().unwrap_or_default()))
            .try_fold(1u64, u64::checked_mul)
            .ok_or_else(too_large)?;
        let length = elements.checked_mul(block_bytes).ok_or_else(too_large)? / block_elements;
        let inside = info
            .offset
            .checked_add(length)
            .is_some_and(|end| end <= data_len);
        if !inside {
            return Err(ParameterError::at(
                info.at,
                format!(
                    "GGUF tensor `{name}`: {length} bytes at offset {} are outside the {data_len} bytes of tensor data",
                    info.offset
                ),
            ));
        }
        // Inside the file, so inside `usize`.
        index.insert_first(ParameterEntry {
            key: name,
            metadata: Vec::new(),
            storage: ParameterStorage::Data {
                source: Arc::clone(source),
                offset: (data_start + info.offset) as usize,
                length: length as usize,
            },
        });
    }
    Ok(index)
}
