//! What `#[pactum::export]` builds on: the C entry point of an exported function, argument
//! extraction that names the parameter in errors, the overlap check for mutable tensor
//! arguments, and the `type_schema` metadata the official Python package reads.
//!
//! ```
//! /// Scales every element of `x` into `y`.
//! #[pactum::export]
//! fn scale(x: pactum::TensorView<'_, f32>, mut y: pactum::TensorViewMut<'_, f32>, factor: f64) -> pactum::Result<()> {
//!     for (out, v) in y.as_mut_slice()?.iter_mut().zip(x.as_slice()?) {
//!         *out = v * factor as f32;
//!     }
//!     Ok(())
//! }
//! // The library now exports `__tvm_ffi_scale`, `__tvm_ffi__metadata_scale` and
//! // `__tvm_ffi__doc_scale`, loadable by `tvm_ffi.load_module`, C hosts and `pactum::Module`.
//! ```

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::any::{Any, AnyView, FromAnyView};
use crate::boundary::{self, EntryKind};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor_view::{ElementSpec, TensorView, TensorViewMut, argument_span};

/// The type an exported parameter or result has in signatures and metadata.
pub trait ExportType {
    /// The name in signatures and error messages (`int`, `str`, `ffi.Tensor[float32]`).
    fn type_str() -> Cow<'static, str>;

    /// The `type_schema` JSON (`{"type":"int"}`, `{"type":"Optional","args":[...]}`).
    fn type_schema() -> Cow<'static, str>;
}

macro_rules! export_type {
    ($($ty:ty => $text:literal, $key:literal);* $(;)?) => {$(
        impl ExportType for $ty {
            fn type_str() -> Cow<'static, str> {
                $text.into()
            }
            fn type_schema() -> Cow<'static, str> {
                concat!(r#"{"type":""#, $key, r#""}"#).into()
            }
        }
    )*};
}

export_type! {
    () => "None", "None";
    bool => "bool", "bool";
    i8 => "int", "int"; i16 => "int", "int"; i32 => "int", "int"; i64 => "int", "int";
    u8 => "int", "int"; u16 => "int", "int"; u32 => "int", "int"; u64 => "int", "int";
    isize => "int", "int"; usize => "int", "int";
    f32 => "float", "float"; f64 => "float", "float";
    str => "str", "ffi.String"; std::string::String => "str", "ffi.String"; crate::String => "str", "ffi.String";
    [u8] => "bytes", "ffi.Bytes"; Vec<u8> => "bytes", "ffi.Bytes"; crate::Bytes => "bytes", "ffi.Bytes";
    crate::DataType => "DataType", "DataType";
    crate::Device => "Device", "Device";
    crate::any::OpaquePtr => "void*", "void*";
    Any => "Any", "Any";
    AnyView<'_> => "Any", "Any";
    crate::ObjectRef => "ffi.Object", "ffi.Object";
    crate::Function => "ffi.Function", "ffi.Function";
    crate::Array => "ffi.Array", "ffi.Array";
    crate::List => "ffi.List", "ffi.List";
    crate::Map => "ffi.Map", "ffi.Map";
    crate::Dict => "ffi.Dict", "ffi.Dict";
    crate::Shape => "ffi.Shape", "ffi.Shape";
    crate::Tensor => "ffi.Tensor", "ffi.Tensor";
    crate::Module => "ffi.Module", "ffi.Module";
    crate::Error => "ffi.Error", "ffi.Error";
}

/// A reference has the type of what it refers to (`&str` is `str`, `&Tensor` is `ffi.Tensor`).
impl<T: ExportType + ?Sized> ExportType for &T {
    fn type_str() -> Cow<'static, str> {
        T::type_str()
    }
    fn type_schema() -> Cow<'static, str> {
        T::type_schema()
    }
}

impl<T: ElementSpec, const NDIM: i32> ExportType for TensorView<'_, T, NDIM> {
    fn type_str() -> Cow<'static, str> {
        TensorView::<T, NDIM>::type_name().into()
    }
    fn type_schema() -> Cow<'static, str> {
        r#"{"type":"ffi.Tensor"}"#.into()
    }
}

impl<T: ElementSpec, const NDIM: i32> ExportType for TensorViewMut<'_, T, NDIM> {
    fn type_str() -> Cow<'static, str> {
        TensorViewMut::<T, NDIM>::type_name().into()
    }
    fn type_schema() -> Cow<'static, str> {
        r#"{"type":"ffi.Tensor"}"#.into()
    }
}

impl<T: crate::ObjectType> ExportType for crate::Obj<T> {
    fn type_str() -> Cow<'static, str> {
        T::TYPE_KEY.into()
    }
    fn type_schema() -> Cow<'static, str> {
        format!(r#"{{"type":"{}"}}"#, T::TYPE_KEY).into()
    }
}

