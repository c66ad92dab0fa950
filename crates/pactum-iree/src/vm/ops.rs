//! The numeric semantics of the reference runtime (facts sheet §6), as plain functions.

use super::code::{FBin, FCmp, FUn, IBin, ICmp, Shift};

const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// `llround` as x86-64 glibc computes it on an already rounded value: NaN or out of the i64
/// range gives `i64::MIN`.
fn to_i64_or_min(rounded: f64) -> i64 {
    if (-TWO_63..TWO_63).contains(&rounded) {
        rounded as i64
    } else {
        i64::MIN
    }
}

/// `x`, or zero of its sign when it is subnormal (flush-to-zero).
///
/// Tested on the exponent bits alone, without a branch (`is_subnormal` classifies the value
/// with several; a vmvx dispatch flushes every operand and result of its float arithmetic).
#[inline]
pub fn flush_f32(x: f32) -> f32 {
    let bits = x.to_bits();
    // All-zero exponent: zero or subnormal, either way zero of its sign.
    f32::from_bits(if bits & 0x7f80_0000 == 0 {
        bits & 0x8000_0000
    } else {
        bits
    })
}

/// `x`, or zero of its sign when it is subnormal (flush-to-zero).
#[inline]
pub fn flush_f64(x: f64) -> f64 {
    let bits = x.to_bits();
    f64::from_bits(if bits & 0x7ff0_0000_0000_0000 == 0 {
        bits & 0x8000_0000_0000_0000
    } else {
        bits
    })
}

/// `llroundf`: round half away from zero to an i64.
pub fn llround_f32(x: f32) -> i64 {
    to_i64_or_min(f64::from(x.round()))
}

/// `llround`.
pub fn llround_f64(x: f64) -> i64 {
    to_i64_or_min(x.round())
}

/// `cast.f32.si32` and `cast.f32.ui32`: the low 32 bits of `llroundf`.
pub fn cast_f32_i32(x: f32) -> i32 {
    llround_f32(x) as i32
}

/// `cast.f64.si32` and `cast.f64.ui32`: through f32 first (a quirk of 3.13).
pub fn cast_f64_i32(x: f64) -> i32 {
    cast_f32_i32(x as f32)
}

/// `cast.f32.ui64`: `roundf`, then the x86-64 float-to-u64 conversion.
pub fn cast_f32_ui64(x: f32) -> u64 {
    let y = f64::from(x.round());
    if (0.0..TWO_64).contains(&y) {
        y as u64
    } else if y > -TWO_63 && y < 0.0 {
        (y.trunc() as i64) as u64
    } else {
        0x8000_0000_0000_0000
    }
}

macro_rules! remainder {
    ($name:ident, $t:ty) => {
        /// IEEE remainder (C `remainder`): the quotient rounded to nearest, ties to even.
        pub fn $name(x: $t, p: $t) -> $t {
            if p == 0.0 || x.is_infinite() || x.is_nan() || p.is_nan() {
                // Computed, so that the NaN is the host's (x86: the negative default NaN), or
                // the NaN operand's.
                return (x * p) / (x * p);
            }
            let p = p.abs();
            let negative = x.is_sign_negative();
            let mut x = if p <= <$t>::MAX / 2.0 { x % (p + p) } else { x };
            x = x.abs();
            if p < 2.0 * <$t>::MIN_POSITIVE {
                if x + x > p {
                    x -= p;
                    if x + x >= p {
                        x -= p;
                    }
                }
            } else {
                let half = 0.5 * p;
                if x > half {
                    x -= p;
                    if x >= half {
                        x -= p;
                    }
                }
            }
            if negative { -x } else { x }
        }
    };
}

remainder!(remainder_f32, f32);
remainder!(remainder_f64, f64);

