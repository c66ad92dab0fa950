//! Calling a lowered MLIR function: where each value goes at the C level, the two ways to make
//! the call (registers on x86-64 System V, or libffi with a cached call interface), and turning
//! what comes back into pactum values.

use core::ffi::c_void;

use libffi::middle::{Cif, Type};

use super::types::{FunctionType, MlirType, ScalarType, Signedness};
use pactum::error::{Error, ErrorKind, Result};

/// Which symbol is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `_mlir_ciface_<name>`: memrefs by pointer to their descriptor, aggregate results through
    /// a first pointer argument.
    CInterface,
    /// `<name>`: every descriptor field as its own argument. Only used when the result is
    /// nothing or one scalar (other results come back in registers C cannot describe).
    Expanded,
}

/// How a call is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallPath {
    /// Straight into registers by one shared trampoline (x86-64 System V; every argument fits
    /// in the six integer and eight float argument registers).
    Registers,
    /// Through libffi, with the call interface built once per function.
    Libffi,
}

/// The register class of one C-level parameter or return value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Integer or pointer.
    Integer,
    /// Floating point (`half`/`bfloat` ride in a `float` slot).
    Float,
}

/// Where one C-level parameter comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source {
    /// The result struct's address.
    ResultPointer,
    /// Scalar argument `index`.
    Scalar(usize),
    /// Pointer to the descriptor of memref argument `index`.
    Descriptor(usize),
    /// Word `word` of argument `index`'s descriptor (expanded form).
    DescriptorWord(usize, usize),
}

/// One C-level parameter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Param {
    pub source: Source,
    pub class: Class,
    /// The register (within its class) on the register path.
    pub register: usize,
    pub ffi: FfiKind,
}

/// The libffi type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FfiKind {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    F32,
    F64,
    Pointer,
}

impl FfiKind {
    fn of_scalar(scalar: ScalarType) -> FfiKind {
        match scalar {
            ScalarType::Integer { width, signedness } => {
                let unsigned = signedness == Signedness::Unsigned || width == 1;
                match (scalar.byte_size(), unsigned) {
                    (1, false) => FfiKind::I8,
                    (1, true) => FfiKind::U8,
                    (2, false) => FfiKind::I16,
                    (2, true) => FfiKind::U16,
                    (4, false) => FfiKind::I32,
                    (4, true) => FfiKind::U32,
                    _ => FfiKind::I64,
                }
            }
            ScalarType::Index => FfiKind::I64,
            // libffi has no 16-bit float: a `float` slot carries the bits in its low half,
            // which is where `half`/`bfloat` travel in xmm registers.
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 => FfiKind::F32,
            ScalarType::F64 => FfiKind::F64,
        }
    }

    fn ffi_type(self) -> Type {
        match self {
            FfiKind::I8 => Type::i8(),
            FfiKind::I16 => Type::i16(),
            FfiKind::I32 => Type::i32(),
            FfiKind::I64 => Type::i64(),
            FfiKind::U8 => Type::u8(),
            FfiKind::U16 => Type::u16(),
            FfiKind::U32 => Type::u32(),
            FfiKind::F32 => Type::f32(),
            FfiKind::F64 => Type::f64(),
            FfiKind::Pointer => Type::pointer(),
        }
    }
}

/// How results come back.
#[derive(Clone, Debug)]
pub(crate) enum ResultPlan {
    /// No results.
    Void,
    /// One scalar, returned in `rax` or `xmm0`.
    Direct(ScalarType),
    /// A C struct the callee writes through the first pointer argument.
    Struct {
        /// Each result's byte offset in the struct.
        offsets: Vec<usize>,
        /// The struct's size in bytes.
        size: usize,
    },
}

impl ResultPlan {
    /// The register a direct result comes back in: `xmm0` for floats, `rax` otherwise.
    #[inline]
    pub(crate) fn direct_bits(&self, returned: crate::registers::RegisterResult) -> u64 {
        match self {
            ResultPlan::Direct(scalar) if scalar.is_float() => returned.float,
            _ => returned.integer,
        }
    }
}

