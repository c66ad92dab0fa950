//! [`Any`] (an owned value) and [`AnyView`] (a borrowed value): the 16-byte tagged cell every
//! argument and result crosses the ABI in, with conversions to and from Rust types.
//!
//! Extraction borrows from `&'a AnyView` (or `&'a Any`), so a `&'a str` can point at the bytes
//! of a small string stored inline in the cell itself.

use core::ffi::CStr;
use core::fmt;
use core::marker::PhantomData;
use std::borrow::Cow;

use pactum_sys::dlpack::{DLDataType, DLDevice};
use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIAnyValue, TVMFFIObject, TVMFFITypeIndex};

use crate::dtype::{DataType, Device};
use crate::error::{Error, ErrorKind, Result};
use crate::object::{ObjectRef, ObjectRefType, header, type_key_of};
use crate::string::storage;

const OBJECT_BEGIN: i32 = TVMFFITypeIndex::STATIC_OBJECT_BEGIN.0;

/// Reads of the 8-byte payload union of a raw [`TVMFFIAny`], for code that dispatches on the
/// type index itself (the fast paths of adapters). Every field is plain data (integers, a float, raw
/// pointers, and structs of integers) for which any bit pattern is valid, so reading any
/// field is defined; the type index only says which reading is meaningful.
pub trait Payload {
    /// The payload as `v_int64`.
    fn int64(&self) -> i64;
    /// The payload as `v_float64`.
    fn float64(&self) -> f64;
    /// The payload as `v_uint64`.
    fn uint64(&self) -> u64;
    /// The payload as `v_ptr`.
    fn ptr(&self) -> *mut core::ffi::c_void;
    /// The payload as `v_obj`.
    fn obj(&self) -> *mut TVMFFIObject;
    /// The payload as `v_c_str`.
    fn c_str(&self) -> *const core::ffi::c_char;
    /// The payload as `v_dtype`.
    fn dtype(&self) -> DLDataType;
    /// The payload as `v_device`.
    fn device(&self) -> DLDevice;
}

macro_rules! payload_reader {
    ($($name:ident: $field:ident -> $ty:ty),*) => {
        impl Payload for TVMFFIAny {
            $(
                #[inline(always)]
                fn $name(&self) -> $ty {
                    // SAFETY: see the trait: every bit pattern of the 8 bytes is a valid $ty.
                    unsafe { self.value.$field }
                }
            )*
        }
    };
}
payload_reader!(int64: v_int64 -> i64, float64: v_float64 -> f64, uint64: v_uint64 -> u64,
    ptr: v_ptr -> *mut core::ffi::c_void, obj: v_obj -> *mut TVMFFIObject,
    c_str: v_c_str -> *const core::ffi::c_char, dtype: v_dtype -> DLDataType, device: v_device -> DLDevice);

/// An owned FFI value: a POD value, an inline small string, or a strong reference to an object.
///
/// Never holds a borrowed C string or byte-array pointer: converting from a view turns those
/// into String and Bytes objects. `DLTensorPtr` and `OpaquePtr` values stay raw pointers whose
/// validity is the producer's business, as in the official runtime.
#[repr(transparent)]
pub struct Any(TVMFFIAny);

// SAFETY: an Any holds POD data or a strong reference to a thread-safe object; raw pointers it
// may carry (OpaquePtr, DLTensorPtr) are never dereferenced by safe code.
unsafe impl Send for Any {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Any {}

impl Any {
    /// None.
    pub const fn none() -> Any {
        Any(TVMFFIAny::NONE)
    }

    /// Takes ownership of a raw owned value.
    ///
    /// # Safety
    /// `raw` must be a valid owned value: zeroed unused bytes, and for object type indices a
    /// live object whose strong reference the caller transfers. It must not be a borrowed kind
    /// (RawStr, ByteArrayPtr, ObjectRValueRef).
    #[inline]
    pub const unsafe fn from_raw(raw: TVMFFIAny) -> Any {
        Any(raw)
    }

