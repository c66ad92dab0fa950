//! VM calling-convention strings (`0rf_rI`): the flat types a VM function takes and returns.
//!
//! Every function in an IREE bytecode module carries one (`FunctionSignatureDef`'s
//! `calling_convention`). Grammar, version 0:
//!
//! ```text
//! cconv   ::= ''                       no string: () -> ()
//!           | '0' side ( '_' side )?   without '_' everything is arguments
//! side    ::= 'v' | item*              'v' = explicitly empty
//! item    ::= 'i' | 'I' | 'f' | 'F' | 'r' | 'C' item* 'D'
//! ```
//!
//! `i` is a 32-bit integer (any width but 64), `I` a 64-bit one, `f` a 32-bit float (any
//! width but 64), `F` a 64-bit float, `r` any VM reference, and `C…D` a variadic span of
//! tuples of the enclosed items (imports only). The compiler always writes both sides and
//! `v` for an empty one (`0v_v`, `0v_i`, `0i_v`); the runtime also accepts `0`, `0_`, `0i`
//! and `0_ir`. [`CallingConvention`] remembers which spelling it was parsed from, so that
//! it prints back the same text; [`CallingConvention::is_equivalent`] and [`check`] ignore the
//! spelling.
//!
//! [`CallingConvention::implied_by`] gives the convention an `iree.abi` signature implies:
//! one VM argument per top-level argument (a [`Type::Named`] is its inner type); arrays,
//! structures, strings, opaque references and null map to `r`; integers of 64 bits to `I`,
//! other integers to `i`; `f64` to `F`, other floats to `f`. The results are the same,
//! except that a single `slist`/`stuple`/`sdict` result is returned "inlined", as its slots
//! ([`inlined_results`]). [`Type::Unknown`] has no VM type: asking for it is an error that
//! names its path.
//!
//! ```
//! use pactum_iree::signature::cconv::{CallingConvention, CconvItem};
//!
//! let cconv = CallingConvention::parse("0rf_rI")?;
//! assert_eq!(cconv.args(), &[CconvItem::Ref, CconvItem::F32]);
//! assert_eq!(cconv.results(), &[CconvItem::Ref, CconvItem::I64]);
//! assert_eq!(cconv.to_string(), "0rf_rI");
//! assert!(CallingConvention::parse("0")?.is_equivalent(&CallingConvention::parse("0v_v")?));
//! # Ok::<(), pactum_iree::signature::ParseError>(())
//! ```

use std::fmt::{self, Write as _};

use pactum_text::Cursor;

use super::{ConvertError, ConvertErrorKind, ParseError, ScalarType, Signature, Type};

/// The format name used in [`ParseError`]s and [`ConvertError`]s from this module.
pub const FORMAT: &str = "calling convention";

/// The deepest nesting of variadic spans accepted.
pub const MAX_DEPTH: usize = 256;

/// One VM value type in a calling convention.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CconvItem {
    /// `i`: a 32-bit integer (also any integer width other than 64).
    I32,
    /// `I`: a 64-bit integer (also `index`).
    I64,
    /// `f`: a 32-bit float (also any float width other than 64).
    F32,
    /// `F`: a 64-bit float.
    F64,
    /// `r`: a reference (`!vm.ref<?>`: buffer view, list, fence, buffer, ...).
    Ref,
    /// `C…D`: any number of tuples of the enclosed items (used by imports).
    Variadic(Vec<CconvItem>),
}

impl CconvItem {
    /// Whether this item is a variadic span.
    pub fn is_variadic(&self) -> bool {
        matches!(self, CconvItem::Variadic(_))
    }
}

/// `i`, `I`, `f`, `F`, `r`, or `C…D`.
impl fmt::Display for CconvItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CconvItem::I32 => f.write_char('i'),
            CconvItem::I64 => f.write_char('I'),
            CconvItem::F32 => f.write_char('f'),
            CconvItem::F64 => f.write_char('F'),
            CconvItem::Ref => f.write_char('r'),
            CconvItem::Variadic(items) => {
                f.write_char('C')?;
                for item in items {
                    write!(f, "{item}")?;
                }
                f.write_char('D')
            }
        }
    }
}

/// One side (arguments or results) as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Side {
    items: Vec<CconvItem>,
    /// Written as `v`; then `items` is empty.
    void: bool,
}

impl Side {
    fn compiler(items: Vec<CconvItem>) -> Side {
        let void = items.is_empty();
        Side { items, void }
    }
}

