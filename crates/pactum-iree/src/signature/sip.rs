//! The legacy SIP ("structured index path") signature (reflection attributes `sipv = "1"` or
//! `abi = "sip"`, and `sip = <signature>`).
//!
//! It maps the flat inputs and results of the [raw signature](super::raw) onto nested
//! sequences and dicts, as TensorFlow's `tf.nest` structures them. Inputs and results each
//! are a span holding a structured value:
//!
//! ```text
//! value    ::= '_' raw-index                       (a leaf: flat argument or result N)
//!            | 'S' length '!' ('k' int value)*     (a sequence; int keys)
//!            | 'D' length '!' ('K' span value)*    (a dict; string keys)
//! ```
//!
//! An empty span means no structure. [`SipMangler`] builds signatures the way IREE's
//! compiler did; [`SipStructure::render`] prints IREE's `ToStringVisitor` text.
//!
//! ```
//! use pactum_iree::signature::sip::SipSignature;
//!
//! let sip = SipSignature::parse("I12!S9!k0_0k1_1R3!_0")?;
//! assert_eq!(sip.inputs.render(), ":[\n  0=raw(0),\n  1=raw(1),\n],\n");
//! assert_eq!(sip.results.render(), "=raw(0),\n");
//! assert_eq!(sip.to_string(), "I12!S9!k0_0k1_1R3!_0");
//! let signature = sip.to_signature(None).unwrap();
//! assert_eq!(signature.to_string(), "(unknown, unknown) -> (unknown)");
//! # Ok::<(), pactum_iree::signature::ParseError>(())
//! ```

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;

use super::lexer::{self, Lexer, SignatureWriter};
use super::raw::{RawItem, RawSignature};
use super::{ConvertError, ConvertErrorKind, ParseError, Signature, Type};

/// The format name in [`ParseError`]s from this module.
pub const FORMAT: &str = "SIP signature";

/// The target name in [`ConvertError`]s from [`SipSignature::to_signature`].
const MODEL: &str = "the signature model";

/// The target name in [`ConvertError`]s from [`SipMangler`].
pub const TARGET: &str = "a SIP signature";

/// The most nested sequences and dicts a parsed signature or a mangler path may have; deeper
/// input is an error rather than a risk to the stack.
pub const MAX_NESTING_DEPTH: usize = 256;

/// The most slots [`SipSignature::to_signature`] makes for one sequence: sequence keys may be
/// sparse (gaps become [`Type::Null`]), so a huge key must not make a huge list.
pub const MAX_SEQUENCE_SLOTS: usize = 65_536;

/// One step of a path into a structure.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SipKey {
    /// A sequence position (`k<int>`).
    Index(i32),
    /// A dict key (`K<len>!<key>`). The format allows any bytes; pactum keeps keys as text and
    /// rejects a key that is not valid UTF-8 with an error at its offset.
    Name(String),
}

impl From<i32> for SipKey {
    fn from(index: i32) -> SipKey {
        SipKey::Index(index)
    }
}

impl From<&str> for SipKey {
    fn from(name: &str) -> SipKey {
        SipKey::Name(name.to_string())
    }
}

impl From<String> for SipKey {
    fn from(name: String) -> SipKey {
        SipKey::Name(name)
    }
}

/// A structured value: a leaf or a sequence or dict of values.
///
/// Encoding, rendering and the leaf walk recurse once per level; the parsers and the mangler
/// never build trees deeper than [`MAX_NESTING_DEPTH`], and trees built by hand should not
/// either.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SipNode {
    /// `_N`: flat argument (or result) N of the raw signature.
    Leaf(i32),
    /// `S…`: children by integer key, in encoded order (the mangler sorts them; keys may be
    /// sparse).
    Sequence(Vec<(i32, SipNode)>),
    /// `D…`: children by string key, in encoded order (the mangler sorts them bytewise).
    /// IREE's parser also takes integer keys (`k`) inside a dict, so a parsed dict may hold
    /// [`SipKey::Index`] keys; the strict parser refuses them, and the mangler writes none.
    Dict(Vec<(SipKey, SipNode)>),
}

impl SipNode {
    fn write_to(&self, writer: &mut SignatureWriter) {
        match self {
            SipNode::Leaf(index) => {
                writer.integer(b'_', *index);
            }
            SipNode::Sequence(children) => {
                let mut inner = SignatureWriter::new();
                for (key, child) in children {
                    inner.integer(b'k', *key);
                    child.write_to(&mut inner);
                }
                writer.span(b'S', inner.as_str());
            }
            SipNode::Dict(children) => {
                let mut inner = SignatureWriter::new();
                for (key, child) in children {
                    match key {
                        SipKey::Index(index) => inner.integer(b'k', *index),
                        SipKey::Name(name) => inner.span(b'K', name),
                    };
                    child.write_to(&mut inner);
                }
                writer.span(b'D', inner.as_str());
            }
        }
    }

