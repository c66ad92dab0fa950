//! `.safetensors` files, indexed as IREE indexes them: every tensor is a data entry keyed by
//! its name, in the order of the header; `__metadata__` is not an entry. A name with JSON
//! escapes (`\u00e4`, `\"`) is unescaped (`ä`, `"`), as the safetensors format means it;
//! IREE 3.13 keeps such names escaped.
//!
//! Layout: a little-endian `u64` header length, that many bytes of a JSON object
//! `{"NAME": {"dtype": .., "shape": [..], "data_offsets": [BEGIN, END]}, ..}`, then the data;
//! `BEGIN` and `END` are relative to the end of the header. As IREE, pactum reads only
//! `data_offsets` (dtype and shape describe the bytes, not where they are).

use std::sync::Arc;

use serde_json::Value;

use super::index::{ParameterEntry, ParameterError, ParameterIndex, ParameterStorage, SharedBytes};

/// Where the JSON header starts in the file.
const HEADER_START: u64 = 8;

/// Reads the tensors of the safetensors file in `source` into an index.
pub(super) fn read(source: &SharedBytes) -> Result<ParameterIndex, ParameterError> {
    let bytes: &[u8] = (**source).as_ref();
    let file_len = bytes.len() as u64;
    let header_len = super::index::read_u64(bytes, 0).ok_or_else(|| {
        ParameterError::at(
            0,
            format!("safetensors header length truncated: the file has {file_len} bytes, 8 needed"),
        )
    })?;
    if header_len > file_len - HEADER_START {
        return Err(ParameterError::at(
            0,
            format!(
                "safetensors header length {header_len} is larger than the {} bytes after it",
                file_len - HEADER_START
            ),
        ));
    }
    let data_start = HEADER_START + header_len;
    let data_len = file_len - data_start;
    let header = &bytes[HEADER_START as usize..data_start as usize];
    let mut index = ParameterIndex::new();
    for member in top_level_members(header)? {
        let key: String = serde_json::from_slice(member.key).map_err(|e| {
            ParameterError::at(
                HEADER_START + member.key_at as u64,
                format!("safetensors tensor name is not a JSON string: {e}"),
            )
        })?;
        if key == "__metadata__" {
            continue;
        }
        let value_at = HEADER_START + member.value_at as u64;
        let (begin, end) = data_offsets(member.value).ok_or_else(|| {
            ParameterError::at(
                value_at,
                format!(
                    "safetensors tensor `{key}`: expected an object with \"data_offsets\": [BEGIN, END] (unsigned integers), found `{}`",
                    String::from_utf8_lossy(&member.value[..member.value.len().min(200)])
                ),
            )
        })?;
        if begin > end {
            return Err(ParameterError::at(
                value_at,
                format!(
                    "safetensors tensor `{key}`: data_offsets [{begin}, {end}] end before they begin"
                ),
            ));
        }
        if end > data_len {
            return Err(ParameterError::at(
                value_at,
                format!(
                    "safetensors tensor `{key}`: data_offsets [{begin}, {end}] are outside the {data_len} bytes of data after the header"
                ),
            ));
        }
        // Inside the file, so inside `usize`.
        index.insert_first(ParameterEntry {
            key,
            metadata: Vec::new(),
            storage: ParameterStorage::Data {
                source: Arc::clone(source),
                offset: (data_start + begin) as usize,
                length: (end - begin) as usize,
            },
        });
    }
    Ok(index)
}

/// `[BEGIN, END]` of a tensor's description.
fn data_offsets(value: &[u8]) -> Option<(u64, u64)> {
    let value: Value = serde_json::from_slice(value).ok()?;
    match value.get("data_offsets")?.as_array()?.as_slice() {
        [begin, end] => Some((begin.as_u64()?, end.as_u64()?)),
        _ => None,
    }
}

/// One `"key": value` of the header's object, as raw JSON text with its positions.
struct Member<'a> {
    key: &'a [u8],
    key_at: usize,
    value: &'a [u8],
    value_at: usize,
}

/// The members of the header's top-level object, in order (a JSON object parsed into a map
/// loses the order IREE lists the tensors in). Nested values are skipped without recursion,
/// then parsed one by one.
fn top_level_members(text: &[u8]) -> Result<Vec<Member<'_>>, ParameterError> {
    let error = |at: usize, what: &str| {
        ParameterError::at(
            HEADER_START + at as u64,
            format!("safetensors header is not a JSON object: {what}"),
        )
    };
    let skip_ws = |mut at: usize| {
        while text.get(at).is_some_and(|c| c.is_ascii_whitespace()) {
            at += 1;
        }
        at
    };
    let mut at = skip_ws(0);
    if text.get(at) != Some(&b'{') {
        return Err(error(at, "expected `{`"));
    }
    at = skip_ws(at + 1);
    let mut members = Vec::new();
    if text.get(at) == Some(&b'}') {
        return Ok(members);
    }
    loop {
        if text.get(at) != Some(&b'"') {
            return Err(error(at, "expected a tensor name (a string)"));
        }
        let key_end = string_end(text, at).ok_or_else(|| error(at, "unterminated string"))?;
        let key_at = at;
        at = skip_ws(key_end);
        if text.get(at) != Some(&b':') {
            return Err(error(at, "expected `:`"));
        }
        let value_at = skip_ws(at + 1);
        let value_end =
            value_end(text, value_at).ok_or_else(|| error(value_at, "unterminated value"))?;
        members.push(Member {
            key: &text[key_at..key_end],
            key_at,
            value: &text[value_at..value_end],
            value_at,
        });
        at = skip_ws(value_end);
        match text.get(at) {
            Some(b',') => at = skip_ws(at + 1),
            Some(b'}') => return Ok(members),
            _ => return Err(error(at, "expected `,` or `}`")),
        }
    }
}

/// The index after the string starting at `start` (a `"`).
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        match text.get(at)? {
            b'"' => return Some(at + 1),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
}

/// The index after the JSON value starting at `start`: strings and nested objects and arrays
/// are skipped whole (by counting brackets), scalars up to the next delimiter.
fn value_end(text: &[u8], start: usize) -> Option<usize> {
    match text.get(start)? {
        b'"' => string_end(text, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            loop {
                match text.get(at)? {
                    b'"' => {
                        at = string_end(text, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let mut at = start;
            while text
                .get(at)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
            {
                at += 1;
            }
            (at > start).then_some(at)
        }
    }
}