/// Result-struct words as the bytes the callee wrote.
#[inline]
pub(crate) fn words_as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: u64s are plain bytes; the slice covers exactly their memory.
    unsafe { core::slice::from_raw_parts(words.as_ptr().cast::<u8>(), 8 * words.len()) }
}

/// Size and alignment of a value in a C struct.
fn c_layout(ty: &MlirType) -> (usize, usize) {
    match ty {
        MlirType::Scalar(scalar) => (scalar.byte_size(), scalar.byte_size()),
        MlirType::MemRef(memref) => (8 * super::descriptor::descriptor_words(memref.rank()), 8),
        MlirType::UnrankedMemRef(_) => (16, 8),
    }
}

/// What one argument needs at call time, worked out once.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ArgPlan {
    /// A scalar.
    Scalar(ScalarType),
    /// A ranked memref whose descriptor starts at word `words_at`.
    Ranked {
        /// The DLPack dtype its tensor must have.
        dtype: pactum_sys::dlpack::DLDataType,
        /// Element size in bytes.
        element: usize,
        /// The rank.
        rank: usize,
        /// First descriptor word.
        words_at: usize,
        /// Identity layout and no static extents: a compact tensor of the right dtype and rank
        /// fits without further checks (the fast path).
        compact_any_shape: bool,
    },
    /// An unranked memref.
    Unranked,
}

/// One argument of the fast path: where it goes and what it must be (an implementation
/// detail of the typed call).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub enum FastArg {
    /// A scalar in integer register `register`.
    Integer { register: u8, scalar: ScalarType },
    /// A scalar in float register `register`.
    Float { register: u8, scalar: ScalarType },
    /// A compact tensor of `dtype` and `rank` whose descriptor goes at word `words_at` and
    /// whose address goes in integer register `register`.
    Compact {
        register: u8,
        dtype: pactum_sys::dlpack::DLDataType,
        element: u8,
        rank: u8,
        words_at: u8,
    },
}

/// The fast path: the C interface form on the register path, every memref argument an
/// identity-layout memref with dynamic extents, and results that are scalars. A call that
/// meets it (compact CPU tensors of the right dtype and rank, numbers that fit) needs no
/// further checks; anything else takes the general path, which explains what is wrong.
pub(crate) struct FastPlan {
    pub args: Vec<FastArg>,
    /// Descriptor words (at most [`FastPlan::MAX_WORDS`]).
    pub words: usize,
    /// Scalar results read from the result struct: (offset, type); empty for a direct result.
    pub struct_fields: Vec<(usize, ScalarType)>,
}

impl FastPlan {
    /// Descriptor words the fast path keeps on its stack.
    pub const MAX_WORDS: usize = 32;
    /// Result struct words the fast path keeps on its stack.
    pub const MAX_RESULT_WORDS: usize = 8;
}

/// Everything about a call that depends only on the signature, computed once.
pub(crate) struct CallPlan {
    /// The fast path, where the signature allows it.
    pub fast: Option<FastPlan>,
    pub entry: Entry,
    /// Per argument.
    pub args: Vec<ArgPlan>,
    /// One past the last unranked argument (0 when there is none).
    pub unranked_args_end: usize,
    /// Index of the first argument's parameter when each argument is exactly one C parameter
    /// (the C interface form), else `None`.
    pub one_param_per_arg: Option<usize>,
    pub params: Vec<Param>,
    pub result: ResultPlan,
    /// Descriptor words needed by the ranked memref arguments.
    pub ranked_words: usize,
    /// Whether the register path can make this call.
    pub fits_registers: bool,
    /// The libffi call interface, built on first use.
    pub cif: std::sync::OnceLock<SharedCif>,
}

/// A libffi call interface shared by every thread calling the function.
pub(crate) struct SharedCif(pub Cif);

// SAFETY: a prepared `ffi_cif` is only read by `ffi_call`; libffi documents concurrent calls
// through one cif as safe. The raw pointers inside point at type data the `Cif` owns.
unsafe impl Send for SharedCif {}
// SAFETY: as above: no call mutates the cif.
unsafe impl Sync for SharedCif {}

