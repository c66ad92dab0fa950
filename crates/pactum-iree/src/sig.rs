//! What `pactum sig` does, as functions returning values: detect a signature's format,
//! render it as IREE did, give the calling convention it implies (or check one), convert it to
//! another format, and explain it. The command line prints these values; the Python package
//! (`pactum.sig`) returns them.
//!
//! Every text these functions return has no trailing newline: the command prints it with one.
//!
//! ```
//! use pactum_iree::sig::{self, Format};
//!
//! let raw = "I15!B11!d10d128d64R15!B11!t6d32d8d64";
//! assert_eq!(sig::render(raw, None)?, "(Buffer<float32[10x128x64]>) -> (Buffer<sint32[32x8x64]>)");
//! assert_eq!(sig::cconv(raw, None, None)?.to_string(), "0r_r");
//! assert_eq!(
//!     sig::convert(raw, None, Format::IreeAbi, "main")?,
//!     r#"{"a":[["ndarray","f32",3,10,128,64]],"r":[["ndarray","i32",3,32,8,64]],"v":1}"#
//! );
//! let explanation = sig::explain(raw, Some(Format::Raw))?;
//! assert_eq!(explanation.to_json()["calling_convention"], "0r_r");
//! let error = sig::render("I9!B6!t99R1!", None).unwrap_err();
//! assert!(error.to_string().contains("at byte "));
//! # Ok::<(), sig::SigError>(())
//! ```

// Safe Rust only.
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use crate::signature::abi_json::IreeAbi;
use crate::signature::cconv::{self, CallingConvention, CconvItem, CheckError};
use crate::signature::declaration::{Declaration, InvocationModel};
use crate::signature::raw::RawSignature;
use crate::signature::sip::{SipKey, SipMangler, SipSignature};
use crate::signature::{ConvertError, ParseError, ScalarType, Signature, Signedness, Type};

/// The signature formats `pactum sig` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// V1 `iree.abi` reflection JSON: `{"a":[...],"r":[...],"v":1}`.
    IreeAbi,
    /// Legacy raw function signature (`f`): `I…R…` with `B`/`S`/`O` items.
    Raw,
    /// Legacy structured index path signature (`sip`): `I…R…` with `S`/`D`/`_` nodes.
    Sip,
    /// VM calling convention: `0rf_rI`.
    Cconv,
    /// `iree.abi.declaration` text: `sync func @f(%x: tensor<4xf32>) -> (...)`.
    Declaration,
}

impl Format {
    /// Every format, in the order above.
    pub const ALL: [Format; 5] = [
        Format::IreeAbi,
        Format::Raw,
        Format::Sip,
        Format::Cconv,
        Format::Declaration,
    ];

    /// The format in words (`iree.abi JSON`, `raw signature`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Format::IreeAbi => "iree.abi JSON",
            Format::Raw => "raw signature",
            Format::Sip => "SIP signature",
            Format::Cconv => "calling convention",
            Format::Declaration => "iree.abi.declaration",
        }
    }

    /// The format's option value (`iree-abi`, `raw`, `sip`, `cconv`, `declaration`).
    pub fn key(self) -> &'static str {
        match self {
            Format::IreeAbi => "iree-abi",
            Format::Raw => "raw",
            Format::Sip => "sip",
            Format::Cconv => "cconv",
            Format::Declaration => "declaration",
        }
    }
}

/// The format's option value, as [`Format::key`].
impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Reads an option value ([`Format::key`]; `iree_abi` is accepted too).
impl FromStr for Format {
    type Err = SigError;

    fn from_str(text: &str) -> Result<Format, SigError> {
        let wanted = text.replace('_', "-");
        Format::ALL
            .into_iter()
            .find(|format| format.key() == wanted)
            .ok_or_else(|| {
                SigError::Message(format!(
                    "unknown signature format {text:?}: expected one of iree-abi, raw, sip, cconv, declaration"
                ))
            })
    }
}