    /// Gives up ownership of the raw value.
    #[inline]
    pub fn into_raw(self) -> TVMFFIAny {
        let raw = self.0;
        core::mem::forget(self);
        raw
    }

    /// The raw value, still owned by `self`.
    #[inline]
    pub fn as_raw(&self) -> &TVMFFIAny {
        &self.0
    }

    /// Pointer for use as a call's result slot; the slot must hold a value this `Any` owns.
    #[inline]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut TVMFFIAny {
        &mut self.0
    }

    /// Wraps an object reference.
    #[inline]
    pub fn from_object_ref(object: ObjectRef) -> Any {
        let type_index = object.type_index();
        Any(TVMFFIAny {
            type_index,
            small_str_len: 0,
            value: TVMFFIAnyValue {
                v_obj: object.into_raw(),
            },
        })
    }

    /// The type index.
    #[inline]
    pub fn type_index(&self) -> i32 {
        self.0.type_index
    }

    /// The type key of the stored value (e.g. `int`, `ffi.Array`).
    pub fn type_key(&self) -> std::string::String {
        type_key_of(self.type_index())
    }

    /// Whether the value is None.
    #[inline]
    pub fn is_none(&self) -> bool {
        self.0.type_index == TVMFFITypeIndex::NONE.0
    }

    /// A borrowed view.
    #[inline]
    pub fn view(&self) -> AnyView<'_> {
        AnyView {
            raw: self.0,
            _life: PhantomData,
        }
    }

    /// Reinterprets as a view reference (same layout), for extraction that borrows.
    #[inline]
    pub fn as_view(&self) -> &AnyView<'_> {
        // SAFETY: both are repr(transparent) over TVMFFIAny; an owned value is a valid view.
        unsafe { &*(self as *const Any).cast::<AnyView<'_>>() }
    }

    /// Converts into `T`, consuming the value (object references are moved, not copied).
    #[inline]
    pub fn cast<T: FromAny>(self) -> Result<T> {
        T::from_any(self)
    }

    /// Extracts a `T` that may borrow from `self` (e.g. `&str`).
    #[inline]
    pub fn get<'a, T: FromAnyView<'a>>(&'a self) -> Result<T> {
        T::from_any_view(self.as_view())
    }

    /// The object reference, if the value is an object.
    pub fn as_object_ref(&self) -> Option<&ObjectRef> {
        if self.0.type_index >= OBJECT_BEGIN {
            // SAFETY: for object type indices v_obj is a live, non-null object that `self`
            // owns; ObjectRef is repr(transparent) over that non-null pointer.
            Some(unsafe { &*core::ptr::addr_of!(self.0.value.v_obj).cast::<ObjectRef>() })
        } else {
            None
        }
    }
}

impl Default for Any {
    fn default() -> Self {
        Any::none()
    }
}

impl Clone for Any {
    #[inline]
    fn clone(&self) -> Self {
        if self.0.type_index >= OBJECT_BEGIN {
            // SAFETY: owned object value: v_obj is alive while `self` is.
            unsafe { header::inc_ref(self.0.value.v_obj) };
        }
        Any(self.0)
    }
}

impl Drop for Any {
    #[inline]
    fn drop(&mut self) {
        if self.0.type_index >= OBJECT_BEGIN {
            // SAFETY: `self` owns one strong reference to v_obj.
            unsafe { header::dec_ref(self.0.value.v_obj) }
        }
    }
}

impl fmt::Debug for Any {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_view(), f)
    }
}

/// A borrowed FFI value, valid for `'a`: the form arguments are passed in.
///
/// A slice `&[AnyView]` has the memory layout of a `TVMFFIAny` array and is passed to C as is.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct AnyView<'a> {
    raw: TVMFFIAny,
    _life: PhantomData<&'a ()>,
}

impl AnyView<'static> {
    /// None.
    pub const NONE: AnyView<'static> = AnyView {
        raw: TVMFFIAny::NONE,
        _life: PhantomData,
    };
}

