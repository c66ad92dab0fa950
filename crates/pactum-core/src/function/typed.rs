//! Typed calls in both directions.
//!
//! - Calling: [`TypedFunction<Args, Ret>`] encodes a tuple of arguments on the stack (no
//!   allocation: strings go as borrowed byte arrays) and converts the result once.
//! - Being called: [`IntoTypedFunction`] turns an ordinary Rust closure into a packed
//!   function that checks the argument count and each argument's type.

use core::marker::PhantomData;

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFITypeIndex};

use super::Function;
use crate::any::{Any, AnyView, FromAny, FromAnyView};
use crate::error::{Error, ErrorKind, Result};

/// A value passed to a typed call by reference.
///
/// # Safety
/// `encode` must return a valid borrowed value (see [`AnyView::from_raw`]) that stays valid
/// while both `self` and `scratch` are alive and unchanged.
pub unsafe trait ArgEncode {
    /// Storage on the caller's stack that lives for the call (zero-sized for values that
    /// need none).
    type Scratch: Default;

    /// Encodes `self`; `scratch` outlives the call and may hold data the value points to.
    fn encode(&self, scratch: &mut Self::Scratch) -> TVMFFIAny;
}

// SAFETY: references encode what they point at, which outlives the call.
unsafe impl<T: ArgEncode + ?Sized> ArgEncode for &T {
    type Scratch = T::Scratch;
    #[inline(always)]
    fn encode(&self, scratch: &mut Self::Scratch) -> TVMFFIAny {
        (**self).encode(scratch)
    }
}

/// POD values: encoded through their `AnyView` conversion.
macro_rules! encode_pod {
    ($($ty:ty),*) => {$(
        // SAFETY: POD values reference no memory.
        unsafe impl ArgEncode for $ty {
            type Scratch = ();
            #[inline(always)]
            fn encode(&self, _: &mut ()) -> TVMFFIAny {
                *AnyView::from(*self).as_raw()
            }
        }
    )*};
}
encode_pod!(
    i64,
    i32,
    i16,
    i8,
    u32,
    u16,
    u8,
    bool,
    f64,
    f32,
    crate::DataType,
    crate::Device,
    crate::any::OpaquePtr
);

// SAFETY: short strings are copied inline; long ones into a String object the scratch slot
// owns for the call. (A borrowed byte array would be read as Bytes by C++ callees.)
unsafe impl ArgEncode for str {
    type Scratch = Any;
    #[inline(always)]
    fn encode(&self, scratch: &mut Any) -> TVMFFIAny {
        if self.len() <= crate::string::SMALL_STRING_MAX_LEN {
            let mut inline = [0u8; 8];
            inline[..self.len()].copy_from_slice(self.as_bytes());
            return TVMFFIAny {
                type_index: TVMFFITypeIndex::SMALL_STR.0,
                small_str_len: self.len() as u32,
                value: TVMFFIAnyValue { v_bytes: inline },
            };
        }
        *scratch = Any::from(self);
        *scratch.as_raw()
    }
}

// SAFETY: a borrowed C string (RawStr), alive for the call: the zero-copy way to pass text.
unsafe impl ArgEncode for core::ffi::CStr {
    type Scratch = ();
    #[inline(always)]
    fn encode(&self, _: &mut ()) -> TVMFFIAny {
        *AnyView::from(self).as_raw()
    }
}

// SAFETY: as for `str`.
unsafe impl ArgEncode for std::string::String {
    type Scratch = Any;
    #[inline(always)]
    fn encode(&self, scratch: &mut Any) -> TVMFFIAny {
        self.as_str().encode(scratch)
    }
}

// SAFETY: the byte array in `scratch` points at `self`, both alive for the call.
unsafe impl ArgEncode for [u8] {
    type Scratch = Option<TVMFFIByteArray>;
    #[inline(always)]
    fn encode(&self, scratch: &mut Option<TVMFFIByteArray>) -> TVMFFIAny {
        let bytes = scratch.insert(TVMFFIByteArray {
            data: self.as_ptr().cast(),
            size: self.len(),
        });
        TVMFFIAny {
            type_index: TVMFFITypeIndex::BYTE_ARRAY_PTR.0,
            small_str_len: 0,
            value: TVMFFIAnyValue {
                v_ptr: (bytes as *mut TVMFFIByteArray).cast(),
            },
        }
    }
}

