//! IREE's `check` module and the test runner built on it: what `iree-check-module` does for
//! IREE's e2e tests, and what `pactum test` does.
//!
//! Test programs call the `check` dialect (`check.expect_true`, `check.expect_eq_const`, ...),
//! which `iree-compile` lowers to calls of five functions of a VM module named `check`, all
//! imported as optional: a runtime without the module runs the program and skips every
//! expectation. [`CheckModule`] is that module, a native module built with
//! [`NativeModuleBuilder`] whose functions have exactly IREE's calling conventions:
//!
//! | function | arguments | calling convention | fails when |
//! |---|---|---|---|
//! | `expect_true` | i32 | `0i_v` | the operand is 0 |
//! | `expect_false` | i32 | `0i_v` | the operand is not 0 |
//! | `expect_all_true` | device, view | `0rr_v` | an element is 0 (`-0.0` included) |
//! | `expect_eq` | device, lhs, rhs | `0rrr_v` | element types, shapes or bytes differ |
//! | `expect_almost_eq` | device, lhs, rhs, atol, rtol | `0rrrff_v` | an element pair is not close ([`is_close`]) |
//!
//! A failed expectation is not an error: as in IREE, it is recorded ([`CheckFailure`]: the
//! check, the first failing element's index, and IREE's message naming the values) and the
//! program goes on. Only what IREE reports as an error is one: `expect_all_true` of elements
//! other than 8–64-bit integers, f32 and f64, and `expect_almost_eq` of elements other than
//! floats (f16, bf16, f32, f64 and the f8 formats) when the element types and shapes match,
//! are `INVALID_ARGUMENT` errors of the invocation (`unsupported element type i1`).
//!
//! `expect_almost_eq` is NumPy's `isclose` in double precision with `lhs` the actual value and
//! `rhs` the expected one: `lhs == rhs`, or both NaN, or `rhs` finite and
//! `|lhs - rhs| <= atol + rtol * |rhs|`. Small float types are widened to f32 first, as IREE
//! does. The compiler passes `atol = 1e-4, rtol = 0` when a test gives neither.
//!
//! Messages follow IREE's (`Expected 0 to be nonzero.`, `Expected near equality of these
//! values. Contents does not match to tolerance parameters atol=0.0001, rtol=0. The first
//! failure occurs at index 1 as the lhs value 2 differs from the rhs value 2.001 by
//! 9.999e-04.`, then both views printed); where IREE names no element, pactum adds one:
//! `expect_eq` says where the contents first differ and both values, `expect_all_true` where
//! the first zero is.
//!
//! [`TestSuite`] runs a module's test functions as `iree-check-module` does: every export
//! except those named `__…` or holding `$` is a test, and must take no arguments and return
//! nothing; each test runs in a fresh VM context with a fresh `check` module and a `hal` module
//! over a fresh [`LocalDevice`]; it passes when the invocation succeeds and no expectation
//! failed.
//!
//! ```
//! use pactum_iree::check::{TestOptions, TestSuite, Verdict};
//!
//! let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vmfb");
//! let suite = TestSuite::load(format!("{fixtures}/check_failure_vmvx.vmfb"), TestOptions::default())?;
//! let result = suite.run("eq_i32_contents");
//! assert_eq!(result.verdict(), Verdict::Fail);
//! let failure = &result.failures.recorded[0];
//! assert_eq!(failure.index, Some(3));
//! assert!(failure.message.contains("the lhs value is 5 and the rhs value is 6"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use crate::hal::{
    HalBufferView, HalDevice, HalElementType, HalModule, LocalDevice, Workers, c_format_g,
};
use crate::signature::cconv::CallingConvention;
use crate::status::StatusError;
use crate::vm::{BuiltNativeModule, Context, Limits, NativeModuleBuilder, VmError};
use crate::vmfb::{VmfbError, VmfbFile};

/// The `check` module's version (IREE's is 0; importers require at least 0).
pub const CHECK_MODULE_VERSION: u32 = 0;

/// The most failures kept per thread until they are taken; later ones are only counted
/// ([`Failures::unrecorded`]), so a failing expectation in a long loop cannot exhaust memory.
pub const MAX_RECORDED_FAILURES: usize = 100;

/// The most elements of a view printed in a failure message, as IREE prints them.
const MAX_PRINTED_ELEMENTS: u64 = 1024;

/// Which expectation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckKind {
    /// `check.expect_true`.
    True,
    /// `check.expect_false`.
    False,
    /// `check.expect_all_true`.
    AllTrue,
    /// `check.expect_eq` (and `expect_eq_const`).
    Eq,
    /// `check.expect_almost_eq` (and `expect_almost_eq_const`).
    AlmostEq,
}

impl CheckKind {
    /// The function's name in the module (`expect_eq`).
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::True => "expect_true",
            CheckKind::False => "expect_false",
            CheckKind::AllTrue => "expect_all_true",
            CheckKind::Eq => "expect_eq",
            CheckKind::AlmostEq => "expect_almost_eq",
        }
    }
}

impl fmt::Display for CheckKind {
    /// `check.expect_eq`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "check.{}", self.name())
    }
}