    /// Appends IREE's `ToStringVisitor` text for this value, whose key (if any) has been
    /// written already; `indent` is the indentation of that key.
    fn render_to(&self, indent: &str, out: &mut String) {
        let (open, close, inner_indent) = match self {
            SipNode::Leaf(index) => {
                out.push_str(&format!("=raw({index}),\n"));
                return;
            }
            SipNode::Sequence(_) => (":[\n", ']', format!("{indent}  ")),
            SipNode::Dict(_) => (":{\n", '}', format!("{indent}  ")),
        };
        out.push_str(open);
        match self {
            SipNode::Sequence(children) => {
                for (key, child) in children {
                    out.push_str(&format!("{inner_indent}{key}"));
                    child.render_to(&inner_indent, out);
                }
            }
            SipNode::Dict(children) => {
                for (key, child) in children {
                    out.push_str(&inner_indent);
                    match key {
                        SipKey::Index(index) => out.push_str(&index.to_string()),
                        SipKey::Name(name) => out.push_str(name),
                    }
                    child.render_to(&inner_indent, out);
                }
            }
            SipNode::Leaf(_) => {}
        }
        out.push_str(indent);
        out.push(close);
        out.push_str(",\n");
    }

    fn collect_leaves(&self, path: &mut Vec<SipKey>, out: &mut Vec<(Vec<SipKey>, i32)>) {
        match self {
            SipNode::Leaf(index) => out.push((path.clone(), *index)),
            SipNode::Sequence(children) => {
                for (key, child) in children {
                    path.push(SipKey::Index(*key));
                    child.collect_leaves(path, out);
                    path.pop();
                }
            }
            SipNode::Dict(children) => {
                for (key, child) in children {
                    path.push(key.clone());
                    child.collect_leaves(path, out);
                    path.pop();
                }
            }
        }
    }
}

/// The exact encoding: `_0`, `S9!k0_0k1_1`, `D7!K2!x_0`.
impl fmt::Display for SipNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut writer = SignatureWriter::new();
        self.write_to(&mut writer);
        f.write_str(writer.as_str())
    }
}

/// The structure of the inputs or of the results: usually one root value, none when the
/// span is empty. IREE's parser also accepts several root values one after another (its
/// mangler never wrote that), so they are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SipStructure {
    roots: Vec<SipNode>,
}

impl SipStructure {
    /// A structure with one root value.
    pub fn new(root: SipNode) -> SipStructure {
        SipStructure { roots: vec![root] }
    }

    /// A structure with these root values, in order (none: empty).
    pub fn from_roots(roots: Vec<SipNode>) -> SipStructure {
        SipStructure { roots }
    }

    /// The root values, in encoded order: none when empty, usually one.
    pub fn roots(&self) -> &[SipNode] {
        &self.roots
    }

    /// Whether there is no root value.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The root value, when there is exactly one.
    pub fn single_root(&self) -> Option<&SipNode> {
        match self.roots.as_slice() {
            [root] => Some(root),
            _ => None,
        }
    }

    /// IREE's `ToStringVisitor` text: keys indented two spaces per level (string keys
    /// unquoted), `:[` / `:{` to open, `=raw(N),` for a leaf, `]` / `}` plus `,` to close, a
    /// newline after each; empty for an empty structure.
    ///
    /// ```
    /// use pactum_iree::signature::sip::SipSignature;
    ///
    /// let sip = SipSignature::parse("I31!S27!k0D17!K4!bar_1K4!foo_0k1_2R1!")?;
    /// assert_eq!(
    ///     sip.inputs.render(),
    ///     ":[\n  0:{\n    bar=raw(1),\n    foo=raw(0),\n  },\n  1=raw(2),\n],\n"
    /// );
    /// # Ok::<(), pactum_iree::signature::ParseError>(())
    /// ```
    pub fn render(&self) -> String {
        let mut out = String::new();
        for root in &self.roots {
            root.render_to("", &mut out);
        }
        out
    }

    /// Each leaf's key path and raw index, in encoded order (what a binder needs to place
    /// flat values into the structure).
    pub fn leaves(&self) -> Vec<(Vec<SipKey>, i32)> {
        let mut out = Vec::new();
        for root in &self.roots {
            root.collect_leaves(&mut Vec::new(), &mut out);
        }
        out
    }
}

/// The exact encoding of the root values, one after another (the contents of the `I` or `R`
/// span).
impl fmt::Display for SipStructure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut writer = SignatureWriter::new();
        for root in &self.roots {
            root.write_to(&mut writer);
        }
        f.write_str(writer.as_str())
    }
}

/// A decoded SIP signature: the structure of the inputs and of the results.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SipSignature {
    /// How the flat inputs form the arguments.
    pub inputs: SipStructure,
    /// How the flat results form the results.
    pub results: SipStructure,
}

impl SipSignature {
    /// Parses a SIP signature with IREE's rules; fails if either part fails (the inputs'
    /// error first). See [`SipSignature::parse_parts`].
    pub fn parse(text: &str) -> Result<SipSignature, ParseError> {
        let (inputs, results) = SipSignature::parse_parts(text);
        Ok(SipSignature {
            inputs: inputs?,
            results: results?,
        })
    }

