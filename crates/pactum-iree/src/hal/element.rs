//! HAL element types (`hal.element_type` integers) and tensors printed as `iree-run-module`
//! prints them and parsed as it parses its `--input`s.
//!
//! An element type is `numerical_type << 24 | bit_count`. The numerical types of IREE 3.13
//! (`runtime/src/iree/hal/buffer_view.h` and the `HalElementType` enum of its Python binding):
//! `0x00` opaque, `0x10` signless integer (`i32`), `0x11` signed (`si32`), `0x12` unsigned
//! (`ui32`), `0x13` boolean (8-bit `bool8`, which IREE names `i1`), `0x21` IEEE float
//! (`f32`), `0x22` brain float (`bf16`), `0x23` complex float, and the 8-bit floats
//! `0x24` `f8E5M2`, `0x25` `f8E4M3FN`, `0x26` `f8E5M2FNUZ`, `0x27` `f8E4M3FNUZ`, `0x28`
//! `f8E8M0FNU`.
//!
//! Elements narrower than a byte (`i4`, `ui2`, ...) are packed in a dense buffer, as IREE
//! packs them: element `k` in the bits `(k * bits) % 8` up of byte `k * bits / 8`, so a
//! `4xi4` buffer is 2 bytes ([`HalElementType::dense_byte_length`]).

/// A HAL element type: `numerical_type << 24 | bit_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HalElementType(pub u32);

impl HalElementType {
    /// Signless 1-bit integers, packed eight a byte as every sub-byte type (IREE's compiler
    /// stores `i1` tensors a byte an element, as [`BOOL8`](Self::BOOL8)).
    pub const I1: HalElementType = HalElementType(0x1000_0001);
    /// Signless 8-bit integers.
    pub const I8: HalElementType = HalElementType(0x1000_0008);
    /// Signless 16-bit integers.
    pub const I16: HalElementType = HalElementType(0x1000_0010);
    /// Signless 32-bit integers.
    pub const I32: HalElementType = HalElementType(0x1000_0020);
    /// Signless 64-bit integers.
    pub const I64: HalElementType = HalElementType(0x1000_0040);
    /// Signed 8-bit integers.
    pub const SI8: HalElementType = HalElementType(0x1100_0008);
    /// Unsigned 8-bit integers.
    pub const UI8: HalElementType = HalElementType(0x1200_0008);
    /// 8-bit booleans.
    pub const BOOL8: HalElementType = HalElementType(0x1300_0008);
    /// IEEE half floats.
    pub const F16: HalElementType = HalElementType(0x2100_0010);
    /// IEEE single floats.
    pub const F32: HalElementType = HalElementType(0x2100_0020);
    /// IEEE double floats.
    pub const F64: HalElementType = HalElementType(0x2100_0040);
    /// Brain floats.
    pub const BF16: HalElementType = HalElementType(0x2200_0010);
    /// 8-bit floats, 5 exponent bits, with infinities (`f8E5M2`).
    pub const F8E5M2: HalElementType = HalElementType(0x2400_0008);
    /// 8-bit floats, 4 exponent bits, finite (`f8E4M3FN`).
    pub const F8E4M3FN: HalElementType = HalElementType(0x2500_0008);
    /// 8-bit floats, 5 exponent bits, finite, no negative zero (`f8E5M2FNUZ`).
    pub const F8E5M2FNUZ: HalElementType = HalElementType(0x2600_0008);
    /// 8-bit floats, 4 exponent bits, finite, no negative zero (`f8E4M3FNUZ`).
    pub const F8E4M3FNUZ: HalElementType = HalElementType(0x2700_0008);
    /// 8-bit powers of two (`f8E8M0FNU`, the scale type of MX formats).
    pub const F8E8M0FNU: HalElementType = HalElementType(0x2800_0008);