/// A failed expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    /// The check.
    pub check: CheckKind,
    /// The row-major index of the first failing element, when the check compared elements
    /// (`expect_all_true`; `expect_eq` and `expect_almost_eq` when types and shapes match).
    pub index: Option<u64>,
    /// IREE's message: a first line saying what failed (and where, with the values), then,
    /// for tensor checks, the operands as `iree-run-module` prints them.
    pub message: String,
}

impl CheckFailure {
    /// The message's first line.
    pub fn headline(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

impl fmt::Display for CheckFailure {
    /// `check.expect_eq: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.message)
    }
}

/// The failures recorded on one thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    /// The first [`MAX_RECORDED_FAILURES`], in the order they happened.
    pub recorded: Vec<CheckFailure>,
    /// How many more failed after those.
    pub unrecorded: u64,
}

impl Failures {
    /// Whether no expectation failed.
    pub fn is_empty(&self) -> bool {
        self.recorded.is_empty() && self.unrecorded == 0
    }

    /// How many expectations failed.
    pub fn count(&self) -> u64 {
        self.recorded.len() as u64 + self.unrecorded
    }
}

// ---------------------------------------------------------------------------- evaluation

/// NumPy's `isclose(actual, expected, rtol, atol)`, with NaN close to NaN (IREE's rule):
/// `actual == expected`, or both are NaN, or `expected` is finite and
/// `|actual - expected| <= atol + rtol * |expected|`. Asymmetric: `rtol` scales the
/// expected value, and an infinite expected value is only close to itself.
pub fn is_close(actual: f64, expected: f64, atol: f64, rtol: f64) -> bool {
    actual == expected
        || (actual.is_nan() && expected.is_nan())
        || (expected.is_finite() && (actual - expected).abs() <= atol + rtol * expected.abs())
}

/// How a float format of at most 16 bits encodes its values, following IREE's generic
/// conversion to f32.
struct SmallFloat {
    exponent_bits: u32,
    mantissa_bits: u32,
    has_infinity: bool,
    /// Added to the IEEE bias `2^(exponent_bits - 1) - 1`.
    bias_tweak: i32,
    /// NaN is the bit pattern of negative zero (the `FNUZ` formats), not an all-ones exponent.
    nan_is_negative_zero: bool,
}

impl SmallFloat {
    const F16: SmallFloat = SmallFloat::ieee(5, 10);
    const BF16: SmallFloat = SmallFloat::ieee(8, 7);
    const F8_E5M2: SmallFloat = SmallFloat::ieee(5, 2);
    const F8_E4M3FN: SmallFloat = SmallFloat {
        exponent_bits: 4,
        mantissa_bits: 3,
        has_infinity: false,
        bias_tweak: 0,
        nan_is_negative_zero: false,
    };
    const F8_E5M2FNUZ: SmallFloat = SmallFloat::fnuz(5, 2);
    const F8_E4M3FNUZ: SmallFloat = SmallFloat::fnuz(4, 3);

    const fn ieee(exponent_bits: u32, mantissa_bits: u32) -> SmallFloat {
        SmallFloat {
            exponent_bits,
            mantissa_bits,
            has_infinity: true,
            bias_tweak: 0,
            nan_is_negative_zero: false,
        }
    }

    const fn fnuz(exponent_bits: u32, mantissa_bits: u32) -> SmallFloat {
        SmallFloat {
            exponent_bits,
            mantissa_bits,
            has_infinity: false,
            bias_tweak: 1,
            nan_is_negative_zero: true,
        }
    }

    /// The value of `bits` (the low `1 + exponent_bits + mantissa_bits` bits). Every value of
    /// these formats is exact in f32, and so in f64. NaNs decode to a positive NaN.
    fn decode(&self, bits: u32) -> f64 {
        let sign_mask = 1u32 << (self.exponent_bits + self.mantissa_bits);
        let mantissa_mask = (1u32 << self.mantissa_bits) - 1;
        let exponent_max = (1u32 << self.exponent_bits) - 1;
        let bias = (1i32 << (self.exponent_bits - 1)) - 1 + self.bias_tweak;
        let sign = if bits & sign_mask != 0 { -1.0 } else { 1.0 };
        let exponent = (bits >> self.mantissa_bits) & exponent_max;
        let mantissa = bits & mantissa_mask;
        let mantissa_bits = self.mantissa_bits as i32;
        if exponent == exponent_max && self.has_infinity {
            return if mantissa != 0 {
                f64::NAN
            } else {
                sign * f64::INFINITY
            };
        }
        if exponent == exponent_max && !self.nan_is_negative_zero && mantissa == mantissa_mask {
            // Without infinities the top exponent holds finite values, except all ones.
            return f64::NAN;
        }
        if self.nan_is_negative_zero && bits & (sign_mask | (sign_mask - 1)) == sign_mask {
            return f64::NAN;
        }
        if exponent == 0 {
            // Subnormal: exponent 1, no implied leading 1.
            return sign * f64::from(mantissa) * 2f64.powi(1 - bias - mantissa_bits);
        }
        sign * f64::from(mantissa | (1 << self.mantissa_bits))
            * 2f64.powi(exponent as i32 - bias - mantissa_bits)
    }
}

