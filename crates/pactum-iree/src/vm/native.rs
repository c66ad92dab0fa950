//! Modules written in Rust ("native" modules): [`NativeModule`], the dynamic interface the
//! interpreter calls, and [`NativeModuleBuilder`], which binds typed Rust functions to it.
//!
//! [`NativeModuleBuilder`] says how typed functions are declared and checked.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::buffer::VmBuffer;
use super::value::{Ref, RefObject, Value};
use crate::status::StatusError;

/// One function of a native module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeFunction {
    /// The name within the module (`frob` for `optional_ext.frob`).
    pub name: Cow<'static, str>,
    /// The calling convention (`0i_i`); variadic spans (`C…D`) are allowed.
    pub cconv: Cow<'static, str>,
}

impl NativeFunction {
    /// A function named `name` with calling convention `cconv`.
    pub fn new(name: impl Into<Cow<'static, str>>, cconv: impl Into<Cow<'static, str>>) -> Self {
        NativeFunction {
            name: name.into(),
            cconv: cconv.into(),
        }
    }
}

/// The error a native function returns: an IREE status and a message.
pub type NativeError = StatusError;

/// A module implemented in Rust, which bytecode modules registered after it can import.
///
/// Arguments arrive flattened in calling-convention order. A variadic span (`C…D`) arrives as
/// an `I32` count followed by the values of each tuple. Results must match the function's
/// result kinds exactly, or the call traps. [`NativeModuleBuilder`] makes modules whose
/// functions are typed Rust closures; implementing this trait by hand reads `args`
/// dynamically.
pub trait NativeModule: Send + Sync {
    /// The module name (`hal`).
    fn name(&self) -> &str;

    /// The module version, compared with importers' minimum versions.
    fn version(&self) -> u32 {
        0
    }

    /// The functions, in a fixed order; `call` receives an index into this slice.
    fn functions(&self) -> &[NativeFunction];

    /// Reference type names this module provides (`hal.buffer_view`), registered with it so
    /// that bytecode type tables naming them resolve.
    fn ref_types(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether every function's declared calling convention is the one its Rust signature
    /// implies (modules built by [`NativeModuleBuilder`]); [`Context::register_native`]
    /// refuses a module for which this fails. Required, so that a module wrapping a built one
    /// cannot drop the check by forgetting to forward it; a module reading its arguments
    /// dynamically has nothing to check and answers `Ok(())`.
    ///
    /// [`Context::register_native`]: super::Context::register_native
    fn check_signatures(&self) -> Result<(), SignatureMismatch>;

    /// Whether every function's calling convention is the one its Rust types imply, so that it
    /// is well formed by construction once [`check_signatures`](NativeModule::check_signatures)
    /// passed (modules built by [`NativeModuleBuilder`] answer `true`). The context then parses
    /// a function's convention only when an import or a lookup first needs it, instead of
    /// all of them at registration: a process that registers `hal` and calls none of its ~60
    /// functions does not pay for them. A module whose conventions are written by hand
    /// answers `false` (the default): each is parsed at registration, and a malformed one
    /// refuses the module there.
    fn conventions_follow_types(&self) -> bool {
        false
    }

    /// Calls function `index` with `args`.
    fn call(&self, index: usize, args: &[Value]) -> Result<Vec<Value>, NativeError>;

    /// Calls function `index` with `args`, appending its results to `results` (which the
    /// caller passes empty): what the interpreter calls, so that a module may hand its
    /// results over without a list of their own on every call. Answers what
    /// [`call`](NativeModule::call) answers.
    fn call_into(
        &self,
        index: usize,
        args: &[Value],
        results: &mut Vec<Value>,
    ) -> Result<(), NativeError> {
        results.extend(self.call(index, args)?);
        Ok(())
    }
}

/// A typed native function whose declared calling convention differs from the one its Rust
/// signature implies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureMismatch {
    /// `module.function`.
    pub function: String,
    /// The calling convention the function declares.
    pub declared: String,
    /// The calling convention its parameter and result types imply.
    pub implied: String,
}

impl fmt::Display for SignatureMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "native function `{}` declares calling convention `{}`, but its Rust signature \
             implies `{}`",
            self.function, self.declared, self.implied
        )
    }
}

