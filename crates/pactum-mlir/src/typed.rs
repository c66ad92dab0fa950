//! [`TypedMlirFunction`]: an MLIR function with Rust argument and result types checked once,
//! when it is made, so a call only checks what can change between calls (each tensor's dtype,
//! rank, layout and device) and goes straight into registers: the typed counterpart of
//! [`MlirFunction::call`], as wasmtime's `TypedFunc` is of `Func::call`.
//!
//! ```no_run
//! use pactum_mlir::MlirLibrary;
//! use pactum::Tensor;
//!
//! // SAFETY: our own library, and the declarations below are its functions'.
//! let library = unsafe { MlirLibrary::open("libmodel.so")? };
//! let add_one = library
//!     .function("func.func @add_one(%a: memref<?xf32>, %b: memref<?xf32>)")?
//!     .typed::<(&Tensor, &Tensor), ()>()?;
//! let (x, y) = (Tensor::from_slice(&[1.0f32, 2.0], &[2])?, Tensor::from_slice(&[0.0f32; 2], &[2])?);
//! add_one.call((&x, &y))?;
//!
//! let divmod = library
//!     .function("func.func @divmod(%a: i64, %b: i64) -> (i64, i64)")?
//!     .typed::<(i64, i64), (i64, i64)>()?;
//! assert_eq!(divmod.call((7, 2))?, (3, 1));
//! # Ok::<(), pactum::Error>(())
//! ```

use core::marker::PhantomData;

use super::call::{FastArg, FastPlan};
use super::function::MlirFunction;
use super::types::{MlirType, ScalarType, Signedness};
use pactum::error::{Error, ErrorKind, Result};
use pactum::tensor::Tensor;

/// The traits below are sealed: what they write goes straight into a foreign call, so only
/// the implementations here, which match the C ABI, may exist.
mod sealed {
    pub trait Sealed {}
}

/// Where a call's values go: the argument registers and the descriptor words.
#[doc(hidden)]
pub struct CallFrame<'a> {
    integers: &'a mut [u64; 6],
    floats: &'a mut [u64; 8],
    words: &'a mut [u64],
    words_address: u64,
}

/// A Rust value that can be passed for an MLIR argument.
pub trait MlirArg: sealed::Sealed {
    /// Whether values of this type can be passed for `ty`.
    fn accepts(ty: &MlirType) -> bool;

    /// The Rust type, in errors.
    fn rust_type() -> &'static str;

    /// Writes the value where the plan says; false when a tensor does not fit (the caller then
    /// explains why).
    #[doc(hidden)]
    fn write(&self, slot: &FastArg, frame: &mut CallFrame<'_>) -> bool;

    /// The tensor, for explaining a refusal.
    #[doc(hidden)]
    fn tensor(&self) -> Option<&Tensor> {
        None
    }
}

macro_rules! integer_args {
    ($($ty:ty => $width:literal, $unsigned:literal);* $(;)?) => {$(
        impl sealed::Sealed for $ty {}
        impl MlirArg for $ty {
            fn accepts(ty: &MlirType) -> bool {
                match ty {
                    MlirType::Scalar(ScalarType::Integer { width, signedness }) => {
                        *width == $width
                            && match signedness {
                                Signedness::Signless => true,
                                Signedness::Signed => !$unsigned,
                                Signedness::Unsigned => $unsigned,
                            }
                    }
                    MlirType::Scalar(ScalarType::Index) => $width == 64 && !$unsigned,
                    _ => false,
                }
            }

            fn rust_type() -> &'static str {
                stringify!($ty)
            }

            #[inline(always)]
            fn write(&self, slot: &FastArg, frame: &mut CallFrame<'_>) -> bool {
                if let FastArg::Integer { register, .. } = *slot {
                    // Extended to 64 bits as C does (sign for signed types, zero for unsigned).
                    frame.integers[register as usize] = *self as i64 as u64;
                }
                true
            }
        }
    )*};
}
integer_args!(i8 => 8, false; i16 => 16, false; i32 => 32, false; i64 => 64, false;
    u8 => 8, true; u16 => 16, true; u32 => 32, true; u64 => 64, true);