/// The element types `expect_almost_eq` compares: IREE's float types of at most 64 bits.
const F8_E5M2: HalElementType = HalElementType(0x2400_0008);
const F8_E4M3FN: HalElementType = HalElementType(0x2500_0008);
const F8_E5M2FNUZ: HalElementType = HalElementType(0x2600_0008);
const F8_E4M3FNUZ: HalElementType = HalElementType(0x2700_0008);
const F8_E8M0FNU: HalElementType = HalElementType(0x2800_0008);

/// One float element (`bytes` little-endian, exactly its size) of a type `expect_almost_eq`
/// supports, as IREE loads it: f32 and f64 as they are; f16, bf16 and the f8 formats
/// (`f8E5M2`, `f8E4M3FN`, `f8E5M2FNUZ`, `f8E4M3FNUZ`, `f8E8M0FNU`) widened to f32. `None` for
/// any other type or a wrong byte count.
pub fn float_element(element_type: HalElementType, bytes: &[u8]) -> Option<f64> {
    let small = |format: &SmallFloat| -> Option<f64> {
        let bits = match *bytes {
            [b] => u32::from(b),
            [lo, hi] => u32::from(u16::from_le_bytes([lo, hi])),
            _ => return None,
        };
        Some(format.decode(bits))
    };
    match element_type {
        HalElementType::F32 => Some(f64::from(f32::from_le_bytes(bytes.try_into().ok()?))),
        HalElementType::F64 => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
        HalElementType::F16 if bytes.len() == 2 => small(&SmallFloat::F16),
        HalElementType::BF16 if bytes.len() == 2 => small(&SmallFloat::BF16),
        F8_E5M2 if bytes.len() == 1 => small(&SmallFloat::F8_E5M2),
        F8_E4M3FN if bytes.len() == 1 => small(&SmallFloat::F8_E4M3FN),
        F8_E5M2FNUZ if bytes.len() == 1 => small(&SmallFloat::F8_E5M2FNUZ),
        F8_E4M3FNUZ if bytes.len() == 1 => small(&SmallFloat::F8_E4M3FNUZ),
        // A power of two with no sign, mantissa or zero; all ones is NaN.
        F8_E8M0FNU => match *bytes {
            [0xFF] => Some(f64::NAN),
            [exponent] => Some(2f64.powi(i32::from(exponent) - 127)),
            _ => None,
        },
        _ => None,
    }
}

/// An element type as IREE's `iree_hal_format_element_type` writes it in messages (`i32`,
/// `ui8`, `i1` for booleans, `bf16`, `f8E4M3FN`, `*8` for an unknown kind).
pub fn element_type_name(element_type: HalElementType) -> String {
    match element_type {
        F8_E5M2 => return "f8E5M2".to_owned(),
        F8_E4M3FN => return "f8E4M3FN".to_owned(),
        F8_E5M2FNUZ => return "f8E5M2FNUZ".to_owned(),
        F8_E4M3FNUZ => return "f8E4M3FNUZ".to_owned(),
        F8_E8M0FNU => return "f8E8M0FNU".to_owned(),
        _ => {}
    }
    let (prefix, bits) = match element_type.numerical_type() {
        0x10 => ("i", element_type.bit_count()),
        0x11 => ("si", element_type.bit_count()),
        0x12 => ("ui", element_type.bit_count()),
        0x13 => ("i", 1),
        0x21 => ("f", element_type.bit_count()),
        0x22 => ("bf", element_type.bit_count()),
        0x23 => ("cf", element_type.bit_count()),
        _ => ("*", element_type.bit_count()),
    };
    format!("{prefix}{bits}")
}

fn unsupported(element_type: HalElementType) -> StatusError {
    StatusError::invalid_argument(format!(
        "unsupported element type {}",
        element_type_name(element_type)
    ))
}