impl CallPlan {
    pub(crate) fn new(ty: &FunctionType, entry: Entry) -> Result<CallPlan> {
        for (position, t) in ty.args.iter().chain(&ty.results).enumerate() {
            let element = match t {
                MlirType::MemRef(m) => Some(m.element),
                MlirType::UnrankedMemRef(e) => Some(*e),
                MlirType::Scalar(_) => None,
            };
            if let Some(element) = element
                && element.data_type().is_none()
            {
                let (what, index) = if position < ty.args.len() {
                    ("argument", position)
                } else {
                    ("result", position - ty.args.len())
                };
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "{what} {index}: {t} has elements of type {element}, which no DLPack \
                         tensor can hold (use i1, i8, i16, i32, i64, index or a float type)"
                    ),
                ));
            }
        }
        let result = match ty.results.as_slice() {
            [] => ResultPlan::Void,
            [MlirType::Scalar(scalar)] => ResultPlan::Direct(*scalar),
            results => {
                if entry == Entry::Expanded {
                    return Err(Error::new(
                        ErrorKind::VALUE_ERROR,
                        "the expanded form cannot be called for this result type",
                    ));
                }
                let mut offsets = Vec::with_capacity(results.len());
                let (mut size, mut align) = (0usize, 1usize);
                for result in results {
                    let (field_size, field_align) = c_layout(result);
                    size = size.next_multiple_of(field_align);
                    offsets.push(size);
                    size += field_size;
                    align = align.max(field_align);
                }
                ResultPlan::Struct {
                    offsets,
                    size: size.next_multiple_of(align),
                }
            }
        };
        let mut params = Vec::new();
        let mut counts = [0usize; 2];
        let mut push = |source: Source, class: Class, ffi: FfiKind| {
            let slot = &mut counts[class as usize];
            params.push(Param {
                source,
                class,
                register: *slot,
                ffi,
            });
            *slot += 1;
        };
        if let ResultPlan::Struct { .. } = result {
            push(Source::ResultPointer, Class::Integer, FfiKind::Pointer);
        }
        let mut ranked_words = 0usize;
        let mut word_start = Vec::with_capacity(ty.args.len());
        for (index, arg) in ty.args.iter().enumerate() {
            match arg {
                MlirType::Scalar(scalar) => {
                    word_start.push(usize::MAX);
                    let class = if scalar.is_float() {
                        Class::Float
                    } else {
                        Class::Integer
                    };
                    push(Source::Scalar(index), class, FfiKind::of_scalar(*scalar));
                }
                MlirType::MemRef(memref) => {
                    word_start.push(ranked_words);
                    let words = super::descriptor::descriptor_words(memref.rank());
                    ranked_words += words;
                    match entry {
                        Entry::CInterface => {
                            push(Source::Descriptor(index), Class::Integer, FfiKind::Pointer)
                        }
                        Entry::Expanded => {
                            for word in 0..words {
                                let ffi = if word < 2 {
                                    FfiKind::Pointer
                                } else {
                                    FfiKind::I64
                                };
                                push(Source::DescriptorWord(index, word), Class::Integer, ffi);
                            }
                        }
                    }
                }
                MlirType::UnrankedMemRef(_) => {
                    word_start.push(usize::MAX);
                    match entry {
                        Entry::CInterface => {
                            push(Source::Descriptor(index), Class::Integer, FfiKind::Pointer)
                        }
                        Entry::Expanded => {
                            push(
                                Source::DescriptorWord(index, 0),
                                Class::Integer,
                                FfiKind::I64,
                            );
                            push(
                                Source::DescriptorWord(index, 1),
                                Class::Integer,
                                FfiKind::Pointer,
                            );
                        }
                    }
                }
            }
        }
        let args = ty
            .args
            .iter()
            .zip(&word_start)
            .map(|(arg, &words_at)| match arg {
                MlirType::Scalar(scalar) => ArgPlan::Scalar(*scalar),
                MlirType::MemRef(memref) => {
                    let dtype = memref.element.data_type().expect("checked above");
                    ArgPlan::Ranked {
                        dtype: dtype.into(),
                        element: memref.element.byte_size(),
                        rank: memref.rank(),
                        words_at,
                        compact_any_shape: memref.layout == super::types::Layout::Identity
                            && memref
                                .shape
                                .iter()
                                .all(|d| *d == super::types::Dim::Dynamic),
                    }
                }
                MlirType::UnrankedMemRef(_) => ArgPlan::Unranked,
            })
            .collect();
        let unranked_args_end = ty
            .args
            .iter()
            .rposition(|a| matches!(a, MlirType::UnrankedMemRef(_)))
            .map_or(0, |last| last + 1);
        let one_param_per_arg = (entry == Entry::CInterface)
            .then_some(usize::from(matches!(result, ResultPlan::Struct { .. })));
        let fits_registers = cfg!(all(target_arch = "x86_64", not(windows)))
            && counts[Class::Integer as usize] <= crate::registers::INTEGER_ARGUMENT_REGISTERS
            && counts[Class::Float as usize] <= crate::registers::FLOAT_ARGUMENT_REGISTERS;
        let fast = Self::fast_plan(ty, entry, &params, &result, fits_registers);
        Ok(CallPlan {
            fast,
            entry,
            args,
            unranked_args_end,
            one_param_per_arg,
            params,
            result,
            ranked_words,
            fits_registers,
            cif: std::sync::OnceLock::new(),
        })
    }

    fn fast_plan(
        ty: &FunctionType,
        entry: Entry,
        params: &[Param],
        result: &ResultPlan,
        fits_registers: bool,
    ) -> Option<FastPlan> {
        if entry != Entry::CInterface || !fits_registers {
            return None;
        }
        let struct_fields = match result {
            ResultPlan::Void | ResultPlan::Direct(_) => Vec::new(),
            ResultPlan::Struct { offsets, size } => {
                if size.div_ceil(8) > FastPlan::MAX_RESULT_WORDS {
                    return None;
                }
                ty.results
                    .iter()
                    .zip(offsets)
                    .map(|(t, &offset)| match t {
                        MlirType::Scalar(scalar) => Some((offset, *scalar)),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?
            }
        };
        let first = usize::from(matches!(result, ResultPlan::Struct { .. }));
        let mut words = 0usize;
        let mut args = Vec::with_capacity(ty.args.len());
        for (index, arg) in ty.args.iter().enumerate() {
            let register = params[first + index].register as u8;
            args.push(match arg {
                MlirType::Scalar(scalar) if scalar.is_float() => FastArg::Float {
                    register,
                    scalar: *scalar,
                },
                MlirType::Scalar(scalar) => FastArg::Integer {
                    register,
                    scalar: *scalar,
                },
                MlirType::MemRef(memref)
                    if memref.layout == super::types::Layout::Identity
                        && memref
                            .shape
                            .iter()
                            .all(|d| *d == super::types::Dim::Dynamic) =>
                {
                    let words_at = words;
                    words += super::descriptor::descriptor_words(memref.rank());
                    if words > FastPlan::MAX_WORDS {
                        return None;
                    }
                    FastArg::Compact {
                        register,
                        dtype: memref.element.data_type()?.into(),
                        element: memref.element.byte_size() as u8,
                        rank: memref.rank() as u8,
                        words_at: words_at as u8,
                    }
                }
                _ => return None,
            });
        }
        Some(FastPlan {
            args,
            words,
            struct_fields,
        })
    }

    fn cif(&self) -> &Cif {
        &self
            .cif
            .get_or_init(|| {
                let args = self.params.iter().map(|p| p.ffi.ffi_type());
                let result = match self.result {
                    ResultPlan::Void | ResultPlan::Struct { .. } => Type::void(),
                    ResultPlan::Direct(scalar) => FfiKind::of_scalar(scalar).ffi_type(),
                };
                SharedCif(Cif::new(args, result))
            })
            .0
    }

    /// Makes the call with the C-level parameter values in `values` (one per param, in
    /// order; narrow values in the low bits). Returns the raw bits of a direct result.
    ///
    /// # Safety
    /// `function` must be the entry this plan describes, and every pointer in `values` valid
    /// for what the function does with it.
    pub(crate) unsafe fn invoke(
        &self,
        function: unsafe extern "C" fn(),
        values: &[u64],
        path: CallPath,
    ) -> u64 {
        debug_assert_eq!(values.len(), self.params.len());
        #[cfg(all(target_arch = "x86_64", not(windows)))]
        if path == CallPath::Registers && self.fits_registers {
            let mut integers = [0u64; crate::registers::INTEGER_ARGUMENT_REGISTERS];
            let mut floats = [0u64; crate::registers::FLOAT_ARGUMENT_REGISTERS];
            for (param, &value) in self.params.iter().zip(values) {
                match param.class {
                    Class::Integer => integers[param.register] = value,
                    Class::Float => floats[param.register] = value,
                }
            }
            // SAFETY: the plan classified every parameter as the System V ABI does and they
            // all fit in registers; the caller vouches for `function` and the pointers.
            let returned =
                unsafe { crate::registers::call_with_registers(function, &integers, &floats) };
            return self.result.direct_bits(returned);
        }
        let _ = path;
        let cif = self.cif();
        // libffi takes one pointer per argument, to its value.
        let mut inline = [core::ptr::null_mut::<c_void>(); 16];
        let mut heap = Vec::new();
        let pointers: &mut [*mut c_void] = if values.len() <= inline.len() {
            &mut inline[..values.len()]
        } else {
            heap.resize(values.len(), core::ptr::null_mut());
            &mut heap
        };
        for (pointer, value) in pointers.iter_mut().zip(values) {
            *pointer = (value as *const u64).cast_mut().cast();
        }
        // libffi widens small integer results to a full register-sized slot.
        let mut returned = 0u64;
        let result: *mut c_void = match self.result {
            ResultPlan::Direct(_) => (&mut returned as *mut u64).cast(),
            _ => core::ptr::null_mut(),
        };
        // SAFETY: the cif describes `function`'s C signature (built from the same plan); each
        // argument points at a u64 holding the value in its low bytes (little endian), and the
        // result slot is a u64 (or absent for a void function).
        unsafe {
            libffi::raw::ffi_call(
                cif.as_raw_ptr(),
                Some(function),
                result,
                pointers.as_mut_ptr(),
            )
        };
        returned
    }
}

/// A scalar argument's bits, checked against its type. `value` is what the caller passed.
pub(crate) fn scalar_bits(
    index: usize,
    scalar: ScalarType,
    value: &pactum::AnyView<'_>,
) -> Result<u64> {
    let mismatch = |got: String| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!("argument {index}: {scalar} needs {got}"),
        )
    };
    match scalar {
        ScalarType::Integer { width, signedness } => {
            let v: i64 = value
                .get::<i64>()
                .map_err(|_| mismatch(format!("an integer, got {}", value.type_key())))?;
            let fits = match (width, signedness) {
                (64, Signedness::Unsigned) => v >= 0,
                (64, _) => true,
                (w, Signedness::Signed) => {
                    let half = 1i64 << (w - 1);
                    (-half..half).contains(&v)
                }
                (w, Signedness::Unsigned) => (0..1i64 << w).contains(&v),
                // Signless: either reading of the bits is accepted.
                (w, Signedness::Signless) => (-(1i64 << (w - 1))..1i64 << w).contains(&v),
            };
            if !fits {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!("argument {index}: {v} does not fit {scalar}"),
                ));
            }
            // Extend as C does: sign-extend signed values, zero-extend unsigned and i1.
            let bits = if width == 64 {
                v as u64
            } else if signedness == Signedness::Unsigned || width == 1 {
                (v as u64) & ((1u64 << width) - 1)
            } else {
                let shift = 64 - width as u32;
                (((v as u64) << shift) as i64 >> shift) as u64
            };
            Ok(bits)
        }
        ScalarType::Index => value
            .get::<i64>()
            .map(|v| v as u64)
            .map_err(|_| mismatch(format!("an integer, got {}", value.type_key()))),
        _ => {
            let v: f64 = value
                .get::<f64>()
                .map_err(|_| mismatch(format!("a number, got {}", value.type_key())))?;
            Ok(match scalar {
                ScalarType::F16 => u64::from(half::f16::from_f64(v).to_bits()),
                ScalarType::BF16 => u64::from(half::bf16::from_f64(v).to_bits()),
                ScalarType::F32 => u64::from((v as f32).to_bits()),
                _ => v.to_bits(),
            })
        }
    }
}

