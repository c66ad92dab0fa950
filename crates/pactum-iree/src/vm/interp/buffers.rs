//! `buffer.*`: byte buffers. Offsets and lengths are i64 registers; every range is checked
//! with checked arithmetic.

use std::sync::Arc;

use super::fault::{Fault, trap};
use super::registers::Registers;
use crate::memory_budget::MemoryBudget;
use crate::vm::buffer::VmBuffer;
use crate::vm::code::{RefReg, Reg, Reg64, Width};
use crate::vm::error::TrapKind;
use crate::vm::value::Ref;

/// The buffer in a register.
fn buffer_of(value: Option<&Ref>) -> Result<Arc<VmBuffer>, Fault> {
    match value {
        Some(Ref::Buffer(b)) => Ok(b.clone()),
        Some(other) => Err(trap(
            TrapKind::TypeMismatch,
            format!("expected a vm.buffer, got a {}", other.type_name()),
        )),
        None => Err(trap(TrapKind::NullReference, "null buffer")),
    }
}

/// The buffer in a register, borrowed (no reference count touched: a count shared by the
/// threads running a dispatch's workgroups would bounce between their caches).
#[inline(always)]
fn buffer_in(value: Option<&Ref>) -> Result<&VmBuffer, Fault> {
    match value {
        Some(Ref::Buffer(b)) => Ok(b),
        Some(other) => Err(trap(
            TrapKind::TypeMismatch,
            format!("expected a vm.buffer, got a {}", other.type_name()),
        )),
        None => Err(trap(TrapKind::NullReference, "null buffer")),
    }
}

/// The byte offset of element `index` of `size` bytes.
fn element_offset(index: u64, size: u64) -> Result<u64, Fault> {
    index.checked_mul(size).ok_or_else(|| {
        trap(
            TrapKind::OutOfRange,
            format!("element {} of {size} bytes is out of range", index as i64),
        )
    })
}

fn check_alignment(alignment: u32) -> Result<(), Fault> {
    if alignment != 0 && !alignment.is_power_of_two() {
        return Err(trap(
            TrapKind::InvalidArgument,
            format!("alignment {alignment} is not a power of two"),
        ));
    }
    Ok(())
}

fn host_size(length: u64) -> Result<usize, Fault> {
    usize::try_from(length).map_err(|_| Fault::Memory(length))
}