impl<'a> AnyView<'a> {
    /// Wraps a raw value.
    ///
    /// # Safety
    /// `raw` must be a valid value whose referenced memory (object, C string, byte array,
    /// tensor, rvalue slot) stays valid and unchanged for `'a`; an ObjectRValueRef slot must
    /// also be writable for `'a`.
    #[inline]
    pub const unsafe fn from_raw(raw: TVMFFIAny) -> Self {
        AnyView {
            raw,
            _life: PhantomData,
        }
    }

    /// Views a C argument array.
    ///
    /// # Safety
    /// When `len > 0`, `args` must point to `len` values that are valid views (see
    /// [`Self::from_raw`]) for `'a`.
    #[inline]
    pub unsafe fn slice_from_raw(args: *const TVMFFIAny, len: usize) -> &'a [AnyView<'a>] {
        if len == 0 || args.is_null() {
            return &[];
        }
        // SAFETY: forwarded from the caller; AnyView is repr(transparent) over TVMFFIAny.
        unsafe { core::slice::from_raw_parts(args.cast::<AnyView<'a>>(), len) }
    }

    /// The raw value.
    #[inline]
    pub fn as_raw(&self) -> &TVMFFIAny {
        &self.raw
    }

    /// The type index.
    #[inline]
    pub fn type_index(&self) -> i32 {
        self.raw.type_index
    }

    /// The type key of the viewed value.
    pub fn type_key(&self) -> std::string::String {
        type_key_of(self.raw.type_index)
    }

    /// Whether the value is None.
    #[inline]
    pub fn is_none(&self) -> bool {
        self.raw.type_index == TVMFFITypeIndex::NONE.0
    }

    /// Extracts a `T` that may borrow from this view.
    #[inline]
    pub fn get<'b, T: FromAnyView<'b>>(&'b self) -> Result<T> {
        T::from_any_view(self)
    }

    /// Converts to an owned value: C strings become String objects, byte-array pointers become
    /// Bytes objects, objects gain a reference, and an ObjectRValueRef is moved out of its slot
    /// (a second move fails).
    pub fn to_any(&self) -> Result<Any> {
        let raw = self.raw;
        match TVMFFITypeIndex(raw.type_index) {
            TVMFFITypeIndex::RAW_STR => {
                if raw.c_str().is_null() {
                    crate::raw::corrupt_byte_array("a RawStr value holds NULL");
                }
                // SAFETY: the view's contract keeps the C string valid for 'a.
                let bytes = unsafe { CStr::from_ptr(raw.value.v_c_str) }.to_bytes();
                // SAFETY: a fresh value whose ownership the Any takes.
                Ok(unsafe {
                    Any::from_raw(storage::new_raw(
                        bytes,
                        TVMFFITypeIndex::SMALL_STR,
                        TVMFFITypeIndex::STR,
                    ))
                })
            }
            TVMFFITypeIndex::BYTE_ARRAY_PTR => {
                // SAFETY: the view's contract keeps the byte array valid for 'a.
                let bytes = unsafe { crate::raw::byte_array_slice(raw.value.v_ptr.cast()) };
                // SAFETY: a fresh value whose ownership the Any takes.
                Ok(unsafe {
                    Any::from_raw(storage::new_raw(
                        bytes,
                        TVMFFITypeIndex::SMALL_BYTES,
                        TVMFFITypeIndex::BYTES,
                    ))
                })
            }
            TVMFFITypeIndex::OBJECT_RVALUE_REF => {
                let slot = raw.ptr().cast::<*mut TVMFFIObject>();
                // SAFETY: the view's contract makes the slot valid and writable for 'a.
                let object = unsafe { slot.replace(core::ptr::null_mut()) };
                match core::ptr::NonNull::new(object) {
                    // SAFETY: the slot held an owned reference, which we now take over.
                    Some(object) => Ok(Any::from_object_ref(unsafe {
                        ObjectRef::from_raw_owned(object)
                    })),
                    None => Err(Error::new(
                        ErrorKind::INTERNAL_ERROR,
                        "Check failed: (obj_addr[0] != nullptr) is false: RValueRef already moved",
                    )),
                }
            }
            _ => {
                if raw.type_index >= OBJECT_BEGIN {
                    // SAFETY: the object is alive for 'a; we take a new reference.
                    unsafe { header::inc_ref(raw.value.v_obj) };
                }
                // SAFETY: POD, inline strings and objects with a fresh reference are owned values.
                Ok(unsafe { Any::from_raw(raw) })
            }
        }
    }

    /// The object pointer, if the value is an object.
    #[inline]
    #[doc(hidden)]
    pub fn object_ptr(&self) -> Option<*mut TVMFFIObject> {
        // SAFETY: reading the pointer field of an object value.
        (self.raw.type_index >= OBJECT_BEGIN).then(|| self.raw.obj())
    }
}

impl fmt::Debug for AnyView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = &self.raw;
        // SAFETY (all union reads below): the field read matches the type index.
        match TVMFFITypeIndex(raw.type_index) {
            TVMFFITypeIndex::NONE => f.write_str("None"),
            TVMFFITypeIndex::INT => write!(f, "{}", raw.int64()),
            TVMFFITypeIndex::BOOL => write!(f, "{}", raw.int64() != 0),
            TVMFFITypeIndex::FLOAT => write!(f, "{:?}", raw.float64()),
            TVMFFITypeIndex::DATA_TYPE => {
                write!(f, "{}", DataType::from(raw.dtype()))
            }
            TVMFFITypeIndex::DEVICE => {
                write!(f, "{:?}", Device::from(raw.device()))
            }
            _ => match self.get::<&str>() {
                Ok(text) => write!(f, "{text:?}"),
                Err(_) => write!(f, "<{} {:?}>", self.type_key(), raw.value),
            },
        }
    }
}