    /// Parses the inputs and the results parts independently, as IREE's parser visited them,
    /// so one can fail while the other succeeds. IREE's rules, leniency included:
    ///
    /// - each span is found by scanning from the start and skipping components with other
    ///   tags; a malformed component with the sought tag counts as an empty span, and one
    ///   with another tag before it is an error here (IREE's parser never finished);
    /// - inside a structure, keys and values alternate ("Struct key not allowed here",
    ///   "Value not allowed here"); the root holds values only, possibly several;
    /// - any other tag is "Unrecognized tag", a malformed component "Syntax error in
    ///   signature".
    ///
    /// An integer key inside a dict (`D…k0_0`) is read as IREE's parser reads it: a dict entry
    /// keyed by an integer ([`SipKey::Index`]), rendered as the number; the strict parser
    /// refuses it, since IREE's mangler never writes one.
    ///
    /// Where IREE accepted input that this model cannot hold, these parsers reject it with a
    /// clear error: a `K` key inside a sequence, a key without a value at the end of a
    /// structure, a key that is not UTF-8, and nesting deeper than [`MAX_NESTING_DEPTH`].
    pub fn parse_parts(
        text: &str,
    ) -> (
        Result<SipStructure, ParseError>,
        Result<SipStructure, ParseError>,
    ) {
        let part = |tag: u8, missing: &str| {
            let lexer = lexer::seek_span_like_iree(text.as_bytes(), tag, FORMAT, missing)?;
            parse_structure(lexer, Mode::Lenient)
        };
        (
            part(b'I', "Inputs struct not found"),
            part(b'R', "Results struct not found"),
        )
    }

    /// Parses a SIP signature, also rejecting what IREE skipped or what its mangler never
    /// wrote: the text must be exactly an `I` span then an `R` span; unknown components,
    /// several root values, repeated keys, negative keys and negative raw indices are
    /// errors. Where this succeeds, [`SipSignature::parse`] gives the same result.
    pub fn parse_strict(text: &str) -> Result<SipSignature, ParseError> {
        let (inputs, results) = lexer::split_function_strict(
            text.as_bytes(),
            FORMAT,
            "Inputs struct not found",
            "Results struct not found",
        )?;
        Ok(SipSignature {
            inputs: parse_structure(inputs, Mode::Strict)?,
            results: parse_structure(results, Mode::Strict)?,
        })
    }

    /// The shared model, with leaf types from `raw` (inputs from `raw.inputs`, results from
    /// `raw.results`, [`Type::Unknown`] when `raw` is `None`):
    ///
    /// - inputs: a root sequence gives one positional argument per child in key order (gaps
    ///   between sparse keys become [`Type::Null`]); a root dict gives one
    ///   [`Type::Named`] argument per key, in encoded order; a root leaf one argument;
    /// - results: a root sequence or dict is one structured result; a root leaf one result;
    /// - nested sequences become [`Type::List`] (gaps [`Type::Null`]), nested dicts
    ///   [`Type::Dict`]; an empty structure gives nothing.
    ///
    /// Errors: several root values, a raw index outside `raw`, negative or repeated keys, a
    /// sequence key of [`MAX_SEQUENCE_SLOTS`] or more.
    pub fn to_signature(&self, raw: Option<&RawSignature>) -> Result<Signature, ConvertError> {
        let inputs = raw.map(|raw| raw.inputs.as_slice());
        let results = raw.map(|raw| raw.results.as_slice());
        let args = match root_of(&self.inputs, "args")? {
            None => Vec::new(),
            Some(SipNode::Sequence(children)) => sequence_slots(children, inputs, "args", 1)?,
            Some(SipNode::Dict(children)) => dict_entries(children, inputs, "args", 1)?
                .into_iter()
                .map(|(key, ty)| Type::Named(key, Box::new(ty)))
                .collect(),
            Some(leaf @ SipNode::Leaf(_)) => vec![node_type(leaf, inputs, "args", 0)?],
        };
        let results = match root_of(&self.results, "results")? {
            None => Vec::new(),
            Some(root) => vec![node_type(root, results, "results", 0)?],
        };
        Ok(Signature { args, results })
    }
}

/// The exact encoding: `I<len>!<inputs>R<len>!<results>`.
impl fmt::Display for SipSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut writer = SignatureWriter::new();
        writer
            .span(b'I', &self.inputs.to_string())
            .span(b'R', &self.results.to_string());
        f.write_str(writer.as_str())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lenient,
    Strict,
}

/// Which kind of span a run of components sits in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Root,
    Sequence,
    Dict,
}

fn parse_structure(lexer: Lexer<'_>, mode: Mode) -> Result<SipStructure, ParseError> {
    let mut roots = Vec::new();
    parse_values(
        lexer,
        Container::Root,
        0,
        mode,
        &mut Collected::Roots(&mut roots),
    )?;
    Ok(SipStructure { roots })
}