/// C's `printf("%.3e")` (C++'s `std::scientific` with precision 3): `-1.100e+01`, `nan`.
fn c_format_e3(x: f64) -> String {
    if !x.is_finite() {
        return c_format_g(x, false);
    }
    let text = format!("{x:.3e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

/// C++'s `ostream << double`: `%g` (`0.0001`, `1e+30`, `-nan`).
fn c_format(x: f64) -> String {
    c_format_g(x, false)
}

/// The integer element types (signless, signed, unsigned, boolean) of 8–64 bits: whether
/// they read as signed.
fn integer_signedness(element_type: HalElementType) -> Option<bool> {
    if !matches!(element_type.bit_count(), 8 | 16 | 32 | 64) {
        return None;
    }
    match element_type.numerical_type() {
        0x10 | 0x11 => Some(true),
        0x12 | 0x13 => Some(false),
        _ => None,
    }
}

fn little_endian(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// One element as a failure message names it: integers in decimal, floats as `%g`, other
/// types as their bits (`0x7FC00001`).
fn element_text(element_type: HalElementType, bytes: &[u8]) -> String {
    if let Some(value) = float_element(element_type, bytes) {
        return c_format(value);
    }
    match integer_signedness(element_type) {
        Some(true) => {
            let shift = 64 - 8 * bytes.len() as u32;
            (((little_endian(bytes) << shift) as i64) >> shift).to_string()
        }
        Some(false) => little_endian(bytes).to_string(),
        None => bits_text(bytes),
    }
}

/// An element's bits as one little-endian hex number (`0x7FC00001`).
fn bits_text(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().rev().map(|b| format!("{b:02X}")).collect();
    format!("0x{digits}")
}

/// The bytes a view's shape and element type cover, from the start of its buffer (as IREE
/// maps them).
fn view_bytes(view: &HalBufferView) -> Result<Vec<u8>, StatusError> {
    let length = HalBufferView::byte_length(&view.shape, view.element_type)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| StatusError::out_of_range("the buffer view's size overflows"))?;
    let mut bytes = vec![0u8; length];
    view.buffer.read(0, &mut bytes)?;
    Ok(bytes)
}

/// `  lhs:\n    <view>` lines of a failure message.
fn operand_lines(message: &mut String, operands: &[(&str, &HalBufferView)]) {
    for (name, view) in operands {
        message.push_str(&format!(
            "\n  {name}:\n    {}",
            view.format(MAX_PRINTED_ELEMENTS)
        ));
    }
}

/// `check.expect_true` / `check.expect_false` on `operand`.
pub fn expect_scalar(check: CheckKind, operand: i32) -> Option<CheckFailure> {
    let message = match check {
        CheckKind::True if operand == 0 => format!("Expected {operand} to be nonzero."),
        CheckKind::False if operand != 0 => format!("Expected {operand} to be zero."),
        _ => return None,
    };
    Some(CheckFailure {
        check,
        index: None,
        message,
    })
}

/// `check.expect_all_true`: every element of `view` is nonzero. An element type other than
/// an 8–64-bit integer, f32 or f64 is an `INVALID_ARGUMENT` error.
pub fn expect_all_true(view: &HalBufferView) -> Result<Option<CheckFailure>, StatusError> {
    let element_type = view.element_type;
    let is_float = matches!(element_type, HalElementType::F32 | HalElementType::F64);
    if !is_float
        && integer_signedness(element_type).is_none_or(|_| element_type.numerical_type() == 0x13)
    {
        return Err(unsupported(element_type));
    }
    let size = element_type.byte_size() as usize;
    let bytes = view_bytes(view)?;
    let zero = bytes.chunks_exact(size).position(|element| {
        if is_float {
            float_element(element_type, element) == Some(0.0)
        } else {
            element.iter().all(|&b| b == 0)
        }
    });
    let Some(index) = zero else {
        return Ok(None);
    };
    let at = index * size;
    let mut message = format!(
        "Expected all elements to be nonzero. The first zero is at index {index} ({}).",
        element_text(element_type, &bytes[at..at + size])
    );
    operand_lines(&mut message, &[("operand", view)]);
    Ok(Some(CheckFailure {
        check: CheckKind::AllTrue,
        index: Some(index as u64),
        message,
    }))
}

/// `check.expect_eq`: equal element types, shapes and bytes (floats compare by their bits).
pub fn expect_eq(
    lhs: &HalBufferView,
    rhs: &HalBufferView,
) -> Result<Option<CheckFailure>, StatusError> {
    let lhs_bytes = view_bytes(lhs)?;
    let rhs_bytes = view_bytes(rhs)?;
    let types_equal = lhs.element_type == rhs.element_type;
    let shapes_equal = lhs.shape == rhs.shape;
    let contents_equal = lhs_bytes == rhs_bytes;
    if types_equal && shapes_equal && contents_equal {
        return Ok(None);
    }
    let mut message = String::from("Expected equality of these values.");
    if !types_equal {
        message.push_str(" Element types do not match.");
    }
    if !shapes_equal {
        message.push_str(" Shapes do not match.");
    }
    let mut index = None;
    if !contents_equal {
        message.push_str(" Contents does not match.");
        let size = lhs.element_type.byte_size() as usize;
        if types_equal && shapes_equal && size > 0 {
            let pairs = lhs_bytes
                .chunks_exact(size)
                .zip(rhs_bytes.chunks_exact(size));
            if let Some((at, (l, r))) = pairs.enumerate().find(|(_, (l, r))| l != r) {
                let mut lhs_text = element_text(lhs.element_type, l);
                let mut rhs_text = element_text(rhs.element_type, r);
                if lhs_text == rhs_text {
                    // Different bits that print alike (NaN payloads, floats close together).
                    lhs_text.push_str(&format!(" ({})", bits_text(l)));
                    rhs_text.push_str(&format!(" ({})", bits_text(r)));
                }
                message.push_str(&format!(
                    " The first difference occurs at index {at}, where the lhs value is \
                     {lhs_text} and the rhs value is {rhs_text}."
                ));
                index = Some(at as u64);
            }
        }
    }
    operand_lines(&mut message, &[("lhs", lhs), ("rhs", rhs)]);
    Ok(Some(CheckFailure {
        check: CheckKind::Eq,
        index,
        message,
    }))
}

/// `check.expect_almost_eq`: equal element types and shapes, and every element of `lhs` (the
/// actual values) close to the one of `rhs` (the expected values) by [`is_close`]. When types
/// and shapes match, an element type that is not a float ([`float_element`]) is an
/// `INVALID_ARGUMENT` error.
pub fn expect_almost_eq(
    lhs: &HalBufferView,
    rhs: &HalBufferView,
    atol: f32,
    rtol: f32,
) -> Result<Option<CheckFailure>, StatusError> {
    let types_equal = lhs.element_type == rhs.element_type;
    let shapes_equal = lhs.shape == rhs.shape;
    let mut far = None;
    if types_equal && shapes_equal {
        let element_type = lhs.element_type;
        let size = element_type.byte_size() as usize;
        if float_element(element_type, &vec![0; size]).is_none() {
            return Err(unsupported(element_type));
        }
        let lhs_bytes = view_bytes(lhs)?;
        let rhs_bytes = view_bytes(rhs)?;
        let pairs = lhs_bytes
            .chunks_exact(size)
            .zip(rhs_bytes.chunks_exact(size));
        for (at, (l, r)) in pairs.enumerate() {
            let actual = float_element(element_type, l).unwrap_or(f64::NAN);
            let expected = float_element(element_type, r).unwrap_or(f64::NAN);
            if !is_close(actual, expected, f64::from(atol), f64::from(rtol)) {
                far = Some((at, actual, expected));
                break;
            }
        }
        if far.is_none() {
            return Ok(None);
        }
    }
    let mut message = String::from("Expected near equality of these values.");
    if !types_equal {
        message.push_str(" Element types do not match.");
    }
    if !shapes_equal {
        message.push_str(" Shapes do not match.");
    }
    if let Some((at, actual, expected)) = far {
        message.push_str(&format!(
            " Contents does not match to tolerance parameters atol={}, rtol={}. The first \
             failure occurs at index {at} as the lhs value {} differs from the rhs value {} \
             by {}.",
            c_format(f64::from(atol)),
            c_format(f64::from(rtol)),
            c_format(actual),
            c_format(expected),
            c_format_e3(expected - actual),
        ));
    }
    operand_lines(&mut message, &[("lhs", lhs), ("rhs", rhs)]);
    Ok(Some(CheckFailure {
        check: CheckKind::AlmostEq,
        index: far.map(|(at, _, _)| at as u64),
        message,
    }))
}

// ---------------------------------------------------------------------------- the module

/// The failures recorded by invocations, per thread (the thread an invocation runs on is
/// the thread that calls the check functions, so failures are told apart by invocation even
/// when several run at once in one context).
#[derive(Default)]
struct State {
    by_thread: Mutex<HashMap<ThreadId, Failures>>,
    /// How many failures are recorded and not yet taken, so that taking none costs an atomic
    /// load.
    pending: AtomicUsize,
}

impl State {
    /// Records the failure `evaluate` finds, if any, for the calling thread; past
    /// [`MAX_RECORDED_FAILURES`] it is only counted.
    fn record(
        &self,
        evaluate: impl FnOnce() -> Result<Option<CheckFailure>, StatusError>,
    ) -> Result<(), StatusError> {
        let Some(failure) = evaluate()? else {
            return Ok(());
        };
        let thread = std::thread::current().id();
        let mut by_thread = self
            .by_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let failures = by_thread.entry(thread).or_default();
        if failures.recorded.len() >= MAX_RECORDED_FAILURES {
            failures.unrecorded += 1;
        } else {
            failures.recorded.push(failure);
        }
        self.pending.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn take(&self) -> Failures {
        if self.pending.load(Ordering::Relaxed) == 0 {
            return Failures::default();
        }
        let thread = std::thread::current().id();
        let mut by_thread = self
            .by_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let failures = by_thread.remove(&thread).unwrap_or_default();
        self.pending
            .fetch_sub(failures.count() as usize, Ordering::Relaxed);
        failures
    }
}

/// IREE's `check` VM module (version 0): the five functions compiled test programs import,
/// recording failed expectations per thread until [`take_failures`](Self::take_failures).
///
/// Register it before the modules that import it; keep an `Arc` of it to take the failures:
///
/// ```
/// use std::sync::Arc;
/// use pactum_iree::check::CheckModule;
/// use pactum_iree::vm::{Context, Limits, Value};
///
/// let check = Arc::new(CheckModule::new());
/// let mut context = Context::new(Limits::default());
/// context.register_native(check.clone())?;
/// context.call("check.expect_true", &[Value::I32(0)])?; // fails, but is no error
/// context.call("check.expect_false", &[Value::I32(0)])?;
/// let failures = check.take_failures();
/// assert_eq!(failures.count(), 1);
/// assert_eq!(failures.recorded[0].to_string(), "check.expect_true: Expected 0 to be nonzero.");
/// assert!(check.take_failures().is_empty());
/// # Ok::<(), pactum_iree::vm::VmError>(())
/// ```
pub struct CheckModule {
    module: BuiltNativeModule<State>,
}

impl fmt::Debug for CheckModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckModule")
            .field(
                "pending_failures",
                &self.module.state().pending.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

impl Default for CheckModule {
    fn default() -> Self {
        CheckModule::new()
    }
}

impl CheckModule {
    /// A `check` module with no failures recorded.
    pub fn new() -> CheckModule {
        let module = NativeModuleBuilder::new("check", CHECK_MODULE_VERSION)
            .function("expect_true", "0i_v", |state: &State, operand: i32| {
                state.record(|| Ok(expect_scalar(CheckKind::True, operand)))
            })
            .function("expect_false", "0i_v", |state: &State, operand: i32| {
                state.record(|| Ok(expect_scalar(CheckKind::False, operand)))
            })
            // The device is where the views' buffers live; every buffer pactum's devices make
            // is host memory, so nothing needs to be transferred before it is read.
            .function(
                "expect_all_true",
                "0rr_v",
                |state: &State, _device: Option<&Arc<dyn HalDevice>>, view: &HalBufferView| {
                    state.record(|| expect_all_true(view))
                },
            )
            .function(
                "expect_eq",
                "0rrr_v",
                |state: &State,
                 _device: Option<&Arc<dyn HalDevice>>,
                 lhs: &HalBufferView,
                 rhs: &HalBufferView| { state.record(|| expect_eq(lhs, rhs)) },
            )
            .function(
                "expect_almost_eq",
                "0rrrff_v",
                |state: &State,
                 _device: Option<&Arc<dyn HalDevice>>,
                 lhs: &HalBufferView,
                 rhs: &HalBufferView,
                 atol: f32,
                 rtol: f32| {
                    state.record(|| expect_almost_eq(lhs, rhs, atol, rtol))
                },
            )
            .build(State::default());
        CheckModule { module }
    }

    /// Takes the failures recorded by invocations on the calling thread since the last take,
    /// in order.
    pub fn take_failures(&self) -> Failures {
        self.module.state().take()
    }
}

crate::vm::native_module_is_built!(CheckModule, module);

// ---------------------------------------------------------------------------- test runs

/// How [`TestSuite`] runs tests.
#[derive(Clone, Debug, Default)]
pub struct TestOptions {
    /// The limits of every test's context.
    pub limits: Limits,
    /// Who runs ELF (`llvm-cpu`) dispatches: [`Workers::shared`] (`local-task`, the default)
    /// or [`Workers::CallerThread`] (`local-sync`).
    pub workers: Workers,
    /// A Vulkan device to run the tests on instead of the local one (`workers` then runs
    /// nothing): each test's context gets a clone charging its own memory budget.
    #[cfg(feature = "vulkan")]
    pub vulkan: Option<crate::hal::VulkanDevice>,
    /// Bytecode modules loaded before the test module in every test's context, in order (as
    /// the repeated `--module` of IREE's tools): the test module may import their functions.
    pub linked: Vec<Arc<VmfbFile>>,
    /// The parameter scopes of the `io_parameters` module, registered in every test's
    /// context when a module imports it (IREE's `--parameters=SCOPE=FILE`).
    #[cfg(feature = "parameters")]
    pub parameters: Arc<crate::parameters::ParameterProvider>,
}

/// Why a module's tests cannot run.
#[derive(Debug)]
pub enum TestRunError {
    /// The file is not a readable `.vmfb`.
    Open {
        /// The file.
        path: String,
        /// Why.
        error: VmfbError,
    },
    /// An export that is not skipped takes arguments or returns results.
    NotATest {
        /// The export.
        function: String,
        /// Its calling convention.
        cconv: String,
    },
    /// A test asked for by name is not one of the module's.
    UnknownTest {
        /// The name asked for.
        name: String,
        /// The module's tests.
        tests: Vec<String>,
    },
    /// The module does not load, link or initialise in a context with `check` and `hal`.
    Load(VmError),
}

impl fmt::Display for TestRunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TestRunError::Open { path, error } => write!(f, "cannot load {path}: {error}"),
            TestRunError::NotATest { function, cconv } => write!(
                f,
                "export `{function}` is not a test function: tests take no arguments and \
                 return nothing, but its calling convention is `{cconv}` (exports named `__…` \
                 or holding `$` are not tests)"
            ),
            TestRunError::UnknownTest { name, tests } => write!(
                f,
                "no test function `{name}` (the module's tests: {})",
                if tests.is_empty() {
                    "none".to_owned()
                } else {
                    tests.join(", ")
                }
            ),
            TestRunError::Load(error) => write!(f, "the module does not load: {error}"),
        }
    }
}

impl std::error::Error for TestRunError {}

/// The verdict on one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The invocation succeeded and no expectation failed.
    Pass,
    /// The invocation succeeded and an expectation failed.
    Fail,
    /// The invocation (or its context) failed.
    Error,
}