/// Conversion from a borrowed value; `T` may borrow from the view for `'a`.
pub trait FromAnyView<'a>: Sized {
    /// Extracts the value or fails with a `TypeError` naming the expected and actual types.
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self>;
}

/// Conversion from an owned value, consuming it.
pub trait FromAny: Sized {
    /// Extracts the value or fails with a `TypeError` naming the expected and actual types.
    fn from_any(any: Any) -> Result<Self>;
}

/// The error for a value of the wrong type.
#[cold]
#[inline(never)]
pub(crate) fn type_mismatch(expected: &str, actual_type_index: i32) -> Error {
    Error::new(
        ErrorKind::TYPE_ERROR,
        format!(
            "expected {expected}, got {}",
            display_type_name(actual_type_index)
        ),
    )
}

/// A user-facing name of a type index: small strings read as their object types.
pub fn display_type_name(type_index: i32) -> Cow<'static, str> {
    match TVMFFITypeIndex(type_index) {
        TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::RAW_STR => "ffi.String".into(),
        TVMFFITypeIndex::SMALL_BYTES | TVMFFITypeIndex::BYTE_ARRAY_PTR => "ffi.Bytes".into(),
        _ => type_key_of(type_index).into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Identity conversions.

impl FromAny for Any {
    fn from_any(any: Any) -> Result<Self> {
        Ok(any)
    }
}

impl<'a> FromAnyView<'a> for Any {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        view.to_any()
    }
}

impl<'a> FromAnyView<'a> for AnyView<'a> {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        Ok(*view)
    }
}

impl<'a> From<&'a Any> for AnyView<'a> {
    fn from(any: &'a Any) -> Self {
        any.view()
    }
}

impl<T: FromAny> FromAny for Option<T> {
    fn from_any(any: Any) -> Result<Self> {
        if any.is_none() {
            Ok(None)
        } else {
            T::from_any(any).map(Some)
        }
    }
}

impl<'a, T: FromAnyView<'a>> FromAnyView<'a> for Option<T> {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        if view.is_none() {
            Ok(None)
        } else {
            T::from_any_view(view).map(Some)
        }
    }
}

impl<T: Into<Any>> From<Option<T>> for Any {
    fn from(value: Option<T>) -> Self {
        value.map_or_else(Any::none, Into::into)
    }
}

// ---------------------------------------------------------------------------------------------
// POD conversions.

