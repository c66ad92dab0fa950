//! Native modules whose functions are FFI functions: what `pactum.iree.NativeModule`
//! (python/pactum/iree_native.py) hands to a load, so that Python callables serve a module's
//! imports as `iree.runtime.PyModuleInterface` allows.
//!
//! [`FfiNativeModule`] is a [`NativeModule`] whose functions each have a calling convention
//! (`0ii_i`, `0rf_r`) and an FFI [`Function`]. A call converts the VM arguments to FFI values
//! by the convention, calls the function and converts the values it returns back:
//!
//! | VM value | FFI value given to the function | FFI values accepted back |
//! |---|---|---|
//! | `i` / `I` | int | int or bool (`i`: any 32-bit value, signed or not) |
//! | `f` / `F` | float | float or int |
//! | `!hal.buffer_view` | `Tensor` (a copy), or a `VmRef` for element types without a DLPack type | `Tensor` (copied into a new buffer view) |
//! | `!vm.buffer` | `Bytes` (a copy) | bytes |
//! | `!vm.list` | `Array` of its items | `Array`/`List` (a `!vm.list<?>`) |
//! | any other reference | `VmRef`, passed through | `VmRef` |
//! | null reference | `None` | `None` |
//! | variadic span `C…D` | `Array` of its tuples (an item alone when the tuple has one) | (results cannot be variadic) |
//!
//! The function returns an `Array` with one value per result (the Python side packs whatever
//! the callable returned into one). An error it raises, or a result that does not convert, is
//! the call's error (`UNKNOWN`, as IREE reports exceptions of Python modules; the VM's error
//! names `module.function`); nothing panics.
//!
//! Globals (registered by [`register`]):
//! - `pactum.iree.native_module(name: str, functions: Array) -> pactum.iree.NativeModule`,
//!   each function `[name: str, cconv: str, function: Function]`;
//! - `pactum.iree.native_module_invoke(module, function: str, args: Array) -> Array`: calls a
//!   function of any native module object as an importing module would, converting the
//!   arguments by its calling convention (the table read right to left) and its results as
//!   above; lets a module be tried without a `.vmfb` that imports it.

use std::sync::Arc;

use pactum::sys::tvm_ffi::TVMFFITypeIndex;
use pactum::{Any, AnyView, Array, Bytes, Error, ErrorKind, Function, List, Obj, Result, Tensor};
use pactum_iree::hal::HalBufferView;
use pactum_iree::module::{
    NativeModuleObject, VmRef, buffer_view_to_tensor, tensor_to_buffer_view,
};
use pactum_iree::signature::cconv::{CallingConvention, CconvItem};
use pactum_iree::status::{StatusCode, StatusError};
use pactum_iree::vm::{
    ElementType, NativeError, NativeFunction, NativeModule, Ref, SignatureMismatch, Value,
    VmBuffer, VmList,
};

/// The global that builds a native module from FFI functions.
pub const NATIVE_MODULE: &str = "pactum.iree.native_module";
/// The global that calls one function of a native module object.
pub const NATIVE_MODULE_INVOKE: &str = "pactum.iree.native_module_invoke";

/// How deeply lists may nest in arguments and results (as the `.vmfb` call path allows).
const MAX_LIST_DEPTH: usize = 64;

/// A native module whose functions are FFI functions (Python callables, from Python).
pub struct FfiNativeModule {
    name: String,
    functions: Vec<NativeFunction>,
    conventions: Vec<CallingConvention>,
    callables: Vec<Function>,
}

impl std::fmt::Debug for FfiNativeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FfiNativeModule")
            .field("name", &self.name)
            .field("functions", &self.functions)
            .finish_non_exhaustive()
    }
}