impl std::error::Error for SignatureMismatch {}

/// A [`RefObject`] type with one VM type name, so that typed native functions can take it
/// (`&T`, `Option<&T>`) and return it, and name it in their errors.
pub trait RefObjectType: RefObject + Sized + 'static {
    /// The type name without the `!` (`hal.buffer`).
    const TYPE_NAME: &'static str;
}

fn invalid(message: String) -> NativeError {
    StatusError::invalid_argument(message)
}

fn arg(args: &[Value], at: usize) -> Result<&Value, NativeError> {
    args.get(at)
        .ok_or_else(|| invalid(format!("missing argument {at}")))
}

fn ref_arg(args: &[Value], at: usize) -> Result<Option<&Ref>, NativeError> {
    match arg(args, at)? {
        Value::Ref(r) => Ok(r.as_ref()),
        _ => Err(invalid(format!("argument {at} is not a reference"))),
    }
}

fn object_arg<T: RefObjectType>(r: &Ref, at: usize) -> Result<&T, NativeError> {
    r.downcast_ref::<T>().ok_or_else(|| {
        invalid(format!(
            "argument {at}: expected a {}, got {}",
            T::TYPE_NAME,
            r.type_name()
        ))
    })
}

fn buffer_arg(r: &Ref, at: usize) -> Result<&Arc<VmBuffer>, NativeError> {
    r.as_buffer().ok_or_else(|| {
        invalid(format!(
            "argument {at}: expected a vm.buffer, got {}",
            r.type_name()
        ))
    })
}

fn null_arg(at: usize, what: &str) -> NativeError {
    invalid(format!("argument {at}: expected a {what}, got null"))
}

/// A type a typed native function can take as a parameter: what it is in the calling
/// convention and how it is read from the flattened arguments.
///
/// The implementing type is the parameter as written (`&HalBuffer`, for some lifetime);
/// [`Out`](Self::Out) is the same type borrowing the call's arguments for `'a`, which is what
/// the function receives.
pub trait NativeParam {
    /// The parameter as the function receives it, borrowing arguments for `'a`.
    type Out<'a>;
    /// Appends its calling-convention items (`i`, `r`, `CiirIID`, ...).
    fn cconv(out: &mut String);
    /// Reads it from `args` at `*at`, moving `*at` past what it read.
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Self::Out<'a>, NativeError>;
}

/// A parameter type that can be an item of a [`Variadic`]: a fixed number of flat values.
pub trait VariadicItem: NativeParam {
    /// The flat values one item takes.
    const WIDTH: usize;
}

macro_rules! scalar_param {
    ($($ty:ty, $variant:ident, $item:literal, $name:literal;)*) => {$(
        impl NativeParam for $ty {
            type Out<'a> = $ty;
            fn cconv(out: &mut String) {
                out.push($item);
            }
            fn read(args: &[Value], at: &mut usize) -> Result<$ty, NativeError> {
                let i = *at;
                *at += 1;
                match arg(args, i)? {
                    Value::$variant(v) => Ok(*v),
                    _ => Err(invalid(format!(concat!("argument {} is not an ", $name), i))),
                }
            }
        }

        impl VariadicItem for $ty {
            const WIDTH: usize = 1;
        }

        impl NativeResult for $ty {
            fn cconv(out: &mut String) {
                out.push($item);
            }
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
        }
    )*};
}

scalar_param! {
    i32, I32, 'i', "i32";
    i64, I64, 'I', "i64";
    f32, F32, 'f', "f32";
    f64, F64, 'F', "f64";
}

/// A reference parameter: the object, never null.
impl<T: RefObjectType> NativeParam for &T {
    type Out<'a> = &'a T;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<&'a T, NativeError> {
        let i = *at;
        *at += 1;
        let r = ref_arg(args, i)?.ok_or_else(|| null_arg(i, T::TYPE_NAME))?;
        object_arg(r, i)
    }
}

impl<T: RefObjectType> VariadicItem for &T {
    const WIDTH: usize = 1;
}

