//! A pure-Rust interpreter for IREE VM bytecode (bytecode 17.0, as IREE 3.13 runs it).
//!
//! A [`Context`] links modules in registration order: [`NativeModule`]s written in Rust and
//! bytecode modules from `.vmfb` files. Loading a bytecode module verifies every function
//! against the full rule set of the reference verifier, including the rules the 3.13 runtime
//! skips (per-register bank, range, alignment and MOVE checks, type ids, 64-bit global
//! bounds), and pre-decodes it into a compact instruction form, so the interpreter does no
//! byte parsing and re-checks nothing that was proved. A refused module is a
//! [`VmError::Verify`] naming the function, the byte offset and the [`VerifyRule`].
//!
//! Execution follows the reference's numeric semantics exactly (IEEE `remainder`, x86-64
//! float-to-int casts, shift masking, the `cmp.ne.*.o` and `switch.i64` quirks, unfused `fma`,
//! SipHash-2-4 `buffer.hash`...). Where the reference has undefined behaviour (integer
//! division by zero, `INT_MIN / -1`, unchecked indirect globals) pactum traps with an error.
//! [`Limits`] bound call depth, register memory, instructions executed and the memory of
//! buffers, lists and globals: a hostile module gets an error, never a panic, hang or OOM.
//!
//! The VM is safe Rust, but for the fast loop's instruction fetch (one small module, whose index
//! is masked into range). Its hosts are synchronous (native modules finish their work
//! before returning), so an invocation is never left suspended: `vm.yield` resumes at once
//! (its remap, then its target), and `call.yieldable` runs as a call followed by a branch.
//!
//! ```
//! use pactum_iree::vm::{Context, Limits, Value};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vmfb/vm_direct.vmfb");
//! let mut context = Context::new(Limits::default());
//! context.load_bytecode(pactum_iree::vmfb::VmfbFile::open(path)?)?;
//! let mix = context.lookup_export("vm_direct.mix")?;
//! let results = context.invoke(&mix, &[Value::I32(1), Value::I64(2), Value::F32(1.5), Value::F64(0.25)])?;
//! assert_eq!(results, [Value::F64(1.75), Value::I64(3), Value::F32(2.25)]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The VM is safe Rust but for one module, `interp/unchecked.rs` (the fast loop's instruction
// fetch, its index masked into range): the compiler holds every other module to that.
#![deny(unsafe_code)]

mod buffer;
mod code;
mod context;
mod error;
mod fuse;
mod interp;
mod isa;
mod limits;

mod bytecode;
mod native;
mod ops;
mod value;
mod verify;

pub use crate::memory_budget::{Charge, MemoryBudget, OverBudget};
pub use buffer::{BufferError, BufferView, ByteSource, VmBuffer};
pub use context::{CallStack, Context, Function, ModuleSource};
pub use error::{
    BudgetKind, FunctionName, LinkError, Location, StatusCode, TrapKind, VerifyRule, VmError,
};
pub use isa::{Field, OpInfo, OpSet, op_info};
pub use limits::Limits;

#[cfg(feature = "hal")]
pub(crate) use native::native_module_is_built;
pub use native::{
    BuiltNativeModule, NativeError, NativeFn, NativeFunction, NativeModule, NativeModuleBuilder,
    NativeParam, NativeResult, NativeResults, RefObjectType, SignatureMismatch, Text, Variadic,
    VariadicItem, VariadicIter,
};
pub use value::{
    AsAny, ElementType, ListError, Ref, RefObject, RefType, Value, ValueType, VmList, VmType,
};