// SAFETY: an owned value viewed while `self` is alive.
unsafe impl ArgEncode for Any {
    type Scratch = ();
    #[inline(always)]
    fn encode(&self, _: &mut ()) -> TVMFFIAny {
        *self.as_raw()
    }
}

// SAFETY: a view is valid for its own lifetime, which outlives the borrow of `self`.
unsafe impl ArgEncode for AnyView<'_> {
    type Scratch = ();
    #[inline(always)]
    fn encode(&self, _: &mut ()) -> TVMFFIAny {
        *self.as_raw()
    }
}

// SAFETY: None or the inner value's encoding.
unsafe impl<T: ArgEncode> ArgEncode for Option<T> {
    type Scratch = T::Scratch;
    #[inline(always)]
    fn encode(&self, scratch: &mut T::Scratch) -> TVMFFIAny {
        match self {
            Some(value) => value.encode(scratch),
            None => TVMFFIAny::NONE,
        }
    }
}

/// Object references (and the owned string types) are passed as borrowed views.
macro_rules! encode_by_view {
    ($($ty:ty),*) => {$(
        // SAFETY: a view of an object (or inline value) `self` keeps alive.
        unsafe impl $crate::function::ArgEncode for $ty {
            type Scratch = ();
            #[inline(always)]
            fn encode(&self, _: &mut ()) -> ::pactum_sys::tvm_ffi::TVMFFIAny {
                *$crate::AnyView::from(self).as_raw()
            }
        }
    )*};
}
encode_by_view!(
    crate::ObjectRef,
    crate::Function,
    crate::Error,
    crate::String,
    crate::Bytes,
    crate::Array,
    crate::List,
    crate::Map,
    crate::Dict,
    crate::Shape,
    crate::Tensor
);
pub(crate) use encode_by_view;

// SAFETY: a view of an object `self` keeps alive.
unsafe impl<T: crate::ObjectType> ArgEncode for crate::Obj<T> {
    type Scratch = ();
    #[inline(always)]
    fn encode(&self, _: &mut ()) -> TVMFFIAny {
        *AnyView::from(self).as_raw()
    }
}

/// A tuple of arguments for a typed call.
pub trait ArgList {
    /// Number of arguments.
    const LEN: usize;

    /// Encodes the arguments on the stack and calls `function`.
    fn invoke(&self, function: &Function) -> Result<Any>;
}