/// A reference parameter that may be null.
impl<T: RefObjectType> NativeParam for Option<&T> {
    type Out<'a> = Option<&'a T>;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Option<&'a T>, NativeError> {
        let i = *at;
        *at += 1;
        ref_arg(args, i)?.map(|r| object_arg(r, i)).transpose()
    }
}

impl<T: RefObjectType> VariadicItem for Option<&T> {
    const WIDTH: usize = 1;
}

/// Any reference, never null.
impl NativeParam for &Ref {
    type Out<'a> = &'a Ref;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<&'a Ref, NativeError> {
        let i = *at;
        *at += 1;
        ref_arg(args, i)?.ok_or_else(|| null_arg(i, "reference"))
    }
}

impl VariadicItem for &Ref {
    const WIDTH: usize = 1;
}

/// Any reference, or null.
impl NativeParam for Option<&Ref> {
    type Out<'a> = Option<&'a Ref>;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Option<&'a Ref>, NativeError> {
        let i = *at;
        *at += 1;
        ref_arg(args, i)
    }
}

impl VariadicItem for Option<&Ref> {
    const WIDTH: usize = 1;
}

/// A `!vm.buffer`, never null.
impl NativeParam for &Arc<VmBuffer> {
    type Out<'a> = &'a Arc<VmBuffer>;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<&'a Arc<VmBuffer>, NativeError> {
        let i = *at;
        *at += 1;
        let r = ref_arg(args, i)?.ok_or_else(|| null_arg(i, "vm.buffer"))?;
        buffer_arg(r, i)
    }
}

/// A `!vm.buffer`, or null.
impl NativeParam for Option<&Arc<VmBuffer>> {
    type Out<'a> = Option<&'a Arc<VmBuffer>>;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(
        args: &'a [Value],
        at: &mut usize,
    ) -> Result<Option<&'a Arc<VmBuffer>>, NativeError> {
        let i = *at;
        *at += 1;
        ref_arg(args, i)?.map(|r| buffer_arg(r, i)).transpose()
    }
}

/// A `!vm.buffer` argument holding text (a null reference is the empty text). Its bytes are
/// only read when [`Text::to_string_lossy`] asks for them, so a message argument costs
/// nothing unless an error is reported.
#[derive(Clone, Copy, Debug)]
pub struct Text<'a>(Option<&'a Arc<VmBuffer>>);

impl Text<'_> {
    /// The text, with invalid UTF-8 replaced.
    pub fn to_string_lossy(&self) -> String {
        self.0.map_or_else(String::new, |buffer| {
            String::from_utf8_lossy(&buffer.to_vec()).into_owned()
        })
    }
}

impl NativeParam for Text<'_> {
    type Out<'a> = Text<'a>;
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Text<'a>, NativeError> {
        Option::<&Arc<VmBuffer>>::read(args, at).map(Text)
    }
}

/// A variadic group (`C…D` in a calling convention): a count, then that many items of `T`,
/// each item one or more flat values (`T` a scalar, a reference or a tuple of those). Items
/// are read when asked for, with errors naming their flat argument index.
pub struct Variadic<'a, T> {
    args: &'a [Value],
    first: usize,
    len: usize,
    item: PhantomData<fn() -> T>,
}

impl<T> Clone for Variadic<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Variadic<'_, T> {}

impl<T> fmt::Debug for Variadic<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Variadic")
            .field("first", &self.first)
            .field("len", &self.len)
            .finish()
    }
}

impl<'a, T: VariadicItem> Variadic<'a, T> {
    /// The number of items.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Item `k`.
    pub fn get(&self, k: usize) -> Result<T::Out<'a>, NativeError> {
        if k >= self.len {
            return Err(invalid(format!(
                "variadic item {k} of a group of {}",
                self.len
            )));
        }
        let mut at = self.first + k * T::WIDTH;
        T::read(self.args, &mut at)
    }

    /// Every item, in order.
    pub fn iter(&self) -> VariadicIter<'a, T> {
        VariadicIter {
            span: *self,
            next: 0,
        }
    }
}

/// The items of a [`Variadic`], in order.
pub struct VariadicIter<'a, T> {
    span: Variadic<'a, T>,
    next: usize,
}