/// What running one test found.
#[derive(Debug)]
pub struct TestResult {
    /// The test function.
    pub name: String,
    /// The expectations that failed, in order.
    pub failures: Failures,
    /// The invocation's error, when it failed (an unsupported element type, a trap, ...).
    pub error: Option<VmError>,
}

impl TestResult {
    /// Pass, fail or error.
    pub fn verdict(&self) -> Verdict {
        if self.error.is_some() {
            Verdict::Error
        } else if self.failures.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail
        }
    }
}

/// Whether export `name` is a test candidate: `iree-check-module` skips names starting with
/// `__` (the initialiser, helpers) and names holding `$`.
pub fn is_skipped_export(name: &str) -> bool {
    name.starts_with("__") || name.contains('$')
}

/// A module's test functions, ready to run, each in a context of its own.
#[derive(Debug)]
pub struct TestSuite {
    file: Arc<VmfbFile>,
    module: String,
    tests: Vec<String>,
    options: TestOptions,
}

impl TestSuite {
    /// Opens the module at `path` and lists its tests (see [`from_file`](Self::from_file)).
    pub fn load(path: impl AsRef<Path>, options: TestOptions) -> Result<TestSuite, TestRunError> {
        let path = path.as_ref();
        let file = VmfbFile::open(path).map_err(|error| TestRunError::Open {
            path: path.display().to_string(),
            error,
        })?;
        TestSuite::from_file(Arc::new(file), options)
    }