/// A VM calling convention, with the exact spelling it was written in.
///
/// Equality (`==`) compares the spelling too (`0` ≠ `0v_v`); use
/// [`is_equivalent`](CallingConvention::is_equivalent) to compare only the types.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallingConvention {
    /// `None` for the empty string.
    spelled: Option<(Side, Option<Side>)>,
}

impl CallingConvention {
    /// A convention written the way the compiler writes it: both sides, `v` for an empty one.
    pub fn new(args: Vec<CconvItem>, results: Vec<CconvItem>) -> CallingConvention {
        CallingConvention {
            spelled: Some((Side::compiler(args), Some(Side::compiler(results)))),
        }
    }

    /// The empty string: a function with no calling convention recorded, read as `() -> ()`.
    pub fn unspecified() -> CallingConvention {
        CallingConvention { spelled: None }
    }

    /// Parses a calling-convention string.
    pub fn parse(text: &str) -> Result<CallingConvention, ParseError> {
        // No length limit: the walk is linear, and nesting is bounded by MAX_DEPTH.
        let mut cursor = Cursor::unbounded(text, FORMAT);
        if cursor.at_end() {
            return Ok(CallingConvention::unspecified());
        }
        if !cursor.eat_byte(b'0') {
            return Err(cursor.error(format!(
                "unsupported calling-convention version {} (only version 0, '0', is known)",
                char_at(text, 0)
            )));
        }
        let args = parse_side(&mut cursor)?;
        // `parse_side` stops only at the end or at a '_'.
        let results = if cursor.eat_byte(b'_') {
            let results = parse_side(&mut cursor)?;
            if !cursor.at_end() {
                return Err(cursor.error("a second '_' (the results were already started)"));
            }
            Some(results)
        } else {
            None
        };
        Ok(CallingConvention {
            spelled: Some((args, results)),
        })
    }

    /// The argument items (empty for `v`, a missing side and the empty string).
    pub fn args(&self) -> &[CconvItem] {
        match &self.spelled {
            Some((args, _)) => &args.items,
            None => &[],
        }
    }

    /// The result items (empty for `v`, a missing side and the empty string).
    pub fn results(&self) -> &[CconvItem] {
        match &self.spelled {
            Some((_, Some(results))) => &results.items,
            _ => &[],
        }
    }

    /// Whether any argument or result is a variadic span (`C…D`); such a convention
    /// describes an import and has no fixed arity.
    pub fn is_variadic(&self) -> bool {
        self.args()
            .iter()
            .chain(self.results())
            .any(CconvItem::is_variadic)
    }

    /// Whether this is the empty string (no convention recorded).
    pub fn is_unspecified(&self) -> bool {
        self.spelled.is_none()
    }

    /// Whether both describe the same types, however written (`''`, `0`, `0_`, `0v`, `0v_v`
    /// are all `() -> ()`).
    pub fn is_equivalent(&self, other: &CallingConvention) -> bool {
        self.args() == other.args() && self.results() == other.results()
    }

    /// The same types, written the way the compiler writes them (`0i` becomes `0i_v`).
    pub fn to_compiler_form(&self) -> CallingConvention {
        CallingConvention::new(self.args().to_vec(), self.results().to_vec())
    }

    /// The convention a signature implies, written the way the compiler writes it.
    ///
    /// Fails (naming the path) for [`Type::Unknown`], which has no VM type.
    pub fn implied_by(signature: &Signature) -> Result<CallingConvention, ConvertError> {
        let (args, results) = implied_items(signature)?;
        Ok(CallingConvention::new(
            args.into_iter().map(|(item, _)| item).collect(),
            results.into_iter().map(|(item, _)| item).collect(),
        ))
    }
}

/// [`CallingConvention::parse`].
impl std::str::FromStr for CallingConvention {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<CallingConvention, ParseError> {
        CallingConvention::parse(text)
    }
}

/// Prints the text it was parsed from (or the compiler's spelling, for
/// [`CallingConvention::new`]); the empty string for [`CallingConvention::unspecified`].
impl fmt::Display for CallingConvention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((args, results)) = &self.spelled else {
            return Ok(());
        };
        let side = |f: &mut fmt::Formatter<'_>, side: &Side| -> fmt::Result {
            if side.void && side.items.is_empty() {
                return f.write_char('v');
            }
            side.items.iter().try_for_each(|item| write!(f, "{item}"))
        };
        f.write_char('0')?;
        side(f, args)?;
        if let Some(results) = results {
            f.write_char('_')?;
            side(f, results)?;
        }
        Ok(())
    }
}