impl<'a, T: VariadicItem> Iterator for VariadicIter<'a, T> {
    type Item = Result<T::Out<'a>, NativeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.span.len {
            return None;
        }
        self.next += 1;
        Some(self.span.get(self.next - 1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.span.len - self.next;
        (left, Some(left))
    }
}

impl<T: VariadicItem> ExactSizeIterator for VariadicIter<'_, T> {}

impl<T: VariadicItem> NativeParam for Variadic<'_, T> {
    type Out<'a> = Variadic<'a, T>;
    fn cconv(out: &mut String) {
        out.push('C');
        T::cconv(out);
        out.push('D');
    }
    fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Variadic<'a, T>, NativeError> {
        let i = *at;
        let count = match arg(args, i)? {
            Value::I32(v) => *v,
            _ => return Err(invalid(format!("argument {i} is not an i32"))),
        };
        let len = usize::try_from(count)
            .map_err(|_| invalid(format!("argument {i}: negative variadic count")))?;
        let end = len
            .checked_mul(T::WIDTH)
            .and_then(|n| n.checked_add(i + 1))
            .filter(|&end| end <= args.len())
            .ok_or_else(|| invalid(format!("argument {i}: variadic count {len} too large")))?;
        *at = end;
        Ok(Variadic {
            args,
            first: i + 1,
            len,
            item: PhantomData,
        })
    }
}

macro_rules! tuple_param {
    ($($p:ident),+) => {
        /// A tuple of items, read in order (the items of a [`Variadic`]).
        impl<$($p: VariadicItem),+> NativeParam for ($($p,)+) {
            type Out<'a> = ($($p::Out<'a>,)+);
            fn cconv(out: &mut String) {
                $($p::cconv(out);)+
            }
            fn read<'a>(args: &'a [Value], at: &mut usize) -> Result<Self::Out<'a>, NativeError> {
                Ok(($($p::read(args, at)?,)+))
            }
        }

        impl<$($p: VariadicItem),+> VariadicItem for ($($p,)+) {
            const WIDTH: usize = 0 $(+ $p::WIDTH)+;
        }
    };
}

tuple_param!(A);
tuple_param!(A, B);
tuple_param!(A, B, C);
tuple_param!(A, B, C, D);
tuple_param!(A, B, C, D, E);
tuple_param!(A, B, C, D, E, F);

/// One result of a typed native function.
pub trait NativeResult {
    /// Appends its calling-convention item.
    fn cconv(out: &mut String);
    /// The VM value.
    fn into_value(self) -> Value;
}

/// A reference result, never null.
impl NativeResult for Ref {
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn into_value(self) -> Value {
        Value::Ref(Some(self))
    }
}

/// A reference result, or null.
impl NativeResult for Option<Ref> {
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn into_value(self) -> Value {
        Value::Ref(self)
    }
}

/// A new object: a reference to it is the result.
impl<T: RefObjectType> NativeResult for T {
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn into_value(self) -> Value {
        Value::Ref(Some(Ref::Object(Arc::new(self))))
    }
}

/// A new object, or null.
impl<T: RefObjectType> NativeResult for Option<T> {
    fn cconv(out: &mut String) {
        out.push('r');
    }
    fn into_value(self) -> Value {
        Value::Ref(self.map(|object| Ref::Object(Arc::new(object))))
    }
}

/// The results of a typed native function: `()`, one [`NativeResult`] or a tuple of them.
pub trait NativeResults {
    /// Appends its calling-convention items (`v` for none).
    fn cconv(out: &mut String);
    /// The VM values.
    fn into_values(self) -> Vec<Value>;
    /// Appends the VM values to `out`.
    fn push_values(self, out: &mut Vec<Value>)
    where
        Self: Sized,
    {
        out.extend(self.into_values());
    }
}

impl NativeResults for () {
    fn cconv(out: &mut String) {
        out.push('v');
    }
    fn into_values(self) -> Vec<Value> {
        Vec::new()
    }
    fn push_values(self, _: &mut Vec<Value>) {}
}

impl<T: NativeResult> NativeResults for T {
    fn cconv(out: &mut String) {
        T::cconv(out);
    }
    fn into_values(self) -> Vec<Value> {
        vec![self.into_value()]
    }
    fn push_values(self, out: &mut Vec<Value>) {
        out.push(self.into_value());
    }
}