impl FfiNativeModule {
    /// A module named `name` with `functions` (`(name, cconv, function)`, in order).
    ///
    /// A `ValueError` when the module name is empty or holds a `.`, a function name is empty
    /// or repeated, or a calling convention does not parse, is unspecified or has variadic
    /// results; each names the function (`module.function`).
    pub fn new(
        name: impl Into<String>,
        functions: impl IntoIterator<Item = (String, String, Function)>,
    ) -> Result<FfiNativeModule> {
        let name = name.into();
        if name.is_empty() || name.contains('.') {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("native module name `{name}`: must be non-empty and hold no `.`"),
            ));
        }
        let mut module = FfiNativeModule {
            name,
            functions: Vec::new(),
            conventions: Vec::new(),
            callables: Vec::new(),
        };
        for (function, cconv, callable) in functions {
            let qualified = format!("{}.{function}", module.name);
            let invalid = |why: String| {
                Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("native function `{qualified}`: {why}"),
                )
            };
            if function.is_empty() || function.contains('.') {
                return Err(invalid("the name must be non-empty and hold no `.`".into()));
            }
            if module.functions.iter().any(|f| f.name == function) {
                return Err(invalid("defined twice".into()));
            }
            let convention = CallingConvention::parse(&cconv)
                .map_err(|e| invalid(format!("calling convention `{cconv}`: {e}")))?;
            if convention.is_unspecified() {
                return Err(invalid(
                    "an empty calling convention (write `0v_v` for no arguments or results)".into(),
                ));
            }
            if convention.results().iter().any(CconvItem::is_variadic) {
                return Err(invalid(format!(
                    "calling convention `{cconv}`: results cannot be variadic"
                )));
            }
            module.functions.push(NativeFunction::new(function, cconv));
            module.conventions.push(convention);
            module.callables.push(callable);
        }
        Ok(module)
    }
}

impl NativeModule for FfiNativeModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    /// Arguments are read dynamically by each function's convention: nothing to check.
    fn check_signatures(&self) -> std::result::Result<(), SignatureMismatch> {
        Ok(())
    }

    fn call(&self, index: usize, args: &[Value]) -> std::result::Result<Vec<Value>, NativeError> {
        let (Some(convention), Some(callable)) =
            (self.conventions.get(index), self.callables.get(index))
        else {
            return Err(StatusError::new(
                StatusCode::NotFound,
                format!(
                    "native module `{}` has no function {index} ({} functions)",
                    self.name,
                    self.functions.len()
                ),
            ));
        };
        // The VM names the function in the error it reports (`native module.function: ...`).
        let failed = StatusError::new;
        let ffi_args = values_to_ffi(convention.args(), args)
            .map_err(|e| failed(StatusCode::InvalidArgument, e.message().into_owned()))?;
        let views: Vec<AnyView<'_>> = ffi_args.iter().map(Any::view).collect();
        let returned = callable.call(&views).map_err(|e| {
            failed(
                StatusCode::Unknown,
                format!("{}: {}", e.kind(), e.message()),
            )
        })?;
        let returned = returned.get::<Array>().map_err(|_| {
            failed(
                StatusCode::InvalidArgument,
                format!(
                    "the function returned {}, not an array of its results",
                    returned.type_key()
                ),
            )
        })?;
        results_to_values(convention.results(), &returned)
            .map_err(|e| failed(StatusCode::InvalidArgument, e.message().into_owned()))
    }
}

fn type_error(message: String) -> Error {
    Error::new(ErrorKind::TYPE_ERROR, message)
}

fn value_error(message: String) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, message)
}

/// The VM arguments of a call, as FFI values, by the convention's argument items.
fn values_to_ffi(items: &[CconvItem], args: &[Value]) -> Result<Vec<Any>> {
    let mut at = 0;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(item_to_ffi(item, args, &mut at)?);
    }
    if at != args.len() {
        return Err(value_error(format!(
            "called with {} argument values, the calling convention reads {at}",
            args.len()
        )));
    }
    Ok(out)
}

fn item_to_ffi(item: &CconvItem, args: &[Value], at: &mut usize) -> Result<Any> {
    let index = *at;
    let value = args
        .get(index)
        .ok_or_else(|| value_error(format!("argument value {index} is missing")))?;
    *at += 1;
    let mismatch = || {
        type_error(format!(
            "argument value {index}: expected {}, got {value:?}",
            item_name(item)
        ))
    };
    match item {
        CconvItem::I32 | CconvItem::I64 | CconvItem::F32 | CconvItem::F64 | CconvItem::Ref => {
            if value_matches(item, value) {
                value_to_ffi(value, 0)
            } else {
                Err(mismatch())
            }
        }
        CconvItem::Variadic(tuple) => {
            let Value::I32(count) = value else {
                return Err(mismatch());
            };
            let count = usize::try_from(*count).map_err(|_| {
                value_error(format!("argument value {index}: negative variadic count"))
            })?;
            let mut groups = Vec::with_capacity(count.min(args.len()));
            for _ in 0..count {
                let mut members = Vec::with_capacity(tuple.len());
                for member in tuple {
                    members.push(item_to_ffi(member, args, at)?);
                }
                groups.push(if members.len() == 1 {
                    members.pop().unwrap_or_else(Any::none)
                } else {
                    Any::from(Array::new(members))
                });
            }
            Ok(Any::from(Array::new(groups)))
        }
    }
}