/// Where parsed values go.
enum Collected<'c> {
    Roots(&'c mut Vec<SipNode>),
    Sequence(&'c mut Vec<(i32, SipNode)>),
    Dict(&'c mut Vec<(SipKey, SipNode)>),
}

enum PendingKey {
    Index(i32),
    Name(String),
}

fn error(offset: usize, message: String) -> ParseError {
    ParseError::new(FORMAT, offset, message)
}

/// Walks one run of components as IREE's `Visit` did: values at the root, alternating key
/// and value inside a sequence or dict. `depth` is the number of enclosing structures.
fn parse_values(
    lexer: Lexer<'_>,
    container: Container,
    depth: usize,
    mode: Mode,
    collected: &mut Collected<'_>,
) -> Result<(), ParseError> {
    let mut pending_key: Option<(PendingKey, usize)> = None;
    let mut seen_keys: Vec<(SipKey, usize)> = Vec::new();
    let end_offset = lexer.end_offset();
    for component in lexer {
        let component = component.map_err(|lexical| {
            error(
                lexical.offset,
                format!("Syntax error in signature: {}", lexical.message),
            )
        })?;
        let offset = component.offset;
        match component.tag {
            b'k' | b'K' => {
                let is_index = component.tag == b'k';
                if container == Container::Root || pending_key.is_some() {
                    let why = if container == Container::Root {
                        "the top level holds values, not keys".to_string()
                    } else {
                        format!(
                            "the key at byte {} has no value yet",
                            pending_key_offset(&pending_key)
                        )
                    };
                    return Err(error(
                        offset,
                        format!(
                            "Struct key not allowed here: found key '{}' but {why}",
                            component.tag as char
                        ),
                    ));
                }
                // IREE's parser takes an integer key inside a dict too (its visitor never
                // checks); so does `parse`. A string key inside a sequence stays an error.
                let index_in_dict = is_index && container == Container::Dict;
                if index_in_dict && mode == Mode::Strict {
                    return Err(error(
                        offset,
                        "an integer key 'k' inside a dict 'D' (IREE's parser accepts it, as \
                         `parse` does; its mangler never writes one)"
                            .to_string(),
                    ));
                }
                if !index_in_dict && is_index != (container == Container::Sequence) {
                    let (found, inside, expected) = if is_index {
                        ("an integer key 'k'", "a dict 'D'", "'K'")
                    } else {
                        ("a string key 'K'", "a sequence 'S'", "'k'")
                    };
                    return Err(error(
                        offset,
                        format!(
                            "{found} inside {inside}, whose keys are {expected} (IREE's parser \
                             did not check this)"
                        ),
                    ));
                }
                let key = match (component.integer(), component.span_contents()) {
                    (Some(index), _) => PendingKey::Index(index),
                    (None, Some(bytes)) => match std::str::from_utf8(bytes) {
                        Ok(name) => PendingKey::Name(name.to_string()),
                        Err(_) => {
                            return Err(error(
                                offset,
                                format!(
                                    "dict key '{}' is not valid UTF-8",
                                    lexer::abbreviate(bytes)
                                ),
                            ));
                        }
                    },
                    (None, None) => return Err(error(offset, "malformed key".to_string())),
                };
                if mode == Mode::Strict {
                    check_strict_key(&key, offset, &mut seen_keys)?;
                }
                pending_key = Some((key, offset));
            }
            b'_' | b'S' | b'D' => {
                let node = match (component.integer(), component.nested_lexer()) {
                    (Some(index), _) => {
                        if mode == Mode::Strict && index < 0 {
                            return Err(error(offset, format!("raw index {index} is negative")));
                        }
                        SipNode::Leaf(index)
                    }
                    (None, Some(nested)) => {
                        if depth >= MAX_NESTING_DEPTH {
                            return Err(error(
                                offset,
                                format!("structures nest deeper than {MAX_NESTING_DEPTH} levels"),
                            ));
                        }
                        let nested = nested.with_format(FORMAT);
                        if component.tag == b'S' {
                            let mut children = Vec::new();
                            parse_values(
                                nested,
                                Container::Sequence,
                                depth + 1,
                                mode,
                                &mut Collected::Sequence(&mut children),
                            )?;
                            SipNode::Sequence(children)
                        } else {
                            let mut children = Vec::new();
                            parse_values(
                                nested,
                                Container::Dict,
                                depth + 1,
                                mode,
                                &mut Collected::Dict(&mut children),
                            )?;
                            SipNode::Dict(children)
                        }
                    }
                    (None, None) => return Err(error(offset, "malformed value".to_string())),
                };
                match (&mut *collected, pending_key.take()) {
                    (Collected::Roots(roots), None) => {
                        if mode == Mode::Strict && !roots.is_empty() {
                            return Err(error(
                                offset,
                                "a second root value (IREE's mangler writes at most one)"
                                    .to_string(),
                            ));
                        }
                        roots.push(node);
                    }
                    (Collected::Sequence(children), Some((PendingKey::Index(key), _))) => {
                        children.push((key, node));
                    }
                    (Collected::Dict(children), Some((PendingKey::Name(key), _))) => {
                        children.push((SipKey::Name(key), node));
                    }
                    (Collected::Dict(children), Some((PendingKey::Index(key), _))) => {
                        children.push((SipKey::Index(key), node));
                    }
                    _ => {
                        return Err(error(
                            offset,
                            format!(
                                "Value not allowed here: found value '{}' where a key ('k' in a \
                                 sequence, 'K' in a dict) was expected",
                                component.tag as char
                            ),
                        ));
                    }
                }
            }
            other => {
                return Err(error(
                    offset,
                    format!(
                        "Unrecognized tag '{}': expected a value ('_', 'S', 'D') or a key ('k', \
                         'K')",
                        other as char
                    ),
                ));
            }
        }
    }
    if let Some((_, key_offset)) = pending_key {
        return Err(error(
            end_offset,
            format!(
                "the structure ends after the key at byte {key_offset} without its value (IREE's \
                 parser let this pass)"
            ),
        ));
    }
    Ok(())
}

fn pending_key_offset(pending_key: &Option<(PendingKey, usize)>) -> usize {
    pending_key.as_ref().map_or(0, |(_, offset)| *offset)
}

fn check_strict_key(
    key: &PendingKey,
    offset: usize,
    seen_keys: &mut Vec<(SipKey, usize)>,
) -> Result<(), ParseError> {
    let key = match key {
        PendingKey::Index(index) if *index < 0 => {
            return Err(error(offset, format!("sequence key {index} is negative")));
        }
        PendingKey::Index(index) => SipKey::Index(*index),
        PendingKey::Name(name) => SipKey::Name(name.clone()),
    };
    if let Some((_, first)) = seen_keys.iter().find(|(seen, _)| *seen == key) {
        return Err(error(
            offset,
            format!("key {} repeats the key at byte {first}", key_text(&key)),
        ));
    }
    seen_keys.push((key, offset));
    Ok(())
}

fn key_text(key: &SipKey) -> String {
    match key {
        SipKey::Index(index) => format!("[{index}]"),
        SipKey::Name(name) => format!("[{name:?}]"),
    }
}

fn path_text(prefix: &str, keys: &[SipKey]) -> String {
    let mut text = prefix.to_string();
    for key in keys {
        text.push_str(&key_text(key));
    }
    text
}

fn root_of<'s>(
    structure: &'s SipStructure,
    path: &str,
) -> Result<Option<&'s SipNode>, ConvertError> {
    match structure.roots.as_slice() {
        [] => Ok(None),
        [root] => Ok(Some(root)),
        roots => Err(ConvertError::new(
            MODEL,
            path,
            ConvertErrorKind::SeveralRoots { count: roots.len() },
        )),
    }
}