macro_rules! tuple_results {
    ($($r:ident),+) => {
        impl<$($r: NativeResult),+> NativeResults for ($($r,)+) {
            fn cconv(out: &mut String) {
                $($r::cconv(out);)+
            }
            #[allow(non_snake_case)]
            fn into_values(self) -> Vec<Value> {
                let ($($r,)+) = self;
                vec![$($r.into_value()),+]
            }
            #[allow(non_snake_case)]
            fn push_values(self, out: &mut Vec<Value>) {
                let ($($r,)+) = self;
                $(out.push($r.into_value());)+
            }
        }
    };
}

tuple_results!(A, B);
tuple_results!(A, B, C);
tuple_results!(A, B, C, D);

/// A Rust function usable as a typed native function of a module with state `S`. `Marker` is
/// `fn(P1, …, Pn) -> R` for its parameter and result types; it is implemented for closures
/// and functions `Fn(&S, P1, …, Pn) -> Result<R, NativeError>` whose parameters are
/// [`NativeParam`]s and whose result is [`NativeResults`]. A closure writes the type of every
/// parameter, the state's included (`|state: &S, buffer: &HalBuffer, size: i64|`): a
/// parameter written with its type takes a borrow of any lifetime, which is what lets the
/// function borrow its arguments instead of cloning them.
pub trait NativeFn<S, Marker>: Send + Sync + 'static {
    /// The calling convention the signature implies (`0rI_r`).
    fn cconv() -> String;
    /// Reads the arguments, calls the function and appends its results, flattened, to
    /// `results`.
    fn invoke_into(
        &self,
        state: &S,
        args: &[Value],
        results: &mut Vec<Value>,
    ) -> Result<(), NativeError>;
    /// Reads the arguments, calls the function and flattens its results.
    fn invoke(&self, state: &S, args: &[Value]) -> Result<Vec<Value>, NativeError> {
        let mut results = Vec::new();
        self.invoke_into(state, args, &mut results)?;
        Ok(results)
    }
}

macro_rules! native_fn {
    ($($p:ident),*) => {
        impl<S, F, R, $($p),*> NativeFn<S, fn($($p),*) -> R> for F
        where
            F: Fn(&S, $($p),*) -> Result<R, NativeError>
                + for<'a> Fn(&S, $($p::Out<'a>),*) -> Result<R, NativeError>
                + Send
                + Sync
                + 'static,
            R: NativeResults,
            $($p: NativeParam,)*
        {
            fn cconv() -> String {
                let mut text = String::from("0");
                let before = text.len();
                $($p::cconv(&mut text);)*
                if text.len() == before {
                    text.push('v');
                }
                text.push('_');
                R::cconv(&mut text);
                text
            }

            #[allow(non_snake_case, unused_mut, unused_variables)]
            fn invoke_into(
                &self,
                state: &S,
                args: &[Value],
                out: &mut Vec<Value>,
            ) -> Result<(), NativeError> {
                let mut at = 0;
                $(let $p = $p::read(args, &mut at)?;)*
                let results: R = (self)(state, $($p),*)?;
                results.push_values(out);
                Ok(())
            }
        }
    };
}

native_fn!();
native_fn!(P1);
native_fn!(P1, P2);
native_fn!(P1, P2, P3);
native_fn!(P1, P2, P3, P4);
native_fn!(P1, P2, P3, P4, P5);
native_fn!(P1, P2, P3, P4, P5, P6);
native_fn!(P1, P2, P3, P4, P5, P6, P7);
native_fn!(P1, P2, P3, P4, P5, P6, P7, P8);
native_fn!(P1, P2, P3, P4, P5, P6, P7, P8, P9);
native_fn!(P1, P2, P3, P4, P5, P6, P7, P8, P9, P10);
native_fn!(P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11);
native_fn!(P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12);
native_fn!(P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13);

type Entry<S> = Box<dyn Fn(&S, &[Value], &mut Vec<Value>) -> Result<(), NativeError> + Send + Sync>;