#[inline(always)]
pub(super) fn load(
    r: &mut Registers,
    width: Width,
    b: RefReg,
    o: Reg64,
    d: Reg,
) -> Result<(), Fault> {
    let v = {
        let buffer = buffer_in(r.peek(b))?;
        let at = element_offset(r.i64(o), width.size())?;
        match width {
            Width::U8 => u32::from(buffer.load::<1>(at)?[0]),
            Width::S8 => buffer.load::<1>(at)?[0] as i8 as i32 as u32,
            Width::U16 => u32::from(u16::from_le_bytes(buffer.load::<2>(at)?)),
            Width::S16 => i16::from_le_bytes(buffer.load::<2>(at)?) as i32 as u32,
            Width::B32 => u32::from_le_bytes(buffer.load::<4>(at)?),
        }
    };
    r.set_i32(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn load64(r: &mut Registers, b: RefReg, o: Reg64, d: Reg64) -> Result<(), Fault> {
    let v = {
        let buffer = buffer_in(r.peek(b))?;
        let at = element_offset(r.i64(o), 8)?;
        u64::from_le_bytes(buffer.load::<8>(at)?)
    };
    r.set_i64(d, v);
    Ok(())
}

#[inline(always)]
pub(super) fn store(r: &Registers, width: Width, b: RefReg, o: Reg64, v: Reg) -> Result<(), Fault> {
    let buffer = buffer_in(r.peek(b))?;
    let at = element_offset(r.i64(o), width.size())?;
    let bytes = r.i32(v).to_le_bytes();
    Ok(match width {
        Width::U8 | Width::S8 => buffer.store(at, [bytes[0]]),
        Width::U16 | Width::S16 => buffer.store(at, [bytes[0], bytes[1]]),
        Width::B32 => buffer.store(at, bytes),
    }?)
}

#[inline(always)]
pub(super) fn store64(r: &Registers, b: RefReg, o: Reg64, v: Reg64) -> Result<(), Fault> {
    let buffer = buffer_in(r.peek(b))?;
    let at = element_offset(r.i64(o), 8)?;
    Ok(buffer.store(at, r.i64(v).to_le_bytes())?)
}

#[inline(always)]
pub(super) fn fill(
    r: &Registers,
    width: Width,
    b: RefReg,
    o: Reg64,
    n: Reg64,
    v: Reg,
) -> Result<(), Fault> {
    let buffer = buffer_of(r.peek(b))?;
    let size = width.size();
    let at = element_offset(r.i64(o), size)?;
    let pattern = r.i32(v).to_le_bytes();
    Ok(buffer.fill(at, r.i64(n), &pattern[..size as usize])?)
}

#[inline(always)]
pub(super) fn fill64(r: &Registers, b: RefReg, o: Reg64, n: Reg64, v: Reg64) -> Result<(), Fault> {
    let buffer = buffer_of(r.peek(b))?;
    let at = element_offset(r.i64(o), 8)?;
    Ok(buffer.fill(at, r.i64(n), &r.i64(v).to_le_bytes())?)
}

#[inline(always)]
pub(super) fn alloc(
    r: &mut Registers,
    memory: Option<&Arc<MemoryBudget>>,
    len: Reg64,
    align: Reg,
    d: RefReg,
) -> Result<(), Fault> {
    check_alignment(r.i32(align))?;
    let size = host_size(r.i64(len))?;
    let buffer = VmBuffer::zeroed(size, memory)?;
    r.put(d, Some(Ref::Buffer(Arc::new(buffer))));
    Ok(())
}

#[inline(always)]
pub(super) fn clone(
    r: &mut Registers,
    memory: Option<&Arc<MemoryBudget>>,
    src: RefReg,
    o: Reg64,
    len: Reg64,
    align: Reg,
    d: RefReg,
) -> Result<(), Fault> {
    let source = buffer_of(r.peek(src))?;
    check_alignment(r.i32(align))?;
    let copy = source.clone_range(r.i64(o), r.i64(len), memory)?;
    r.put(d, Some(Ref::Buffer(Arc::new(copy))));
    Ok(())
}

#[inline(always)]
pub(super) fn length(r: &mut Registers, b: RefReg, d: Reg64) -> Result<(), Fault> {
    let buffer = buffer_of(r.peek(b))?;
    r.set_i64(d, buffer.len() as u64);
    Ok(())
}

#[inline(always)]
pub(super) fn copy(
    r: &Registers,
    src: RefReg,
    so: Reg64,
    dst: RefReg,
    o: Reg64,
    len: Reg64,
) -> Result<(), Fault> {
    let source = buffer_of(r.peek(src))?;
    let target = buffer_of(r.peek(dst))?;
    Ok(VmBuffer::copy(
        &source,
        r.i64(so),
        &target,
        r.i64(o),
        r.i64(len),
    )?)
}

#[inline(always)]
pub(super) fn compare(
    r: &mut Registers,
    a: RefReg,
    ao: Reg64,
    b: RefReg,
    bo: Reg64,
    len: Reg64,
    d: Reg,
) -> Result<(), Fault> {
    let lhs = buffer_of(r.peek(a))?;
    let rhs = buffer_of(r.peek(b))?;
    let equal = VmBuffer::compare(&lhs, r.i64(ao), &rhs, r.i64(bo), r.i64(len))?;
    r.set_i32(d, u32::from(equal));
    Ok(())
}

#[inline(always)]
pub(super) fn hash(
    r: &mut Registers,
    b: RefReg,
    o: Reg64,
    len: Reg64,
    d: Reg64,
) -> Result<(), Fault> {
    let buffer = buffer_of(r.peek(b))?;
    let h = buffer.hash(r.i64(o), r.i64(len))?;
    r.set_i64(d, h);
    Ok(())
}
