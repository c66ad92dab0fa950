//! IREE modules as pactum functions: a `.vmfb` loaded into a VM [`Context`], each export a
//! packed [`Function`] that takes and returns pactum values.
//!
//! Arguments convert by the export's calling convention: `i`/`I` take ints (and bools),
//! `f`/`F` floats or ints, `r` a reference (`None`, a value returned by an earlier call, a
//! list as an `Array`, bytes as a `!vm.buffer`). Results convert back: integers, floats, lists
//! as `Array`s, buffers as `Bytes`, and any other reference as an [`Obj<VmRef>`] that can be
//! passed back into calls. One result is returned as itself, several as an `Array`, none as
//! `None`. A wrong call (count, kind, range) is a `TypeError` or `ValueError` naming the
//! argument.
//!
//! An export with `iree.abi` reflection is wrapped by the structured-call binder
//! ([`StructuredFunction`]), so it takes nested dicts, lists and keyword arguments as the V1
//! ABI describes.
//!
//! ```
//! use pactum_iree::module::IreeModule;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vmfb/vm_direct.vmfb");
//! let module = IreeModule::load(path)?;
//! let frob = module.function("frob_or_double")?;
//! assert_eq!(frob.call_typed::<_, i64>((21,))?, 42);
//! # Ok::<(), pactum::Error>(())
//! ```

use std::path::Path;
use std::sync::Arc;

use pactum::{Any, AnyView, Array, Bytes, Error, ErrorKind, Function, List, Obj, Result};

use crate::signature::Signature;
use crate::structured::StructuredFunction;
use crate::vm::{
    Context, ElementType, Function as VmFunction, Limits, Ref, Value, VmBuffer, VmList,
};
use crate::vmfb::VmfbFile;

/// A VM reference that pactum has no value type for (a HAL object, an opaque ref), held as an
/// FFI object so that it can be passed back into calls.
#[derive(Debug)]
pub struct VmRef(pub Ref);

pactum::object_type!(VmRef, "pactum.iree.VmRef");

/// A `.vmfb` module loaded in its own VM context.
#[derive(Clone)]
pub struct IreeModule {
    inner: Arc<Inner>,
}

struct Inner {
    context: Context,
    name: String,
    exports: Vec<Export>,
}

struct Export {
    name: String,
    function: VmFunction,
    /// The user-level signature its reflection records (`iree.abi`, or SIP), if any.
    signature: Option<Signature>,
}