fn item_name(item: &CconvItem) -> &'static str {
    match item {
        CconvItem::I32 => "an i32",
        CconvItem::I64 => "an i64",
        CconvItem::F32 => "an f32",
        CconvItem::F64 => "an f64",
        CconvItem::Ref => "a reference",
        CconvItem::Variadic(_) => "a variadic count (i32)",
    }
}

fn value_matches(item: &CconvItem, value: &Value) -> bool {
    matches!(
        (item, value),
        (CconvItem::I32, Value::I32(_))
            | (CconvItem::I64, Value::I64(_))
            | (CconvItem::F32, Value::F32(_))
            | (CconvItem::F64, Value::F64(_))
            | (CconvItem::Ref, Value::Ref(_))
    )
}

/// One VM value as an FFI value (see the module docs).
fn value_to_ffi(value: &Value, depth: usize) -> Result<Any> {
    Ok(match value {
        Value::I32(v) => Any::from(i64::from(*v)),
        Value::I64(v) => Any::from(*v),
        Value::F32(v) => Any::from(f64::from(*v)),
        Value::F64(v) => Any::from(*v),
        Value::Ref(None) => Any::none(),
        Value::Ref(Some(Ref::Buffer(buffer))) => Any::from(Bytes::new(&buffer.to_vec())),
        Value::Ref(Some(Ref::List(list))) => {
            if depth >= MAX_LIST_DEPTH {
                return Err(value_error(format!(
                    "lists nested deeper than {MAX_LIST_DEPTH} levels"
                )));
            }
            let items = list
                .to_values()
                .iter()
                .map(|item| {
                    item.as_ref()
                        .map_or_else(|| Ok(Any::none()), |v| value_to_ffi(v, depth + 1))
                })
                .collect::<Result<Vec<_>>>()?;
            Any::from(Array::new(items))
        }
        Value::Ref(Some(other)) => match other.downcast_ref::<HalBufferView>() {
            Some(view) => match buffer_view_to_tensor(view)? {
                Some(tensor) => Any::from(tensor),
                None => Any::from(Obj::new(VmRef(other.clone()))),
            },
            None => Any::from(Obj::new(VmRef(other.clone()))),
        },
    })
}

/// The values a function returned, as VM results by the convention's result items.
fn results_to_values(items: &[CconvItem], returned: &Array) -> Result<Vec<Value>> {
    if returned.len() != items.len() {
        return Err(value_error(format!(
            "returned {} results, the calling convention has {}",
            returned.len(),
            items.len()
        )));
    }
    items
        .iter()
        .zip(returned.iter())
        .enumerate()
        .map(|(i, (item, value))| {
            ffi_to_value(item, &value.view(), 0).map_err(|e| {
                Error::new(
                    ErrorKind::custom(&e.kind()),
                    format!("result {i}: {}", e.message()),
                )
            })
        })
        .collect()
}

/// One FFI value as a VM value of `item`'s kind.
fn ffi_to_value(item: &CconvItem, value: &AnyView<'_>, depth: usize) -> Result<Value> {
    let type_index = TVMFFITypeIndex(value.type_index());
    let number = |what: &str| type_error(format!("expected {what}, got {}", value.type_key()));
    Ok(match item {
        CconvItem::I32 | CconvItem::I64 => {
            let v = match type_index {
                TVMFFITypeIndex::INT => value.get::<i64>()?,
                TVMFFITypeIndex::BOOL => i64::from(value.get::<bool>()?),
                _ => return Err(number("an int")),
            };
            if matches!(item, CconvItem::I64) {
                Value::I64(v)
            } else {
                // i32 values are signless: any value of 32 bits, signed or not.
                let v = i32::try_from(v)
                    .or_else(|_| u32::try_from(v).map(|u| u as i32))
                    .map_err(|_| value_error(format!("{v} does not fit in 32 bits (i32)")))?;
                Value::I32(v)
            }
        }
        CconvItem::F32 | CconvItem::F64 => {
            let v = match type_index {
                TVMFFITypeIndex::FLOAT => value.get::<f64>()?,
                TVMFFITypeIndex::INT => value.get::<i64>()? as f64,
                TVMFFITypeIndex::BOOL => f64::from(u8::from(value.get::<bool>()?)),
                _ => return Err(number("a float")),
            };
            if matches!(item, CconvItem::F32) {
                Value::F32(v as f32)
            } else {
                Value::F64(v)
            }
        }
        CconvItem::Ref => Value::Ref(ffi_to_ref(value, depth)?),
        CconvItem::Variadic(_) => {
            return Err(value_error("a variadic span is not a result".into()));
        }
    })
}