/// Builds a [`NativeModule`] from typed Rust functions over a state `S`.
///
/// A typed function declares its calling convention as a string (`0rI_r`, what importers
/// link against) and is a Rust closure or function whose parameter and result types imply
/// one: `i32` is `i`, `i64` is `I`, `f32` is `f`, `f64` is `F`, a reference (`&T` for a
/// [`RefObjectType`], `Option<&T>`, [`&Ref`](Ref), `&Arc<VmBuffer>`, [`Text`]) is `r`, and a
/// [`Variadic`] of items is a variadic group `C…D`; results are `()` (`v`), one of those scalars,
/// a [`Ref`], an object (a [`RefObjectType`] value, moved into a new reference) or a tuple.
/// The two are compared once, when the module is registered in a context
/// ([`Context::register_native`](super::Context::register_native) refuses a module whose
/// declared conventions differ from what its functions' types imply, naming the function and
/// both conventions), so no call reads an argument its function does not declare. Arguments
/// are then read by the function's own types, in order.
///
/// ```
/// use std::sync::Arc;
/// use pactum_iree::vm::{Context, Limits, NativeError, NativeModuleBuilder, Variadic, Value};
///
/// let module = NativeModuleBuilder::new("math", 0)
///     .function("scale", "0iI_I", |factor: &i64, x: i32, y: i64| -> Result<i64, NativeError> {
///         Ok(factor * (i64::from(x) + y))
///     })
///     .function("sum", "0CID_I", |_: &i64, values: Variadic<'_, i64>| {
///         values.iter().sum::<Result<i64, NativeError>>()
///     })
///     .build(10);
/// let mut context = Context::new(Limits::default());
/// context.register_native(Arc::new(module))?;
/// assert_eq!(context.call("math.scale", &[Value::I32(2), Value::I64(3)])?, [Value::I64(50)]);
/// # Ok::<(), pactum_iree::vm::VmError>(())
/// ```
pub struct NativeModuleBuilder<S> {
    name: String,
    version: u32,
    ref_types: Vec<String>,
    functions: Vec<NativeFunction>,
    entries: Vec<Entry<S>>,
    mismatches: Vec<SignatureMismatch>,
}

impl<S> fmt::Debug for NativeModuleBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeModuleBuilder")
            .field("name", &self.name)
            .field("functions", &self.functions)
            .finish_non_exhaustive()
    }
}

impl<S: Send + Sync + 'static> NativeModuleBuilder<S> {
    /// A module named `name` (importers name its functions `name.function`) of `version`.
    pub fn new(name: impl Into<String>, version: u32) -> Self {
        NativeModuleBuilder {
            name: name.into(),
            version,
            ref_types: Vec::new(),
            functions: Vec::new(),
            entries: Vec::new(),
            mismatches: Vec::new(),
        }
    }

    /// Adds reference type names (without `!`) the module provides.
    pub fn ref_types<I: IntoIterator<Item = T>, T: Into<String>>(mut self, names: I) -> Self {
        self.ref_types.extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds function `name` with calling convention `cconv`, implemented by `function`. The
    /// convention its types imply is computed now and compared with `cconv` when the module
    /// is registered ([`BuiltNativeModule::check_signatures`]).
    pub fn function<M: 'static, F: NativeFn<S, M>>(
        mut self,
        name: impl Into<Cow<'static, str>>,
        cconv: impl Into<Cow<'static, str>>,
        function: F,
    ) -> Self {
        let declared = NativeFunction::new(name, cconv);
        let implied = F::cconv();
        if implied != declared.cconv {
            self.mismatches.push(SignatureMismatch {
                function: format!("{}.{}", self.name, declared.name),
                declared: declared.cconv.to_string(),
                implied,
            });
        }
        self.functions.push(declared);
        self.entries.push(Box::new(move |state, args, results| {
            function.invoke_into(state, args, results)
        }));
        self
    }

    /// The module, its functions running with `state`.
    pub fn build(self, state: S) -> BuiltNativeModule<S> {
        BuiltNativeModule {
            name: self.name,
            version: self.version,
            ref_types: self.ref_types,
            functions: self.functions,
            entries: self.entries,
            mismatches: self.mismatches,
            state,
        }
    }
}