/// [`scalar_bits`] without the error: `None` when the value does not fit (the general path
/// then reports why).
#[inline]
pub(crate) fn scalar_bits_fast(scalar: ScalarType, value: &pactum::AnyView<'_>) -> Option<u64> {
    use pactum::any::Payload;
    use pactum_sys::tvm_ffi::TVMFFITypeIndex;
    let raw = value.as_raw();
    let type_index = TVMFFITypeIndex(raw.type_index);
    match scalar {
        ScalarType::Index
        | ScalarType::Integer {
            width: 64,
            signedness: Signedness::Signless,
        }
        | ScalarType::Integer {
            width: 64,
            signedness: Signedness::Signed,
        } => matches!(type_index, TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL)
            .then(|| raw.int64() as u64),
        ScalarType::F64 => match type_index {
            TVMFFITypeIndex::FLOAT => Some(raw.float64().to_bits()),
            TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => Some((raw.int64() as f64).to_bits()),
            _ => None,
        },
        ScalarType::F32 => match type_index {
            TVMFFITypeIndex::FLOAT => Some(u64::from((raw.float64() as f32).to_bits())),
            TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL => {
                Some(u64::from((raw.int64() as f32).to_bits()))
            }
            _ => None,
        },
        // Narrow signless/signed integers: in range, sign-extended as C passes them.
        ScalarType::Integer {
            width: width @ (8 | 16 | 32),
            signedness: Signedness::Signless | Signedness::Signed,
        } => {
            if !matches!(type_index, TVMFFITypeIndex::INT | TVMFFITypeIndex::BOOL) {
                return None;
            }
            let v = raw.int64();
            let half = 1i64 << (width - 1);
            (-half..half).contains(&v).then_some(v as u64)
        }
        _ => scalar_bits(0, scalar, value).ok(),
    }
}