macro_rules! powi {
    ($name:ident, $t:ty) => {
        /// `fpowi`: `x` to the integer power `n`, as the reference computes it (it calls the C
        /// compiler's `__powi` helpers): square-and-multiply in the operand's own precision,
        /// each product rounded, over the bits of `|n|` from the lowest, then the reciprocal
        /// for a negative `n`. So the result can differ from `pow(x, n)` in the last place.
        /// `flush` is applied to every operation's operands and result (flush-to-zero).
        pub fn $name(x: $t, n: i32, flush: impl Fn($t) -> $t) -> $t {
            let mut bits = n.unsigned_abs();
            let mut square = flush(x);
            let mut power: $t = if bits % 2 == 1 { square } else { 1.0 };
            bits >>= 1;
            while bits != 0 {
                square = flush(square * square);
                if bits % 2 == 1 {
                    power = flush(power * square);
                }
                bits >>= 1;
            }
            if n < 0 { flush(1.0 / power) } else { power }
        }
    };
}

powi!(powi_f32, f32);
powi!(powi_f64, f64);

/// `round.*.even` as 3.13 computes it: ties to even, except that -0.5 gives +0.0.
pub fn round_even_f32(x: f32) -> f32 {
    if x == -0.5 { 0.0 } else { x.round_ties_even() }
}

/// See [`round_even_f32`].
pub fn round_even_f64(x: f64) -> f64 {
    if x == -0.5 { 0.0 } else { x.round_ties_even() }
}

/// `logf`/`log2f` of a negative number: the NaN as computed (the reference's is negative).
fn keep_nan(_x: f32, y: f32) -> f32 {
    y
}

/// The reference's f64 `log`/`log2` of a negative number is the positive quiet NaN; Rust's
/// carries the sign bit.
fn positive_nan(x: f64, y: f64) -> f64 {
    if y.is_nan() && !x.is_nan() {
        f64::NAN
    } else {
        y
    }
}

macro_rules! float_ops {
    ($bin:ident, $un:ident, $cmp:ident, $t:ty, $rem:ident, $round_even:ident, $erf:path, $log_nan:ident) => {
        /// A binary float operation.
        pub fn $bin(op: FBin, a: $t, b: $t) -> $t {
            match op {
                FBin::Add => a + b,
                FBin::Sub => a - b,
                FBin::Mul => a * b,
                FBin::Div => a / b,
                FBin::Rem => $rem(a, b),
                FBin::Atan2 => a.atan2(b),
                FBin::Pow => a.powf(b),
                FBin::Min => {
                    if b < a {
                        b
                    } else {
                        a
                    }
                }
                FBin::Max => {
                    if a < b {
                        b
                    } else {
                        a
                    }
                }
            }
        }

        /// A unary float operation.
        pub fn $un(op: FUn, x: $t) -> $t {
            match op {
                FUn::Abs => x.abs(),
                FUn::Neg => -x,
                FUn::Ceil => x.ceil(),
                FUn::Floor => x.floor(),
                FUn::Round => x.round(),
                FUn::RoundEven => $round_even(x),
                FUn::Atan => x.atan(),
                FUn::Cos => x.cos(),
                FUn::Sin => x.sin(),
                FUn::Exp => x.exp(),
                FUn::Exp2 => x.exp2(),
                FUn::Expm1 => x.exp_m1(),
                FUn::Log => $log_nan(x, x.ln()),
                FUn::Log10 => x.log10(),
                FUn::Log1p => x.ln_1p(),
                FUn::Log2 => $log_nan(x, x.log2()),
                FUn::Rsqrt => 1.0 / x.sqrt(),
                FUn::Sqrt => x.sqrt(),
                FUn::Tanh => x.tanh(),
                FUn::Erf => $erf(x),
            }
        }

        /// A float comparison (`cmp.ne.*.o` is true on NaN, as in the reference).
        pub fn $cmp(op: FCmp, a: $t, b: $t) -> bool {
            let unordered = a.is_nan() || b.is_nan();
            match op {
                FCmp::EqO => a == b,
                FCmp::EqU => unordered || a == b,
                FCmp::NeO | FCmp::NeU => a != b,
                FCmp::LtO => a < b,
                FCmp::LtU => unordered || a < b,
                FCmp::LteO => a <= b,
                FCmp::LteU => unordered || a <= b,
            }
        }
    };
}

