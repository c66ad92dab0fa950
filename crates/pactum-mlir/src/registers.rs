//! The register trampoline: [`call_with_registers`] makes a C call whose arguments all fit in
//! registers on x86-64 System V, from an array of integer-class and an array of float-class
//! values. The one trampoline serves every such signature, so a call needs no per-signature
//! code and no libffi.

/// Integer-class argument registers on x86-64 System V (`rdi rsi rdx rcx r8 r9`).
pub const INTEGER_ARGUMENT_REGISTERS: usize = 6;
/// Float-class argument registers on x86-64 System V (`xmm0`–`xmm7`).
pub const FLOAT_ARGUMENT_REGISTERS: usize = 8;

/// What a register call returned: `rax` and the low 64 bits of `xmm0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegisterResult {
    /// `rax`: integer and pointer results (narrow ones in its low bits).
    pub integer: u64,
    /// `xmm0`'s low 64 bits: `double` results, `float` in the low 32 bits, `_Float16` and
    /// `__bf16` in the low 16.
    pub float: u64,
}

/// Calls `function` with integer-class arguments in `rdi rsi rdx rcx r8 r9` (in order) and
/// float-class arguments in `xmm0`–`xmm7` (their low 64 bits), as the x86-64 System V ABI
/// passes any C signature whose arguments are all scalars or pointers and fit in those
/// registers. Unused registers carry values the callee does not read.
///
/// Narrow values must be extended as C would: integers sign- or zero-extended to at least 32
/// bits; `float` in the low 32 bits of its slot, 16-bit floats in the low 16.
///
/// # Safety
/// `function` must be a C function whose parameters, in order, are exactly the integer-class
/// values `integers[..n]` and the float-class values `floats[..m]` (interleaved in any order in
/// its C signature), returning nothing, an integer/pointer, or a floating-point scalar; every
/// pointer passed must be valid for what `function` does with it.
#[cfg(all(target_arch = "x86_64", not(windows)))]
#[inline]
pub unsafe fn call_with_registers(
    function: unsafe extern "C" fn(),
    integers: &[u64; INTEGER_ARGUMENT_REGISTERS],
    floats: &[u64; FLOAT_ARGUMENT_REGISTERS],
) -> RegisterResult {
    let integer: u64;
    let float: f64;
    // Every caller-saved register is declared clobbered (`clobber_abi("C")`), the stack is
    // ABI-aligned on entry to an asm block that may use the stack, and `al` (the vector
    // register count variadic callees read) is set to the number of float registers.
    // `f64::from_bits`/`to_bits` keep every bit pattern (SSE moves do not touch NaN payloads).
    // SAFETY: the caller guarantees that `function` is a C function taking these registers.
    unsafe {
        core::arch::asm!(
            "call r11",
            in("rdi") integers[0],
            in("rsi") integers[1],
            in("rdx") integers[2],
            in("rcx") integers[3],
            in("r8") integers[4],
            in("r9") integers[5],
            in("r11") function as usize,
            inlateout("rax") FLOAT_ARGUMENT_REGISTERS as u64 => integer,
            inlateout("xmm0") f64::from_bits(floats[0]) => float,
            in("xmm1") f64::from_bits(floats[1]),
            in("xmm2") f64::from_bits(floats[2]),
            in("xmm3") f64::from_bits(floats[3]),
            in("xmm4") f64::from_bits(floats[4]),
            in("xmm5") f64::from_bits(floats[5]),
            in("xmm6") f64::from_bits(floats[6]),
            in("xmm7") f64::from_bits(floats[7]),
            clobber_abi("C"),
        );
    }
    RegisterResult {
        integer,
        float: float.to_bits(),
    }
}