/// Implements `FromAny` for a type that only needs a view.
macro_rules! from_any_via_view {
    ($($ty:ty),*) => {$(
        impl FromAny for $ty {
            #[inline]
            fn from_any(any: Any) -> Result<Self> {
                <$ty as FromAnyView<'_>>::from_any_view(any.as_view())
            }
        }
    )*};
}

#[inline]
const fn pod(type_index: TVMFFITypeIndex, value: TVMFFIAnyValue) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index.0,
        small_str_len: 0,
        value,
    }
}

impl From<()> for Any {
    #[inline]
    fn from(_: ()) -> Self {
        Any::none()
    }
}
impl<'a> FromAnyView<'a> for () {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        if view.is_none() {
            Ok(())
        } else {
            Err(type_mismatch("None", view.type_index()))
        }
    }
}

impl<'a> FromAnyView<'a> for i64 {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            // SAFETY: Int and Bool store v_int64.
            TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => Ok(view.raw.int64()),
            _ => Err(type_mismatch("int", view.raw.type_index)),
        }
    }
}

impl From<i64> for Any {
    #[inline]
    fn from(value: i64) -> Self {
        Any(pod(TVMFFITypeIndex::INT, TVMFFIAnyValue { v_int64: value }))
    }
}
impl From<i64> for AnyView<'static> {
    #[inline]
    fn from(value: i64) -> Self {
        AnyView {
            raw: pod(TVMFFITypeIndex::INT, TVMFFIAnyValue { v_int64: value }),
            _life: PhantomData,
        }
    }
}

/// Integers narrower than (or unsigned beside) i64: stored as Int, checked when extracted.
macro_rules! narrow_int {
    ($($ty:ty => $name:literal),*) => {$(
        impl<'a> FromAnyView<'a> for $ty {
            #[inline]
            fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
                let wide = match TVMFFITypeIndex(view.raw.type_index) {
                    // SAFETY: Int and Bool store v_int64.
                    TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => view.raw.int64(),
                    _ => return Err(type_mismatch($name, view.raw.type_index)),
                };
                <$ty>::try_from(wide).map_err(|_| {
                    Error::new(ErrorKind::VALUE_ERROR, format!("integer {wide} is out of range for {}", $name))
                })
            }
        }
        impl From<$ty> for AnyView<'static> {
            #[inline]
            fn from(value: $ty) -> Self {
                AnyView::from(value as i64)
            }
        }
    )*};
}
narrow_int!(i8 => "int8", i16 => "int16", i32 => "int32", u8 => "uint8", u16 => "uint16", u32 => "uint32",
            u64 => "uint64", isize => "int64", usize => "uint64");
from_any_via_view!((), i64, i8, i16, i32, u8, u16, u32, u64, isize, usize);

macro_rules! lossless_int_into_any {
    ($($ty:ty),*) => {$(
        impl From<$ty> for Any {
            #[inline]
            fn from(value: $ty) -> Self {
                Any::from(i64::from(value))
            }
        }
    )*};
}
lossless_int_into_any!(i8, i16, i32, u8, u16, u32);

impl TryFrom<u64> for Any {
    type Error = Error;
    fn try_from(value: u64) -> Result<Self> {
        i64::try_from(value).map(Any::from).map_err(|_| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("integer {value} does not fit in int64"),
            )
        })
    }
}

impl TryFrom<usize> for Any {
    type Error = Error;
    fn try_from(value: usize) -> Result<Self> {
        Any::try_from(value as u64)
    }
}

impl<'a> FromAnyView<'a> for bool {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            // SAFETY: Int and Bool store v_int64.
            TVMFFITypeIndex::BOOL | TVMFFITypeIndex::INT => Ok(view.raw.int64() != 0),
            _ => Err(type_mismatch("bool", view.raw.type_index)),
        }
    }
}
impl From<bool> for Any {
    #[inline]
    fn from(value: bool) -> Self {
        Any(pod(
            TVMFFITypeIndex::BOOL,
            TVMFFIAnyValue {
                v_int64: value as i64,
            },
        ))
    }
}
impl From<bool> for AnyView<'static> {
    #[inline]
    fn from(value: bool) -> Self {
        AnyView {
            raw: pod(
                TVMFFITypeIndex::BOOL,
                TVMFFIAnyValue {
                    v_int64: value as i64,
                },
            ),
            _life: PhantomData,
        }
    }
}

