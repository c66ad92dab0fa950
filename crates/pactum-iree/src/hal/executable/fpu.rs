//! The FPU state compiled dispatch code runs with: subnormal floats flushed to zero, as IREE's
//! local devices run dispatches.

/// Flushes subnormal floats to zero on this thread while alive, as IREE's local devices run
/// dispatches (`iree_fpu_state_push(IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO)`); restores
/// the previous state when dropped.
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
    /// Turns flushing on for this thread.
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
}

impl Drop for FlushDenormals {
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
}