impl std::fmt::Debug for IreeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IreeModule")
            .field("name", &self.inner.name)
            .field(
                "exports",
                &self
                    .inner
                    .exports
                    .iter()
                    .map(|e| &e.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn vm_error(error: crate::vm::VmError) -> Error {
    Error::from(error)
}

impl IreeModule {
    /// Loads, verifies and links the module at `path` with the default [`Limits`].
    pub fn load(path: impl AsRef<Path>) -> Result<IreeModule> {
        IreeModule::load_with_limits(path, Limits::default())
    }

    /// Loads the module at `path` with `limits` on every call (stack depth, instructions,
    /// memory).
    pub fn load_with_limits(path: impl AsRef<Path>, limits: Limits) -> Result<IreeModule> {
        let path = path.as_ref();
        let file = VmfbFile::open(path).map_err(|e| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("cannot load {}: {e}", path.display()),
            )
        })?;
        IreeModule::from_file(Arc::new(file), limits)
    }

    /// Loads a module from its bytes (either container).
    pub fn from_bytes(bytes: Vec<u8>, limits: Limits) -> Result<IreeModule> {
        IreeModule::from_file(Arc::new(VmfbFile::from_bytes(bytes)), limits)
    }

    fn from_file(file: Arc<VmfbFile>, limits: Limits) -> Result<IreeModule> {
        let module = file.module()?;
        let mut signatures = Vec::new();
        for export in module.exports() {
            let signature = match module.export_signature(&export).map(|s| s.abi()) {
                Some(Ok(abi)) => abi.signature().and_then(|s| s.ok()),
                _ => None,
            };
            signatures.push((export.local_name.to_owned(), signature));
        }
        let mut context = Context::new(limits);
        let name = context.load_bytecode(file.clone()).map_err(vm_error)?;
        let exports = signatures
            .into_iter()
            .map(|(export, signature)| {
                let function = context
                    .lookup_export(&format!("{name}.{export}"))
                    .map_err(vm_error)?;
                Ok(Export {
                    name: export,
                    function,
                    signature,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(IreeModule {
            inner: Arc::new(Inner {
                context,
                name,
                exports,
            }),
        })
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The exported function names, in the module's order.
    pub fn export_names(&self) -> impl Iterator<Item = &str> {
        self.inner.exports.iter().map(|e| e.name.as_str())
    }

    /// The VM calling convention of export `name` (`0iI_f`).
    pub fn calling_convention(&self, name: &str) -> Result<&str> {
        Ok(self.export(name)?.function.cconv())
    }

    /// The user-level signature export `name`'s reflection records, if any.
    pub fn signature(&self, name: &str) -> Result<Option<&Signature>> {
        Ok(self.export(name)?.signature.as_ref())
    }

    fn export(&self, name: &str) -> Result<&Export> {
        self.inner
            .exports
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.export_names().collect();
                Error::new(
                    ErrorKind::ATTRIBUTE_ERROR,
                    format!(
                        "module `{}` has no export `{name}` (it exports: {})",
                        self.inner.name,
                        names.join(", ")
                    ),
                )
            })
    }

    /// Export `name` as a packed function: structured (nested values, keyword arguments) when
    /// its reflection records an `iree.abi` signature, flat otherwise.
    pub fn function(&self, name: &str) -> Result<Function> {
        let flat = self.flat_function(name)?;
        match &self.export(name)?.signature {
            Some(signature) => {
                Ok(StructuredFunction::from_iree_abi(flat, signature)?.into_function())
            }
            None => Ok(flat),
        }
    }

    /// Export `name` as a packed function over its flat calling convention.
    pub fn flat_function(&self, name: &str) -> Result<Function> {
        let export = self.export(name)?;
        let cconv = Cconv::parse(export.function.cconv())?;
        let module = self.clone();
        let function = export.function.clone();
        let display = format!("{}.{name}", self.inner.name);
        Ok(Function::from_packed(move |args: &[AnyView<'_>]| {
            module.call_flat(&display, &function, &cconv, args)
        }))
    }

    /// Calls export `name` with `args` (see [`function`](Self::function)).
    pub fn call(&self, name: &str, args: &[AnyView<'_>]) -> Result<Any> {
        self.function(name)?.call(args)
    }

    fn call_flat(
        &self,
        display: &str,
        function: &VmFunction,
        cconv: &Cconv,
        args: &[AnyView<'_>],
    ) -> Result<Any> {
        if args.len() != cconv.args.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "{display} takes {} argument(s) ({}), got {}",
                    cconv.args.len(),
                    cconv.describe_args(),
                    args.len()
                ),
            ));
        }
        let values = args
            .iter()
            .zip(&cconv.args)
            .enumerate()
            .map(|(index, (arg, kind))| {
                to_value(arg, *kind).map_err(|e| {
                    Error::new(
                        ErrorKind::custom(&e.kind()),
                        format!("{display}: argument {index}: {}", e.message()),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let results = self
            .inner
            .context
            .invoke(function, &values)
            .map_err(vm_error)?;
        let mut results = results
            .into_iter()
            .map(from_value)
            .collect::<Result<Vec<_>>>()?;
        Ok(match results.len() {
            0 => Any::none(),
            1 => results.remove(0),
            _ => Any::from(Array::new(results)),
        })
    }
}

/// The argument and result kinds of a calling convention (`0iIfFr_...`).
#[derive(Clone, Debug)]
struct Cconv {
    args: Vec<u8>,
}

impl Cconv {
    fn parse(text: &str) -> Result<Cconv> {
        let body = text.strip_prefix('0').unwrap_or(text);
        let args = body.split('_').next().unwrap_or("");
        if args.bytes().any(|b| matches!(b, b'C' | b'D')) {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("calling convention `{text}`: variadic exports cannot be called"),
            ));
        }
        Ok(Cconv {
            args: args.bytes().filter(|&b| b != b'v').collect(),
        })
    }

    fn describe_args(&self) -> String {
        let names: Vec<&str> = self.args.iter().map(|&k| kind_name(k)).collect();
        names.join(", ")
    }
}

fn kind_name(kind: u8) -> &'static str {
    match kind {
        b'i' => "i32",
        b'I' => "i64",
        b'f' => "f32",
        b'F' => "f64",
        _ => "ref",
    }
}

fn int_of(arg: &AnyView<'_>, kind: u8) -> Result<i64> {
    arg.get::<i64>().map_err(|_| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "expected an int ({}), got {}",
                kind_name(kind),
                arg.type_key()
            ),
        )
    })
}

