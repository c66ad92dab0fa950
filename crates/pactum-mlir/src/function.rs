//! [`MlirLibrary`] (a loaded shared library built from MLIR) and [`MlirFunction`] (one of its
//! functions with a checked signature, callable with pactum values).

use core::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pactum_sys::dlpack::DLTensor;
use pactum_sys::tvm_ffi::TVMFFITypeIndex;

use super::call::{
    ArgPlan, CallPath, CallPlan, Entry, FastArg, FastPlan, ResultPlan, Source, read_scalar_field,
    scalar_bits, scalar_bits_fast, scalar_value, words_as_bytes,
};
use super::descriptor::{
    Fit, LayoutMismatch, ReturnedMemRef, check_tensor_basics, compact_copy, descriptor_words,
    fill_ranked, fill_unranked_target,
};
use super::types::{FunctionType, MlirType, ScalarType};
use pactum::any::{Any, AnyView};
use pactum::containers::Array;
use pactum::dtype::Device;
use pactum::error::{Error, ErrorKind, Result};
use pactum::function::Function;
use pactum::tensor::Tensor;
use pactum::tensor_view::dl_tensor_of;

/// A shared library compiled from MLIR, kept loaded while any of its functions or returned
/// tensors that point into it live.
#[derive(Clone)]
pub struct MlirLibrary {
    inner: Arc<LoadedLibrary>,
}

struct LoadedLibrary {
    library: libloading::os::unix::Library,
    path: PathBuf,
}

impl MlirLibrary {
    /// Loads the library (`dlopen` with `RTLD_NOW`, so a missing dependency such as
    /// `memrefCopy` from `libmlir_c_runner_utils` is reported here, not mid-call).
    ///
    /// # Safety
    /// The library's code runs in this process, and nothing in a shared library says what its
    /// functions take: every declaration later given to [`MlirLibrary::function`] and friends
    /// must be the one the function was compiled from. pactum checks every value against the
    /// declaration, but cannot check the declaration against the machine code.
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<MlirLibrary> {
        let path = path.as_ref();
        // A bare file name would make dlopen search the library path instead of the file.
        let loadable = if path.components().count() == 1 {
            Path::new(".").join(path)
        } else {
            path.to_path_buf()
        };
        // A truncated library would crash the process inside dlopen (SIGBUS).
        if let Some(detail) = pactum::module::truncated_library(&loadable) {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("cannot load {}: {detail}", path.display()),
            ));
        }
        // SAFETY: loading runs the library's initialisers; the caller vouches for the file
        // (this function's contract).
        let library = unsafe {
            libloading::os::unix::Library::open(Some(&loadable), libc::RTLD_NOW | libc::RTLD_LOCAL)
        }
        .map_err(|e| {
            Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!("cannot load {}: {e}", path.display()),
            )
        })?;
        Ok(MlirLibrary {
            inner: Arc::new(LoadedLibrary {
                library,
                path: path.to_path_buf(),
            }),
        })
    }

    /// The path the library was loaded from.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The function a `func.func` declaration names, with that signature
    /// (e.g. `func.func @add_one(%a: memref<?xf32>, %b: memref<?xf32>)`).
    pub fn function(&self, declaration: &str) -> Result<MlirFunction> {
        let signature = FunctionType::parse(declaration).map_err(parse_error)?;
        let Some(name) = signature.name.clone() else {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!(
                    "`{declaration}` names no function: write `func.func @name(...)`, or use \
                     MlirLibrary::function_named"
                ),
            ));
        };
        self.function_with_type(&name, signature)
    }

    /// Function `name` with the signature `signature` (a function type such as
    /// `(memref<?xf32>, f32) -> f32`, or a declaration, whose name must then be `name`).
    pub fn function_named(&self, name: &str, signature: &str) -> Result<MlirFunction> {
        let signature = FunctionType::parse(signature).map_err(parse_error)?;
        if let Some(declared) = &signature.name
            && declared != name
        {
            return Err(Error::new(
                ErrorKind::VALUE_ERROR,
                format!("the declaration is for @{declared}, not @{name}"),
            ));
        }
        self.function_with_type(name, signature)
    }

    /// Function `name` with a parsed signature. Picks `_mlir_ciface_<name>` when the library
    /// has it; otherwise the expanded `<name>` where that is safe to call from C (no result, or
    /// one scalar); otherwise explains how to rebuild with C wrappers.
    pub fn function_with_type(&self, name: &str, signature: FunctionType) -> Result<MlirFunction> {
        let ciface_name = format!("_mlir_ciface_{name}");
        let (entry, symbol) = if let Some(symbol) = self.symbol(&ciface_name) {
            (Entry::CInterface, symbol)
        } else {
            let Some(symbol) = self.symbol(name) else {
                return Err(Error::new(
                    ErrorKind::ATTRIBUTE_ERROR,
                    format!(
                        "{} has no function `{name}` (neither `{ciface_name}` nor `{name}` is \
                         exported)",
                        self.inner.path.display()
                    ),
                ));
            };
            let expanded_is_safe =
                matches!(signature.results.as_slice(), [] | [MlirType::Scalar(_)]);
            if !expanded_is_safe {
                return Err(Error::new(
                    ErrorKind::VALUE_ERROR,
                    format!(
                        "`{name}` has no C interface wrapper (`{ciface_name}`), and its expanded \
                         form returns {} as an LLVM struct in registers where C expects another \
                         layout, so it cannot be called safely. Rebuild with \
                         `attributes {{llvm.emit_c_interface}}` on the func.func, or pass \
                         --llvm-request-c-wrappers to mlir-opt before --convert-func-to-llvm",
                        describe_results(&signature.results)
                    ),
                ));
            }
            (Entry::Expanded, symbol)
        };
        let plan = CallPlan::new(&signature, entry)?;
        Ok(MlirFunction {
            name: name.to_owned(),
            signature,
            plan: Arc::new(plan),
            function: symbol,
            path: CallPath::Registers,
            layout_mismatch: LayoutMismatch::Reject,
            library: self.clone(),
        })
    }

    fn symbol(&self, name: &str) -> Option<unsafe extern "C" fn()> {
        // SAFETY: the symbol is only called through a plan built from the caller's declared
        // signature; reading its address is harmless.
        let symbol = unsafe {
            self.inner
                .library
                .get::<unsafe extern "C" fn()>(name.as_bytes())
        }
        .ok()?;
        Some(*symbol)
    }
}