    /// Lists the tests of `file`: its exports in order, except those named `__…` or holding
    /// `$`; an export among them that takes arguments or returns results is refused, as
    /// `iree-check-module` refuses the run. The module is then loaded once in a context with
    /// `check` and `hal` (verified, linked, initialised), so that a module that cannot load
    /// is one error rather than one per test.
    pub fn from_file(file: Arc<VmfbFile>, options: TestOptions) -> Result<TestSuite, TestRunError> {
        let opened = |error| TestRunError::Open {
            path: "the module".to_owned(),
            error,
        };
        let module = file.module().map_err(opened)?;
        let mut tests = Vec::new();
        for export in module.exports() {
            let name = export.local_name;
            if is_skipped_export(name) {
                continue;
            }
            let cconv = module
                .export_signature(&export)
                .and_then(|s| s.calling_convention)
                .unwrap_or("");
            let nullary = CallingConvention::parse(cconv)
                .is_ok_and(|c| c.args().is_empty() && c.results().is_empty());
            if !nullary {
                return Err(TestRunError::NotATest {
                    function: name.to_owned(),
                    cconv: cconv.to_owned(),
                });
            }
            tests.push(name.to_owned());
        }
        let module = module.name().to_owned();
        let suite = TestSuite {
            file,
            module,
            tests,
            options,
        };
        suite.context().map_err(TestRunError::Load)?;
        Ok(suite)
    }