/// A native module made by [`NativeModuleBuilder`]: typed functions over a state `S`.
pub struct BuiltNativeModule<S> {
    name: String,
    version: u32,
    ref_types: Vec<String>,
    functions: Vec<NativeFunction>,
    entries: Vec<Entry<S>>,
    mismatches: Vec<SignatureMismatch>,
    state: S,
}

/// Implements [`NativeModule`] for a type whose module is the [`BuiltNativeModule`] in its field
/// `$field`: every method answers what the built module answers. `check_signatures` is
/// forwarded too, so wrapping a built module never drops its signature check; a module's
/// reference types are the ones its builder declared ([`NativeModuleBuilder::ref_types`]).
/// Its users (`hal`, `check`, `io_parameters`) all come with the `hal` feature.
#[cfg(feature = "hal")]
macro_rules! native_module_is_built {
    ($module:ty, $field:ident) => {
        impl $crate::vm::NativeModule for $module {
            fn name(&self) -> &str {
                $crate::vm::NativeModule::name(&self.$field)
            }

            fn version(&self) -> u32 {
                $crate::vm::NativeModule::version(&self.$field)
            }

            fn functions(&self) -> &[$crate::vm::NativeFunction] {
                $crate::vm::NativeModule::functions(&self.$field)
            }

            fn ref_types(&self) -> Vec<String> {
                $crate::vm::NativeModule::ref_types(&self.$field)
            }

            fn check_signatures(&self) -> Result<(), $crate::vm::SignatureMismatch> {
                $crate::vm::NativeModule::check_signatures(&self.$field)
            }

            fn conventions_follow_types(&self) -> bool {
                $crate::vm::NativeModule::conventions_follow_types(&self.$field)
            }

            fn call(
                &self,
                index: usize,
                args: &[$crate::vm::Value],
            ) -> Result<Vec<$crate::vm::Value>, $crate::vm::NativeError> {
                $crate::vm::NativeModule::call(&self.$field, index, args)
            }

            fn call_into(
                &self,
                index: usize,
                args: &[$crate::vm::Value],
                results: &mut Vec<$crate::vm::Value>,
            ) -> Result<(), $crate::vm::NativeError> {
                $crate::vm::NativeModule::call_into(&self.$field, index, args, results)
            }
        }
    };
}
#[cfg(feature = "hal")]
pub(crate) use native_module_is_built;

impl<S> fmt::Debug for BuiltNativeModule<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltNativeModule")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("functions", &self.functions.len())
            .finish_non_exhaustive()
    }
}

impl<S> BuiltNativeModule<S> {
    /// The state the functions run with.
    pub fn state(&self) -> &S {
        &self.state
    }
}

impl<S: Send + Sync> NativeModule for BuiltNativeModule<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn functions(&self) -> &[NativeFunction] {
        &self.functions
    }

    fn ref_types(&self) -> Vec<String> {
        self.ref_types.clone()
    }

    /// The first function whose declared calling convention is not the one its types imply.
    fn check_signatures(&self) -> Result<(), SignatureMismatch> {
        match self.mismatches.first() {
            Some(mismatch) => Err(mismatch.clone()),
            None => Ok(()),
        }
    }

    /// Every function was added with [`NativeModuleBuilder::function`], which records the
    /// convention its types imply; [`check_signatures`](NativeModule::check_signatures)
    /// compares the declared one with it.
    fn conventions_follow_types(&self) -> bool {
        true
    }

    fn call(&self, index: usize, args: &[Value]) -> Result<Vec<Value>, NativeError> {
        let mut results = Vec::new();
        self.call_into(index, args, &mut results)?;
        Ok(results)
    }

    fn call_into(
        &self,
        index: usize,
        args: &[Value],
        results: &mut Vec<Value>,
    ) -> Result<(), NativeError> {
        let entry = self.entries.get(index).ok_or_else(|| {
            StatusError::new(
                crate::status::StatusCode::NotFound,
                format!(
                    "module `{}` has no function {index} ({} functions)",
                    self.name,
                    self.entries.len()
                ),
            )
        })?;
        entry(&self.state, args, results)
    }
}