fn float_of(arg: &AnyView<'_>, kind: u8) -> Result<f64> {
    match arg.get::<f64>() {
        Ok(value) => Ok(value),
        Err(_) => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "expected a float ({}), got {}",
                kind_name(kind),
                arg.type_key()
            ),
        )),
    }
}

/// One argument as a VM value of `kind`.
fn to_value(arg: &AnyView<'_>, kind: u8) -> Result<Value> {
    Ok(match kind {
        b'i' => {
            let value = int_of(arg, kind)?;
            // i32 parameters are signless: any value of 32 bits, signed or not.
            let value = i32::try_from(value)
                .or_else(|_| u32::try_from(value).map(|v| v as i32))
                .map_err(|_| {
                    Error::new(
                        ErrorKind::VALUE_ERROR,
                        format!("{value} does not fit in 32 bits (i32)"),
                    )
                })?;
            Value::I32(value)
        }
        b'I' => Value::I64(int_of(arg, kind)?),
        b'f' => Value::F32(float_of(arg, kind)? as f32),
        b'F' => Value::F64(float_of(arg, kind)?),
        _ => Value::Ref(to_ref(arg, 0)?),
    })
}

/// A reference argument: `None`, a [`VmRef`], a list (`Array` or `List`) or bytes.
fn to_ref(arg: &AnyView<'_>, depth: usize) -> Result<Option<Ref>> {
    if depth > 64 {
        return Err(Error::new(
            ErrorKind::VALUE_ERROR,
            "lists nested deeper than 64 levels",
        ));
    }
    if arg.is_none() {
        return Ok(None);
    }
    if let Ok(vm_ref) = arg.get::<Obj<VmRef>>() {
        return Ok(Some(vm_ref.0.clone()));
    }
    if let Ok(bytes) = arg.get::<&[u8]>() {
        return Ok(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))));
    }
    let items: Option<Vec<Any>> = arg
        .get::<Array>()
        .map(|a| a.iter().cloned().collect())
        .or_else(|_| arg.get::<List>().map(|l| l.to_vec()))
        .ok();
    if let Some(items) = items {
        let values = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let view = item.view();
                element_value(&view, depth).map_err(|e| {
                    Error::new(
                        ErrorKind::custom(&e.kind()),
                        format!("element {i}: {}", e.message()),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let list = VmList::from_values(ElementType::Variant, values)
            .map_err(|e| Error::new(ErrorKind::VALUE_ERROR, e.to_string()))?;
        return Ok(Some(Ref::List(Arc::new(list))));
    }
    if arg.get::<pactum::Tensor>().is_ok() {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "tensor arguments need IREE's HAL module, which this build of pactum does not \
             provide yet",
        ));
    }
    Err(Error::new(
        ErrorKind::TYPE_ERROR,
        format!(
            "expected a reference (None, a list, bytes or a VM value), got {}",
            arg.type_key()
        ),
    ))
}

/// An element of a list argument: ints as i64, floats as f64, bools as i32, anything else as
/// a reference.
fn element_value(item: &AnyView<'_>, depth: usize) -> Result<Value> {
    match item.type_index() {
        1 => Ok(Value::I64(item.get::<i64>()?)),
        2 => Ok(Value::I32(i32::from(item.get::<bool>()?))),
        3 => Ok(Value::F64(item.get::<f64>()?)),
        _ => Ok(Value::Ref(to_ref(item, depth + 1)?)),
    }
}

/// A VM result as a pactum value.
fn from_value(value: Value) -> Result<Any> {
    Ok(match value {
        Value::I32(v) => Any::from(i64::from(v)),
        Value::I64(v) => Any::from(v),
        Value::F32(v) => Any::from(f64::from(v)),
        Value::F64(v) => Any::from(v),
        Value::Ref(None) => Any::none(),
        Value::Ref(Some(Ref::Buffer(buffer))) => Any::from(Bytes::new(&buffer.to_vec())),
        Value::Ref(Some(Ref::List(list))) => {
            let items = list
                .to_values()
                .into_iter()
                .map(|item| item.map_or_else(|| Ok(Any::none()), from_value))
                .collect::<Result<Vec<_>>>()?;
            Any::from(Array::new(items))
        }
        Value::Ref(Some(other)) => Any::from(Obj::new(VmRef(other))),
    })
}