    /// The module's name.
    pub fn module_name(&self) -> &str {
        &self.module
    }

    /// The test functions, in the module's order.
    pub fn tests(&self) -> &[String] {
        &self.tests
    }

    /// The tests `names` asks for, in the module's order (every test when `names` is empty);
    /// a name that is not a test is an error.
    pub fn select<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<&str>, TestRunError> {
        if let Some(unknown) = names
            .iter()
            .map(AsRef::as_ref)
            .find(|name| !self.tests.iter().any(|t| t == name))
        {
            return Err(TestRunError::UnknownTest {
                name: unknown.to_owned(),
                tests: self.tests.clone(),
            });
        }
        Ok(self
            .tests
            .iter()
            .map(String::as_str)
            .filter(|t| names.is_empty() || names.iter().any(|n| n.as_ref() == *t))
            .collect())
    }

    /// Whether the test module or a linked one imports a function of module `name`.
    #[cfg(feature = "parameters")]
    fn imports(&self, name: &str) -> bool {
        std::iter::once(&self.file)
            .chain(&self.options.linked)
            .filter_map(|file| file.module().ok())
            .any(|module| {
                module
                    .imports()
                    .any(|import| import.full_name.split_once('.').map(|(m, _)| m) == Some(name))
            })
    }

    /// The Vulkan device of the options, charging `budget`, if there is one.
    fn vulkan_device(
        &self,
        budget: Option<Arc<crate::memory_budget::MemoryBudget>>,
    ) -> Option<Arc<dyn crate::hal::HalDevice>> {
        #[cfg(feature = "vulkan")]
        if let Some(device) = &self.options.vulkan {
            return Some(Arc::new(device.with_memory_budget(budget)));
        }
        let _ = budget;
        None
    }

    /// A fresh context: a `check` module, a `hal` module over a fresh local device,
    /// `io_parameters` when imported, the linked modules, and the test module, initialised.
    fn context(&self) -> Result<(Context, Arc<CheckModule>), VmError> {
        let limits = &self.options.limits;
        let mut context = Context::new(limits.clone());
        let check = Arc::new(CheckModule::new());
        context.register_native(check.clone())?;
        let budget = context.memory_budget().cloned();
        let device: Arc<dyn crate::hal::HalDevice> = match self.vulkan_device(budget.clone()) {
            Some(device) => device,
            None => Arc::new(
                LocalDevice::new(self.options.workers.clone())
                    .with_memory_budget(budget)
                    .with_vmvx_limits(limits.clone()),
            ),
        };
        let hal = HalModule::with_wait_limit(device, limits.max_wait);
        context.register_native(Arc::new(hal))?;
        #[cfg(feature = "parameters")]
        if self.imports(crate::parameters::IO_PARAMETERS_MODULE_NAME) {
            context.register_native(Arc::new(
                crate::parameters::IoParametersModule::with_wait_limit(
                    self.options.parameters.clone(),
                    limits.max_wait,
                ),
            ))?;
        }
        for linked in &self.options.linked {
            context.load_bytecode(linked.clone())?;
        }
        context.load_bytecode(self.file.clone())?;
        Ok((context, check))
    }