impl sealed::Sealed for bool {}
impl MlirArg for bool {
    fn accepts(ty: &MlirType) -> bool {
        matches!(ty, MlirType::Scalar(ScalarType::Integer { width: 1, .. }))
    }
    fn rust_type() -> &'static str {
        "bool"
    }
    #[inline(always)]
    fn write(&self, slot: &FastArg, frame: &mut CallFrame<'_>) -> bool {
        if let FastArg::Integer { register, .. } = *slot {
            frame.integers[register as usize] = u64::from(*self);
        }
        true
    }
}

macro_rules! float_args {
    ($($ty:ty => $scalar:ident, |$v:ident| $bits:expr);* $(;)?) => {$(
        impl sealed::Sealed for $ty {}
        impl MlirArg for $ty {
            fn accepts(ty: &MlirType) -> bool {
                *ty == MlirType::Scalar(ScalarType::$scalar)
            }
            fn rust_type() -> &'static str {
                stringify!($ty)
            }
            #[inline(always)]
            fn write(&self, slot: &FastArg, frame: &mut CallFrame<'_>) -> bool {
                if let FastArg::Float { register, .. } = *slot {
                    let $v: &$ty = self;
                    frame.floats[register as usize] = $bits;
                }
                true
            }
        }
    )*};
}
float_args!(
    f32 => F32, |v| u64::from(v.to_bits());
    f64 => F64, |v| v.to_bits();
    half::f16 => F16, |v| u64::from(v.to_bits());
    half::bf16 => BF16, |v| u64::from(v.to_bits());
);

impl sealed::Sealed for &Tensor {}
impl MlirArg for &Tensor {
    fn accepts(ty: &MlirType) -> bool {
        matches!(ty, MlirType::MemRef(_))
    }
    fn rust_type() -> &'static str {
        "&Tensor"
    }
    #[inline(always)]
    fn write(&self, slot: &FastArg, frame: &mut CallFrame<'_>) -> bool {
        let FastArg::Compact {
            register,
            dtype,
            element,
            rank,
            words_at,
        } = *slot
        else {
            return false;
        };
        let (rank, at) = (rank as usize, words_at as usize);
        let descriptor = &mut frame.words[at..at + super::descriptor::descriptor_words(rank)];
        if super::function::fill_compact(
            self.dl_tensor(),
            dtype,
            element as usize,
            rank,
            descriptor,
        ) {
            frame.integers[register as usize] = frame.words_address + 8 * at as u64;
            true
        } else {
            false
        }
    }
    fn tensor(&self) -> Option<&Tensor> {
        Some(self)
    }
}

/// A tuple of [`MlirArg`]s: a function's arguments.
pub trait MlirArgs: sealed::Sealed {
    /// The types, in errors.
    #[doc(hidden)]
    fn rust_types() -> Vec<&'static str>;
    /// Whether each element can be passed for the matching type (same count).
    #[doc(hidden)]
    fn accepts(types: &[MlirType]) -> core::result::Result<(), usize>;
    /// Writes every value; `Err(index)` for a tensor that does not fit.
    #[doc(hidden)]
    fn write(
        &self,
        slots: &[FastArg],
        frame: &mut CallFrame<'_>,
    ) -> core::result::Result<(), usize>;
    /// Argument `index`'s tensor, if it is one.
    #[doc(hidden)]
    fn tensor(&self, index: usize) -> Option<&Tensor>;
}

/// A Rust value an MLIR scalar result converts to.
pub trait MlirResult: sealed::Sealed + Sized {
    /// Whether `ty` converts to this type.
    fn accepts(ty: &MlirType) -> bool;
    /// The Rust type, in errors.
    fn rust_type() -> &'static str;
    /// The value from its bits (narrow values in the low bits).
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Self;
}