/// The character at byte `at`, quoted, for messages (whole UTF-8 characters).
fn char_at(text: &str, at: usize) -> String {
    match text.get(at..).and_then(|rest| rest.chars().next()) {
        Some(c) => format!("{c:?}"),
        None => "the end".to_string(),
    }
}

/// Parses one side from the cursor, which it leaves at the end of the text or at a `_`.
fn parse_side(cursor: &mut Cursor<'_>) -> Result<Side, ParseError> {
    let mut side = Side::default();
    // Open variadic spans: their offset and the items collected so far. Explicit, so that
    // deep nesting costs memory bounded by MAX_DEPTH, not stack.
    let mut open: Vec<(usize, Vec<CconvItem>)> = Vec::new();
    while let Some(byte) = cursor.peek() {
        let item = match byte {
            b'_' => break,
            b'i' => CconvItem::I32,
            b'I' => CconvItem::I64,
            b'f' => CconvItem::F32,
            b'F' => CconvItem::F64,
            b'r' => CconvItem::Ref,
            b'v' => {
                if !open.is_empty() {
                    return Err(cursor.error("'v' (no values) inside a variadic span"));
                }
                if side.void || !side.items.is_empty() {
                    return Err(cursor
                        .error("'v' (no values) must be the whole side, not mixed with items"));
                }
                side.void = true;
                cursor.advance(1);
                continue;
            }
            b'C' => {
                if open.len() >= MAX_DEPTH {
                    return Err(cursor.error(format!(
                        "variadic spans nested deeper than {MAX_DEPTH} levels"
                    )));
                }
                open.push((cursor.offset(), Vec::new()));
                cursor.advance(1);
                continue;
            }
            b'D' => {
                let Some((_, items)) = open.pop() else {
                    return Err(cursor
                        .error("'D' without a matching 'C' (variadic span end without a start)"));
                };
                CconvItem::Variadic(items)
            }
            _ => {
                return Err(cursor.error(format!(
                    "unknown item {} (expected i, I, f, F, r, C, D, v or _)",
                    char_at(cursor.text(), cursor.offset())
                )));
            }
        };
        if side.void {
            return Err(cursor.error("an item after 'v' (no values): 'v' must be the whole side"));
        }
        match open.last_mut() {
            Some((_, items)) => items.push(item),
            None => side.items.push(item),
        }
        cursor.advance(1);
    }
    if let Some((at, _)) = open.last() {
        return Err(cursor.error_at(*at, "variadic span 'C' is never closed with 'D'"));
    }
    Ok(side)
}

/// Whether the signature's results come back inlined: `r` has exactly one entry and it is
/// an `slist`, `stuple` or `sdict` (not wrapped in `named`, and not a `py_homogeneous_list`),
/// so the VM function returns that structure's slots as separate results.
pub fn inlined_results(signature: &Signature) -> bool {
    matches!(
        signature.results.as_slice(),
        [Type::List(_) | Type::Tuple(_) | Type::Dict(_)]
    )
}

/// The VM item for one top-level value or inlined slot.
fn item_for(ty: &Type, path: &str) -> Result<CconvItem, ConvertError> {
    match ty {
        Type::Scalar(ScalarType::Int { bits: 64, .. }) => Ok(CconvItem::I64),
        Type::Scalar(ScalarType::Int { .. }) => Ok(CconvItem::I32),
        Type::Scalar(ScalarType::F64) => Ok(CconvItem::F64),
        Type::Scalar(_) => Ok(CconvItem::F32),
        Type::NdArray(_)
        | Type::String
        | Type::Opaque
        | Type::List(_)
        | Type::Tuple(_)
        | Type::Dict(_)
        | Type::TypedList(_)
        | Type::Null => Ok(CconvItem::Ref),
        Type::Named(_, inner) => item_for(inner, path),
        Type::Unknown => Err(ConvertError::new(
            FORMAT,
            path,
            ConvertErrorKind::NoVmType(Type::Unknown),
        )),
    }
}

/// VM items, each with the type it stands for.
type Implied<'a> = Vec<(CconvItem, &'a Type)>;