/// A reference: `None`, a tensor (as a new buffer view), bytes (a `!vm.buffer`), a list (a
/// `!vm.list<?>` of its items) or a `VmRef`.
fn ffi_to_ref(value: &AnyView<'_>, depth: usize) -> Result<Option<Ref>> {
    match TVMFFITypeIndex(value.type_index()) {
        TVMFFITypeIndex::NONE => return Ok(None),
        TVMFFITypeIndex::TENSOR | TVMFFITypeIndex::DL_TENSOR_PTR => {
            let tensor = value.get::<Tensor>()?;
            return Ok(Some(Ref::Object(Arc::new(tensor_to_buffer_view(&tensor)?))));
        }
        TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTES | TVMFFITypeIndex::BYTE_ARRAY_PTR => {
            let bytes = value.get::<&[u8]>()?;
            return Ok(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))));
        }
        TVMFFITypeIndex::ARRAY => {
            let array = value.get::<Array>()?;
            return list_ref(array.iter().map(Any::view), depth).map(Some);
        }
        TVMFFITypeIndex::LIST => {
            let items = value.get::<List>()?.to_vec();
            return list_ref(items.iter().map(Any::view), depth).map(Some);
        }
        _ => {}
    }
    if let Ok(vm_ref) = value.get::<Obj<VmRef>>() {
        return Ok(Some(vm_ref.0.clone()));
    }
    Err(type_error(format!(
        "expected a reference (None, a tensor, bytes, a list or a VmRef), got {}",
        value.type_key()
    )))
}