/// The type of `node`, which sits inside `depth` structures. The depth is checked because a
/// tree built by hand, unlike a parsed one, can be arbitrarily deep.
fn node_type(
    node: &SipNode,
    items: Option<&[RawItem]>,
    path: &str,
    depth: usize,
) -> Result<Type, ConvertError> {
    if !matches!(node, SipNode::Leaf(_)) && depth >= MAX_NESTING_DEPTH {
        return Err(ConvertError::new(
            MODEL,
            path,
            ConvertErrorKind::TooDeep {
                what: "structures",
                limit: MAX_NESTING_DEPTH,
            },
        ));
    }
    match node {
        SipNode::Leaf(index) => leaf_type(*index, items, path),
        SipNode::Sequence(children) => Ok(Type::List(sequence_slots(
            children,
            items,
            path,
            depth + 1,
        )?)),
        SipNode::Dict(children) => Ok(Type::Dict(dict_entries(children, items, path, depth + 1)?)),
    }
}

fn leaf_type(index: i32, items: Option<&[RawItem]>, path: &str) -> Result<Type, ConvertError> {
    let Some(items) = items else {
        return Ok(Type::Unknown);
    };
    usize::try_from(index)
        .ok()
        .and_then(|index| items.get(index))
        .map(RawItem::to_type)
        .ok_or_else(|| {
            ConvertError::new(
                MODEL,
                path,
                ConvertErrorKind::RawIndexOutOfRange {
                    index,
                    items: items.len(),
                },
            )
        })
}

/// The slots of a sequence whose children sit inside `depth` structures.
fn sequence_slots(
    children: &[(i32, SipNode)],
    items: Option<&[RawItem]>,
    path: &str,
    depth: usize,
) -> Result<Vec<Type>, ConvertError> {
    let fail = |path: String, kind: ConvertErrorKind| ConvertError::new(MODEL, path, kind);
    let mut slots: Vec<Option<Type>> = Vec::new();
    for (key, child) in children {
        let child_path = format!("{path}[{key}]");
        let slot = usize::try_from(*key)
            .ok()
            .filter(|&slot| slot < MAX_SEQUENCE_SLOTS)
            .ok_or_else(|| {
                fail(
                    child_path.clone(),
                    ConvertErrorKind::SequenceKeyOutOfRange {
                        key: *key,
                        limit: MAX_SEQUENCE_SLOTS,
                    },
                )
            })?;
        if slots.len() <= slot {
            slots.resize(slot + 1, None);
        }
        if slots[slot].is_some() {
            return Err(fail(
                child_path,
                ConvertErrorKind::DuplicateSequenceKey(*key),
            ));
        }
        slots[slot] = Some(node_type(child, items, &child_path, depth)?);
    }
    Ok(slots
        .into_iter()
        .map(|slot| slot.unwrap_or(Type::Null))
        .collect())
}