/// The VM items a signature implies, each with the type it came from.
fn implied_items(signature: &Signature) -> Result<(Implied<'_>, Implied<'_>), ConvertError> {
    let mut args = Vec::with_capacity(signature.args.len());
    for (i, ty) in signature.args.iter().enumerate() {
        args.push((item_for(ty, &format!("args[{i}]"))?, ty.unnamed()));
    }
    let mut results = Vec::new();
    // The single-structure cases are exactly those of `inlined_results`.
    match signature.results.as_slice() {
        [Type::List(slots) | Type::Tuple(slots)] => {
            for (i, slot) in slots.iter().enumerate() {
                results.push((item_for(slot, &format!("results[0][{i}]"))?, slot.unnamed()));
            }
        }
        [Type::Dict(entries)] => {
            for (key, slot) in entries {
                results.push((
                    item_for(slot, &format!("results[0][{key:?}]"))?,
                    slot.unnamed(),
                ));
            }
        }
        all => {
            for (i, ty) in all.iter().enumerate() {
                results.push((item_for(ty, &format!("results[{i}]"))?, ty.unnamed()));
            }
        }
    }
    Ok((args, results))
}

/// Which side a [`Mismatch`] is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// The n-th argument (from 0).
    Argument(usize),
    /// The n-th result (from 0).
    Result(usize),
}

/// The first place where a calling convention differs from what a signature implies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Where they differ.
    pub position: Position,
    /// What the signature implies there, with the type it comes from; `None` where the
    /// signature has fewer values.
    pub implied: Option<(CconvItem, Type)>,
    /// What the calling convention has there; `None` where it has fewer values.
    pub found: Option<CconvItem>,
    /// How many values the signature implies on this side.
    pub implied_count: usize,
    /// How many values the calling convention has on this side.
    pub found_count: usize,
}

/// `argument 1: the signature implies 'r' (ndarray<f32, 2>), the calling convention has 'i'`.
impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (noun, index) = match self.position {
            Position::Argument(i) => ("argument", i),
            Position::Result(i) => ("result", i),
        };
        let plural = |n: usize| format!("{n} {noun}{}", if n == 1 { "" } else { "s" });
        write!(f, "{noun} {index}: ")?;
        match &self.implied {
            Some((item, ty)) => write!(f, "the signature implies '{item}' ({ty})")?,
            None => write!(
                f,
                "the signature implies only {}",
                plural(self.implied_count)
            )?,
        }
        match &self.found {
            Some(item) => write!(f, ", the calling convention has '{item}'"),
            None => write!(
                f,
                ", the calling convention has only {}",
                plural(self.found_count)
            ),
        }
    }
}

/// Why [`check`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The signature implies no calling convention (it contains [`Type::Unknown`]).
    Unmappable(ConvertError),
    /// The convention differs from the one the signature implies.
    Mismatch(Mismatch),
}

/// The error's own message (see [`Mismatch`] and [`ConvertError`]).
impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Unmappable(error) => write!(f, "{error}"),
            CheckError::Mismatch(mismatch) => write!(f, "calling convention mismatch: {mismatch}"),
        }
    }
}

impl std::error::Error for CheckError {}

#[cfg(feature = "structured")]
impl From<CheckError> for pactum::Error {
    fn from(error: CheckError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}

/// Checks that `cconv` is the convention `signature` implies, however it is spelled.
///
/// On a mismatch the error names the first differing argument (or, when the arguments agree,
/// result).
pub fn check(signature: &Signature, cconv: &CallingConvention) -> Result<(), CheckError> {
    let (args, results) = implied_items(signature).map_err(CheckError::Unmappable)?;
    let compare =
        |implied: &[(CconvItem, &Type)], found: &[CconvItem], position: fn(usize) -> Position| {
            for i in 0..implied.len().max(found.len()) {
                let want = implied.get(i);
                let have = found.get(i);
                if want.map(|(item, _)| item) != have {
                    return Err(CheckError::Mismatch(Mismatch {
                        position: position(i),
                        implied: want.map(|(item, ty)| (item.clone(), (*ty).clone())),
                        found: have.cloned(),
                        implied_count: implied.len(),
                        found_count: found.len(),
                    }));
                }
            }
            Ok(())
        };
    compare(&args, cconv.args(), Position::Argument)?;
    compare(&results, cconv.results(), Position::Result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for text in [
            "", "0", "0_", "0v", "0_v", "0v_", "0v_v", "0i", "0_ir", "0rf_rI", "0iCiID_I", "0CD_v",
            "0CCiDD",
        ] {
            assert_eq!(CallingConvention::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn nested_variadic() {
        let cconv = CallingConvention::parse("0rrIiiiICiDCiirIID_v").unwrap();
        assert_eq!(cconv.args().len(), 9);
        assert_eq!(cconv.args()[7], CconvItem::Variadic(vec![CconvItem::I32]));
        assert!(cconv.is_variadic());
        assert!(cconv.results().is_empty());
    }
}
