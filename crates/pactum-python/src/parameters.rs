//! Parameter indexes for the Python package's `pactum.iree.ParameterIndex`
//! (python/pactum/iree_native.py): named parameters built in memory or read from archives,
//! handed to a load as a [`ParameterIndexObject`].
//!
//! Globals (registered by [`register`]), each taking the index object first where it has one:
//! - `pactum.iree.parameter_index() -> pactum.iree.ParameterIndex`: an empty index;
//! - `pactum.iree.parameter_index_add_buffer(index, key, data, metadata)`: `data` a CPU
//!   `Tensor` (a NumPy array through DLPack: the index holds the tensor, so no copy, and its
//!   bytes are the entry's, row-major) or bytes; `metadata` bytes or `None`;
//! - `pactum.iree.parameter_index_add_splat(index, key, pattern, length, metadata)`: `length`
//!   bytes of `pattern` (1, 2, 4, 8 or 16 bytes, as IREE allows) repeated;
//! - `pactum.iree.parameter_index_load(index, path)`: adds every entry of the archive at `path`
//!   ([`ParameterIndex::open`]);
//! - `pactum.iree.parameter_index_items(index) -> Array`: each entry as
//!   `[key, metadata: bytes, length, splat_pattern: bytes | None]`, in the order added;
//! - `pactum.iree.parameter_index_data(index, key) -> bytes`: a data entry's bytes (a copy);
//! - `pactum.iree.parameter_index_write_irpa(index, path)`: writes the entries as an `.irpa`
//!   archive ([`ParameterIndex::write_irpa_file`]; an `OSError` naming the file when it
//!   cannot be written).
//!
//! A key added again replaces the earlier entry ([`ParameterIndex::insert`]).

use std::sync::{MutexGuard, PoisonError};

use pactum::sys::dlpack::DLDeviceType;
use pactum::sys::tvm_ffi::TVMFFITypeIndex;
use pactum::{Any, AnyView, Array, Bytes, Error, ErrorKind, Function, Obj, Result, Tensor};
use pactum_iree::module::ParameterIndexObject;
use pactum_iree::parameters::{ParameterIndex, ParameterStorage};

/// The global making an empty index.
pub const PARAMETER_INDEX: &str = "pactum.iree.parameter_index";

/// A CPU tensor's bytes, held by the index without a copy.
struct TensorBytes {
    /// Keeps the memory alive (a NumPy array's, through DLPack).
    tensor: Tensor,
    length: usize,
}

impl TensorBytes {
    /// The bytes of `tensor`: a contiguous CPU tensor of whole-byte elements.
    fn new(tensor: Tensor) -> Result<TensorBytes> {
        if tensor.device().device_type != DLDeviceType::CPU {
            return Err(value_error(format!(
                "parameter data must be in CPU memory, got a tensor on {}",
                tensor.device()
            )));
        }
        if !tensor.is_contiguous() {
            return Err(value_error(
                "parameter data must be contiguous (row-major); pass a compact copy".into(),
            ));
        }
        let length = tensor
            .dtype()
            .element_bytes()
            .and_then(|element| usize::try_from(tensor.numel()).ok()?.checked_mul(element))
            .ok_or_else(|| {
                value_error(format!(
                    "parameter data of {} has no whole-byte size",
                    tensor.dtype()
                ))
            })?;
        Ok(TensorBytes { tensor, length })
    }
}

impl AsRef<[u8]> for TensorBytes {
    fn as_ref(&self) -> &[u8] {
        if self.length == 0 {
            return &[];
        }
        // `new` checked that the tensor is a contiguous CPU tensor of `length` bytes at its
        // data pointer; `self.tensor` keeps that memory alive while the slice borrows `self`.
        // The memory is the caller's buffer, aliased as iree.runtime's `add_buffer` aliases it:
        // the Python API documents that it must not be modified while an index or a loaded
        // module holds it.
        // SAFETY: `length` readable, live, unmodified bytes at the data pointer, as said above.
        unsafe { std::slice::from_raw_parts(self.tensor.data_ptr().cast::<u8>(), self.length) }
    }
}