macro_rules! scalar_results {
    ($($ty:ty: |$b:ident| $convert:expr);* $(;)?) => {$(
        impl MlirResult for $ty {
            fn accepts(ty: &MlirType) -> bool {
                <$ty as MlirArg>::accepts(ty)
            }
            fn rust_type() -> &'static str {
                stringify!($ty)
            }
            #[inline(always)]
            fn from_bits($b: u64) -> Self {
                $convert
            }
        }
    )*};
}
scalar_results!(
    i8: |b| b as i8; i16: |b| b as i16; i32: |b| b as i32; i64: |b| b as i64;
    u8: |b| b as u8; u16: |b| b as u16; u32: |b| b as u32; u64: |b| b;
    bool: |b| b & 1 != 0;
    f32: |b| f32::from_bits(b as u32); f64: |b| f64::from_bits(b);
    half::f16: |b| half::f16::from_bits(b as u16); half::bf16: |b| half::bf16::from_bits(b as u16);
);

/// What a function returns: `()`, one [`MlirResult`], or a tuple of them.
pub trait MlirResults: Sized {
    /// The types, in errors.
    #[doc(hidden)]
    fn rust_types() -> Vec<&'static str>;
    /// Whether the results convert (same count).
    #[doc(hidden)]
    fn accepts(types: &[MlirType]) -> bool;
    /// The values from a direct result's bits or the result struct.
    #[doc(hidden)]
    fn read(direct: u64, fields: &[(usize, ScalarType)], bytes: &[u8]) -> Self;
}

impl MlirResults for () {
    fn rust_types() -> Vec<&'static str> {
        Vec::new()
    }
    fn accepts(types: &[MlirType]) -> bool {
        types.is_empty()
    }
    #[inline(always)]
    fn read(_: u64, _: &[(usize, ScalarType)], _: &[u8]) -> Self {}
}

impl<T: MlirResult> MlirResults for T {
    fn rust_types() -> Vec<&'static str> {
        vec![T::rust_type()]
    }
    fn accepts(types: &[MlirType]) -> bool {
        matches!(types, [ty] if T::accepts(ty))
    }
    #[inline(always)]
    fn read(direct: u64, _: &[(usize, ScalarType)], _: &[u8]) -> Self {
        T::from_bits(direct)
    }
}

macro_rules! tuples {
    ($($len:literal: ($($name:ident $index:tt),*);)*) => {$(
        impl<$($name: MlirArg),*> sealed::Sealed for ($($name,)*) {}
        impl<$($name: MlirArg),*> MlirArgs for ($($name,)*) {
            fn rust_types() -> Vec<&'static str> {
                vec![$($name::rust_type()),*]
            }
            #[allow(unused_variables)]
            fn accepts(types: &[MlirType]) -> core::result::Result<(), usize> {
                if types.len() != $len {
                    return Err(usize::MAX);
                }
                $(if !$name::accepts(&types[$index]) { return Err($index); })*
                Ok(())
            }
            #[inline(always)]
            #[allow(unused_variables)]
            fn write(&self, slots: &[FastArg], frame: &mut CallFrame<'_>) -> core::result::Result<(), usize> {
                $(if !self.$index.write(&slots[$index], frame) {
                    return Err($index as usize);
                })*
                Ok(())
            }
            #[allow(unused_variables)]
            fn tensor(&self, index: usize) -> Option<&Tensor> {
                match index {
                    $($index => self.$index.tensor(),)*
                    _ => None,
                }
            }
        }
    )*};
}
tuples! {
    0: ();
    1: (A 0);
    2: (A 0, B 1);
    3: (A 0, B 1, C 2);
    4: (A 0, B 1, C 2, D 3);
    5: (A 0, B 1, C 2, D 3, E 4);
    6: (A 0, B 1, C 2, D 3, E 4, F 5);
    7: (A 0, B 1, C 2, D 3, E 4, F 5, G 6);
    8: (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
}

macro_rules! result_tuples {
    ($($len:literal: ($($name:ident $index:tt),*);)*) => {$(
        impl<$($name: MlirResult),*> MlirResults for ($($name,)*) {
            fn rust_types() -> Vec<&'static str> {
                vec![$($name::rust_type()),*]
            }
            fn accepts(types: &[MlirType]) -> bool {
                types.len() == $len $(&& $name::accepts(&types[$index]))*
            }
            #[inline(always)]
            fn read(_: u64, fields: &[(usize, ScalarType)], bytes: &[u8]) -> Self {
                ($($name::from_bits(super::call::read_scalar_field(fields[$index].1, &bytes[fields[$index].0..])),)*)
            }
        }
    )*};
}
result_tuples! {
    2: (A 0, B 1);
    3: (A 0, B 1, C 2);
    4: (A 0, B 1, C 2, D 3);
    5: (A 0, B 1, C 2, D 3, E 4);
    6: (A 0, B 1, C 2, D 3, E 4, F 5);
}

