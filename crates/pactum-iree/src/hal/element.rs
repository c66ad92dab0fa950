//! HAL element types (`hal.element_type` integers) and tensors printed as `iree-run-module`
//! prints them.
//!
//! An element type is `numerical_type << 24 | bit_count`. The numerical types pactum knows:
//! `0x10` signless integer (`i32`), `0x11` signed (`si32`), `0x12` unsigned (`ui32`), `0x13`
//! boolean, `0x21` IEEE float (`f32`), `0x22` brain float (`bf16`), `0x23` complex float.

/// A HAL element type: `numerical_type << 24 | bit_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HalElementType(pub u32);

impl HalElementType {
    /// Signless 1-bit integers (stored one per byte).
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

    /// The numerical type (the high byte).
    pub fn numerical_type(self) -> u8 {
        (self.0 >> 24) as u8
    }

    /// The bits per element.
    pub fn bit_count(self) -> u32 {
        self.0 & 0xFF
    }

    /// Bytes per element (bit counts round up to whole bytes: `i1` takes one byte).
    pub fn byte_size(self) -> u64 {
        u64::from(self.bit_count().div_ceil(8))
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
            _ => return None,
        })
    }

    /// Parses a printed name (`f32`, `i1`, `ui8`).
    pub fn parse(name: &str) -> Option<HalElementType> {
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
            _ => bytes.iter().map(|b| format!("{b:02X}")).collect(),
        }
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
    let size = element_type.byte_size() as usize;
    let mut printed = 0u64;
    let mut elided = false;
    format_level(
        shape,
        bytes,
        size,
        element_type,
        max_elements,
        &mut printed,
        &mut elided,
        &mut out,
    );
    if elided {
        out.push_str("...");
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn format_level(
    shape: &[u64],
    bytes: &[u8],
    size: usize,
    ty: HalElementType,
    max: u64,
    printed: &mut u64,
    elided: &mut bool,
    out: &mut String,
) {
    match shape {
        [] => {
            if *printed >= max {
                *elided = true;
                return;
            }
            out.push_str(&ty.format_element(bytes.get(..size).unwrap_or(&[])));
            *printed += 1;
        }
        [n] => {
            for i in 0..*n {
                if *printed >= max {
                    *elided = true;
                    return;
                }
                if i > 0 {
                    out.push(' ');
                }
                let at = (i as usize).saturating_mul(size);
                let element = bytes.get(at..at.saturating_add(size)).unwrap_or(&[]);
                out.push_str(&ty.format_element(element));
                *printed += 1;
            }
        }
        [n, rest @ ..] => {
            let stride = rest
                .iter()
                .fold(size as u64, |acc, d| acc.saturating_mul(*d));
            for i in 0..*n {
                if *elided {
                    return;
                }
                let at = (i.saturating_mul(stride)).min(bytes.len() as u64) as usize;
                out.push('[');
                format_level(
                    rest,
                    bytes.get(at..).unwrap_or(&[]),
                    size,
                    ty,
                    max,
                    printed,
                    elided,
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
            format_tensor(&[3], HalElementType::I1, &[1, 1, 0], 1024),
            "3xi1=01 01 00"
        );
        assert_eq!(
            format_tensor(&[3], HalElementType::F32, &[0; 12], 2),
            "3xf32=0 0..."
        );
        assert_eq!(c_format_g(1e10, true), "1E+10");
    }
}