impl<T: ExportType> ExportType for Option<T> {
    fn type_str() -> Cow<'static, str> {
        format!("Optional[{}]", T::type_str()).into()
    }
    fn type_schema() -> Cow<'static, str> {
        format!(r#"{{"type":"Optional","args":[{}]}}"#, T::type_schema()).into()
    }
}

impl<T: ExportType, E> ExportType for core::result::Result<T, E> {
    fn type_str() -> Cow<'static, str> {
        T::type_str()
    }
    fn type_schema() -> Cow<'static, str> {
        T::type_schema()
    }
}

/// A type as (text for signatures, `type_schema` JSON).
pub type TypeDescription = (Cow<'static, str>, Cow<'static, str>);

/// Parameter types and the result type of an exported function.
pub type SignatureTypes = (Vec<TypeDescription>, TypeDescription);

/// The static description of an exported function, for messages and metadata.
pub struct Signature {
    /// Export name.
    pub name: &'static str,
    /// Parameter names.
    pub params: &'static [&'static str],
    /// Parameter and result types: `(params, result)`, as (text, schema) pairs.
    pub types: fn() -> SignatureTypes,
    /// Rendered signature and metadata, made on first use.
    #[doc(hidden)]
    pub rendered: OnceLock<(std::string::String, std::string::String)>,
}

impl Signature {
    /// A signature (used by the macro in a `static`).
    pub const fn new(
        name: &'static str,
        params: &'static [&'static str],
        types: fn() -> SignatureTypes,
    ) -> Signature {
        Signature {
            name,
            params,
            types,
            rendered: OnceLock::new(),
        }
    }

    fn rendered(&self) -> &(std::string::String, std::string::String) {
        self.rendered.get_or_init(|| {
            let (params, (ret_text, ret_schema)) = (self.types)();
            let text = params.iter().zip(self.params).map(|((t, _), name)| format!("{name}: {t}")).collect::<Vec<_>>();
            let signature = format!("{}({}) -> {ret_text}", self.name, text.join(", "));
            let schemas = params.iter().map(|(_, s)| s.as_ref()).collect::<Vec<_>>().join(",");
            let schema = format!(r#"{{"type":"ffi.Function","named_args":{{"return":[{ret_schema}],"params":[{schemas}]}}}}"#);
            let names = self.params.iter().map(|n| json_string(n)).collect::<Vec<_>>().join(",");
            let types = params.iter().map(|(t, _)| json_string(t)).collect::<Vec<_>>().join(",");
            let metadata = format!(
                r#"{{"type_schema":{},"arg_names":[{names}],"arg_types":[{types}],"return_type":{}}}"#,
                json_string(&schema),
                json_string(&ret_text)
            );
            (signature, metadata)
        })
    }

    /// `name(a: int, b: str) -> float`.
    pub fn text(&self) -> &str {
        &self.rendered().0
    }

    /// The `__tvm_ffi__metadata_<name>` JSON.
    pub fn metadata(&self) -> &str {
        &self.rendered().1
    }
}