/// FFI bytes, held by the index.
struct FfiBytes(Bytes);

impl AsRef<[u8]> for FfiBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn value_error(message: String) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, message)
}

fn type_error(message: String) -> Error {
    Error::new(ErrorKind::TYPE_ERROR, message)
}

fn index_of(arg: &AnyView<'_>, global: &str) -> Result<Obj<ParameterIndexObject>> {
    arg.get::<Obj<ParameterIndexObject>>().map_err(|_| {
        type_error(format!(
            "{global}: expected a pactum.iree.ParameterIndex, got {}",
            arg.type_key()
        ))
    })
}

fn lock(index: &ParameterIndexObject) -> MutexGuard<'_, ParameterIndex> {
    // An index is never left half-updated (each change is one `insert`), so a panic elsewhere
    // while it was locked leaves it usable.
    index.0.lock().unwrap_or_else(PoisonError::into_inner)
}

fn metadata_of(arg: &AnyView<'_>, key: &str) -> Result<Vec<u8>> {
    if arg.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(text) = arg.get::<&str>() {
        return Ok(text.as_bytes().to_vec());
    }
    arg.get::<&[u8]>().map(<[u8]>::to_vec).map_err(|_| {
        type_error(format!(
            "parameter `{key}`: metadata must be bytes, str or None, got {}",
            arg.type_key()
        ))
    })
}

fn expect_args<'a, 'b, const N: usize>(
    args: &'a [AnyView<'b>],
    signature: &str,
) -> Result<&'a [AnyView<'b>; N]> {
    args.try_into().map_err(|_| {
        type_error(format!(
            "{signature} takes {N} arguments, got {}",
            args.len()
        ))
    })
}