/// The entries of a dict whose children sit inside `depth` structures.
///
/// An integer key (which IREE's parser accepts inside a dict) becomes its decimal text.
fn dict_entries(
    children: &[(SipKey, SipNode)],
    items: Option<&[RawItem]>,
    path: &str,
    depth: usize,
) -> Result<Vec<(String, Type)>, ConvertError> {
    let mut entries: Vec<(String, Type)> = Vec::with_capacity(children.len());
    for (key, child) in children {
        let key = &match key {
            SipKey::Index(index) => index.to_string(),
            SipKey::Name(name) => name.clone(),
        };
        let child_path = format!("{path}[{key:?}]");
        if entries.iter().any(|(seen, _)| seen == key) {
            return Err(ConvertError::new(
                MODEL,
                child_path,
                ConvertErrorKind::DuplicateDictKey(key.clone()),
            ));
        }
        entries.push((key.clone(), node_type(child, items, &child_path, depth)?));
    }
    Ok(entries)
}

/// Builds a SIP signature from the place of each flat input and result in the structure,
/// as IREE's compiler did (`SipSignatureMangler`).
///
/// Each call assigns raw index N to the leaf at a key path. The first key used at a level
/// makes it a sequence (integer keys) or a dict (string keys); the signature lists children
/// sorted (integers ascending, strings bytewise) and sequences may be sparse. Rejected, with
/// the structure unchanged: mixing key kinds at a level, assigning a leaf twice, a path that
/// ends on a sequence or dict, a path through a leaf (IREE silently dropped the leaf there),
/// a negative raw index or sequence key, and paths longer than [`MAX_NESTING_DEPTH`].
///
/// ```
/// use pactum_iree::signature::sip::{SipKey, SipMangler};
///
/// let mut mangler = SipMangler::new();
/// mangler.set_input(0, &[0.into(), "foo".into()]).unwrap();
/// mangler.set_input(1, &[0.into(), "bar".into()]).unwrap();
/// mangler.set_input(2, &[1.into()]).unwrap();
/// mangler.set_result(0, &[]).unwrap();
/// assert!(mangler.set_input(3, &["x".into()]).is_err()); // the root is a sequence
/// assert_eq!(mangler.finish().to_string(), "I31!S27!k0D17!K4!bar_1K4!foo_0k1_2R3!_0");
/// ```
#[derive(Clone, Debug, Default)]
pub struct SipMangler {
    inputs: Option<MangleNode>,
    results: Option<MangleNode>,
}

#[derive(Clone, Debug)]
enum MangleNode {
    Leaf(i32),
    Sequence(BTreeMap<i32, MangleNode>),
    Dict(BTreeMap<String, MangleNode>),
}

impl MangleNode {
    /// A new branch holding `raw_index` at the end of `path`.
    fn branch(path: &[SipKey], raw_index: i32) -> MangleNode {
        let mut node = MangleNode::Leaf(raw_index);
        for key in path.iter().rev() {
            node = match key {
                SipKey::Index(index) => MangleNode::Sequence(BTreeMap::from([(*index, node)])),
                SipKey::Name(name) => MangleNode::Dict(BTreeMap::from([(name.clone(), node)])),
            };
        }
        node
    }

    fn to_sip(&self) -> SipNode {
        match self {
            MangleNode::Leaf(index) => SipNode::Leaf(*index),
            MangleNode::Sequence(children) => SipNode::Sequence(
                children
                    .iter()
                    .map(|(key, child)| (*key, child.to_sip()))
                    .collect(),
            ),
            MangleNode::Dict(children) => SipNode::Dict(
                children
                    .iter()
                    .map(|(key, child)| (SipKey::Name(key.clone()), child.to_sip()))
                    .collect(),
            ),
        }
    }
}

impl SipMangler {
    /// A mangler with empty inputs and results.
    pub fn new() -> SipMangler {
        SipMangler::default()
    }

    /// Places flat input `raw_index` at `path` in the inputs structure (an empty path makes
    /// it the root).
    pub fn set_input(&mut self, raw_index: i32, path: &[SipKey]) -> Result<(), ConvertError> {
        assign(&mut self.inputs, raw_index, path, "inputs")
    }

    /// Places flat result `raw_index` at `path` in the results structure.
    pub fn set_result(&mut self, raw_index: i32, path: &[SipKey]) -> Result<(), ConvertError> {
        assign(&mut self.results, raw_index, path, "results")
    }

    /// The signature built so far.
    pub fn finish(&self) -> SipSignature {
        let structure = |root: &Option<MangleNode>| SipStructure {
            roots: root.iter().map(MangleNode::to_sip).collect(),
        };
        SipSignature {
            inputs: structure(&self.inputs),
            results: structure(&self.results),
        }
    }
}