    /// The 8-bit float types and their names, as IREE 3.13 formats and parses them.
    const FLOAT8: [(HalElementType, &'static str); 5] = [
        (HalElementType::F8E5M2, "f8E5M2"),
        (HalElementType::F8E4M3FN, "f8E4M3FN"),
        (HalElementType::F8E5M2FNUZ, "f8E5M2FNUZ"),
        (HalElementType::F8E4M3FNUZ, "f8E4M3FNUZ"),
        (HalElementType::F8E8M0FNU, "f8E8M0FNU"),
    ];

    /// The numerical type (the high byte).
    pub fn numerical_type(self) -> u8 {
        (self.0 >> 24) as u8
    }

    /// Whether the numerical type is opaque (0): the bytes are not interpreted.
    pub fn is_opaque(self) -> bool {
        self.numerical_type() == 0
    }

    /// Whether the numerical type is an integer of any signedness, booleans included (IREE's
    /// `iree_hal_element_numerical_type_is_integer`: every bit of `0x10` set, so `0x10`
    /// signless, `0x11` signed, `0x12` unsigned and `0x13` boolean).
    pub fn is_integer(self) -> bool {
        self.numerical_type() & 0x10 == 0x10
    }

    /// Whether a buffer view of this element type satisfies a program that expects
    /// `expected`, by IREE's rule (`iree_hal_element_types_are_compatible` in
    /// `runtime/src/iree/modules/hal/utils/buffer_diagnostics.c`, which
    /// `hal.buffer_view.assert` applies to every tensor argument): an opaque element type
    /// satisfies anything; an integer satisfies any integer of the same bit count whatever
    /// the signedness of either (`ui16` data for an `i16` argument, `i8` for an `i1` stored
    /// as `bool8`: the program reads the same bytes); anything else must be equal.
    pub fn satisfies(self, expected: HalElementType) -> bool {
        self.is_opaque()
            || (self.is_integer()
                && expected.is_integer()
                && self.bit_count() == expected.bit_count())
            || self == expected
    }

    /// The bits per element.
    pub fn bit_count(self) -> u32 {
        self.0 & 0xFF
    }

    /// Bytes per element (bit counts round up to whole bytes: `i1` takes one byte).
    pub fn byte_size(self) -> u64 {
        u64::from(self.bit_count().div_ceil(8))
    }

    /// Whether elements are narrower than a byte and packed (`i4`, `ui2`, `i1`).
    pub fn is_sub_byte(self) -> bool {
        self.bit_count() < 8 && self.bit_count() > 0
    }

    /// The bytes `count` elements take in a dense buffer, as IREE computes them: whole bytes
    /// per element, or the packed bits rounded up to a byte for sub-byte types (`None` on
    /// overflow).
    pub fn dense_byte_length(self, count: u64) -> Option<u64> {
        if self.is_sub_byte() {
            Some(count.checked_mul(u64::from(self.bit_count()))?.div_ceil(8))
        } else {
            count.checked_mul(self.byte_size())
        }
    }

    /// The name `iree-run-module` prints (`f32`, `i1`, `si8`, `bf16`); `None` when unknown.
    pub fn name(self) -> Option<String> {
        let bits = self.bit_count();
        Some(match self.numerical_type() {
            0x10 => format!("i{bits}"),
            0x11 => format!("si{bits}"),
            0x12 => format!("ui{bits}"),
            0x13 => "i1".to_owned(),
            0x21 => format!("f{bits}"),
            0x22 if bits == 16 => "bf16".to_owned(),
            0x23 => format!("c{bits}"),
            _ => {
                let (_, name) = HalElementType::FLOAT8.iter().find(|(ty, _)| *ty == self)?;
                (*name).to_owned()
            }
        })
    }

    /// Parses a printed name (`f32`, `ui8`, `f8E4M3FN`). `i1` is the 8-bit boolean, as in
    /// IREE's `iree_hal_parse_element_type` (the compiler stores `i1` tensors a byte an
    /// element and asserts `bool8` for them).
    pub fn parse(name: &str) -> Option<HalElementType> {
        if name == "i1" {
            return Some(HalElementType::BOOL8);
        }
        if let Some((ty, _)) = HalElementType::FLOAT8.iter().find(|(_, n)| *n == name) {
            return Some(*ty);
        }
        let (numerical, bits) = if name == "bf16" {
            (0x22, "16")
        } else if let Some(bits) = name.strip_prefix("si") {
            (0x11, bits)
        } else if let Some(bits) = name.strip_prefix("ui") {
            (0x12, bits)
        } else if let Some(bits) = name.strip_prefix('i') {
            (0x10, bits)
        } else if let Some(bits) = name.strip_prefix('f') {
            (0x21, bits)
        } else {
            return None;
        };
        let bits: u32 = bits.parse().ok().filter(|b| (1..=64).contains(b))?;
        Some(HalElementType(numerical << 24 | bits))
    }

    /// A description for errors: the name and the integer (`f32 (0x21000020)`).
    pub fn describe(self) -> String {
        match self.name() {
            Some(name) => format!("{name} ({:#010x})", self.0),
            None => format!("{:#010x}", self.0),
        }
    }

    /// One element (`bytes` holds [`byte_size`](Self::byte_size) little-endian bytes) as
    /// `iree-run-module` prints it: floats as C's `%G`, integers in decimal, anything else
    /// as hex bytes (`01`).
    pub fn format_element(self, bytes: &[u8]) -> String {
        let le = |n: usize| -> u64 {
            bytes
                .iter()
                .take(n)
                .enumerate()
                .fold(0u64, |acc, (i, &b)| acc | u64::from(b) << (8 * i))
        };
        let bits = self.bit_count();
        let sext = |v: u64, bits: u32| -> i64 { ((v << (64 - bits)) as i64) >> (64 - bits) };
        match (self.numerical_type(), bits) {
            (0x10 | 0x11, 8 | 16 | 32 | 64) => sext(le(bits as usize / 8), bits).to_string(),
            (0x12, 8 | 16 | 32 | 64) => le(bits as usize / 8).to_string(),
            (0x21, 32) => c_format_g(f64::from(f32::from_bits(le(4) as u32)), true),
            (0x21, 64) => c_format_g(f64::from_bits(le(8)), true),
            (0x21, 16) => c_format_g(half::f16::from_bits(le(2) as u16).to_f64(), true),
            (0x22, 16) => c_format_g(half::bf16::from_bits(le(2) as u16).to_f64(), true),
            (0x24..=0x28, 8) => match (bytes.first(), Float8::of(self)) {
                (Some(&bits), Some(format)) => c_format_g(format.decode(bits), true),
                _ => String::new(),
            },
            _ => bytes.iter().map(|b| format!("{b:02X}")).collect(),
        }
    }

    /// One element of `iree-run-module`'s `--input` text as its little-endian bytes
    /// ([`byte_size`](Self::byte_size) of them), by IREE's rules
    /// (`iree_hal_parse_element`): integers in decimal within the type's range (8- and 16-bit
    /// signed types take only the upper bound from IREE: `-200` for `i8` wraps), floats in
    /// any `strtof` form (16-bit and 8-bit floats from the `f32` value, rounded to nearest
    /// even), any other type as exactly two hex digits per byte (`i1` bools: `01`; sub-byte
    /// types: one packed byte, two `i4` elements).
    pub fn parse_element(self, text: &str) -> Result<Vec<u8>, String> {
        let bad = || format!("`{text}` is not a valid {} element", self.describe());
        let int = |min: i128, max: i128, size: usize| -> Result<Vec<u8>, String> {
            let value = parse_c_integer(text).ok_or_else(bad)?;
            if value < min || value > max {
                return Err(bad());
            }
            Ok(value.to_le_bytes()[..size].to_vec())
        };
        let float = || parse_c_float(text).ok_or_else(bad);
        match (self.numerical_type(), self.bit_count()) {
            // IREE reads these through atoi_int32 and only checks `temp > MAX`.
            (0x10 | 0x11, 8) => int(i128::from(i32::MIN), i128::from(i8::MAX), 1),
            (0x10 | 0x11, 16) => int(i128::from(i32::MIN), i128::from(i16::MAX), 2),
            (0x10 | 0x11, 32) => int(i128::from(i32::MIN), i128::from(i32::MAX), 4),
            (0x10 | 0x11, 64) => int(i128::from(i64::MIN), i128::from(i64::MAX), 8),
            (0x12, 8) => int(0, i128::from(u8::MAX), 1),
            (0x12, 16) => int(0, i128::from(u16::MAX), 2),
            (0x12, 32) => int(0, i128::from(u32::MAX), 4),
            (0x12, 64) => int(0, i128::from(u64::MAX), 8),
            (0x21, 16) => Ok(half::f16::from_f32(float()? as f32).to_le_bytes().to_vec()),
            (0x22, 16) => Ok(half::bf16::from_f32(float()? as f32).to_le_bytes().to_vec()),
            (0x21, 32) => Ok((float()? as f32).to_le_bytes().to_vec()),
            (0x21, 64) => Ok(float()?.to_le_bytes().to_vec()),
            (0x24..=0x28, 8) => match Float8::of(self) {
                Some(format) => Ok(vec![format.encode(float()? as f32)]),
                None => Err(bad()),
            },
            _ => {
                let size = self.byte_size() as usize;
                if text.len() != size * 2 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!(
                        "`{text}` is not {size} byte(s) of hex, as {} elements are given",
                        self.describe()
                    ));
                }
                (0..size)
                    .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad()))
                    .collect()
            }
        }
    }
}