fn add_buffer(args: &[AnyView<'_>]) -> Result<Any> {
    const NAME: &str = "pactum.iree.parameter_index_add_buffer";
    let [index, key, data, metadata] =
        expect_args::<4>(args, &format!("{NAME}(index, key, data, metadata)"))?;
    let index = index_of(index, NAME)?;
    let key = key.get::<&str>()?.to_owned();
    let metadata = metadata_of(metadata, &key)?;
    let mut index = lock(&index);
    match TVMFFITypeIndex(data.type_index()) {
        TVMFFITypeIndex::TENSOR | TVMFFITypeIndex::DL_TENSOR_PTR => {
            let bytes = TensorBytes::new(data.get::<Tensor>()?)
                .map_err(|e| value_error(format!("parameter `{key}`: {}", e.message())))?;
            index.add_data(key.as_str(), bytes);
        }
        TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES | TVMFFITypeIndex::BYTE_ARRAY_PTR => {
            index.add_data(key.as_str(), FfiBytes(data.get::<Bytes>()?));
        }
        _ => {
            return Err(type_error(format!(
                "parameter `{key}`: data must be a tensor or bytes, got {}",
                data.type_key()
            )));
        }
    }
    index.set_metadata(&key, metadata);
    Ok(Any::none())
}

fn add_splat(args: &[AnyView<'_>]) -> Result<Any> {
    const NAME: &str = "pactum.iree.parameter_index_add_splat";
    let [index, key, pattern, length, metadata] = expect_args::<5>(
        args,
        &format!("{NAME}(index, key, pattern, length, metadata)"),
    )?;
    let index = index_of(index, NAME)?;
    let key = key.get::<&str>()?.to_owned();
    let pattern = pattern.get::<&[u8]>().map(<[u8]>::to_vec).map_err(|_| {
        type_error(format!(
            "parameter `{key}`: the splat pattern must be bytes, got {}",
            pattern.type_key()
        ))
    })?;
    let length = length.get::<i64>()?;
    let length = u64::try_from(length)
        .map_err(|_| value_error(format!("parameter `{key}`: negative length {length}")))?;
    let metadata = metadata_of(metadata, &key)?;
    let mut index = lock(&index);
    index
        .add_splat(key.as_str(), &pattern, length)
        .map_err(|e| value_error(format!("parameter `{key}`: {e}")))?;
    index.set_metadata(&key, metadata);
    Ok(Any::none())
}

fn load(args: &[AnyView<'_>]) -> Result<Any> {
    const NAME: &str = "pactum.iree.parameter_index_load";
    let [index, path] = expect_args::<2>(args, &format!("{NAME}(index, path)"))?;
    let index = index_of(index, NAME)?;
    let path = path.get::<&str>()?;
    if !std::path::Path::new(path).exists() {
        return Err(Error::new(
            ErrorKind::custom("FileNotFoundError"),
            format!("[Errno 2] No such file or directory: '{path}'"),
        ));
    }
    let archive = ParameterIndex::open(path).map_err(|e| value_error(e.to_string()))?;
    let mut index = lock(&index);
    for entry in archive.entries() {
        index.insert(entry.clone());
    }
    Ok(Any::none())
}

fn items(args: &[AnyView<'_>]) -> Result<Any> {
    const NAME: &str = "pactum.iree.parameter_index_items";
    let [index] = expect_args::<1>(args, &format!("{NAME}(index)"))?;
    let index = index_of(index, NAME)?;
    let index = lock(&index);
    let items = index.entries().iter().map(|entry| {
        let pattern = match &entry.storage {
            ParameterStorage::Splat { pattern, .. } => Any::from(Bytes::new(pattern)),
            ParameterStorage::Data { .. } => Any::none(),
        };
        Any::from(Array::new([
            Any::from(entry.key.as_str()),
            Any::from(Bytes::new(&entry.metadata)),
            Any::from(entry.storage.len() as i64),
            pattern,
        ]))
    });
    Ok(Any::from(Array::new(items.collect::<Vec<_>>())))
}

fn data(args: &[AnyView<'_>]) -> Result<Any> {
    const NAME: &str = "pactum.iree.parameter_index_data";
    let [index, key] = expect_args::<2>(args, &format!("{NAME}(index, key)"))?;
    let index = index_of(index, NAME)?;
    let key = key.get::<&str>()?;
    let index = lock(&index);
    let entry = index
        .get(key)
        .ok_or_else(|| Error::new(ErrorKind::KEY_ERROR, format!("no parameter `{key}`")))?;
    let bytes = entry.storage.data().ok_or_else(|| {
        value_error(format!(
            "parameter `{key}` is a splat: it has no stored bytes"
        ))
    })?;
    Ok(Any::from(Bytes::new(bytes)))
}

fn write_irpa(args: &[AnyView<'_>]) -> Result<Any> {
    const NAME: &str = "pactum.iree.parameter_index_write_irpa";
    let [index, path] = expect_args::<2>(args, &format!("{NAME}(index, path)"))?;
    let index = index_of(index, NAME)?;
    let path = path.get::<&str>()?;
    // Written from a snapshot, so the lock is not held during file I/O.
    let snapshot = lock(&index).clone();
    snapshot
        .write_irpa_file(path)
        .map_err(|e| Error::new(ErrorKind::custom("OSError"), e.to_string()))?;
    Ok(Any::none())
}

/// Registers the `pactum.iree.parameter_index*` globals unless the runtime has them.
pub fn register() -> Result<()> {
    type Packed = fn(&[AnyView<'_>]) -> Result<Any>;
    let new: Packed = |args| {
        if !args.is_empty() {
            return Err(type_error(format!(
                "{PARAMETER_INDEX}() takes no arguments, got {}",
                args.len()
            )));
        }
        Ok(Any::from(Obj::new(ParameterIndexObject::default())))
    };
    let globals: [(&str, Packed); 7] = [
        (PARAMETER_INDEX, new),
        ("pactum.iree.parameter_index_add_buffer", add_buffer),
        ("pactum.iree.parameter_index_add_splat", add_splat),
        ("pactum.iree.parameter_index_load", load),
        ("pactum.iree.parameter_index_items", items),
        ("pactum.iree.parameter_index_data", data),
        ("pactum.iree.parameter_index_write_irpa", write_irpa),
    ];
    for (name, function) in globals {
        if Function::get_global(name).is_none() {
            Function::from_packed(function).register_global(name, false)?;
        }
    }
    Ok(())
}
