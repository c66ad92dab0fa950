//! [`Function`] (`ffi.Function`): packed functions with the `TVMFFISafeCallType` convention.
//!
//! Three ways to call, in the spirit of wasmtime's `Func` / `TypedFunc`:
//! - [`Function::call`]: dynamic, over `&[AnyView]`;
//! - [`TypedFunction`]: arguments and result typed once, encoded on the stack;
//! - [`Function::call_raw`]: the raw convention, `unsafe`.

pub mod kwargs;
pub mod schema;
mod typed;

pub(crate) use typed::encode_by_view;
pub use typed::{ArgEncode, ArgList, IntoReturn, IntoTypedFunction, TypedFunction};

use core::ffi::{c_int, c_void};
use core::fmt;

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIByteArray, TVMFFIFunctionCell, TVMFFIObjectHandle, TVMFFITypeIndex,
};

use crate::any::{Any, AnyView};
use crate::boundary::{self, EntryKind};
use crate::error::{Error, ErrorKind, Result};
use crate::object::{ObjectBox, ObjectRef, new_object_box};
use crate::runtime;

/// A reference-counted packed function (`ffi.Function`).
#[repr(transparent)]
#[derive(Clone)]
pub struct Function(ObjectRef);

crate::any::builtin_object_ref!(Function, TVMFFITypeIndex::FUNCTION, "ffi.Function");

/// Payload of functions pactum makes around Rust closures: the ABI cell, then the closure.
#[repr(C)]
pub(crate) struct ClosurePayload<F> {
    cell: TVMFFIFunctionCell,
    closure: F,
}