/// Checks everything before changing anything, so a rejected call leaves the tree as it was.
fn assign(
    root: &mut Option<MangleNode>,
    raw_index: i32,
    path: &[SipKey],
    side: &str,
) -> Result<(), ConvertError> {
    let fail = |depth: usize, kind: ConvertErrorKind| {
        Err(ConvertError::new(
            TARGET,
            path_text(side, &path[..depth]),
            kind,
        ))
    };
    if raw_index < 0 {
        return fail(path.len(), ConvertErrorKind::NegativeRawIndex(raw_index));
    }
    if path.len() > MAX_NESTING_DEPTH {
        return fail(
            0,
            ConvertErrorKind::PathTooLong {
                keys: path.len(),
                limit: MAX_NESTING_DEPTH,
            },
        );
    }
    if let Some((depth, key)) = path.iter().enumerate().find_map(|(depth, key)| match key {
        SipKey::Index(i) if *i < 0 => Some((depth, *i)),
        _ => None,
    }) {
        return fail(depth + 1, ConvertErrorKind::NegativeSequenceKey(key));
    }
    let Some(mut node) = root.as_mut() else {
        *root = Some(MangleNode::branch(path, raw_index));
        return Ok(());
    };
    for (depth, key) in path.iter().enumerate() {
        let rest = &path[depth + 1..];
        match (node, key) {
            (MangleNode::Leaf(existing), _) => {
                return fail(
                    depth,
                    ConvertErrorKind::PathThroughLeaf {
                        raw_index: *existing,
                    },
                );
            }
            (MangleNode::Sequence(children), SipKey::Index(index)) => {
                match children.entry(*index) {
                    Entry::Vacant(slot) => {
                        slot.insert(MangleNode::branch(rest, raw_index));
                        return Ok(());
                    }
                    Entry::Occupied(slot) => node = slot.into_mut(),
                }
            }
            (MangleNode::Dict(children), SipKey::Name(name)) => {
                match children.entry(name.clone()) {
                    Entry::Vacant(slot) => {
                        slot.insert(MangleNode::branch(rest, raw_index));
                        return Ok(());
                    }
                    Entry::Occupied(slot) => node = slot.into_mut(),
                }
            }
            (MangleNode::Sequence(_), SipKey::Name(name)) => {
                return fail(depth, ConvertErrorKind::DictKeyInSequence(name.clone()));
            }
            (MangleNode::Dict(_), SipKey::Index(index)) => {
                return fail(depth, ConvertErrorKind::SequenceKeyInDict(*index));
            }
        }
    }
    match node {
        MangleNode::Leaf(existing) => fail(
            path.len(),
            ConvertErrorKind::LeafTaken {
                raw_index: *existing,
            },
        ),
        MangleNode::Sequence(_) | MangleNode::Dict(_) => {
            fail(path.len(), ConvertErrorKind::PathEndsOnStructure)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::ScalarType;
    use crate::signature::raw::RawScalarType;

    #[test]
    fn parse_render_and_encode() {
        let text =
            "I49!D45!K4!a10_3K3!a9_4K2!x_0K2!yS16!k0_1k1D7!K2!z_2R25!D21!K7!logits_1K5!loss_0";
        let sip = SipSignature::parse(text).unwrap();
        assert_eq!(sip.to_string(), text);
        assert_eq!(SipSignature::parse_strict(text), Ok(sip.clone()));
        assert_eq!(
            sip.results.render(),
            ":{\n  logits=raw(1),\n  loss=raw(0),\n},\n"
        );
        let leaves = sip.inputs.leaves();
        assert_eq!(leaves[4], (vec!["y".into(), 1.into(), "z".into()], 2));
    }

    #[test]
    fn integer_keys_inside_dicts_are_read_as_iree_reads_them() {
        // `{0: raw 0, "a": raw 1}` as IREE's parser takes it: `k0` inside a `D`.
        let sip = SipSignature {
            inputs: SipStructure::new(SipNode::Dict(vec![
                (SipKey::Index(0), SipNode::Leaf(0)),
                ("a".into(), SipNode::Leaf(1)),
            ])),
            results: SipStructure::default(),
        };
        let text = sip.to_string();
        assert_eq!(text, "I15!D11!k0_0K2!a_1R1!");
        assert_eq!(SipSignature::parse(&text), Ok(sip.clone()));
        assert_eq!(sip.inputs.render(), ":{\n  0=raw(0),\n  a=raw(1),\n},\n");
        let error = SipSignature::parse_strict(&text).unwrap_err();
        assert_eq!(error.offset, 8, "{error}");
        assert!(
            error.message.contains("an integer key 'k' inside a dict"),
            "{error}"
        );
        // In the signature model the key is its decimal text (a root dict: named arguments).
        let model = sip.to_signature(None).unwrap();
        assert_eq!(model.to_string(), "(0: unknown, a: unknown) -> ()");
    }

    #[test]
    fn parser_errors() {
        let cases = [
            ("I3!k0R1!", 3, "Struct key not allowed here"),
            ("I8!S5!k0k1R1!", 8, "Struct key not allowed here"),
            ("I6!S3!_0R1!", 6, "Value not allowed here"),
            ("I3!x1R1!", 3, "Unrecognized tag 'x'"),
            ("R1!", 3, "Inputs struct not found"),
            ("I7!S4!k0_R1!", 9, "Syntax error in signature"),
            ("I8!S5!K1!_0R1!", 6, "a string key 'K' inside a sequence"),
            ("I6!S3!k0R1!", 8, "without its value"),
        ];
        for (input, offset, message) in cases {
            let error = SipSignature::parse(input).unwrap_err();
            assert_eq!(error.offset, offset, "{input:?}: {error}");
            assert!(error.message.contains(message), "{input:?}: {error}");
        }
    }

    #[test]
    fn strict_rejects_what_the_mangler_never_writes() {
        let lenient_only = [
            ("I5!_0_1R1!", 5, "a second root value"),
            ("I12!S9!k0_0k0_1R1!", 11, "repeats"),
            ("I9!S6!k-1_0R1!", 6, "negative"),
            ("I4!_-1R1!", 3, "negative"),
            ("I1!R1!_0", 6, "after the results span"),
        ];
        for (input, offset, message) in lenient_only {
            assert!(SipSignature::parse(input).is_ok(), "{input:?}");
            let error = SipSignature::parse_strict(input).unwrap_err();
            assert_eq!(error.offset, offset, "{input:?}: {error}");
            assert!(error.message.contains(message), "{input:?}: {error}");
        }
    }

    #[test]
    fn model_conversion() {
        let sip = SipSignature::parse("I20!S16!k0D7!K2!b_1k2_0R12!S9!k0_0k1_1").unwrap();
        let raw = RawSignature {
            inputs: vec![RawItem::Scalar(RawScalarType::Sint32), RawItem::RefObject],
            results: vec![RawItem::RefObject, RawItem::Scalar(RawScalarType::Float32)],
        };
        let signature = sip.to_signature(Some(&raw)).unwrap();
        assert_eq!(
            signature.to_string(),
            "(dict{\"b\": ref}, null, si32) -> (list[ref, f32])"
        );
        let kwargs = SipSignature::parse("I10!D7!K2!x_0R1!").unwrap();
        let signature = kwargs.to_signature(Some(&raw)).unwrap();
        assert_eq!(
            signature.args,
            [Type::Named(
                "x".into(),
                Box::new(Type::Scalar(ScalarType::int(
                    32,
                    crate::signature::Signedness::Signed
                )))
            )]
        );
        let error = SipSignature::parse("I3!_5R1!")
            .unwrap()
            .to_signature(Some(&raw))
            .unwrap_err();
        assert_eq!(error.path, "args");
        let sparse = SipSignature::parse("I14!S10!k999999_0R1!").unwrap();
        assert!(sparse.to_signature(None).is_err());
        let mut deep = SipNode::Leaf(0);
        for _ in 0..MAX_NESTING_DEPTH + 1 {
            deep = SipNode::Sequence(vec![(0, deep)]);
        }
        let deep = SipSignature {
            inputs: SipStructure::default(),
            results: SipStructure::new(deep),
        };
        let error = deep.to_signature(None).unwrap_err();
        assert_eq!(
            error.kind,
            ConvertErrorKind::TooDeep {
                what: "structures",
                limit: MAX_NESTING_DEPTH
            },
            "{error}"
        );
    }

    #[test]
    fn mangler_rules() {
        let mut mangler = SipMangler::new();
        mangler.set_input(0, &[0.into(), 1.into()]).unwrap();
        let reject = |mangler: &mut SipMangler,
                      index,
                      path: &[SipKey],
                      kind: ConvertErrorKind,
                      message: &str| {
            let error = mangler.set_input(index, path).unwrap_err();
            assert_eq!(error.kind, kind, "{error}");
            assert!(error.to_string().contains(message), "{error}");
        };
        reject(
            &mut mangler,
            1,
            &[0.into()],
            ConvertErrorKind::PathEndsOnStructure,
            "ends on a sequence or dict",
        );
        reject(
            &mut mangler,
            1,
            &["a".into()],
            ConvertErrorKind::DictKeyInSequence("a".into()),
            "this level is a sequence",
        );
        reject(
            &mut mangler,
            1,
            &[0.into(), 1.into()],
            ConvertErrorKind::LeafTaken { raw_index: 0 },
            "already holds raw index 0",
        );
        reject(
            &mut mangler,
            1,
            &[0.into(), 1.into(), 2.into()],
            ConvertErrorKind::PathThroughLeaf { raw_index: 0 },
            "continues past this leaf",
        );
        reject(
            &mut mangler,
            -1,
            &[3.into()],
            ConvertErrorKind::NegativeRawIndex(-1),
            "negative",
        );
        reject(
            &mut mangler,
            1,
            &[(-3).into()],
            ConvertErrorKind::NegativeSequenceKey(-3),
            "negative",
        );
        mangler.set_input(1, &[4.into()]).unwrap();
        mangler.set_input(2, &[0.into(), 0.into()]).unwrap();
        assert_eq!(mangler.finish().inputs.to_string(), "S18!k0S9!k0_2k1_0k4_1");
        let deep: Vec<SipKey> = (0..=MAX_NESTING_DEPTH as i32).map(SipKey::Index).collect();
        assert_eq!(
            SipMangler::new().set_input(0, &deep).unwrap_err().kind,
            ConvertErrorKind::PathTooLong {
                keys: MAX_NESTING_DEPTH + 1,
                limit: MAX_NESTING_DEPTH
            }
        );
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let depth = MAX_NESTING_DEPTH + 1;
        let mut text = "_0".to_string();
        for _ in 0..depth {
            text = format!("S{}!k0{text}", text.len() + 3);
        }
        let text = format!("I{}!{text}R1!", text.len() + 1);
        let error = SipSignature::parse(&text).unwrap_err();
        assert!(error.message.contains("deeper than"), "{error}");
    }
}
