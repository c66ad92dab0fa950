//! The frames of one invocation: the register stack they live on, and the push and pop that
//! both the main loop (`interp.rs`) and the fast loop's calls (`hot.rs`) make, so that the
//! two check the same budgets in the same order.

use super::super::code::FunctionCode;
use super::super::error::{BudgetKind, Location, VmError};
use super::super::limits::Limits;
use super::super::value::Ref;
use super::registers::WINDOW;

/// The call site of the entry frame, whose return goes to the host.
pub(super) const ENTRY: u32 = u32::MAX;

/// One frame: its function, where it continues, and where its registers are.
pub(super) struct Frame {
    pub(super) instance: u32,
    pub(super) function: u32,
    pub(super) ip: u32,
    pub(super) base_i: usize,
    pub(super) base_r: usize,
    /// The bytes of register storage the frame counts against `max_stack_bytes` (kept here
    /// so that a return need not look its function up again).
    pub(super) bytes: usize,
    /// The caller's call site receiving the results, or `ENTRY`.
    pub(super) site: u32,
}

/// A budget that pushing a frame would exceed. The caller gives its location: a call site's
/// location is made only when the push fails, not on every call (it clones the module's and
/// the function's names).
pub(super) struct FrameBudget {
    kind: BudgetKind,
    limit: u64,
}

impl FrameBudget {
    #[cold]
    #[inline(never)]
    pub(super) fn at(self, location: Option<Location>) -> VmError {
        VmError::BudgetExhausted {
            kind: self.kind,
            limit: self.limit,
            location,
        }
    }
}

/// The frame [`push_frame`] makes: `function` of `instance`, whose code is `code`, called from
/// the caller's call site `site` (or `ENTRY`).
pub(super) struct NewFrame<'c> {
    pub(super) code: &'c FunctionCode,
    pub(super) instance: u32,
    pub(super) function: u32,
    pub(super) site: u32,
}

/// Pushes a zeroed frame, counting its register bytes in `stack_bytes`; returns its bases (i32
/// slot, ref slot). Nothing changes when a budget would be exceeded. Shared by the main loop
/// and the fast loop's calls (`hot.rs`), so that both check the same budgets in the same order.
#[inline(always)]
pub(super) fn push_frame(
    stack: &mut Stack,
    stack_bytes: &mut usize,
    limits: &Limits,
    frame: NewFrame<'_>,
) -> Result<(usize, usize), FrameBudget> {
    let code = frame.code;
    if stack.frames.len() >= limits.max_frames {
        return Err(FrameBudget {
            kind: BudgetKind::Frames,
            limit: limits.max_frames as u64,
        });
    }
    let bytes = code.i32_count as usize * 4 + code.ref_count as usize * REF_SLOT;
    let total = *stack_bytes + bytes;
    if total > limits.max_stack_bytes {
        return Err(FrameBudget {
            kind: BudgetKind::StackBytes,
            limit: limits.max_stack_bytes as u64,
        });
    }
    *stack_bytes = total;
    let base_i = stack.i32_top;
    let base_r = stack.refs.len();
    let count = code.i32_count as usize;
    let need = base_i + count.max(WINDOW);
    if stack.i32s.len() < need {
        grow_i32s(&mut stack.i32s, need);
    }
    stack.i32s[base_i..base_i + count].fill(0);
    stack.i32_top = base_i + count;
    // Pushed one by one, inline: most frames have one or two ref slots (the verifier rounds a
    // count up to a power of two, and zero to one), where `resize` is an out-of-line call.
    for _ in 0..code.ref_count {
        stack.refs.push(None);
    }
    stack.frames.push(Frame {
        instance: frame.instance,
        function: frame.function,
        ip: 0,
        base_i,
        base_r,
        bytes,
        site: frame.site,
    });
    Ok((base_i, base_r))
}

/// Pops the top frame, releasing the references in its registers.
#[inline(always)]
pub(super) fn pop_frame(stack: &mut Stack, stack_bytes: &mut usize) {
    if let Some(frame) = stack.frames.pop() {
        stack.i32_top = frame.base_i;
        // One slot (most frames) is popped inline (see `push_frame`); more are truncated, which
        // releases them first to last, as before.
        if stack.refs.len() == frame.base_r + 1 {
            stack.refs.pop();
        } else if stack.refs.len() != frame.base_r {
            stack.refs.truncate(frame.base_r);
        }
        *stack_bytes = stack_bytes.saturating_sub(frame.bytes);
    }
}

/// Register storage and frames of one invocation (reused between invocations).
///
/// The i32 bank is kept at least `WINDOW` slots longer than the top frame's base, so every
/// frame's window is a whole array; slots past `i32_top` belong to no frame.
#[derive(Default)]
pub struct Stack {
    pub(super) i32s: Vec<u32>,
    pub(super) i32_top: usize,
    pub(super) refs: Vec<Option<Ref>>,
    pub(super) frames: Vec<Frame>,
    /// The argument and result lists of calls into native modules, kept from call to call so
    /// that a native call allocates no list (a native function that calls back into the VM
    /// runs on another stack, with its own lists).
    pub(super) native: super::control::NativeLists,
}

impl Stack {
    pub(super) fn clear(&mut self) {
        self.frames.clear();
        // The slots are kept (a frame zeroes its own on entry).
        self.i32_top = 0;
        // Released here, not when the stack is reused.
        self.refs.clear();
        self.native.clear();
    }
}

/// The bytes a ref slot counts against the register-byte budget.
pub(super) const REF_SLOT: usize = std::mem::size_of::<Option<Ref>>();

/// Grows the i32 bank to `need` slots (out of line: once per invocation's deepest frame).
#[cold]
#[inline(never)]
fn grow_i32s(i32s: &mut Vec<u32>, need: usize) {
    if i32s.is_empty() {
        // Zeroed allocation: pages the frames never touch cost nothing.
        *i32s = vec![0; need];
    } else {
        i32s.resize(need, 0);
    }
}