/// An [`MlirFunction`] with Rust argument and result types (see the module docs).
pub struct TypedMlirFunction<Args, Rets> {
    function: MlirFunction,
    _types: PhantomData<fn(Args) -> Rets>,
}

impl<Args, Rets> Clone for TypedMlirFunction<Args, Rets> {
    fn clone(&self) -> Self {
        TypedMlirFunction {
            function: self.function.clone(),
            _types: PhantomData,
        }
    }
}

impl MlirFunction {
    /// This function with Rust argument and result types, checked against its MLIR signature
    /// now. Memref arguments are `&Tensor` and must have identity layouts and dynamic extents
    /// (others need [`MlirFunction::call`]'s checks); results are scalars. Needs the register
    /// path (x86-64 System V).
    pub fn typed<Args: MlirArgs, Rets: MlirResults>(
        &self,
    ) -> Result<TypedMlirFunction<Args, Rets>> {
        let signature = self.signature();
        let mismatch = |what: String| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "@{} {signature} cannot be called as ({}) -> ({}): {what}",
                    self.name(),
                    Args::rust_types().join(", "),
                    Rets::rust_types().join(", ")
                ),
            )
        };
        match Args::accepts(&signature.args) {
            Ok(()) => {}
            Err(usize::MAX) => {
                return Err(mismatch(format!(
                    "it takes {} arguments",
                    signature.args.len()
                )));
            }
            Err(index) => {
                return Err(mismatch(format!(
                    "argument {index} is {}, not {}",
                    signature.args[index],
                    Args::rust_types()[index]
                )));
            }
        }
        if !Rets::accepts(&signature.results) {
            return Err(mismatch("the results differ".to_owned()));
        }
        if self.fast_plan().is_none() || self.call_path() != super::call::CallPath::Registers {
            return Err(mismatch(
                "typed calls take memrefs with identity layouts and dynamic extents, and scalar \
                 results, on x86-64 System V; use MlirFunction::call"
                    .to_owned(),
            ));
        }
        Ok(TypedMlirFunction {
            function: self.clone(),
            _types: PhantomData,
        })
    }
}

impl<Args: MlirArgs, Rets: MlirResults> TypedMlirFunction<Args, Rets> {
    /// The untyped function.
    pub fn function(&self) -> &MlirFunction {
        &self.function
    }

    /// Calls the function. Tensors are checked (CPU, dtype, rank, compact layout); a refusal
    /// is the same error [`MlirFunction::call`] gives.
    #[inline]
    pub fn call(&self, args: Args) -> Result<Rets> {
        let fast = self.function.fast_plan().expect("checked by typed()");
        let mut integers = [0u64; 6];
        let mut floats = [0u64; 8];
        // Only the descriptor words this signature uses are initialised.
        let mut word_storage = [core::mem::MaybeUninit::<u64>::uninit(); FastPlan::MAX_WORDS];
        let mut no_heap = Vec::new();
        let words = super::function::scratch(&mut word_storage, &mut no_heap, fast.words);
        let words_address = words.as_mut_ptr().expose_provenance() as u64;
        let mut result_words = [0u64; FastPlan::MAX_RESULT_WORDS];
        if !fast.struct_fields.is_empty() {
            integers[0] = result_words.as_mut_ptr().expose_provenance() as u64;
        }
        let mut frame = CallFrame {
            integers: &mut integers,
            floats: &mut floats,
            words,
            words_address,
        };
        if let Err(index) = args.write(&fast.args, &mut frame) {
            return Err(self.function.explain_refusal(index, args.tensor(index)));
        }
        let returned = self.function.call_registers(&integers, &floats);
        let direct = self.function.plan_result().direct_bits(returned);
        Ok(Rets::read(
            direct,
            &fast.struct_fields,
            super::call::words_as_bytes(&result_words),
        ))
    }
}