impl<'a> FromAnyView<'a> for f64 {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            // SAFETY: Float stores v_float64; Int and Bool store v_int64.
            TVMFFITypeIndex::FLOAT => Ok(view.raw.float64()),
            TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => Ok(view.raw.int64() as f64),
            _ => Err(type_mismatch("float", view.raw.type_index)),
        }
    }
}
impl<'a> FromAnyView<'a> for f32 {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        f64::from_any_view(view).map(|v| v as f32)
    }
}
impl From<f64> for Any {
    #[inline]
    fn from(value: f64) -> Self {
        Any(pod(
            TVMFFITypeIndex::FLOAT,
            TVMFFIAnyValue { v_float64: value },
        ))
    }
}
impl From<f32> for Any {
    #[inline]
    fn from(value: f32) -> Self {
        Any::from(f64::from(value))
    }
}
impl From<f64> for AnyView<'static> {
    #[inline]
    fn from(value: f64) -> Self {
        AnyView {
            raw: pod(TVMFFITypeIndex::FLOAT, TVMFFIAnyValue { v_float64: value }),
            _life: PhantomData,
        }
    }
}
impl From<f32> for AnyView<'static> {
    #[inline]
    fn from(value: f32) -> Self {
        AnyView::from(f64::from(value))
    }
}
from_any_via_view!(bool, f64, f32);

/// An opaque pointer (`void*`, type index 4). The runtime never dereferences it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpaquePtr(pub *mut core::ffi::c_void);

// SAFETY: an opaque pointer is an address; pactum never dereferences it.
unsafe impl Send for OpaquePtr {}
// SAFETY: as above.
unsafe impl Sync for OpaquePtr {}

impl<'a> FromAnyView<'a> for OpaquePtr {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            // SAFETY: OpaquePtr stores v_ptr.
            TVMFFITypeIndex::OPAQUE_PTR => Ok(OpaquePtr(view.raw.ptr())),
            TVMFFITypeIndex::NONE => Ok(OpaquePtr(core::ptr::null_mut())),
            _ => Err(type_mismatch("void*", view.raw.type_index)),
        }
    }
}
impl From<OpaquePtr> for Any {
    fn from(value: OpaquePtr) -> Self {
        if value.0.is_null() {
            return Any::none();
        }
        Any(pod(
            TVMFFITypeIndex::OPAQUE_PTR,
            TVMFFIAnyValue { v_ptr: value.0 },
        ))
    }
}
impl From<OpaquePtr> for AnyView<'static> {
    fn from(value: OpaquePtr) -> Self {
        let any = Any::from(value);
        AnyView {
            raw: any.into_raw(),
            _life: PhantomData,
        }
    }
}

impl<'a> FromAnyView<'a> for DataType {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            // SAFETY: DataType stores v_dtype.
            TVMFFITypeIndex::DATA_TYPE => Ok(DataType::from(view.raw.dtype())),
            TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR => {
                view.get::<&str>()?.parse()
            }
            _ => Err(type_mismatch("DataType", view.raw.type_index)),
        }
    }
}
impl From<DataType> for Any {
    fn from(value: DataType) -> Self {
        Any(pod(TVMFFITypeIndex::DATA_TYPE, dtype_value(value.into())))
    }
}
impl From<DataType> for AnyView<'static> {
    fn from(value: DataType) -> Self {
        AnyView {
            raw: pod(TVMFFITypeIndex::DATA_TYPE, dtype_value(value.into())),
            _life: PhantomData,
        }
    }
}
fn dtype_value(dtype: DLDataType) -> TVMFFIAnyValue {
    let mut value = TVMFFIAnyValue { v_uint64: 0 };
    value.v_dtype = dtype;
    value
}