/// Why a `pactum sig` function failed. The message is the command's one-line error.
#[derive(Clone, Debug, PartialEq)]
pub enum SigError {
    /// The signature text is malformed (the error names the byte offset).
    Parse(ParseError),
    /// The calling convention given to check is malformed.
    CheckText(ParseError),
    /// The target format cannot express the signature.
    Convert(ConvertError),
    /// The calling convention does not match the signature.
    Check(CheckError),
    /// Text detected as a raw or SIP signature that neither reading accepts.
    Neither {
        /// Why it is not a raw signature.
        raw: Box<SigError>,
        /// Why it is not a SIP signature.
        sip: Box<SigError>,
    },
    /// The format's own part of an explanation (`explained`, without a signature), and why
    /// the text has no user-level signature (a SIP structure with several roots, say).
    Partial {
        /// What the text says on its own.
        explained: Box<Explanation>,
        /// Why it does not describe a signature.
        error: Box<SigError>,
    },
    /// Anything else, in words.
    Message(String),
}

impl SigError {
    /// The byte offset into the text that was malformed, for a parse error.
    pub fn offset(&self) -> Option<usize> {
        match self {
            SigError::Parse(error) | SigError::CheckText(error) => Some(error.offset),
            SigError::Neither { raw, sip } => raw.offset().or_else(|| sip.offset()),
            SigError::Partial { error, .. } => error.offset(),
            _ => None,
        }
    }
}

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigError::Parse(error) => write!(f, "{error}"),
            SigError::CheckText(error) => write!(f, "--check: {error}"),
            SigError::Convert(error) => write!(f, "{error}"),
            SigError::Check(error) => write!(f, "{error}"),
            SigError::Neither { raw, sip } => {
                write!(
                    f,
                    "neither a raw signature ({raw}) nor a SIP signature ({sip})"
                )
            }
            SigError::Partial { error, .. } => write!(f, "{error}"),
            SigError::Message(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SigError {}

impl From<ParseError> for SigError {
    fn from(error: ParseError) -> SigError {
        SigError::Parse(error)
    }
}

impl From<ConvertError> for SigError {
    fn from(error: ConvertError) -> SigError {
        SigError::Convert(error)
    }
}

impl From<CheckError> for SigError {
    fn from(error: CheckError) -> SigError {
        SigError::Check(error)
    }
}

impl From<std::num::TryFromIntError> for SigError {
    fn from(error: std::num::TryFromIntError) -> SigError {
        SigError::Message(error.to_string())
    }
}

/// A `ValueError` with the message.
#[cfg(feature = "structured")]
impl From<SigError> for pactum::Error {
    fn from(error: SigError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}

/// A signature in the format it was written in.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    /// `iree.abi` JSON.
    IreeAbi(IreeAbi),
    /// A raw signature.
    Raw(RawSignature),
    /// A SIP signature.
    Sip(SipSignature),
    /// A calling convention.
    Cconv(CallingConvention),
    /// An `iree.abi.declaration`.
    Declaration(Declaration),
}

impl Parsed {
    /// The format it was written in.
    pub fn format(&self) -> Format {
        match self {
            Parsed::IreeAbi(_) => Format::IreeAbi,
            Parsed::Raw(_) => Format::Raw,
            Parsed::Sip(_) => Format::Sip,
            Parsed::Cconv(_) => Format::Cconv,
            Parsed::Declaration(_) => Format::Declaration,
        }
    }

    /// The user-level signature, where the format carries one.
    pub fn signature(&self) -> Result<Signature, SigError> {
        Ok(match self {
            Parsed::IreeAbi(abi) => abi.signature().clone(),
            Parsed::Raw(raw) => raw.to_signature(),
            Parsed::Sip(sip) => sip.to_signature(None)?,
            Parsed::Declaration(declaration) => declaration.to_signature()?,
            Parsed::Cconv(_) => {
                return Err(SigError::Message(
                    "a calling convention has only VM-level types; it does not describe a signature"
                        .to_owned(),
                ));
            }
        })
    }
}

/// Reads `text` as `format`.
pub fn parse_as(format: Format, text: &str) -> Result<Parsed, SigError> {
    Ok(match format {
        Format::IreeAbi => Parsed::IreeAbi(IreeAbi::parse(text)?),
        // IREE's own parsers skip some malformed parts; accept what they accept.
        Format::Raw => Parsed::Raw(RawSignature::parse(text)?),
        Format::Sip => Parsed::Sip(SipSignature::parse(text)?),
        Format::Cconv => Parsed::Cconv(CallingConvention::parse(text)?),
        Format::Declaration => Parsed::Declaration(Declaration::parse(text)?),
    })
}

/// Reads `text` in the format given, or the one its first characters announce. Raw and SIP
/// signatures look alike (`I…R…`): a strict raw reading is tried first, then a strict SIP
/// reading, then IREE's lenient readings in the same order.
pub fn parse(text: &str, format: Option<Format>) -> Result<Parsed, SigError> {
    if let Some(format) = format {
        return parse_as(format, text);
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        parse_as(Format::IreeAbi, text)
    } else if ["sync ", "async ", "func "]
        .iter()
        .any(|p| trimmed.starts_with(p))
    {
        parse_as(Format::Declaration, text)
    } else if text.starts_with('0') {
        parse_as(Format::Cconv, text)
    } else if text.starts_with('I') {
        // Well-formed text decides (strict readings first); then IREE's lenient readings.
        if let Ok(raw) = RawSignature::parse_strict(text) {
            return Ok(Parsed::Raw(raw));
        }
        if let Ok(sip) = SipSignature::parse_strict(text) {
            return Ok(Parsed::Sip(sip));
        }
        match parse_as(Format::Raw, text) {
            Ok(parsed) => Ok(parsed),
            Err(raw_error) => parse_as(Format::Sip, text).map_err(|sip_error| SigError::Neither {
                raw: Box::new(raw_error),
                sip: Box::new(sip_error),
            }),
        }
    } else if text.is_empty() {
        Err(SigError::Message("empty signature".to_owned()))
    } else {
        Err(SigError::Message(format!(
            "cannot tell the format of {text:?}: expected iree.abi JSON ({{...}}), a raw or SIP \
             signature (I...R...), a calling convention (0...) or a declaration (sync func @...); \
             name it with --from"
        )))
    }
}

/// The format of `text`, as [`parse`] detects it (`None`: read it as `format`, which is
/// returned once the text parses).
pub fn detect(text: &str, format: Option<Format>) -> Result<Format, SigError> {
    Ok(parse(text, format)?.format())
}

/// `pactum sig render`: IREE's own rendering of a raw or SIP signature. A SIP signature's is
/// `inputs:\n<structure>results:\n<structure>` (each structure's lines end with a newline),
/// without the last newline.
pub fn render(text: &str, format: Option<Format>) -> Result<String, SigError> {
    match parse(text, format)? {
        Parsed::Raw(raw) => Ok(raw.render()),
        Parsed::Sip(sip) => {
            let mut out = format!(
                "inputs:\n{}results:\n{}",
                sip.inputs.render(),
                sip.results.render()
            );
            if out.ends_with('\n') {
                out.pop();
            }
            Ok(out)
        }
        other => Err(SigError::Message(format!(
            "render prints IREE's rendering of raw and SIP signatures; this is a {} (see `pactum sig explain`)",
            other.format().name()
        ))),
    }
}

/// What `pactum sig cconv` found: the calling convention the signature implies, and the one
/// checked against it (which matched).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CconvReport {
    /// The convention the signature implies.
    pub implied: CallingConvention,
    /// The convention given to check, which matches.
    pub checked: Option<CallingConvention>,
}