// The transcendentals are the host C library's, as the reference's: Rust's `f32::exp` and
// the like call it, and `erf`, which Rust lacks, is called there directly (`pactum_sys::cmath`).
float_ops!(
    bin_f32,
    un_f32,
    cmp_f32,
    f32,
    remainder_f32,
    round_even_f32,
    pactum_sys::cmath::erff,
    keep_nan
);
float_ops!(
    bin_f64,
    un_f64,
    cmp_f64,
    f64,
    remainder_f64,
    round_even_f64,
    pactum_sys::cmath::erf,
    positive_nan
);

macro_rules! int_ops {
    ($bin:ident, $cmp:ident, $shift:ident, $t:ty, $u:ty, $mask:expr) => {
        /// A binary integer operation.
        #[inline]
        pub fn $bin(op: IBin, a: $t, b: $t) -> $t {
            match op {
                IBin::Sub => a.wrapping_sub(b),
                IBin::Mul => a.wrapping_mul(b),
                IBin::And => a & b,
                IBin::Or => a | b,
                IBin::Xor => a ^ b,
                IBin::MinS => a.min(b),
                IBin::MinU => (a as $u).min(b as $u) as $t,
                IBin::MaxS => a.max(b),
                IBin::MaxU => (a as $u).max(b as $u) as $t,
            }
        }

        /// An integer comparison.
        #[inline]
        pub fn $cmp(op: ICmp, a: $t, b: $t) -> bool {
            match op {
                ICmp::Eq => a == b,
                ICmp::Ne => a != b,
                ICmp::LtS => a < b,
                ICmp::LtU => (a as $u) < (b as $u),
            }
        }

        /// A shift by `amount` masked to the width.
        #[inline]
        pub fn $shift(op: Shift, a: $t, amount: i32) -> $t {
            let n = (amount as u32) & $mask;
            match op {
                Shift::Shl => a << n,
                Shift::ShrS => a >> n,
                Shift::ShrU => ((a as $u) >> n) as $t,
            }
        }
    };
}