    /// Runs test `name` in a fresh context (its initialiser included); a name that is not a
    /// test of the module is an error of the result.
    pub fn run(&self, name: &str) -> TestResult {
        let mut result = TestResult {
            name: name.to_owned(),
            failures: Failures::default(),
            error: None,
        };
        if !self.tests.iter().any(|t| t == name) {
            result.error = Some(VmError::NotFound(format!("{}.{name}", self.module)));
            return result;
        }
        match self.context() {
            Ok((context, check)) => {
                let outcome = context
                    .lookup_export(&format!("{}.{name}", self.module))
                    .and_then(|function| context.invoke(&function, &[]));
                result.error = outcome.err();
                result.failures = check.take_failures();
            }
            Err(error) => result.error = Some(error),
        }
        result
    }
}

/// What [`run_tests`] found.
#[derive(Debug)]
pub struct TestReport {
    /// The module's name.
    pub module: String,
    /// One result per test run, in the module's order.
    pub results: Vec<TestResult>,
}

impl TestReport {
    /// Whether every test passed.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.verdict() == Verdict::Pass)
    }

    /// How many tests had `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.results
            .iter()
            .filter(|r| r.verdict() == verdict)
            .count()
    }
}

/// Runs the tests of the module at `path` named in `names` (all of them when empty), each in
/// a fresh context, as `iree-check-module` does.
pub fn run_tests<S: AsRef<str>>(
    path: impl AsRef<Path>,
    names: &[S],
    options: TestOptions,
) -> Result<TestReport, TestRunError> {
    let suite = TestSuite::load(path, options)?;
    let results = suite
        .select(names)?
        .into_iter()
        .map(|name| suite.run(name))
        .collect();
    Ok(TestReport {
        module: suite.module.clone(),
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::Value;

    #[test]
    fn formats_like_cpp_streams() {
        assert_eq!(c_format_e3(-11.0), "-1.100e+01");
        assert_eq!(c_format_e3(0.000_999_9), "9.999e-04");
        assert_eq!(c_format_e3(0.0), "0.000e+00");
        assert_eq!(c_format_e3(1e300), "1.000e+300");
        assert_eq!(c_format_e3(f64::NEG_INFINITY), "-inf");
        assert_eq!(c_format_e3(f64::NAN), "nan");
        assert_eq!(c_format(f64::from(1e-4f32)), "0.0001");
        assert_eq!(c_format(f64::from(1e30f32)), "1e+30");
    }

    #[test]
    fn failures_are_kept_per_thread_and_bounded() {
        let check = Arc::new(CheckModule::new());
        let mut context = Context::new(Limits::default());
        context.register_native(check.clone()).unwrap();
        for _ in 0..MAX_RECORDED_FAILURES + 5 {
            context.call("check.expect_true", &[Value::I32(0)]).unwrap();
        }
        // Another thread's invocation records and takes its own failures only.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                context
                    .call("check.expect_false", &[Value::I32(3)])
                    .unwrap();
                let failures = check.take_failures();
                assert_eq!(failures.count(), 1);
                assert_eq!(failures.recorded[0].headline(), "Expected 3 to be zero.");
            });
        });
        let failures = check.take_failures();
        assert_eq!(failures.recorded.len(), MAX_RECORDED_FAILURES);
        assert_eq!(failures.unrecorded, 5);
        assert!(failures.recorded.iter().all(|f| f.check == CheckKind::True));
        assert!(check.take_failures().is_empty());
    }

    #[test]
    fn is_close_is_numpys_asymmetric_rule_with_nan_equal_to_nan() {
        assert!(is_close(100.0, 111.0, 0.0, 0.1));
        assert!(!is_close(111.0, 100.0, 0.0, 0.1));
        assert!(is_close(f64::NAN, f64::NAN, 0.0, 0.0));
        assert!(!is_close(f64::NAN, 1.0, 1e30, 0.0));
        assert!(is_close(f64::INFINITY, f64::INFINITY, 0.0, 0.0));
        assert!(!is_close(1e300, f64::INFINITY, f64::MAX, f64::MAX));
        assert!(is_close(-0.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn element_texts() {
        assert_eq!(element_text(HalElementType::I8, &[0xFF]), "-1");
        assert_eq!(element_text(HalElementType::UI8, &[0xFF]), "255");
        assert_eq!(element_text(HalElementType::BOOL8, &[1]), "1");
        assert_eq!(
            element_text(HalElementType::I64, &(-5i64).to_le_bytes()),
            "-5"
        );
        assert_eq!(
            element_text(HalElementType::F32, &(-0.0f32).to_le_bytes()),
            "-0"
        );
        assert_eq!(
            element_text(HalElementType(0x2300_0040), &[1, 0, 0, 0, 0, 0, 0x80, 0x3F]),
            "0x3F80000000000001"
        );
        assert_eq!(element_type_name(HalElementType::BOOL8), "i1");
        assert_eq!(element_type_name(HalElementType(0x2300_0040)), "cf64");
        assert_eq!(element_type_name(HalElementType(0x1200_0010)), "ui16");
        assert_eq!(element_type_name(HalElementType(0x2600_0008)), "f8E5M2FNUZ");
        assert_eq!(element_type_name(HalElementType(0x0000_0008)), "*8");
    }
}