/// `0rr_ri`, or `0rr_ri matches (implied: 0rr_ri)` after a check.
impl fmt::Display for CconvReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.checked {
            None => write!(f, "{}", self.implied),
            Some(given) => write!(f, "{given} matches (implied: {})", self.implied),
        }
    }
}

/// `pactum sig cconv`: the calling convention a signature implies, and optionally checks
/// `check` against it (a mismatch is an error naming the first differing item).
pub fn cconv(
    text: &str,
    format: Option<Format>,
    check: Option<&str>,
) -> Result<CconvReport, SigError> {
    let signature = parse(text, format)?.signature()?;
    let implied = CallingConvention::implied_by(&signature)?;
    let checked = match check {
        None => None,
        Some(given) => {
            let given = CallingConvention::parse(given).map_err(SigError::CheckText)?;
            cconv::check(&signature, &given)?;
            Some(given)
        }
    };
    Ok(CconvReport { implied, checked })
}

/// `pactum sig convert`: the same signature in format `to`; `name` is the function name a
/// declaration needs.
pub fn convert(
    text: &str,
    from: Option<Format>,
    to: Format,
    name: &str,
) -> Result<String, SigError> {
    let parsed = parse(text, from)?;
    let model = match &parsed {
        Parsed::Declaration(declaration) => declaration.model,
        _ => InvocationModel::Sync,
    };
    let mut signature = parsed.signature()?;
    if matches!(to, Format::IreeAbi | Format::Declaration) {
        // Raw signatures spell MLIR's signless integers `sintN` (IREE's mangler wrote them so);
        // reading them back as signless is the faithful inverse.
        signature.args.iter_mut().for_each(signless);
        signature.results.iter_mut().for_each(signless);
    }
    Ok(match to {
        Format::IreeAbi => IreeAbi::from_signature(&signature, Some(1))?.to_string(),
        Format::Raw => RawSignature::from_signature(&signature)?.to_string(),
        Format::Sip => to_sip(&signature)?.to_string(),
        Format::Cconv => CallingConvention::implied_by(&signature)?.to_string(),
        Format::Declaration => Declaration::implied_by(name, &signature, model)?.to_string(),
    })
}