/// `safe_call` of closure functions: `handle` is the function object itself.
unsafe extern "C" fn closure_safe_call<F>(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int
where
    F: Fn(&[AnyView<'_>]) -> Result<Any> + Send + Sync + 'static,
{
    let body = |handle: *mut c_void, args, num_args: i32, result: *mut TVMFFIAny| {
        let payload = handle.cast::<ObjectBox<ClosurePayload<F>>>();
        // SAFETY: this safe_call is only installed in objects laid out as
        // ObjectBox<ClosurePayload<F>>, and the caller keeps the function alive during the call.
        let closure = unsafe { &ObjectBox::cell(payload).closure };
        // SAFETY: the convention passes `num_args` valid borrowed values.
        let args = unsafe { AnyView::slice_from_raw(args, usize::try_from(num_args).unwrap_or(0)) };
        let value = closure(args)?;
        // SAFETY: the boundary left None in the slot, so overwriting it leaks nothing; the
        // caller now owns `value`.
        unsafe { result.write(value.into_raw()) };
        Ok(0)
    };
    let call_args = (handle, args, num_args, result);
    // SAFETY: the convention passes a valid result slot.
    unsafe { boundary::safe_call(EntryKind::Callback, call_args, body) }
}

/// Payload of functions wrapping a raw C callback with its own `self` and deleter.
#[repr(C)]
struct ForeignCallbackPayload {
    cell: TVMFFIFunctionCell,
    self_: *mut c_void,
    callback: unsafe extern "C" fn(*mut c_void, *const TVMFFIAny, i32, *mut TVMFFIAny) -> c_int,
    deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

impl Drop for ForeignCallbackPayload {
    fn drop(&mut self) {
        if let Some(deleter) = self.deleter {
            // SAFETY: the creator asked for `deleter(self)` exactly once, when the function dies.
            unsafe { deleter(self.self_) }
        }
    }
}

unsafe extern "C" fn foreign_callback_safe_call(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    boundary::value(EntryKind::Callback, -1, || {
        let payload = handle.cast::<ObjectBox<ForeignCallbackPayload>>();
        // SAFETY: installed only in ObjectBox<ForeignCallbackPayload> objects, kept alive by
        // the caller; the callback follows the same convention, with its own `self`.
        Ok(unsafe {
            let payload = ObjectBox::cell(payload);
            (payload.callback)(payload.self_, args, num_args, result)
        })
    })
}

impl Function {
    /// Wraps a Rust closure taking borrowed arguments.
    ///
    /// ```
    /// use pactum::{Any, AnyView, Function};
    /// let sum = Function::from_packed(|args: &[AnyView<'_>]| {
    ///     let mut total = 0i64;
    ///     for arg in args {
    ///         total += arg.get::<i64>()?;
    ///     }
    ///     Ok(Any::from(total))
    /// });
    /// let result = sum.call(&[1i64.into(), 2i64.into(), 3i64.into()]).unwrap();
    /// assert_eq!(result.cast::<i64>().unwrap(), 6);
    /// ```
    pub fn from_packed<F>(closure: F) -> Function
    where
        F: Fn(&[AnyView<'_>]) -> Result<Any> + Send + Sync + 'static,
    {
        let cell = TVMFFIFunctionCell {
            safe_call: Some(closure_safe_call::<F>),
            cpp_call: core::ptr::null_mut(),
        };
        let ptr = new_object_box(
            TVMFFITypeIndex::FUNCTION.0,
            ClosurePayload { cell, closure },
        );
        // SAFETY: a fresh object whose single strong reference we take.
        Function(unsafe { ObjectRef::from_raw_owned(ptr.cast()) })
    }

    /// Wraps a Rust closure with typed parameters and result; arguments are converted and
    /// checked on every call, and a wrong count or type is a `TypeError` naming the argument.
    ///
    /// ```
    /// let add = pactum::Function::from_typed(|a: i64, b: i64| a + b);
    /// let typed = add.typed_unchecked::<(i64, i64), i64>();
    /// assert_eq!(typed.call((2, 3)).unwrap(), 5);
    /// ```
    pub fn from_typed<F, Args, Ret>(closure: F) -> Function
    where
        F: IntoTypedFunction<Args, Ret>,
    {
        Function::from_packed(move |args: &[AnyView<'_>]| closure.call_packed(args))
    }

    /// Wraps a raw callback the way `TVMFFIFunctionCreate` does: calls receive `self_` as
    /// their handle, and `deleter(self_)` runs once when the function dies.
    ///
    /// # Safety
    /// `callback` must follow `TVMFFISafeCallType` for the given `self_`, and `self_` and
    /// `deleter` must stay valid until the deleter runs; the function may be called and
    /// dropped from any thread.
    pub unsafe fn from_safe_call(
        self_: *mut c_void,
        callback: unsafe extern "C" fn(*mut c_void, *const TVMFFIAny, i32, *mut TVMFFIAny) -> c_int,
        deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> Function {
        let cell = TVMFFIFunctionCell {
            safe_call: Some(foreign_callback_safe_call),
            cpp_call: core::ptr::null_mut(),
        };
        let payload = ForeignCallbackPayload {
            cell,
            self_,
            callback,
            deleter,
        };
        let ptr = new_object_box(TVMFFITypeIndex::FUNCTION.0, payload);
        // SAFETY: a fresh object whose single strong reference we take.
        Function(unsafe { ObjectRef::from_raw_owned(ptr.cast()) })
    }

    /// Wraps a raw callback that receives the function object itself as its handle (the
    /// `TVMFFIFunctionCreate(NULL, cb, NULL)` form).
    ///
    /// # Safety
    /// `callback` must follow `TVMFFISafeCallType` and may be called from any thread.
    pub unsafe fn from_safe_call_direct(
        callback: unsafe extern "C" fn(*mut c_void, *const TVMFFIAny, i32, *mut TVMFFIAny) -> c_int,
    ) -> Function {
        let cell = TVMFFIFunctionCell {
            safe_call: Some(callback),
            cpp_call: core::ptr::null_mut(),
        };
        let ptr = new_object_box(TVMFFITypeIndex::FUNCTION.0, cell);
        // SAFETY: a fresh object whose single strong reference we take.
        Function(unsafe { ObjectRef::from_raw_owned(ptr.cast()) })
    }

    fn cell(&self) -> &TVMFFIFunctionCell {
        // SAFETY: every Function object starts its body with a TVMFFIFunctionCell.
        unsafe { &*self.0.as_raw().add(1).cast::<TVMFFIFunctionCell>() }
    }

    /// Calls with borrowed arguments and returns the owned result.
    #[inline(always)]
    pub fn call(&self, args: &[AnyView<'_>]) -> Result<Any> {
        let Ok(num_args) = i32::try_from(args.len()) else {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("too many arguments: {}", args.len()),
            ));
        };
        let mut result = Any::none();
        // SAFETY: `args` are valid views for the call and `result` holds None.
        let rc = unsafe { self.call_raw(args.as_ptr().cast(), num_args, result.as_mut_ptr()) };
        if rc == 0 {
            Ok(result)
        } else {
            Err(Error::take_raised_after_failure("function call"))
        }
    }

    /// Calls through the raw convention.
    ///
    /// # Safety
    /// `args` must point to `num_args` valid borrowed values, and `result` to a value that
    /// holds no object (normally None); on success `*result` is owned by the caller.
    #[inline(always)]
    pub unsafe fn call_raw(
        &self,
        args: *const TVMFFIAny,
        num_args: i32,
        result: *mut TVMFFIAny,
    ) -> c_int {
        match self.cell().safe_call {
            // SAFETY: forwarded from the caller; the function object is alive (`self`).
            Some(safe_call) => unsafe { safe_call(self.0.as_raw().cast(), args, num_args, result) },
            None => {
                Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    "function object has no safe_call",
                )
                .set_raised();
                -1
            }
        }
    }

    /// A typed handle with arguments `Args` (a tuple) and result `Ret`, *without* checking
    /// them against the function's signature, which a `Function` alone does not know.
    ///
    /// Safe all the same: the callee checks every argument on every call and the result is
    /// converted with one type check, so a wrong guess is a `TypeError` at the call, never
    /// undefined behaviour. Where a signature is recorded, [`Module::typed`](crate::Module::typed)
    /// and [`Function::global_typed`] check it once, up front, and fail instead.
    pub fn typed_unchecked<Args: ArgList, Ret: crate::any::FromAny>(
        &self,
    ) -> TypedFunction<Args, Ret> {
        TypedFunction::new(self.clone())
    }

    /// The global function registered under `name`, if any.
    pub fn get_global(name: &str) -> Option<Function> {
        let bytes = TVMFFIByteArray {
            data: name.as_ptr().cast(),
            size: name.len(),
        };
        let mut handle: TVMFFIObjectHandle = core::ptr::null_mut();
        // SAFETY: valid name and out pointer; the result is a new reference or NULL.
        let rc = unsafe { (runtime::api().TVMFFIFunctionGetGlobal)(&bytes, &mut handle) };
        if rc != 0 {
            // Lookups do not fail in practice; keep the slot clean if one does.
            drop(Error::take_raised());
            return None;
        }
        let ptr = core::ptr::NonNull::new(handle.cast())?;
        // SAFETY: GetGlobal returns a new strong reference.
        unsafe { ObjectRef::from_raw_owned(ptr) }
            .downcast::<Function>()
            .ok()
    }

    /// Registers this function globally under `name`.
    pub fn register_global(&self, name: &str, allow_override: bool) -> Result<()> {
        let bytes = TVMFFIByteArray {
            data: name.as_ptr().cast(),
            size: name.len(),
        };
        // SAFETY: valid name and function; the registry takes its own reference.
        let rc = unsafe {
            (runtime::api().TVMFFIFunctionSetGlobal)(
                &bytes,
                self.0.as_raw().cast(),
                c_int::from(allow_override),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::take_raised_after_failure(
                "registering a global function",
            ))
        }
    }

    /// The untyped object.
    pub fn as_object_ref(&self) -> &ObjectRef {
        &self.0
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Function({:p})", self.0.as_raw())
    }
}