/// A list's items as a `!vm.list<?>`: ints as i64, bools as i32, floats as f64, anything else
/// as a reference.
fn list_ref<'a>(items: impl Iterator<Item = AnyView<'a>>, depth: usize) -> Result<Ref> {
    if depth >= MAX_LIST_DEPTH {
        return Err(value_error(format!(
            "lists nested deeper than {MAX_LIST_DEPTH} levels"
        )));
    }
    let values = items
        .enumerate()
        .map(|(i, item)| {
            let value = match TVMFFITypeIndex(item.type_index()) {
                TVMFFITypeIndex::INT => Ok(Value::I64(item.get::<i64>()?)),
                TVMFFITypeIndex::BOOL => Ok(Value::I32(i32::from(item.get::<bool>()?))),
                TVMFFITypeIndex::FLOAT => Ok(Value::F64(item.get::<f64>()?)),
                _ => ffi_to_ref(&item, depth + 1).map(Value::Ref),
            };
            value.map_err(|e| {
                Error::new(
                    ErrorKind::custom(&e.kind()),
                    format!("element {i}: {}", e.message()),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let list = VmList::from_values(ElementType::Variant, values)
        .map_err(|e| value_error(e.to_string()))?;
    Ok(Ref::List(Arc::new(list)))
}

/// `pactum.iree.native_module(name, functions)`.
fn native_module(args: &[AnyView<'_>]) -> Result<Any> {
    let [name, functions] = args else {
        return Err(type_error(format!(
            "{NATIVE_MODULE}(name: str, functions: list) takes 2 arguments, got {}",
            args.len()
        )));
    };
    let name = name.get::<&str>()?.to_owned();
    let functions = functions.get::<Array>()?;
    let mut entries = Vec::with_capacity(functions.len());
    for (i, entry) in functions.iter().enumerate() {
        let parts = entry.get::<Array>().ok().filter(|a| a.len() == 3).ok_or_else(|| {
            type_error(format!(
                "{NATIVE_MODULE}: function {i} of `{name}` is not a [name, cconv, function] triple"
            ))
        })?;
        let field = |k: usize, what: &str| -> Result<AnyView<'_>> {
            parts.get(k).ok_or_else(|| {
                type_error(format!(
                    "{NATIVE_MODULE}: function {i} of `{name}` lacks its {what}"
                ))
            })
        };
        let function_name = field(0, "name")?.get::<&str>()?.to_owned();
        let cconv = field(1, "calling convention")?.get::<&str>()?.to_owned();
        let callable = field(2, "function")?.get::<Function>().map_err(|_| {
            type_error(format!(
                "{NATIVE_MODULE}: `{name}.{function_name}` is not served by a function"
            ))
        })?;
        entries.push((function_name, cconv, callable));
    }
    let module = FfiNativeModule::new(name, entries)?;
    Ok(Any::from(Obj::new(NativeModuleObject(Arc::new(module)))))
}

/// `pactum.iree.native_module_invoke(module, function, args)`.
fn native_module_invoke(args: &[AnyView<'_>]) -> Result<Any> {
    let [module, function, call_args] = args else {
        return Err(type_error(format!(
            "{NATIVE_MODULE_INVOKE}(module, function: str, args: list) takes 3 arguments, got {}",
            args.len()
        )));
    };
    let module = module.get::<Obj<NativeModuleObject>>().map_err(|_| {
        type_error(format!(
            "{NATIVE_MODULE_INVOKE}: expected a pactum.iree.NativeModule, got {}",
            module.type_key()
        ))
    })?;
    let module = &module.0;
    let function = function.get::<&str>()?;
    let qualified = format!("{}.{function}", module.name());
    let index = module
        .functions()
        .iter()
        .position(|f| f.name == function)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::ATTRIBUTE_ERROR,
                format!(
                    "native module `{}` has no function `{function}`",
                    module.name()
                ),
            )
        })?;
    let cconv = &module.functions()[index].cconv;
    let convention = CallingConvention::parse(cconv)
        .map_err(|e| value_error(format!("{qualified}: calling convention `{cconv}`: {e}")))?;
    let call_args = call_args.get::<Array>()?;
    if call_args.len() != convention.args().len() {
        return Err(type_error(format!(
            "{qualified} (`{cconv}`) takes {} arguments, got {}",
            convention.args().len(),
            call_args.len()
        )));
    }
    let mut values = Vec::new();
    for (i, (item, arg)) in convention.args().iter().zip(call_args.iter()).enumerate() {
        arg_to_values(item, &arg.view(), &mut values).map_err(|e| {
            Error::new(
                ErrorKind::custom(&e.kind()),
                format!("{qualified}: argument {i}: {}", e.message()),
            )
        })?;
    }
    let results = module.call(index, &values).map_err(|e| {
        Error::new(
            ErrorKind::RUNTIME_ERROR,
            format!("{qualified}: {}: {}", e.status, e.message),
        )
    })?;
    let results = results
        .iter()
        .map(|v| value_to_ffi(v, 0))
        .collect::<Result<Vec<_>>>()?;
    Ok(Any::from(Array::new(results)))
}

/// Appends the flat VM values of one argument of `item`'s kind (a variadic span: a list of
/// tuples, or of items when the tuple has one).
fn arg_to_values(item: &CconvItem, arg: &AnyView<'_>, out: &mut Vec<Value>) -> Result<()> {
    match item {
        CconvItem::Variadic(tuple) => {
            let groups = arg
                .get::<Array>()
                .map_err(|_| type_error(format!("expected a list, got {}", arg.type_key())))?;
            let count = i32::try_from(groups.len())
                .map_err(|_| value_error("too many variadic items".into()))?;
            out.push(Value::I32(count));
            for group in groups.iter() {
                if let [member] = tuple.as_slice() {
                    arg_to_values(member, &group.view(), out)?;
                } else {
                    let members = group
                        .get::<Array>()
                        .ok()
                        .filter(|m| m.len() == tuple.len())
                        .ok_or_else(|| {
                            type_error(format!(
                                "expected a list of {} values per item",
                                tuple.len()
                            ))
                        })?;
                    for (member, value) in tuple.iter().zip(members.iter()) {
                        arg_to_values(member, &value.view(), out)?;
                    }
                }
            }
        }
        _ => out.push(ffi_to_value(item, arg, 0)?),
    }
    Ok(())
}

/// Registers [`NATIVE_MODULE`] and [`NATIVE_MODULE_INVOKE`] unless the runtime has them.
pub fn register() -> Result<()> {
    for (name, function) in [
        (
            NATIVE_MODULE,
            native_module as fn(&[AnyView<'_>]) -> Result<Any>,
        ),
        (NATIVE_MODULE_INVOKE, native_module_invoke),
    ] {
        if Function::get_global(name).is_none() {
            Function::from_packed(function).register_global(name, false)?;
        }
    }
    Ok(())
}