/// Rewrites signed integer types (`si32`) as signless (`i32`), everywhere in `ty`.
fn signless(ty: &mut Type) {
    match ty {
        Type::Scalar(ScalarType::Int { signedness, .. }) if *signedness == Signedness::Signed => {
            *signedness = Signedness::Signless
        }
        Type::NdArray(array) => signless(&mut array.element),
        Type::List(slots) | Type::Tuple(slots) => slots.iter_mut().for_each(signless),
        Type::Dict(entries) => entries.iter_mut().for_each(|(_, ty)| signless(ty)),
        Type::TypedList(inner) | Type::Named(_, inner) => signless(inner),
        _ => {}
    }
}

/// A SIP signature with the structure of `signature`: leaves numbered in order, positional
/// arguments under a root sequence, keyword arguments under a root dict.
pub fn to_sip(signature: &Signature) -> Result<SipSignature, SigError> {
    fn walk(
        ty: &Type,
        path: &mut Vec<SipKey>,
        leaves: &mut Vec<Vec<SipKey>>,
        at: &str,
    ) -> Result<(), SigError> {
        match ty.unnamed() {
            Type::List(slots) | Type::Tuple(slots) => {
                for (i, slot) in slots.iter().enumerate() {
                    if *slot == Type::Null {
                        continue; // a gap: SIP sequences may skip keys
                    }
                    path.push(SipKey::Index(i32::try_from(i)?));
                    walk(slot, path, leaves, &format!("{at}[{i}]"))?;
                    path.pop();
                }
            }
            Type::Dict(entries) => {
                for (key, slot) in entries {
                    path.push(SipKey::Name(key.clone()));
                    walk(slot, path, leaves, &format!("{at}[{key:?}]"))?;
                    path.pop();
                }
            }
            Type::TypedList(_) => {
                return Err(SigError::Message(format!(
                    "cannot express {at} as a SIP signature: a list of any length has no fixed leaves"
                )));
            }
            _ => leaves.push(path.clone()),
        }
        Ok(())
    }
    let mut mangler = SipMangler::new();
    let named = signature
        .args
        .iter()
        .filter(|a| matches!(a, Type::Named(..)))
        .count();
    if named != 0 && named != signature.args.len() {
        return Err(SigError::Message(
            "cannot express the arguments as a SIP signature: its root is either positional or keyword, not both"
                .to_owned(),
        ));
    }
    let mut leaves = Vec::new();
    for (i, arg) in signature.args.iter().enumerate() {
        let mut path = vec![match arg {
            Type::Named(key, _) => SipKey::Name(key.clone()),
            _ => SipKey::Index(i32::try_from(i)?),
        }];
        walk(arg, &mut path, &mut leaves, &format!("args[{i}]"))?;
    }
    for (index, path) in leaves.iter().enumerate() {
        mangler.set_input(i32::try_from(index)?, path)?;
    }
    let mut leaves = Vec::new();
    match signature.results.as_slice() {
        [] => {}
        [single] => walk(single, &mut Vec::new(), &mut leaves, "results[0]")?,
        results => {
            for (j, result) in results.iter().enumerate() {
                let mut path = vec![SipKey::Index(i32::try_from(j)?)];
                walk(result, &mut path, &mut leaves, &format!("results[{j}]"))?;
            }
        }
    }
    for (index, path) in leaves.iter().enumerate() {
        mangler.set_result(i32::try_from(index)?, path)?;
    }
    Ok(mangler.finish())
}