/// A JSON string literal.
pub(crate) fn json_string(text: &str) -> std::string::String {
    let mut out = std::string::String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Items the generated code uses; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use super::{ExportType, Signature, SignatureTypes};
    pub use crate::function::IntoReturn;
    pub use pactum_sys::tvm_ffi::TVMFFIAny;
    pub use std::borrow::Cow;

    use super::*;

    /// The body of an exported `__tvm_ffi_<name>` symbol: it runs through pactum's FFI
    /// boundary, so panics and errors are caught and the result slot is handled like every
    /// pactum function's.
    ///
    /// # Safety
    /// The `TVMFFISafeCallType` contract: `args` holds `num_args` valid values for the call,
    /// and `result` is a valid result slot.
    #[inline(always)]
    pub unsafe fn entry(
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
        body: impl for<'a> FnOnce(&'a [AnyView<'a>]) -> Result<Any>,
    ) -> core::ffi::c_int {
        let call = move |_, args, num_args: i32, result: *mut TVMFFIAny| {
            // SAFETY: forwarded from the caller.
            let args =
                unsafe { AnyView::slice_from_raw(args, usize::try_from(num_args).unwrap_or(0)) };
            let value = body(args)?;
            // SAFETY: the boundary left None in the slot, so overwriting leaks nothing; the
            // caller now owns `value`.
            unsafe { result.write(value.into_raw()) };
            Ok(0)
        };
        let call_args = (core::ptr::null_mut(), args, num_args, result);
        // SAFETY: forwarded from the caller.
        unsafe { boundary::safe_call(EntryKind::Export, call_args, call) }
    }

    /// Checks the argument count (`expected` is a literal from the macro, so the compiler can
    /// drop the bounds checks of the argument reads that follow).
    #[inline(always)]
    pub fn check_arity(signature: &Signature, args: &[AnyView<'_>], expected: usize) -> Result<()> {
        if args.len() == expected {
            Ok(())
        } else {
            Err(arity_error(signature, args.len()))
        }
    }

    #[cold]
    #[inline(never)]
    fn arity_error(signature: &Signature, got: usize) -> Error {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "Mismatched number of arguments when calling: `{}`. Expected {} but got {got} arguments",
                signature.text(),
                signature.params.len()
            ),
        )
    }

    /// Argument `index` converted to `T`; a failure names the parameter, keeping its kind.
    #[inline(always)]
    pub fn arg<'a, T: FromAnyView<'a>>(
        signature: &Signature,
        args: &'a [AnyView<'a>],
        index: usize,
    ) -> Result<T> {
        T::from_any_view(&args[index]).map_err(|e| argument_error(signature, index, e))
    }

    /// A mutable tensor view of argument `index`, after [`check_no_alias`].
    ///
    /// # Safety
    /// `check_no_alias` must have passed for `index`.
    #[inline(always)]
    pub unsafe fn arg_mut<'a, V: MutableArg<'a>>(
        signature: &Signature,
        args: &'a [AnyView<'a>],
        index: usize,
    ) -> Result<V> {
        // SAFETY: the overlap check guarantees exclusive access for the call.
        unsafe { V::new_exclusive(&args[index]) }.map_err(|e| argument_error(signature, index, e))
    }

    /// Arguments that give write access to the caller's memory.
    ///
    /// # Safety
    /// Implementors may assume `new_exclusive` is only called when nothing else accesses the
    /// argument's memory during the call.
    pub unsafe trait MutableArg<'a>: Sized {
        /// Wraps the argument.
        ///
        /// # Safety
        /// Nothing else may access the argument's memory while the result is alive.
        unsafe fn new_exclusive(view: &'a AnyView<'a>) -> Result<Self>;
    }

    // SAFETY: TensorViewMut::new has exactly the exclusivity precondition of new_exclusive.
    unsafe impl<'a, T: ElementSpec, const NDIM: i32> MutableArg<'a> for TensorViewMut<'a, T, NDIM> {
        unsafe fn new_exclusive(view: &'a AnyView<'a>) -> Result<Self> {
            // SAFETY: forwarded from the caller.
            unsafe { TensorViewMut::new(view) }
        }
    }

    #[cold]
    #[inline(never)]
    fn argument_error(signature: &Signature, index: usize, error: Error) -> Error {
        let name = signature.params.get(index).copied().unwrap_or("?");
        let prefix = if error.kind() == ErrorKind::TYPE_ERROR {
            "Mismatched type on argument"
        } else {
            "Invalid argument"
        };
        Error::new(
            ErrorKind::custom(&error.kind()),
            format!(
                "{prefix} #{index} ({name}) when calling: `{}`: {}",
                signature.text(),
                error.message()
            ),
        )
    }

    /// Refuses calls where the memory of a mutable tensor argument overlaps another tensor
    /// argument, so a mutable view is the only access to its memory during the call.
    pub fn check_no_alias(
        signature: &Signature,
        args: &[AnyView<'_>],
        mutable: &[usize],
    ) -> Result<()> {
        for &m in mutable {
            let Some((start, end)) = args.get(m).and_then(argument_span) else {
                continue;
            };
            for (other, view) in args.iter().enumerate() {
                if other == m {
                    continue;
                }
                if let Some((o_start, o_end)) = argument_span(view) {
                    if start < o_end && o_start < end {
                        return Err(Error::new(
                            ErrorKind::VALUE_ERROR,
                            format!(
                                "Invalid argument #{m} ({}) when calling: `{}`: its memory overlaps argument #{other} ({}); a writable tensor argument must not alias another argument",
                                signature.params[m],
                                signature.text(),
                                signature.params.get(other).copied().unwrap_or("?")
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The body of a `__tvm_ffi__metadata_<name>` / `__tvm_ffi__doc_<name>` getter.
    ///
    /// # Safety
    /// `result` must be a valid result slot.
    pub unsafe fn string_getter(result: *mut TVMFFIAny, text: &str) -> core::ffi::c_int {
        let call = |_, _, _, result: *mut TVMFFIAny| {
            // SAFETY: the boundary left None in the slot; the caller owns the string.
            unsafe { result.write(Any::from(text).into_raw()) };
            Ok(0)
        };
        let call_args = (core::ptr::null_mut(), core::ptr::null(), 0, result);
        // SAFETY: forwarded from the caller.
        unsafe { boundary::safe_call(EntryKind::Export, call_args, call) }
    }
}