impl<'a> FromAnyView<'a> for Device {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            // SAFETY: Device stores v_device.
            TVMFFITypeIndex::DEVICE => Ok(Device::from(view.raw.device())),
            _ => Err(type_mismatch("Device", view.raw.type_index)),
        }
    }
}
impl From<Device> for Any {
    fn from(value: Device) -> Self {
        Any(pod(
            TVMFFITypeIndex::DEVICE,
            TVMFFIAnyValue {
                v_device: DLDevice::from(value),
            },
        ))
    }
}
impl From<Device> for AnyView<'static> {
    fn from(value: Device) -> Self {
        AnyView {
            raw: pod(
                TVMFFITypeIndex::DEVICE,
                TVMFFIAnyValue {
                    v_device: DLDevice::from(value),
                },
            ),
            _life: PhantomData,
        }
    }
}
from_any_via_view!(OpaquePtr, DataType, Device);

// ---------------------------------------------------------------------------------------------
// Strings and bytes (borrowed forms; the owned String/Bytes types live in `string.rs`).

/// The bytes of any string-like or bytes-like value, borrowed for `'a`.
pub fn view_bytes<'a>(view: &'a AnyView<'_>) -> Option<&'a [u8]> {
    let raw = &view.raw;
    match TVMFFITypeIndex(raw.type_index) {
        TVMFFITypeIndex::RAW_STR => {
            if raw.c_str().is_null() {
                crate::raw::corrupt_byte_array("a RawStr value holds NULL");
            }
            // SAFETY: RawStr points at a NUL-terminated string valid for the view's lifetime.
            Some(unsafe { CStr::from_ptr(raw.c_str()) }.to_bytes())
        }
        TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::SMALL_BYTES => {
            let len = (raw.small_str_len as usize).min(8);
            // SAFETY: v_bytes lives inside the view, borrowed for 'a.
            Some(
                unsafe { &*core::ptr::addr_of!(raw.value.v_bytes) }
                    .get(..len)
                    .unwrap_or(&[]),
            )
        }
        TVMFFITypeIndex::STR | TVMFFITypeIndex::BYTES => {
            // SAFETY: String and Bytes objects have a byte array right after the header.
            Some(unsafe { crate::raw::byte_array_slice(raw.obj().add(1).cast()) })
        }
        TVMFFITypeIndex::BYTE_ARRAY_PTR => {
            // SAFETY: ByteArrayPtr points at a byte array valid for the view's lifetime.
            Some(unsafe { crate::raw::byte_array_slice(raw.ptr().cast()) })
        }
        _ => None,
    }
}

fn is_str_kind(type_index: i32) -> bool {
    matches!(
        TVMFFITypeIndex(type_index),
        TVMFFITypeIndex::RAW_STR | TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR
    )
}

impl<'a> FromAnyView<'a> for &'a str {
    #[inline]
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        if !is_str_kind(view.raw.type_index) {
            return Err(type_mismatch("str", view.raw.type_index));
        }
        let bytes = view_bytes(view).unwrap_or(&[]);
        core::str::from_utf8(bytes).map_err(|e| {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("string is not valid UTF-8: {e}"),
            )
        })
    }
}

impl<'a> FromAnyView<'a> for std::string::String {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        <&str>::from_any_view(view).map(str::to_owned)
    }
}
from_any_via_view!(std::string::String);

impl<'a> FromAnyView<'a> for &'a [u8] {
    /// Bytes values only (like the official runtime: a string is not accepted as bytes).
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        match TVMFFITypeIndex(view.raw.type_index) {
            TVMFFITypeIndex::BYTE_ARRAY_PTR
            | TVMFFITypeIndex::SMALL_BYTES
            | TVMFFITypeIndex::BYTES => Ok(view_bytes(view).unwrap_or(&[])),
            _ => Err(type_mismatch("bytes", view.raw.type_index)),
        }
    }
}

impl<'a> FromAnyView<'a> for Vec<u8> {
    fn from_any_view(view: &'a AnyView<'_>) -> Result<Self> {
        <&[u8]>::from_any_view(view).map(<[u8]>::to_vec)
    }
}
from_any_via_view!(Vec<u8>);