/// A scalar result as a pactum value: integers as `int` (`i1` as `bool`; unsigned 64-bit
/// values above `i64::MAX` wrap), floats as `float`.
pub(crate) fn scalar_value(scalar: ScalarType, bits: u64) -> pactum::Any {
    match scalar {
        ScalarType::Integer { width: 1, .. } => pactum::Any::from(bits & 1 != 0),
        ScalarType::Integer { width, signedness } => {
            if width == 64 {
                return pactum::Any::from(bits as i64);
            }
            let shift = 64 - width as u32;
            let value = if signedness == Signedness::Unsigned {
                ((bits << shift) >> shift) as i64
            } else {
                ((bits << shift) as i64) >> shift
            };
            pactum::Any::from(value)
        }
        ScalarType::Index => pactum::Any::from(bits as i64),
        ScalarType::F16 => pactum::Any::from(half::f16::from_bits(bits as u16).to_f64()),
        ScalarType::BF16 => pactum::Any::from(half::bf16::from_bits(bits as u16).to_f64()),
        ScalarType::F32 => pactum::Any::from(f64::from(f32::from_bits(bits as u32))),
        ScalarType::F64 => pactum::Any::from(f64::from_bits(bits)),
    }
}

/// Reads a scalar result field of a result struct.
#[inline]
pub(crate) fn read_scalar_field(scalar: ScalarType, bytes: &[u8]) -> u64 {
    fn read<const N: usize>(bytes: &[u8]) -> [u8; N] {
        bytes[..N].try_into().expect("N bytes")
    }
    match scalar.byte_size() {
        1 => u64::from(bytes[0]),
        2 => u64::from(u16::from_le_bytes(read(bytes))),
        4 => u64::from(u32::from_le_bytes(read(bytes))),
        _ => u64::from_le_bytes(read(bytes)),
    }
}