/// What a signature's format says before the shared model: per format.
#[derive(Clone, Debug, PartialEq)]
pub enum Header {
    /// `iree.abi` JSON, and its `"v"`.
    IreeAbi {
        /// The version, when written.
        version: Option<i64>,
    },
    /// A raw signature and IREE's rendering of it.
    Raw {
        /// IREE's rendering.
        rendering: String,
    },
    /// A SIP signature's leaves: key path and raw index.
    Sip {
        /// The inputs' leaves.
        inputs: Vec<(Vec<SipKey>, i32)>,
        /// The results' leaves.
        results: Vec<(Vec<SipKey>, i32)>,
    },
    /// A calling convention: its items (a calling convention describes no signature).
    Cconv(CallingConvention),
    /// A declaration and its invocation model.
    Declaration {
        /// `sync` or `async`.
        invocation: InvocationModel,
    },
}

/// `pactum sig explain`: what a signature says. Its `Display` is the command's text; see
/// [`Explanation::to_json`] for the same as data.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// The format it was written in.
    pub format: Format,
    /// What that format says on its own.
    pub header: Header,
    /// The user-level signature (`None` for a calling convention).
    pub signature: Option<Signature>,
}

impl Explanation {
    /// Whether the single structured result is returned as its slots, one VM result each.
    pub fn inlined_results(&self) -> bool {
        self.signature.as_ref().is_some_and(cconv::inlined_results)
    }

    /// The calling convention the signature implies, or why there is none (`None` for a
    /// calling convention itself).
    pub fn calling_convention(&self) -> Option<Result<CallingConvention, ConvertError>> {
        self.signature.as_ref().map(CallingConvention::implied_by)
    }

    /// The explanation as JSON: `format` (the option value), `format_name`, `version`,
    /// `rendering`, `invocation`, `sip` (`{"inputs": [{"path": [0, "a"], "raw": 1}], "results":
    /// [...]}`), `cconv_items` (`{"arguments": [...], "results": [...], "variadic": bool}`, an
    /// item being `"i32"` or `{"variadic": [...]}`), `arguments` (`[{"index", "keyword",
    /// "type"}]`), `results` (`[{"index", "type"}]`), `inlined_results`,
    /// `calling_convention` and `calling_convention_error`; keys a format does not have are
    /// `null`.
    pub fn to_json(&self) -> Value {
        fn leaves(leaves: &[(Vec<SipKey>, i32)]) -> Value {
            Value::Array(
                leaves
                    .iter()
                    .map(|(path, raw)| {
                        let path: Vec<Value> = path
                            .iter()
                            .map(|key| match key {
                                SipKey::Index(i) => json!(i),
                                SipKey::Name(name) => json!(name),
                            })
                            .collect();
                        json!({"path": path, "raw": raw})
                    })
                    .collect(),
            )
        }
        fn items(list: &[CconvItem]) -> Value {
            Value::Array(
                list.iter()
                    .map(|item| match item {
                        CconvItem::Variadic(inner) => json!({ "variadic": items(inner) }),
                        other => json!(describe_item(other)),
                    })
                    .collect(),
            )
        }
        let mut out = json!({
            "format": self.format.key(),
            "format_name": self.format.name(),
            "version": null,
            "rendering": null,
            "invocation": null,
            "sip": null,
            "cconv_items": null,
            "arguments": null,
            "results": null,
            "inlined_results": self.inlined_results(),
            "calling_convention": null,
            "calling_convention_error": null,
        });
        match &self.header {
            Header::IreeAbi { version } => out["version"] = json!(version),
            Header::Raw { rendering } => out["rendering"] = json!(rendering),
            Header::Sip { inputs, results } => {
                out["sip"] = json!({"inputs": leaves(inputs), "results": leaves(results)})
            }
            Header::Cconv(cconv) => {
                out["cconv_items"] = json!({
                    "arguments": items(cconv.args()),
                    "results": items(cconv.results()),
                    "variadic": cconv.is_variadic(),
                })
            }
            Header::Declaration { invocation } => out["invocation"] = json!(invocation.to_string()),
        }
        if let Some(signature) = &self.signature {
            out["arguments"] = signature
                .args
                .iter()
                .enumerate()
                .map(|(i, arg)| match arg {
                    Type::Named(name, inner) => {
                        json!({"index": i, "keyword": name, "type": inner.to_string()})
                    }
                    other => json!({"index": i, "keyword": null, "type": other.to_string()}),
                })
                .collect();
            out["results"] = signature
                .results
                .iter()
                .enumerate()
                .map(|(i, result)| json!({"index": i, "type": result.to_string()}))
                .collect();
        }
        match self.calling_convention() {
            Some(Ok(implied)) => out["calling_convention"] = json!(implied.to_string()),
            Some(Err(error)) => out["calling_convention_error"] = json!(error.to_string()),
            None => {}
        }
        out
    }
}