/// A closure usable as a typed packed function: each parameter converts from a borrowed
/// argument, and the result converts into a value (or an error).
pub trait IntoTypedFunction<Args, Ret>: Send + Sync + 'static {
    /// Checks the count, converts each argument, calls, and converts the result.
    fn call_packed(&self, args: &[AnyView<'_>]) -> Result<Any>;
}

/// A closure result: a value, or `Result` of a value and an error.
pub trait IntoReturn {
    /// Converts into the call's result.
    fn into_return(self) -> Result<Any>;
}

impl<T: Into<Any>> IntoReturn for T {
    #[inline(always)]
    fn into_return(self) -> Result<Any> {
        Ok(self.into())
    }
}

impl<T: Into<Any>, E: Into<Error>> IntoReturn for core::result::Result<T, E> {
    #[inline(always)]
    fn into_return(self) -> Result<Any> {
        self.map(Into::into).map_err(Into::into)
    }
}

/// The error for a wrong argument: keeps the conversion error's kind, names the position.
#[cold]
#[inline(never)]
fn argument_error(index: usize, error: Error) -> Error {
    Error::new(
        ErrorKind::custom(&error.kind()),
        format!("argument {index}: {}", error.message()),
    )
}

#[cold]
#[inline(never)]
fn arity_error(expected: usize, got: usize) -> Error {
    Error::new(
        ErrorKind::TYPE_ERROR,
        format!("expected {expected} argument(s), got {got}"),
    )
}

macro_rules! typed_arity {
    ($len:expr; $($arg:ident $idx:tt),*) => {
        impl<$($arg: ArgEncode),*> ArgList for ($($arg,)*) {
            const LEN: usize = $len;

            #[inline(always)]
            #[allow(unused_variables, unused_mut, non_snake_case)]
            fn invoke(&self, function: &Function) -> Result<Any> {
                #[allow(clippy::let_unit_value)]
                let mut scratch = ($($arg::Scratch::default(),)*);
                let args: [TVMFFIAny; $len] = [$(self.$idx.encode(&mut scratch.$idx)),*];
                let mut result = Any::none();
                // SAFETY: every argument is a valid view while `self` and `scratch` live, and
                // `result` holds None.
                let rc = unsafe { function.call_raw(args.as_ptr(), $len, result.as_mut_ptr()) };
                if rc == 0 { Ok(result) } else { Err(Error::take_raised_after_failure("function call")) }
            }
        }

        impl<Func, Ret, $($arg),*> IntoTypedFunction<($($arg,)*), Ret> for Func
        where
            Func: Fn($($arg),*) -> Ret + Send + Sync + 'static,
            Ret: IntoReturn,
            $($arg: for<'a> FromAnyView<'a>,)*
        {
            #[inline(always)]
            #[allow(non_snake_case)]
            fn call_packed(&self, args: &[AnyView<'_>]) -> Result<Any> {
                if args.len() != $len {
                    return Err(arity_error($len, args.len()));
                }
                $(let $arg = $arg::from_any_view(&args[$idx]).map_err(|e| argument_error($idx, e))?;)*
                self($($arg),*).into_return()
            }
        }
    };
}

typed_arity!(0;);
typed_arity!(1; A0 0);
typed_arity!(2; A0 0, A1 1);
typed_arity!(3; A0 0, A1 1, A2 2);
typed_arity!(4; A0 0, A1 1, A2 2, A3 3);
typed_arity!(5; A0 0, A1 1, A2 2, A3 3, A4 4);
typed_arity!(6; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
typed_arity!(7; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
typed_arity!(8; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);

/// A function with typed arguments `Args` (a tuple) and result `Ret`.
///
/// The argument tuple is encoded on the stack with no allocation and the result converted
/// with one type check: the caller-side cost of a call is that of the raw convention.
pub struct TypedFunction<Args, Ret> {
    function: Function,
    _signature: PhantomData<fn(Args) -> Ret>,
}

impl<Args: ArgList, Ret: FromAny> TypedFunction<Args, Ret> {
    pub(crate) fn new(function: Function) -> Self {
        TypedFunction {
            function,
            _signature: PhantomData,
        }
    }

    /// Calls with `args` and converts the result.
    #[inline(always)]
    pub fn call(&self, args: Args) -> Result<Ret> {
        self.function.invoke_typed(&args)
    }

    /// The underlying function.
    pub fn function(&self) -> &Function {
        &self.function
    }
}

impl<Args, Ret> core::fmt::Debug for TypedFunction<Args, Ret> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "TypedFunction<{}, {}>",
            core::any::type_name::<Args>(),
            core::any::type_name::<Ret>()
        )
    }
}

impl<Args, Ret> Clone for TypedFunction<Args, Ret> {
    fn clone(&self) -> Self {
        TypedFunction {
            function: self.function.clone(),
            _signature: PhantomData,
        }
    }
}

impl Function {
    #[inline(always)]
    fn invoke_typed<Args: ArgList, Ret: FromAny>(&self, args: &Args) -> Result<Ret> {
        args.invoke(self)?.cast::<Ret>()
    }

    /// Calls with a tuple of typed arguments (encoded on the stack) and converts the result.
    ///
    /// ```
    /// let concat = pactum::Function::from_typed(|a: String, b: String| a + &b);
    /// let joined: String = concat.call_typed(("left-", "right")).unwrap();
    /// assert_eq!(joined, "left-right");
    /// ```
    #[inline(always)]
    pub fn call_typed<Args: ArgList, Ret: FromAny>(&self, args: Args) -> Result<Ret> {
        self.invoke_typed(&args)
    }
}
