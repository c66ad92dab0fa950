//! A function's ABI attributes, read from any attribute map: the reflection attributes of a
//! `.vmfb` export, the metadata of a packed function, or pairs of strings.
//!
//! This is a format layer: it reads text and knows no runtime values. Reading the attributes
//! from a TVM FFI map ([`FunctionAbi::from_map`]) and binding a packed function by them
//! ([`FunctionAbi::bind`]) live with the structured calls, in [`crate::structured`].
//!
//! | keys | meaning |
//! |---|---|
//! | `fv` = `1`, `f` | raw function ABI: the raw signature |
//! | `fbr` | raw function ABI: the name of the result allocator |
//! | `sipv` = `1` (or `abi` = `sip`, `abiv` = `1`), `sip` | the SIP signature |
//! | `iree.abi` | the V1 JSON signature |
//! | `iree.abi.declaration` | the human-readable declaration |
//! | `iree.abi.model` | the invocation model (`coarse-fences` for async exports) |
//!
//! ```
//! use pactum_iree::function_abi::FunctionAbi;
//!
//! let abi = FunctionAbi::from_pairs([("fv", "1"), ("f", "I6!S3!t6R6!S3!t6"), ("note", "hi")])?;
//! assert_eq!(abi.raw.as_ref().unwrap().render(), "(sint32) -> (sint32)");
//! assert_eq!(abi.other, [("note".to_string(), "hi".to_string())]);
//!
//! let error = FunctionAbi::from_pairs([("fv", "2"), ("f", "I1!R1!")]).unwrap_err();
//! assert_eq!(error.to_string(), "attribute `fv`: unsupported raw function ABI version 2 (pactum reads version 1)");
//! # Ok::<(), pactum_iree::function_abi::AttributeError>(())
//! ```

// Safe Rust only.
#![forbid(unsafe_code)]

use std::fmt;

use crate::signature::abi_json::IreeAbi;
use crate::signature::declaration::Declaration;
use crate::signature::raw::RawSignature;
use crate::signature::sip::SipSignature;
use crate::signature::{ConvertError, ParseError, Signature};

/// An attribute that is present but unusable: which one, and an [`AttributeErrorKind`] to
/// match on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeError {
    /// The attribute's key (`(metadata)` for metadata that is not a JSON object).
    pub key: String,
    /// What is wrong with it.
    pub kind: AttributeErrorKind,
}

impl AttributeError {
    /// An error about the attribute `key`.
    pub fn new(key: impl Into<String>, kind: AttributeErrorKind) -> AttributeError {
        AttributeError {
            key: key.into(),
            kind,
        }
    }
}

/// `attribute `f`: raw signature: at byte 3: ...`.
impl fmt::Display for AttributeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attribute `{}`: {}", self.key, self.kind)
    }
}

/// Why an [`AttributeError`] happened. Its `Display` is the reason alone.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttributeErrorKind {
    /// A version attribute (`fv`, `sipv`, `abiv`) other than 1.
    UnsupportedVersion {
        /// The ABI it versions (`raw function ABI`, `SIP ABI`).
        abi: &'static str,
        /// The version found.
        version: String,
    },
    /// `fv` without the raw signature `f`.
    MissingRawSignature,
    /// A result allocator (`fbr`) without the raw signature `f` that says what the buffers are.
    AllocatorWithoutRawSignature,
    /// `abi` = `sip` without its version `abiv`.
    MissingSipVersion,
    /// `sipv` (or `abi` = `sip`) without the SIP signature `sip`.
    MissingSipSignature,
    /// A signature attribute that does not parse.
    Parse(ParseError),
    /// A key of an attribute map that is not a string.
    KeyNotString,
    /// A value that is neither a string nor an int.
    ValueType {
        /// The value's type, as TVM FFI names it.
        found: String,
    },
    /// Metadata that is not a JSON object.
    NotJsonObject {
        /// What the JSON parser said.
        detail: String,
    },
}

impl fmt::Display for AttributeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttributeErrorKind::UnsupportedVersion { abi, version } => write!(
                f,
                "unsupported {abi} version {version} (pactum reads version 1)"
            ),
            AttributeErrorKind::MissingRawSignature => {
                f.write_str("present, but there is no raw signature `f`")
            }
            AttributeErrorKind::AllocatorWithoutRawSignature => {
                f.write_str("a result allocator needs the raw signature `f` to know the buffers")
            }
            AttributeErrorKind::MissingSipVersion => f.write_str("`sip` needs its version `abiv`"),
            AttributeErrorKind::MissingSipSignature => {
                f.write_str("present, but there is no SIP signature `sip`")
            }
            AttributeErrorKind::Parse(error) => write!(f, "{error}"),
            AttributeErrorKind::KeyNotString => f.write_str("attribute keys must be strings"),
            AttributeErrorKind::ValueType { found } => {
                write!(f, "expected a string or an int, got {found}")
            }
            AttributeErrorKind::NotJsonObject { detail } => {
                write!(f, "not a JSON object: {detail}")
            }
        }
    }
}

impl std::error::Error for AttributeError {}

#[cfg(feature = "structured")]
impl From<AttributeError> for pactum::Error {
    fn from(error: AttributeError) -> pactum::Error {
        pactum::Error::new(pactum::ErrorKind::VALUE_ERROR, error.to_string())
    }
}

