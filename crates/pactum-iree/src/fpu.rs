//! The FPU state dispatches run with: subnormal floats flushed to zero, as IREE's local devices
//! run dispatches. Compiled (ELF) dispatches run under it, and so does the interpreter's fast
//! path for vmvx code (`vm/interp/hot.rs`), whose float arithmetic then needs no software
//! flush. Every access to the FPU's control register is here.

/// Sets whether subnormal floats are flushed to zero on this thread while alive (on: as IREE's
/// local devices run dispatches, `iree_fpu_state_push(IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO)`);
/// restores the previous state when dropped, also when a panic unwinds through its owner.
pub(crate) struct FlushDenormals {
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    saved: u64,
}

#[cfg(target_arch = "x86_64")]
mod registers {
    /// MXCSR's FTZ (bit 15) and DAZ (bit 6).
    pub const FLUSH: u64 = 0x8040;

    pub fn read() -> u64 {
        let mut value: u32 = 0;
        // SAFETY: stmxcsr stores the 4-byte MXCSR to the given, valid, aligned location.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut value, options(nostack, preserves_flags));
        }
        u64::from(value)
    }

    pub fn write(value: u64) {
        let value = value as u32;
        // SAFETY: ldmxcsr loads MXCSR from a valid location; `value` is a state read from
        // MXCSR with only the FTZ/DAZ bits changed, which cannot fault.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &value, options(nostack, preserves_flags));
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod registers {
    /// FPCR's FZ bit.
    pub const FLUSH: u64 = 1 << 24;

    pub fn read() -> u64 {
        let value: u64;
        // SAFETY: reading FPCR has no side effects.
        unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) value, options(nomem, nostack)) };
        value
    }

    pub fn write(value: u64) {
        // SAFETY: `value` is FPCR as read with only the FZ bit changed.
        unsafe { std::arch::asm!("msr fpcr, {}", in(reg) value, options(nomem, nostack)) };
    }
}

impl FlushDenormals {
    /// Whether this build can set the FPU's flush (elsewhere the guards change nothing, and
    /// flushing is left to software).
    pub const AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

    /// Turns flushing on for this thread.
    #[inline]
    pub fn on() -> FlushDenormals {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let saved = registers::read();
            registers::write(saved | registers::FLUSH);
            FlushDenormals { saved }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        FlushDenormals { saved: 0 }
    }

    /// Turns flushing off for this thread (for code that must see subnormals, such as the C
    /// maths library's functions, which the software flush emulates flushing around).
    #[inline]
    pub fn off() -> FlushDenormals {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let saved = registers::read();
            registers::write(saved & !registers::FLUSH);
            FlushDenormals { saved }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        FlushDenormals { saved: 0 }
    }

    /// Whether flushing is on for this thread (false where this build cannot set it).
    #[cfg(test)]
    pub fn is_on() -> bool {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            registers::read() & registers::FLUSH == registers::FLUSH
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        false
    }
}

impl Drop for FlushDenormals {
    #[inline]
    fn drop(&mut self) {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        registers::write(self.saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushing_is_scoped_to_the_guard() {
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        let half = std::hint::black_box(0.5f32);
        assert!(tiny * half > 0.0, "subnormals exist by default");
        {
            let _guard = FlushDenormals::on();
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            assert_eq!(std::hint::black_box(tiny) * std::hint::black_box(half), 0.0);
        }
        assert!(tiny * half > 0.0, "the previous state is restored");
    }

    #[test]
    fn off_turns_flushing_off_inside_on() {
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        let half = std::hint::black_box(0.5f32);
        let _guard = FlushDenormals::on();
        {
            let _exact = FlushDenormals::off();
            assert!(!FlushDenormals::is_on());
            assert!(std::hint::black_box(tiny) * std::hint::black_box(half) > 0.0);
        }
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        assert!(
            FlushDenormals::is_on(),
            "flushing is back on after `off`'s guard"
        );
    }
}