/// An integer as C's `strtol` family reads IREE's inputs: decimal with an optional sign, or
/// `0x` hex.
fn parse_c_integer(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            i128::from_str_radix(hex, 16).ok()?
        }
        Some(_) => return None,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse::<i128>().ok()?
        }
        None => return None,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A float as C's `strtod` reads it: decimal or exponent forms, `inf`, `nan` (any case).
fn parse_c_float(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    let (negative, body) = match lower.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, lower.strip_prefix('+').unwrap_or(&lower)),
    };
    let value = match body {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ if body.starts_with(|c: char| c.is_ascii_digit() || c == '.') => body.parse().ok()?,
        _ => return None,
    };
    Some(if negative { -value } else { value })
}

/// The encodings of IREE's 8-bit floats: sign, exponent and mantissa bits, the exponent
/// bias, and what the all-ones patterns mean.
#[derive(Clone, Copy, Debug)]
struct Float8 {
    exponent_bits: u32,
    mantissa_bits: u32,
    bias: i32,
    /// Whether the top exponent is infinity/NaN as in IEEE (`E5M2`).
    ieee: bool,
    /// Whether `0x80` (negative zero's bits) is the only NaN (`FNUZ`).
    nan_is_negative_zero: bool,
    /// Whether there is no sign bit (`E8M0FNU`: exponent only, `0xFF` NaN).
    unsigned: bool,
}