impl<'a> From<&'a CStr> for AnyView<'a> {
    /// A borrowed C string (`RawStr`, type index 8).
    fn from(value: &'a CStr) -> Self {
        AnyView {
            raw: pod(
                TVMFFITypeIndex::RAW_STR,
                TVMFFIAnyValue {
                    v_c_str: value.as_ptr(),
                },
            ),
            _life: PhantomData,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Objects.

/// Moves an object reference out of `any` if its type is `T`.
pub(crate) fn object_from_any<T: ObjectRefType>(any: Any) -> Result<T> {
    let type_index = any.type_index();
    if type_index >= OBJECT_BEGIN && T::accepts_type_index(type_index) {
        let raw = any.into_raw();
        // SAFETY: `any` owned one strong reference to this live object of an accepted type.
        let object = unsafe {
            ObjectRef::from_raw_owned(core::ptr::NonNull::new_unchecked(raw.value.v_obj))
        };
        // SAFETY: the type index was accepted above.
        Ok(unsafe { T::from_object_ref_unchecked(object) })
    } else {
        Err(type_mismatch(&T::type_name(), type_index))
    }
}

/// Adds a reference to the object in `view` if its type is `T`.
pub(crate) fn object_from_view<T: ObjectRefType>(view: &AnyView<'_>) -> Result<T> {
    let type_index = view.type_index();
    match view.object_ptr() {
        Some(ptr) if T::accepts_type_index(type_index) => {
            // SAFETY: a live object (the view's contract) of an accepted type.
            let object =
                unsafe { ObjectRef::from_raw_borrowed(core::ptr::NonNull::new_unchecked(ptr)) };
            // SAFETY: the type index was accepted above.
            Ok(unsafe { T::from_object_ref_unchecked(object) })
        }
        _ => Err(type_mismatch(&T::type_name(), type_index)),
    }
}

/// A borrowed view of an object reference.
pub fn view_of_object<T: ObjectRefType>(object: &T) -> AnyView<'_> {
    let object = object.as_object_ref();
    AnyView {
        raw: TVMFFIAny {
            type_index: object.type_index(),
            small_str_len: 0,
            value: TVMFFIAnyValue {
                v_obj: object.as_raw(),
            },
        },
        _life: PhantomData,
    }
}

/// Conversions between a typed object reference and `Any`/`AnyView`.
macro_rules! object_ref_conversions {
    ($ty:ty) => {
        impl From<$ty> for $crate::Any {
            #[inline]
            fn from(value: $ty) -> Self {
                $crate::Any::from_object_ref($crate::object::ObjectRefType::into_object_ref(value))
            }
        }
        impl<'a> From<&'a $ty> for $crate::AnyView<'a> {
            #[inline]
            fn from(value: &'a $ty) -> Self {
                $crate::any::view_of_object(value)
            }
        }
        impl $crate::any::FromAny for $ty {
            #[inline]
            fn from_any(any: $crate::Any) -> $crate::Result<Self> {
                $crate::any::object_from_any(any)
            }
        }
        impl<'a> $crate::any::FromAnyView<'a> for $ty {
            #[inline]
            fn from_any_view(view: &'a $crate::AnyView<'_>) -> $crate::Result<Self> {
                $crate::any::object_from_view(view)
            }
        }
    };
}
pub(crate) use object_ref_conversions;

/// Implements [`ObjectRefType`](crate::object::ObjectRefType) and the `Any` conversions for a
/// built-in typed reference `$ty(ObjectRef)` of static type index `$index`.
macro_rules! builtin_object_ref {
    ($ty:ident, $index:expr, $key:literal) => {
        $crate::object::object_ref_type!($ty, $index, $key);
        $crate::any::object_ref_conversions!($ty);
    };
}
pub(crate) use builtin_object_ref;

object_ref_conversions!(ObjectRef);
// `Error` sits below this module (every conversion here can fail with one), so its
// conversions are made here rather than next to it.
object_ref_conversions!(crate::error::Error);