/// The command's text, one line after another (no newline after the last).
impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines = vec![format!("format: {}", self.format.name())];
        match &self.header {
            Header::Cconv(cconv) => {
                lines.push(format!("arguments: {}", describe_items(cconv.args())));
                lines.push(format!("results: {}", describe_items(cconv.results())));
                if cconv.is_variadic() {
                    lines.push("variadic: yes (C...D spans; only imports may be variadic)".into());
                }
            }
            Header::Raw { rendering } => lines.push(format!("rendering: {rendering}")),
            Header::Sip { inputs, results } => {
                explain_leaves(&mut lines, "inputs", inputs);
                explain_leaves(&mut lines, "results", results);
            }
            Header::IreeAbi { version } => {
                if let Some(version) = version {
                    lines.push(format!("version: {version}"));
                }
            }
            Header::Declaration { invocation } => lines.push(format!("invocation: {invocation}")),
        }
        if let Some(signature) = &self.signature {
            lines.push("arguments:".into());
            if signature.args.is_empty() {
                lines.push("  (none)".into());
            }
            for (i, arg) in signature.args.iter().enumerate() {
                lines.push(match arg {
                    Type::Named(name, inner) => format!("  {name} (keyword): {inner}"),
                    other => format!("  {i}: {other}"),
                });
            }
            lines.push("results:".into());
            if signature.results.is_empty() {
                lines.push("  (none)".into());
            }
            for (i, result) in signature.results.iter().enumerate() {
                lines.push(format!("  {i}: {result}"));
            }
            if cconv::inlined_results(signature) {
                lines.push(
                    "the single structured result is returned as its slots, one VM result each"
                        .into(),
                );
            }
            lines.push(match CallingConvention::implied_by(signature) {
                Ok(implied) => format!("calling convention: {implied}"),
                Err(error) => format!("calling convention: none ({error})"),
            });
        }
        f.write_str(&lines.join("\n"))
    }
}

/// `pactum sig explain`: what a signature says, in words ([`Explanation`]'s `Display`) or as
/// data ([`Explanation::to_json`]). Text of a format that does not reduce to a signature (a
/// SIP structure with several roots) is a [`SigError::Partial`] carrying what the format says
/// on its own.
pub fn explain(text: &str, format: Option<Format>) -> Result<Explanation, SigError> {
    let parsed = parse(text, format)?;
    let header = match &parsed {
        Parsed::Cconv(cconv) => Header::Cconv(cconv.clone()),
        Parsed::Raw(raw) => Header::Raw {
            rendering: raw.render(),
        },
        Parsed::Sip(sip) => Header::Sip {
            inputs: sip.inputs.leaves(),
            results: sip.results.leaves(),
        },
        Parsed::IreeAbi(abi) => Header::IreeAbi {
            version: abi.version(),
        },
        Parsed::Declaration(declaration) => Header::Declaration {
            invocation: declaration.model,
        },
    };
    let mut explanation = Explanation {
        format: parsed.format(),
        header,
        signature: None,
    };
    if !matches!(parsed, Parsed::Cconv(_)) {
        match parsed.signature() {
            Ok(signature) => explanation.signature = Some(signature),
            Err(error) => {
                return Err(SigError::Partial {
                    explained: Box::new(explanation),
                    error: Box::new(error),
                });
            }
        }
    }
    Ok(explanation)
}