impl Float8 {
    fn of(ty: HalElementType) -> Option<Float8> {
        let f = |exponent_bits, mantissa_bits, bias, ieee, nan_is_negative_zero, unsigned| Float8 {
            exponent_bits,
            mantissa_bits,
            bias,
            ieee,
            nan_is_negative_zero,
            unsigned,
        };
        Some(match ty {
            HalElementType::F8E5M2 => f(5, 2, 15, true, false, false),
            HalElementType::F8E4M3FN => f(4, 3, 7, false, false, false),
            HalElementType::F8E5M2FNUZ => f(5, 2, 16, false, true, false),
            HalElementType::F8E4M3FNUZ => f(4, 3, 8, false, true, false),
            HalElementType::F8E8M0FNU => f(8, 0, 127, false, false, true),
            _ => return None,
        })
    }

    fn decode(self, bits: u8) -> f64 {
        let bits = u32::from(bits);
        if self.unsigned {
            return if bits == 0xFF {
                f64::NAN
            } else {
                2f64.powi(bits as i32 - self.bias)
            };
        }
        if self.nan_is_negative_zero && bits == 0x80 {
            return f64::NAN;
        }
        let negative = bits & 0x80 != 0;
        let exponent = (bits >> self.mantissa_bits) & ((1 << self.exponent_bits) - 1);
        let mantissa = bits & ((1 << self.mantissa_bits) - 1);
        let top = (1 << self.exponent_bits) - 1;
        let magnitude = if self.ieee && exponent == top {
            if mantissa == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if !self.ieee
            && !self.nan_is_negative_zero
            && exponent == top
            && mantissa == (1 << self.mantissa_bits) - 1
        {
            f64::NAN
        } else if exponent == 0 {
            f64::from(mantissa) * 2f64.powi(1 - self.bias - self.mantissa_bits as i32)
        } else {
            (1.0 + f64::from(mantissa) / f64::from(1u32 << self.mantissa_bits))
                * 2f64.powi(exponent as i32 - self.bias)
        };
        if negative { -magnitude } else { magnitude }
    }

    /// The code of `value` as IREE's conversion gives it (learnt from what the pinned
    /// runtime does with `iree-run-module` inputs; the `f32_of_*` runs of the
    /// `element_types` fixture record it): the nearest value, ties to the even code (to the
    /// larger power for `f8E8M0FNU`, which has no mantissa); magnitudes below the smallest
    /// subnormal flush to zero; past the largest finite value (by more than half a step),
    /// infinity where the type has one, else NaN (signed for `f8E4M3FN`); zero and negative
    /// finite values of the unsigned `f8E8M0FNU` give its smallest code (infinities NaN).
    fn encode(self, value: f32) -> u8 {
        let nan = match (self.unsigned, self.nan_is_negative_zero) {
            (true, _) => 0xFF,
            (false, true) => 0x80,
            (false, false) => 0x7F,
        };
        if value.is_nan() {
            return nan;
        }
        if self.unsigned && value <= 0.0 && value.is_finite() {
            return 0;
        }
        let value = f64::from(value);
        let sign = if value.is_sign_negative() && !self.unsigned {
            0x80u8
        } else {
            0
        };
        // A signed zero, except where negative zero's bits are NaN.
        let zero = if self.nan_is_negative_zero { 0 } else { sign };
        let magnitude = value.abs();
        // Every finite code, by magnitude: the nearest is found by search, which is exact
        // for 8-bit types (at most 256 codes).
        let codes: Vec<(u8, f64)> = (0u8..=if self.unsigned { 0xFE } else { 0x7F })
            .map(|code| (code, self.decode(code)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        if !self.unsigned && magnitude < self.decode(1) {
            return zero;
        }
        let (largest_code, largest) =
            codes.iter().copied().fold(
                (0, 0.0),
                |best, (c, v)| if v > best.1 { (c, v) } else { best },
            );
        if magnitude.is_infinite() || magnitude > largest {
            let below = self.decode(largest_code.wrapping_sub(1));
            let limit = largest + (largest - below) / 2.0;
            if magnitude < limit || (magnitude == limit && largest_code % 2 == 0) {
                return largest_code | sign;
            }
            return if self.ieee {
                0x7C | sign
            } else if self.nan_is_negative_zero || self.unsigned {
                nan
            } else {
                nan | sign
            };
        }
        let mut best = (0u8, f64::INFINITY);
        for &(code, v) in &codes {
            let distance = (v - magnitude).abs();
            let wins_tie = if self.unsigned {
                code > best.0
            } else {
                code % 2 == 0 && best.0 % 2 == 1
            };
            if distance < best.1 || (distance == best.1 && wins_tie) {
                best = (code, distance);
            }
        }
        if best.0 == 0 && !self.unsigned {
            return zero;
        }
        best.0 | sign
    }
}

/// C's `printf("%g")` (or `%G` when `upper`): 6 significant digits, trailing zeros removed,
/// exponent form outside [1e-4, 1e6), `inf`/`nan` with their sign.
pub fn c_format_g(x: f64, upper: bool) -> String {
    let text = if x.is_nan() {
        if x.is_sign_negative() { "-nan" } else { "nan" }.to_owned()
    } else if x.is_infinite() {
        if x < 0.0 { "-inf" } else { "inf" }.to_owned()
    } else if x == 0.0 {
        if x.is_sign_negative() { "-0" } else { "0" }.to_owned()
    } else {
        let scientific = format!("{x:.5e}");
        let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let trim = |text: &str| -> String {
            if text.contains('.') {
                text.trim_end_matches('0').trim_end_matches('.').to_owned()
            } else {
                text.to_owned()
            }
        };
        if (-4..6).contains(&exponent) {
            let decimals = (5 - exponent).max(0) as usize;
            trim(&format!("{x:.decimals$}"))
        } else {
            let sign = if exponent < 0 { '-' } else { '+' };
            format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
        }
    };
    if upper { text.to_uppercase() } else { text }
}

/// A tensor as `iree-run-module` prints it: `2x3xf32=[1 2 3][4 5 6]` (shape, element type,
/// elements row-major with each row of rank-2-and-up tensors in brackets). At most
/// `max_elements` elements are printed; the text then ends in `...`.
pub fn format_tensor(
    shape: &[u64],
    element_type: HalElementType,
    bytes: &[u8],
    max_elements: u64,
) -> String {
    let mut out = String::new();
    for dim in shape {
        out.push_str(&format!("{dim}x"));
    }
    out.push_str(
        &element_type
            .name()
            .unwrap_or_else(|| format!("{:#010x}", element_type.0)),
    );
    out.push('=');
    // Packed sub-byte elements are printed one a byte, each as its bits in hex (`0C`), as
    // `i1` bools are; iree-run-module refuses to print them (OUT_OF_RANGE).
    let unpacked;
    let bytes = if element_type.is_sub_byte() {
        let bits = element_type.bit_count();
        let per_byte = (8 / bits) as usize;
        let mask = ((1u16 << bits) - 1) as u8;
        let count = shape
            .iter()
            .product::<u64>()
            .min(max_elements.saturating_add(1)) as usize;
        unpacked = (0..count)
            .map_while(|k| {
                let byte = bytes.get(k / per_byte)?;
                Some((byte >> ((k % per_byte) as u32 * bits)) & mask)
            })
            .collect::<Vec<u8>>();
        &unpacked[..]
    } else {
        bytes
    };
    let size = element_type.byte_size() as usize;
    let mut remaining = max_elements;
    format_level(shape, bytes, size, element_type, &mut remaining, &mut out);
    out
}

/// One level of `shape`, as IREE's `iree_hal_format_buffer_elements` writes it: every row of
/// an outer dimension in brackets, and in each innermost row the elements left of the
/// `remaining` budget, then `...` when some were left out, so that rows past the budget print
/// as `[...]` (`2x3xi32=[1 2 3][4...]` with a budget of 4).
fn format_level(
    shape: &[u64],
    bytes: &[u8],
    size: usize,
    ty: HalElementType,
    remaining: &mut u64,
    out: &mut String,
) {
    match shape {
        // A scalar prints as a row of one.
        [] => format_level(&[1], bytes, size, ty, remaining, out),
        [n] => {
            let count = (*remaining).min(*n);
            *remaining -= count;
            for i in 0..count {
                if i > 0 {
                    out.push(' ');
                }
                let at = (i as usize).saturating_mul(size);
                let element = bytes.get(at..at.saturating_add(size)).unwrap_or(&[]);
                out.push_str(&ty.format_element(element));
            }
            if count < *n {
                out.push_str("...");
            }
        }
        [n, rest @ ..] => {
            let stride = rest
                .iter()
                .fold(size as u64, |acc, d| acc.saturating_mul(*d));
            for i in 0..*n {
                let at = (i.saturating_mul(stride)).min(bytes.len() as u64) as usize;
                out.push('[');
                format_level(
                    rest,
                    bytes.get(at..).unwrap_or(&[]),
                    size,
                    ty,
                    remaining,
                    out,
                );
                out.push(']');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "f32", "i32", "i1", "i8", "si16", "ui64", "f16", "bf16", "f64",
        ] {
            assert_eq!(HalElementType::parse(name).unwrap().name().unwrap(), name);
        }
        assert_eq!(HalElementType::parse("f32"), Some(HalElementType::F32));
    }

    #[test]
    fn integers_of_one_width_satisfy_each_other_as_in_iree() {
        let t = |name: &str| HalElementType::parse(name).unwrap();
        assert!(t("ui16").satisfies(t("i16")));
        assert!(t("i16").satisfies(t("si16")));
        assert!(t("i8").satisfies(HalElementType::BOOL8));
        assert!(!t("i32").satisfies(t("i16")));
        assert!(!t("f16").satisfies(t("i16")));
        assert!(!t("i16").satisfies(t("f16")));
        assert!(!t("bf16").satisfies(t("f16")));
        assert!(HalElementType(0x0000_0010).satisfies(t("f16")));
    }

    #[test]
    fn float8_codes_decode_and_encode_back() {
        for (ty, _) in HalElementType::FLOAT8 {
            let format = Float8::of(ty).unwrap();
            for code in 0u8..=255 {
                let value = format.decode(code);
                if value.is_finite() && !(value == 0.0 && code != 0) {
                    assert_eq!(
                        format.encode(value as f32),
                        code,
                        "{ty:?} {code:#x} {value}"
                    );
                }
            }
        }
        assert_eq!(
            HalElementType::F8E4M3FN.parse_element("1000"),
            Ok(vec![0x7F])
        );
        assert_eq!(HalElementType::F8E5M2.parse_element("-2.5"), Ok(vec![0xC1]));
    }

    #[test]
    fn tensors_print_like_iree_run_module() {
        let bytes: Vec<u8> = [1.5f32, 1.0, 3.001, 104.0, 0.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(
            format_tensor(&[2, 3], HalElementType::F32, &bytes, 1024),
            "2x3xf32=[1.5 1 3.001][104 0 6]"
        );
        assert_eq!(
            format_tensor(&[0, 4], HalElementType::F32, &[], 1024),
            "0x4xf32="
        );
        assert_eq!(
            format_tensor(
                &[],
                HalElementType::F32,
                &f32::NEG_INFINITY.to_le_bytes(),
                1024
            ),
            "f32=-INF"
        );
        assert_eq!(
            format_tensor(&[3], HalElementType::BOOL8, &[1, 1, 0], 1024),
            "3xi1=01 01 00"
        );
        assert_eq!(
            format_tensor(&[3], HalElementType::F32, &[0; 12], 2),
            "3xf32=0 0..."
        );
        assert_eq!(c_format_g(1e10, true), "1E+10");
        assert_eq!(
            format_tensor(
                &[4],
                HalElementType::parse("i4").unwrap(),
                &[0x21, 0xC3],
                1024
            ),
            "4xi4=01 02 03 0C"
        );
    }
}