int_ops!(bin_i32, cmp_i32, shift_i32, i32, u32, 31);
int_ops!(bin_i64, cmp_i64, shift_i64, i64, u64, 63);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushing_zeroes_subnormals_only_keeping_the_sign() {
        let f32s = [
            0.0,
            f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            f32::MIN_POSITIVE,
            1.5,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
        ];
        for x in f32s.into_iter().flat_map(|x| [x, -x]) {
            let expected = if x.is_subnormal() {
                0.0f32.copysign(x)
            } else {
                x
            };
            assert_eq!(flush_f32(x).to_bits(), expected.to_bits(), "{x:e}");
        }
        let f64s = [
            0.0,
            f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::MIN_POSITIVE,
            1.5,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for x in f64s.into_iter().flat_map(|x| [x, -x]) {
            let expected = if x.is_subnormal() {
                0.0f64.copysign(x)
            } else {
                x
            };
            assert_eq!(flush_f64(x).to_bits(), expected.to_bits(), "{x:e}");
        }
    }

    #[test]
    fn remainder_is_ieee() {
        assert_eq!(remainder_f64(5.0, 3.0), -1.0);
        assert_eq!(remainder_f64(-5.0, 3.0), 1.0);
        assert_eq!(remainder_f64(7.0, 2.0), -1.0);
        assert_eq!(remainder_f64(5.0, 2.0), 1.0);
        assert_eq!(remainder_f32(5.0, 3.0), -1.0);
        assert_eq!(remainder_f32(1.0, f32::INFINITY), 1.0);
        assert!(remainder_f32(1.0, 0.0).is_nan());
        assert!(remainder_f64(f64::INFINITY, 1.0).is_nan());
        assert_eq!(remainder_f64(-0.0, 1.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(remainder_f64(4.5, 1.0), 0.5);
        assert_eq!(remainder_f64(5.5, 1.0), -0.5);
    }

    #[test]
    fn float_to_int_casts_follow_x86_llround() {
        assert_eq!(cast_f32_i32(2.5), 3);
        assert_eq!(cast_f32_i32(-2.5), -3);
        assert_eq!(cast_f32_i32(1e10), 1410065408);
        assert_eq!(cast_f32_i32(2147483648.0), i32::MIN);
        assert_eq!(cast_f32_i32(4294967296.0), 0);
        assert_eq!(cast_f32_i32(f32::NAN), 0);
        assert_eq!(cast_f32_i32(-1.0) as u32, 0xFFFF_FFFF);
        assert_eq!(llround_f32(f32::INFINITY), i64::MIN);
        assert_eq!(cast_f64_i32(16777217.0), 16777216);
        assert_eq!(cast_f64_i32(0.49999999999999994), 1);
        assert_eq!(cast_f64_i32(3e9), -1294967296);
        assert_eq!(llround_f64(0.49999999999999994), 0);
        assert_eq!(llround_f64(1e19) as u64, 0x8000_0000_0000_0000);
        assert_eq!(llround_f64(-1.0) as u64, u64::MAX);
        assert_eq!(cast_f32_ui64(1e19), 9999999980506447872);
        assert_eq!(cast_f32_ui64(-0.5), u64::MAX);
        assert_eq!(cast_f32_ui64(f32::NAN), 0x8000_0000_0000_0000);
        assert_eq!(cast_f32_ui64(f32::INFINITY), 0x8000_0000_0000_0000);
    }

    #[test]
    fn min_max_round_and_compare_quirks() {
        assert!(bin_f32(FBin::Min, f32::NAN, 1.0).is_nan());
        assert_eq!(bin_f32(FBin::Min, 1.0, f32::NAN), 1.0);
        assert_eq!(bin_f32(FBin::Max, 1.0, f32::NAN), 1.0);
        assert_eq!(bin_f64(FBin::Min, -0.0, 0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(bin_f64(FBin::Min, 0.0, -0.0).to_bits(), 0);
        assert_eq!(round_even_f32(2.5), 2.0);
        assert_eq!(round_even_f32(3.5), 4.0);
        assert_eq!(round_even_f32(-0.5).to_bits(), 0);
        assert_eq!(round_even_f64(-0.3).to_bits(), (-0.0f64).to_bits());
        assert_eq!(un_f32(FUn::Round, -2.5), -3.0);
        assert_eq!(flush_f32(1e-40).to_bits(), 0);
        assert_eq!(flush_f32(-1e-40).to_bits(), (-0.0f32).to_bits());
        assert_eq!(flush_f32(f32::MIN_POSITIVE), f32::MIN_POSITIVE);
        assert_eq!(flush_f64(-5e-324).to_bits(), (-0.0f64).to_bits());
        assert!(cmp_f32(FCmp::NeO, f32::NAN, 1.0));
        assert!(!cmp_f32(FCmp::EqO, f32::NAN, f32::NAN));
        assert!(cmp_f64(FCmp::LtU, f64::NAN, 1.0));
        assert!(!cmp_f64(FCmp::LteO, f64::NAN, 1.0));
        let eps = f32::EPSILON;
        assert_eq!((1.0 + eps) * (1.0 - eps) - 1.0, 0.0);
    }

    #[test]
    fn shifts_mask_the_amount() {
        assert_eq!(shift_i32(Shift::Shl, 1, 32), 1);
        assert_eq!(shift_i32(Shift::Shl, 1, 33), 2);
        assert_eq!(shift_i32(Shift::Shl, 1, -1), i32::MIN);
        assert_eq!(shift_i64(Shift::Shl, 1, 65), 2);
        assert_eq!(shift_i32(Shift::ShrU, -1, 28), 15);
        assert_eq!(shift_i32(Shift::ShrS, -16, 2), -4);
        assert_eq!(bin_i32(IBin::MinU, -1, 1), 1);
        assert!(cmp_i64(ICmp::LtU, 1, -1));
    }
}