fn explain_leaves(lines: &mut Vec<String>, side: &str, leaves: &[(Vec<SipKey>, i32)]) {
    lines.push(format!("{side}:"));
    if leaves.is_empty() {
        lines.push("  (none)".into());
    }
    for (path, raw_index) in leaves {
        lines.push(format!("  {} = raw {raw_index}", sip_path(path)));
    }
}

/// `[0]["key"]`, or `(root)` for the empty path.
pub fn sip_path(path: &[SipKey]) -> String {
    if path.is_empty() {
        return "(root)".to_owned();
    }
    path.iter()
        .map(|key| match key {
            SipKey::Index(i) => format!("[{i}]"),
            SipKey::Name(name) => format!("[{name:?}]"),
        })
        .collect()
}

fn describe_items(items: &[CconvItem]) -> String {
    if items.is_empty() {
        return "(none)".to_owned();
    }
    items
        .iter()
        .map(describe_item)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `i32`, `ref`, `variadic (i32, i64)...`.
fn describe_item(item: &CconvItem) -> String {
    match item {
        CconvItem::I32 => "i32".to_owned(),
        CconvItem::I64 => "i64".to_owned(),
        CconvItem::F32 => "f32".to_owned(),
        CconvItem::F64 => "f64".to_owned(),
        CconvItem::Ref => "ref".to_owned(),
        CconvItem::Variadic(items) => format!("variadic ({})...", describe_items(items)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_their_keys() {
        for format in Format::ALL {
            assert_eq!(format.key().parse::<Format>().unwrap(), format);
        }
        assert_eq!("iree_abi".parse::<Format>().unwrap(), Format::IreeAbi);
        assert!("json".parse::<Format>().is_err());
    }

    #[test]
    fn sip_render_and_explain() {
        let sip = "I12!S9!k0_0k1_1R3!_0";
        assert_eq!(
            render(sip, None).unwrap(),
            "inputs:\n:[\n  0=raw(0),\n  1=raw(1),\n],\nresults:\n=raw(0),"
        );
        let explanation = explain(sip, None).unwrap();
        assert!(explanation.to_string().contains("\n  [1] = raw 1\n"));
        assert_eq!(
            explanation.to_json()["sip"]["inputs"][1],
            json!({"path": [1], "raw": 1})
        );
    }

    #[test]
    fn errors_keep_the_offset() {
        let error = explain("0rZ_r", None).unwrap_err();
        assert_eq!(error.offset(), Some(2));
        let error = cconv(r#"{"a":[],"r":[]}"#, None, Some("0_Z")).unwrap_err();
        assert!(error.to_string().starts_with("--check: "), "{error}");
        assert!(matches!(error, SigError::CheckText(_)));
        let Err(SigError::Partial { explained, error }) = explain("I5!_0_1R1!", None) else {
            panic!("a SIP structure of two roots has no signature");
        };
        assert_eq!(
            explained.to_string(),
            "format: SIP signature\ninputs:\n  (root) = raw 0\n  (root) = raw 1\nresults:\n  (none)"
        );
        assert!(error.to_string().contains("2 root values"), "{error}");
    }

    #[test]
    fn cconv_reports_a_match() {
        let json = r#"{"a":["i32"],"r":["f32"],"v":1}"#;
        assert_eq!(cconv(json, None, None).unwrap().to_string(), "0i_f");
        assert_eq!(
            cconv(json, None, Some("0i_f")).unwrap().to_string(),
            "0i_f matches (implied: 0i_f)"
        );
        assert!(matches!(
            cconv(json, None, Some("0r_f")),
            Err(SigError::Check(_))
        ));
    }
}