/// The ABI attributes of one function, parsed.
#[derive(Clone, Debug, Default)]
pub struct FunctionAbi {
    /// The raw signature (`fv` = 1, `f`).
    pub raw: Option<RawSignature>,
    /// The result allocator's function name (`fbr`).
    pub result_allocator: Option<String>,
    /// The SIP signature (`sipv` = 1 or `abi` = `sip`, `sip`).
    pub sip: Option<SipSignature>,
    /// The V1 JSON signature (`iree.abi`).
    pub iree_abi: Option<IreeAbi>,
    /// The declaration (`iree.abi.declaration`), when it reads as the compiler writes it.
    /// The attribute is documentation ("not meant to be parsed"), and user-supplied ones take
    /// other forms, so text that does not parse is kept in
    /// [`declaration_text`](Self::declaration_text) and is not an error.
    pub declaration: Option<Declaration>,
    /// The `iree.abi.declaration` text as stored.
    pub declaration_text: Option<String>,
    /// The invocation model (`iree.abi.model`), e.g. `coarse-fences`.
    pub model: Option<String>,
    /// Every other attribute, in the order given.
    pub other: Vec<(String, String)>,
}

fn version(key: &str, value: &str, abi: &'static str) -> Result<(), AttributeError> {
    match value.trim() {
        "1" => Ok(()),
        other => Err(AttributeError::new(
            key,
            AttributeErrorKind::UnsupportedVersion {
                abi,
                version: other.to_owned(),
            },
        )),
    }
}

impl FunctionAbi {
    /// Reads the attributes from `(key, value)` pairs. Unknown keys go to
    /// [`other`](Self::other); a known key with a bad value is an error naming the key.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<FunctionAbi, AttributeError> {
        let pairs: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
            .collect();
        let get = |key: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let mut abi = FunctionAbi::default();

        if let Some(value) = get("fv") {
            version("fv", value, "raw function ABI")?;
        }
        if let Some(text) = get("f") {
            abi.raw = Some(RawSignature::parse(text).map_err(parse_error("f"))?);
        } else if get("fv").is_some() {
            return Err(AttributeError::new(
                "fv",
                AttributeErrorKind::MissingRawSignature,
            ));
        }
        abi.result_allocator = get("fbr").map(str::to_owned);
        if abi.result_allocator.is_some() && abi.raw.is_none() {
            return Err(AttributeError::new(
                "fbr",
                AttributeErrorKind::AllocatorWithoutRawSignature,
            ));
        }

        let legacy_sip = get("abi") == Some("sip");
        if let Some(value) = get("sipv") {
            version("sipv", value, "SIP ABI")?;
        }
        if legacy_sip {
            match get("abiv") {
                Some(value) => version("abiv", value, "SIP ABI")?,
                None => {
                    return Err(AttributeError::new(
                        "abi",
                        AttributeErrorKind::MissingSipVersion,
                    ));
                }
            }
        }
        if let Some(text) = get("sip") {
            abi.sip = Some(SipSignature::parse(text).map_err(parse_error("sip"))?);
        } else if get("sipv").is_some() || legacy_sip {
            return Err(AttributeError::new(
                if get("sipv").is_some() { "sipv" } else { "abi" },
                AttributeErrorKind::MissingSipSignature,
            ));
        }

        if let Some(text) = get("iree.abi") {
            abi.iree_abi = Some(IreeAbi::parse(text).map_err(parse_error("iree.abi"))?);
        }
        if let Some(text) = get("iree.abi.declaration") {
            abi.declaration = Declaration::parse(text).ok();
            abi.declaration_text = Some(text.to_owned());
        }
        abi.model = get("iree.abi.model").map(str::to_owned);

        const KNOWN: &[&str] = &[
            "fv",
            "f",
            "fbr",
            "sipv",
            "sip",
            "iree.abi",
            "iree.abi.declaration",
            "iree.abi.model",
        ];
        abi.other = pairs
            .into_iter()
            .filter(|(k, v)| {
                !KNOWN.contains(&k.as_str())
                    && !(legacy_sip && (k == "abi" || k == "abiv"))
                    && !(k == "abi" && v.is_empty())
            })
            .collect();
        Ok(abi)
    }

    /// Reads the attributes from a JSON object of string (or integer) values, such as a
    /// packed function's metadata. Other keys' values are kept as their JSON text.
    pub fn from_json(text: &str) -> Result<FunctionAbi, AttributeError> {
        let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text)
            .map_err(|e| {
                AttributeError::new(
                    "(metadata)",
                    AttributeErrorKind::NotJsonObject {
                        detail: e.to_string(),
                    },
                )
            })?;
        FunctionAbi::from_pairs(object.into_iter().map(|(key, value)| {
            let value = match value {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            (key, value)
        }))
    }

    /// Whether any signature attribute is present.
    pub fn has_signature(&self) -> bool {
        self.iree_abi.is_some()
            || self.sip.is_some()
            || self.raw.is_some()
            || self.declaration.is_some()
    }

    /// The user-level signature, from the most informative attribute present: `iree.abi`,
    /// then SIP (leaf types from the raw signature), then the raw signature, then the
    /// declaration.
    pub fn signature(&self) -> Option<Result<Signature, ConvertError>> {
        if let Some(abi) = &self.iree_abi {
            return Some(Ok(abi.signature().clone()));
        }
        if let Some(sip) = &self.sip {
            return Some(sip.to_signature(self.raw.as_ref()));
        }
        if let Some(raw) = &self.raw {
            return Some(Ok(raw.to_signature()));
        }
        self.declaration.as_ref().map(Declaration::to_signature)
    }
}

/// Maps a parse error of the attribute `key`.
fn parse_error(key: &'static str) -> impl Fn(ParseError) -> AttributeError {
    move |error| AttributeError::new(key, AttributeErrorKind::Parse(error))
}