fn parse_error(error: pactum_text::ParseError) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, error.to_string())
}

fn describe_results(results: &[MlirType]) -> String {
    match results {
        [single] => format!("a {single}"),
        many => format!(
            "{} values ({})",
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// One function of an [`MlirLibrary`], called with pactum values: tensors (any DLPack
/// producer) for memrefs, numbers for scalars.
///
/// Every call checks each tensor against its memref type: CPU device, dtype, rank, static
/// extents, alignment, and layout. MLIR's lowered code trusts the static type over the
/// descriptor (an identity-layout memref is read as compact whatever strides the descriptor
/// says), so a tensor whose layout the type cannot describe is refused, or passed as a compact
/// copy that is copied back after the call if [`LayoutMismatch::Copy`] is chosen.
///
/// Memref results become tensors that own their memory: fresh allocations are freed with
/// `free` when the last reference dies; results that view an argument keep that argument
/// alive; views of the library's constants keep the library loaded.
#[derive(Clone)]
pub struct MlirFunction {
    name: String,
    signature: FunctionType,
    plan: Arc<CallPlan>,
    function: unsafe extern "C" fn(),
    path: CallPath,
    layout_mismatch: LayoutMismatch,
    library: MlirLibrary,
}

/// `len` zeroed words: the front of `inline` (left uninitialised by the caller, so a call pays
/// only for what its signature needs) when they fit, else `heap`.
#[inline]
pub(crate) fn scratch<'a>(
    inline: &'a mut [core::mem::MaybeUninit<u64>],
    heap: &'a mut Vec<u64>,
    len: usize,
) -> &'a mut [u64] {
    if len <= inline.len() {
        let words = &mut inline[..len];
        for word in words.iter_mut() {
            word.write(0);
        }
        // SAFETY: the first `len` words were just initialised; MaybeUninit<u64> has u64's
        // layout.
        unsafe { &mut *(words as *mut [core::mem::MaybeUninit<u64>] as *mut [u64]) }
    } else {
        heap.resize(len, 0);
        heap
    }
}

impl MlirFunction {
    /// The function's name (without `_mlir_ciface_`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The MLIR signature calls are checked against.
    pub fn signature(&self) -> &FunctionType {
        &self.signature
    }

    /// Which symbol is called.
    pub fn entry(&self) -> Entry {
        self.plan.entry
    }

    /// How calls are made: [`CallPath::Registers`] where the signature fits (the default), else
    /// [`CallPath::Libffi`].
    pub fn call_path(&self) -> CallPath {
        if self.path == CallPath::Registers && self.plan.fits_registers {
            CallPath::Registers
        } else {
            CallPath::Libffi
        }
    }

    /// Chooses how calls are made; [`CallPath::Registers`] still falls back to libffi for
    /// signatures that do not fit in registers or on other platforms.
    pub fn with_call_path(mut self, path: CallPath) -> MlirFunction {
        self.path = path;
        self
    }

    /// Chooses what happens to tensors whose layout the memref type cannot describe.
    pub fn with_layout_mismatch(mut self, choice: LayoutMismatch) -> MlirFunction {
        self.layout_mismatch = choice;
        self
    }

    /// The library the function lives in.
    pub fn library(&self) -> &MlirLibrary {
        &self.library
    }

    /// Calls the function; returns its results in order.
    pub fn call(&self, args: &[AnyView<'_>]) -> Result<Vec<Any>> {
        let mut results = Vec::with_capacity(self.signature.results.len());
        self.call_into(args, &mut results)?;
        Ok(results)
    }

    /// Calls the function, replacing the contents of `results` with its results (reuse the
    /// vector to call without allocating).
    pub fn call_into(&self, args: &[AnyView<'_>], results: &mut Vec<Any>) -> Result<()> {
        results.clear();
        #[cfg(all(target_arch = "x86_64", not(windows)))]
        if self.path == CallPath::Registers
            && let Some(fast) = &self.plan.fast
            && self.call_fast(fast, args, results)
        {
            return Ok(());
        }
        self.call_general(args, results)
    }

    /// The fast path (see `FastPlan`): returns false, having done nothing, when the arguments
    /// need the general path's checks.
    #[cfg(all(target_arch = "x86_64", not(windows)))]
    #[inline]
    fn call_fast(&self, fast: &FastPlan, args: &[AnyView<'_>], results: &mut Vec<Any>) -> bool {
        use crate::registers::{FLOAT_ARGUMENT_REGISTERS, INTEGER_ARGUMENT_REGISTERS};
        if args.len() != fast.args.len() {
            return false;
        }
        let mut integers = [0u64; INTEGER_ARGUMENT_REGISTERS];
        let mut floats = [0u64; FLOAT_ARGUMENT_REGISTERS];
        let mut word_storage = [core::mem::MaybeUninit::<u64>::uninit(); FastPlan::MAX_WORDS];
        let mut no_heap = Vec::new();
        let words = scratch(&mut word_storage, &mut no_heap, fast.words);
        let words_address = words.as_mut_ptr().expose_provenance() as u64;
        let mut result_words = [0u64; FastPlan::MAX_RESULT_WORDS];
        if !fast.struct_fields.is_empty() {
            integers[0] = result_words.as_mut_ptr().expose_provenance() as u64;
        }
        for (fast_arg, arg) in fast.args.iter().zip(args) {
            match *fast_arg {
                FastArg::Integer { register, scalar } => match scalar_bits_fast(scalar, arg) {
                    Some(bits) => integers[register as usize] = bits,
                    None => return false,
                },
                FastArg::Float { register, scalar } => match scalar_bits_fast(scalar, arg) {
                    Some(bits) => floats[register as usize] = bits,
                    None => return false,
                },
                FastArg::Compact {
                    register,
                    dtype,
                    element,
                    rank,
                    words_at,
                } => {
                    let (rank, at) = (rank as usize, words_at as usize);
                    let slot = &mut words[at..at + descriptor_words(rank)];
                    match dl_tensor_of(arg) {
                        Some(t) if fill_compact(t, dtype, element as usize, rank, slot) => {
                            integers[register as usize] = words_address + 8 * at as u64;
                        }
                        _ => return false,
                    }
                }
            }
        }
        // Every parameter was written where the fast plan says; the descriptors describe compact
        // CPU tensors alive for the call, and the result pointer (if any) `result_words`.
        let returned = self.call_registers(&integers, &floats);
        match &self.plan.result {
            ResultPlan::Void => {}
            ResultPlan::Direct(scalar) => {
                results.push(scalar_value(
                    *scalar,
                    self.plan.result.direct_bits(returned),
                ));
            }
            ResultPlan::Struct { .. } => {
                let bytes = words_as_bytes(&result_words);
                for &(offset, scalar) in &fast.struct_fields {
                    results.push(scalar_value(
                        scalar,
                        read_scalar_field(scalar, &bytes[offset..]),
                    ));
                }
            }
        }
        true
    }

    /// The fast plan, if the signature has one.
    pub(crate) fn fast_plan(&self) -> Option<&FastPlan> {
        self.plan.fast.as_ref()
    }

    /// How results come back.
    pub(crate) fn plan_result(&self) -> &ResultPlan {
        &self.plan.result
    }

    /// Calls the entry with these registers (the typed path).
    #[cfg(all(target_arch = "x86_64", not(windows)))]
    #[inline]
    pub(crate) fn call_registers(
        &self,
        integers: &[u64; 6],
        floats: &[u64; 8],
    ) -> crate::registers::RegisterResult {
        // SAFETY: `typed()` only exists for functions with a fast plan (register path, C
        // interface); the typed arguments were written where that plan says, and tensors went
        // through `fill_compact`. The user vouches that the declaration is the symbol's.
        unsafe { crate::registers::call_with_registers(self.function, integers, floats) }
    }

    /// Why the typed path refused argument `index` (a tensor that is not compact, or of
    /// another dtype, rank or device): the general path's error.
    #[cold]
    pub(crate) fn explain_refusal(&self, index: usize, tensor: Option<&Tensor>) -> Error {
        let refused = || {
            Error::new(
                ErrorKind::VALUE_ERROR,
                format!("argument {index}: refused by the typed call"),
            )
        };
        let Some(tensor) = tensor else {
            return refused();
        };
        let view: AnyView<'_> = tensor.into();
        let mut slot = vec![0u64; descriptor_words(tensor.ndim())];
        let mut copies = Vec::new();
        let general = self.clone().with_layout_mismatch(LayoutMismatch::Reject);
        match general.fill_checked(index, &view, &mut slot, &mut copies) {
            Err(error) => error,
            Ok(()) => refused(),
        }
    }

    /// Every case, with every check and a clear error for whatever does not fit.
    fn call_general(&self, args: &[AnyView<'_>], results: &mut Vec<Any>) -> Result<()> {
        let plan = &*self.plan;
        if args.len() != plan.args.len() {
            return Err(self.count_error(args.len()));
        }
        // Unranked arguments' descriptors depend on the tensors' ranks: find their size first.
        let mut words_needed = plan.ranked_words;
        for (arg_plan, arg) in plan.args.iter().zip(args).take(plan.unranked_args_end) {
            if let ArgPlan::Unranked = arg_plan
                && let Some(tensor) = dl_tensor_of(arg)
            {
                words_needed += 2 + descriptor_words(tensor.ndim.max(0) as usize);
            }
        }
        let mut word_scratch = [core::mem::MaybeUninit::<u64>::uninit(); 40];
        let mut word_scratch_heap = Vec::new();
        let words = scratch(&mut word_scratch, &mut word_scratch_heap, words_needed);
        let words_address = words.as_mut_ptr().expose_provenance() as u64;
        let mut result_scratch = [core::mem::MaybeUninit::<u64>::uninit(); 16];
        let mut result_scratch_heap = Vec::new();
        let result_words = match &plan.result {
            ResultPlan::Struct { size, .. } => size.div_ceil(8),
            _ => 0,
        };
        let result_buffer = scratch(&mut result_scratch, &mut result_scratch_heap, result_words);
        let result_address = result_buffer.as_mut_ptr().expose_provenance() as u64;
        let mut values_scratch = [core::mem::MaybeUninit::<u64>::uninit(); 12];
        let mut values_scratch_heap = Vec::new();
        let values = scratch(
            &mut values_scratch,
            &mut values_scratch_heap,
            plan.params.len(),
        );

        // Compact copies made for layout reasons (only with LayoutMismatch::Copy), and where
        // unranked headers went; both stay empty, without allocating, in the usual case.
        let mut copies: Vec<(usize, Tensor)> = Vec::new();
        let mut unranked_headers: Vec<usize> = Vec::new();
        let mut unranked_cursor = plan.ranked_words;
        for (index, (arg_plan, arg)) in plan.args.iter().zip(args).enumerate() {
            let value = match *arg_plan {
                ArgPlan::Scalar(scalar) => scalar_bits(index, scalar, arg)?,
                ArgPlan::Ranked {
                    dtype,
                    element,
                    rank,
                    words_at,
                    compact_any_shape,
                } => {
                    let slot = &mut words[words_at..words_at + descriptor_words(rank)];
                    let done = compact_any_shape
                        && dl_tensor_of(arg)
                            .is_some_and(|t| fill_compact(t, dtype, element, rank, slot));
                    if !done {
                        self.fill_checked(index, arg, slot, &mut copies)?;
                    }
                    words_address + 8 * words_at as u64
                }
                ArgPlan::Unranked => {
                    let ty = &self.signature.args[index];
                    let MlirType::UnrankedMemRef(element) = *ty else {
                        unreachable!("the plan follows the signature")
                    };
                    let tensor = tensor_argument(index, ty, arg)?;
                    check_tensor_basics(index, tensor, element, None, None, &|| ty.to_string())?;
                    let rank = tensor.ndim.max(0) as usize;
                    let header = unranked_cursor;
                    let start = header + 2;
                    unranked_cursor = start + descriptor_words(rank);
                    let slot = &mut words[start..unranked_cursor];
                    let fit = fill_unranked_target(index, tensor, element, slot)?;
                    if let Some(copy) = self.copy_if_needed(tensor, fit, slot, |t, w| {
                        fill_unranked_target(index, t, element, w)
                    })? {
                        copies.push((index, copy));
                    }
                    words[header] = rank as u64;
                    words[header + 1] = words_address + 8 * start as u64;
                    unranked_headers.push(header);
                    words_address + 8 * header as u64
                }
            };
            if let Some(first) = plan.one_param_per_arg {
                values[first + index] = value;
            }
        }
        match plan.one_param_per_arg {
            Some(1) => values[0] = result_address,
            Some(_) => {}
            // The expanded form: every descriptor word (ranked), or rank and pointer (unranked
            // header), is its own argument.
            None => {
                for (value, param) in values.iter_mut().zip(&plan.params) {
                    *value = match param.source {
                        Source::ResultPointer => result_address,
                        Source::Scalar(index) => {
                            let ArgPlan::Scalar(scalar) = plan.args[index] else {
                                unreachable!("the plan follows the signature")
                            };
                            scalar_bits(index, scalar, &args[index])?
                        }
                        Source::Descriptor(index) => {
                            words_address + 8 * self.words_at(index, &unranked_headers) as u64
                        }
                        Source::DescriptorWord(index, word) => {
                            words[self.words_at(index, &unranked_headers) + word]
                        }
                    };
                }
            }
        }
        // The plan was built from the declared signature for this very symbol (nothing in a
        // symbol says its types); every descriptor points at a checked CPU tensor alive for the
        // call, and the result pointer at a buffer of the struct's size.
        // SAFETY: as just said; the user vouches that the declaration matches the library.
        let direct = unsafe { plan.invoke(self.function, values, self.path) };

        // Copies made for layout reasons go back into the caller's tensors.
        for (index, copy) in &copies {
            if let Some(original) = dl_tensor_of(&args[*index]) {
                // SAFETY: the copy was made from `original` (same shape and dtype, both CPU).
                unsafe { pactum::strided::copy_elements(copy.dl_tensor(), original) };
            }
        }

        match &plan.result {
            ResultPlan::Void => {}
            ResultPlan::Direct(scalar) => results.push(scalar_value(*scalar, direct)),
            ResultPlan::Struct { offsets, size } => {
                let bytes = &words_as_bytes(result_buffer)[..*size];
                self.collect_results(bytes, offsets, args, &copies, results)?;
            }
        }
        Ok(())
    }

    /// Where argument `index`'s descriptor (ranked) or header (unranked) starts.
    fn words_at(&self, index: usize, unranked_headers: &[usize]) -> usize {
        match self.plan.args[index] {
            ArgPlan::Ranked { words_at, .. } => words_at,
            _ => {
                let nth = self.plan.args[..index]
                    .iter()
                    .filter(|a| matches!(a, ArgPlan::Unranked))
                    .count();
                unranked_headers[nth]
            }
        }
    }

    fn count_error(&self, got: usize) -> Error {
        let expected = self.signature.args.len();
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "@{} takes {expected} argument{} {}, got {got}",
                self.name,
                if expected == 1 { "" } else { "s" },
                self.signature,
            ),
        )
    }

    /// The full check of a ranked memref argument (every rule, with errors), and a copy when
    /// the layout does not fit and copies are allowed.
    #[cold]
    fn fill_checked(
        &self,
        index: usize,
        arg: &AnyView<'_>,
        slot: &mut [u64],
        copies: &mut Vec<(usize, Tensor)>,
    ) -> Result<()> {
        let ty = &self.signature.args[index];
        let MlirType::MemRef(memref) = ty else {
            unreachable!("the plan follows the signature")
        };
        let tensor = tensor_argument(index, ty, arg)?;
        check_tensor_basics(
            index,
            tensor,
            memref.element,
            Some(memref.rank()),
            Some(&memref.shape),
            &|| ty.to_string(),
        )?;
        let fit = fill_ranked(index, tensor, memref, slot)?;
        if let Some(copy) =
            self.copy_if_needed(tensor, fit, slot, |t, w| fill_ranked(index, t, memref, w))?
        {
            copies.push((index, copy));
        }
        Ok(())
    }

    /// Makes a compact copy when the layout did not fit and copies are allowed (the error
    /// otherwise), refilling the descriptor from it.
    fn copy_if_needed(
        &self,
        tensor: &DLTensor,
        fit: Fit,
        slot: &mut [u64],
        refill: impl Fn(&DLTensor, &mut [u64]) -> Result<Fit>,
    ) -> Result<Option<Tensor>> {
        match fit {
            Fit::Direct => Ok(None),
            Fit::NeedsCompactCopy(error) => {
                if self.layout_mismatch == LayoutMismatch::Reject {
                    return Err(error);
                }
                let copy = compact_copy(tensor)?;
                match refill(copy.dl_tensor(), slot)? {
                    Fit::Direct => Ok(Some(copy)),
                    // A static stride other than the compact one cannot be met by copying.
                    Fit::NeedsCompactCopy(_) => Err(error),
                }
            }
        }
    }

    /// Turns the result struct into values.
    fn collect_results(
        &self,
        bytes: &[u8],
        offsets: &[usize],
        args: &[AnyView<'_>],
        copies: &[(usize, Tensor)],
        results: &mut Vec<Any>,
    ) -> Result<()> {
        let mut owners: Vec<(usize, Tensor)> = Vec::new();
        for (position, (ty, &offset)) in self.signature.results.iter().zip(offsets).enumerate() {
            let value = match ty {
                MlirType::Scalar(scalar) => {
                    scalar_value(*scalar, read_scalar_field(*scalar, &bytes[offset..]))
                }
                MlirType::MemRef(memref) => {
                    let words = read_words(&bytes[offset..], descriptor_words(memref.rank()));
                    let descriptor = ReturnedMemRef::read(&words, memref.rank());
                    let tensor =
                        self.adopt(position, descriptor, memref.element, args, copies, &owners)?;
                    owners.push((words[0] as usize, tensor.clone()));
                    Any::from(tensor)
                }
                MlirType::UnrankedMemRef(element) => {
                    let header = read_words(&bytes[offset..], 2);
                    let tensor =
                        self.adopt_unranked(position, header, *element, args, copies, &owners)?;
                    Any::from(tensor)
                }
            };
            results.push(value);
        }
        Ok(())
    }

    /// A tensor over a returned ranked descriptor, owning (or keeping alive) its memory.
    fn adopt(
        &self,
        position: usize,
        descriptor: ReturnedMemRef,
        element: ScalarType,
        args: &[AnyView<'_>],
        copies: &[(usize, Tensor)],
        owners: &[(usize, Tensor)],
    ) -> Result<Tensor> {
        descriptor.validate(position)?;
        let dtype = element
            .data_type()
            .expect("checked when the plan was built");
        let data = descriptor.data(element.byte_size());
        let allocated = descriptor.allocated as usize;
        let make = |release: Box<dyn FnOnce() + Send>| {
            // SAFETY: MLIR wrote a descriptor of this element type whose extents and strides
            // address memory inside the allocation `release` keeps alive.
            unsafe {
                Tensor::from_raw_parts(
                    data,
                    dtype,
                    Device::CPU,
                    &descriptor.sizes,
                    &descriptor.strides,
                    release,
                )
            }
        };
        // A view of one of the arguments: keep what was passed alive.
        let passed_allocated = |index: usize| -> Option<usize> {
            if matches!(self.plan.args[index], ArgPlan::Scalar(_)) {
                return None;
            }
            match copies.iter().find(|(i, _)| *i == index) {
                Some((_, copy)) => Some(copy.data_ptr() as usize),
                None => dl_tensor_of(&args[index]).map(|t| t.data as usize),
            }
        };
        if let Some(index) = (0..args.len()).find(|&i| passed_allocated(i) == Some(allocated)) {
            let keeper = match copies.iter().find(|(i, _)| *i == index) {
                Some((_, copy)) => Some(copy.clone()),
                None if args[index].type_index() == TVMFFITypeIndex::TENSOR.0 => {
                    Some(args[index].to_any()?.cast::<Tensor>()?)
                }
                None => None,
            };
            return match keeper {
                Some(keeper) => make(Box::new(move || drop(keeper))),
                // A borrowed DLTensor* has no owner to keep: return a copy of the view.
                None => {
                    let view = make(Box::new(|| {}))?;
                    compact_copy(view.dl_tensor())
                }
            };
        }
        // Another view of an allocation an earlier result already owns.
        if let Some((_, owner)) = owners.iter().find(|(a, _)| *a == allocated) {
            let keeper = owner.clone();
            return make(Box::new(move || drop(keeper)));
        }
        // A view of the library's constants (`memref.get_global`), or of memory nobody can
        // free: keep the library loaded.
        if allocated == pactum_sys::mlir::GLOBAL_MEMREF_ALLOCATED || allocated == 0 {
            let keeper = self.library.clone();
            return make(Box::new(move || drop(keeper)));
        }
        // A fresh allocation: `memref.alloc` lowers to `malloc` (or `aligned_alloc`), both
        // released by `free` on the allocated (not the aligned) pointer.
        let pointer = allocated;
        make(Box::new(move || {
            // SAFETY: the allocation came from the C allocator and is freed exactly once,
            // here, when the last tensor viewing it dies.
            unsafe { libc::free(core::ptr::with_exposed_provenance_mut::<c_void>(pointer)) }
        }))
    }

    /// A returned unranked memref: reads the ranked descriptor it points to, frees that
    /// descriptor block (the caller owns it), and adopts the buffer.
    fn adopt_unranked(
        &self,
        position: usize,
        header: Vec<u64>,
        element: ScalarType,
        args: &[AnyView<'_>],
        copies: &[(usize, Tensor)],
        owners: &[(usize, Tensor)],
    ) -> Result<Tensor> {
        let rank = header[0] as i64;
        let block = core::ptr::with_exposed_provenance_mut::<u64>(header[1] as usize);
        if !(0..=64).contains(&rank) || block.is_null() {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!(
                    "result {position}: the function returned an invalid unranked memref \
                     (rank {rank}, descriptor 0x{:x})",
                    header[1]
                ),
            ));
        }
        let rank = rank as usize;
        // SAFETY: MLIR copied a ranked descriptor of `rank` into this malloc'ed block.
        let words = unsafe { core::slice::from_raw_parts(block, descriptor_words(rank)) }.to_vec();
        // SAFETY: the block was malloc'ed for the caller, which frees it once (here).
        unsafe { libc::free(block.cast()) };
        let descriptor = ReturnedMemRef::read(&words, rank);
        self.adopt(position, descriptor, element, args, copies, owners)
    }

    /// A pactum [`Function`] that calls this function: memref arguments take tensors
    /// (including NumPy arrays passed from Python through `tvm_ffi`, with no copy), and the
    /// result is `None`, the single result, or an array of the results.
    pub fn into_function(self) -> Function {
        Function::from_packed(move |args: &[AnyView<'_>]| {
            let mut results = Vec::with_capacity(self.signature.results.len());
            self.call_into(args, &mut results)?;
            Ok(match results.len() {
                0 => Any::none(),
                1 => results.pop().expect("one result"),
                _ => Any::from(Array::new(results)),
            })
        })
    }
}

impl MlirFunction {
    /// As [`MlirFunction::into_function`], except that a function with two or more results,
    /// all scalars, returns them as one `Bytes` value: each result in order, 8 bytes
    /// little-endian, `f64` for floating-point types, `i64` for integers and `index`, and one
    /// byte (0 or 1) for `i1`. For hosts where reading an array of results costs more than the
    /// call: Python reads `Bytes` as `bytes` and unpacks them with one `struct.unpack`, where
    /// `tvm_ffi.Array` costs about 0.5 µs per element. [`MlirFunction::packs_scalar_results`]
    /// says whether this function's results are packed.
    pub fn into_function_packing_scalars(self) -> Function {
        if !self.packs_scalar_results() {
            return self.into_function();
        }
        Function::from_packed(move |args: &[AnyView<'_>]| {
            let mut results = Vec::with_capacity(self.signature.results.len());
            self.call_into(args, &mut results)?;
            let mut bytes = Vec::with_capacity(8 * results.len());
            for (value, ty) in results.iter().zip(&self.signature.results) {
                match ty {
                    MlirType::Scalar(ScalarType::Integer { width: 1, .. }) => {
                        bytes.push(u8::from(value.get::<bool>()?));
                    }
                    MlirType::Scalar(scalar) if scalar.is_float() => {
                        bytes.extend_from_slice(&value.get::<f64>()?.to_le_bytes());
                    }
                    _ => bytes.extend_from_slice(&value.get::<i64>()?.to_le_bytes()),
                }
            }
            Ok(Any::from(pactum::Bytes::new(&bytes)))
        })
    }

    /// Whether [`MlirFunction::into_function_packing_scalars`] packs this function's results:
    /// two or more results, all scalars.
    pub fn packs_scalar_results(&self) -> bool {
        self.signature.results.len() >= 2
            && self
                .signature
                .results
                .iter()
                .all(|ty| matches!(ty, MlirType::Scalar(_)))
    }
}

impl core::fmt::Debug for MlirFunction {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MlirFunction")
            .field("name", &self.name)
            .field("signature", &self.signature.to_string())
            .field("entry", &self.plan.entry)
            .field("call_path", &self.call_path())
            .finish()
    }
}

/// The fast path for a compact CPU tensor of the right dtype and rank passed where an
/// identity-layout memref with only dynamic extents is expected: fills the descriptor and
/// returns true, or returns false (without judging) for anything else, which then takes the
/// full check.
#[inline]
pub(crate) fn fill_compact(
    tensor: &DLTensor,
    dtype: pactum_sys::dlpack::DLDataType,
    element: usize,
    rank: usize,
    slot: &mut [u64],
) -> bool {
    if tensor.device.device_type != pactum_sys::dlpack::DLDeviceType::CPU
        || tensor.dtype != dtype
        || tensor.ndim as usize != rank
        || (rank > 0 && tensor.shape.is_null())
    {
        return false;
    }
    let base = (tensor.data as usize).wrapping_add(tensor.byte_offset as usize);
    // Element sizes are powers of two.
    if base & (element - 1) != 0 {
        return false;
    }
    if rank == 0 {
        slot[0] = tensor.data as usize as u64;
        slot[1] = base as u64;
        slot[2] = 0;
        return true;
    }
    // SAFETY: a DLPack producer provides `ndim` extents (and strides, when non-null).
    let shape = unsafe { core::slice::from_raw_parts(tensor.shape, rank) };
    let strides = (!tensor.strides.is_null())
        // SAFETY: as above.
        .then(|| unsafe { core::slice::from_raw_parts(tensor.strides, rank) });
    let (sizes, compact) = slot[3..3 + 2 * rank].split_at_mut(rank);
    let mut running = 1i64;
    for axis in (0..rank).rev() {
        let extent = shape[axis];
        if extent < 0 {
            return false;
        }
        if let Some(strides) = strides
            && extent != 1
            && strides[axis] != running
        {
            return false;
        }
        sizes[axis] = extent as u64;
        compact[axis] = running as u64;
        running = running.wrapping_mul(extent);
    }
    slot[0] = tensor.data as usize as u64;
    slot[1] = base as u64;
    slot[2] = 0;
    true
}

fn read_words(bytes: &[u8], count: usize) -> Vec<u64> {
    bytes[..8 * count]
        .chunks_exact(8)
        .map(|chunk| u64::from_le_bytes(chunk.try_into().expect("8 bytes")))
        .collect()
}

/// The DLTensor a memref argument carries, or an error naming the argument.
fn tensor_argument<'a>(index: usize, ty: &MlirType, arg: &'a AnyView<'_>) -> Result<&'a DLTensor> {
    dl_tensor_of(arg).ok_or_else(|| {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "argument {index}: {ty} needs a tensor, got {}",
                arg.type_key()
            ),
        )
    })
}
