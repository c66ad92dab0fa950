//! Plans: how the arguments of a call map to flat arguments, and flat results back, compiled
//! once per signature. A [`Slot`] is the compiled form of a type (map keys as ready-made
//! values, the expected type's text for messages); an [`AbiPlan`] follows `iree.abi`, a
//! [`LeafPlan`] the leaves of a SIP or raw signature.

use crate::signature::raw::RawSignature;
use crate::signature::sip::{SipKey, SipNode, SipSignature, SipStructure};
use crate::signature::{ScalarType, Signature, Type};
use crate::tensor_fit::scalar_dtype;
use pactum::any::Any;
use pactum::error::{Error, ErrorKind, Result};

/// The compiled form of a type: what the conversion needs, prepared once per signature.
pub(super) enum Node {
    Scalar(ScalarType),
    Tensor {
        element: ScalarType,
        /// `element` as a DLPack type, worked out once.
        dtype: pactum::dtype::DataType,
        dims: Option<Vec<Option<u64>>>,
    },
    RefArray {
        element: Box<Slot>,
        dims: Option<Vec<Option<u64>>>,
    },
    String,
    Opaque,
    Sequence(Vec<Slot>),
    Dict(Vec<(Any, String)>, Vec<Slot>),
    TypedList(Box<Slot>),
    Null,
    Unknown,
}

pub(super) struct Slot {
    pub(super) node: Node,
    /// The type as written in messages (`ndarray<f32, 2>`).
    pub(super) expected: String,
}

impl Slot {
    pub(super) fn compile(ty: &Type) -> Slot {
        let node = match ty {
            Type::Scalar(scalar) => Node::Scalar(*scalar),
            Type::NdArray(array) => match array.scalar_element() {
                Some(element) => Node::Tensor {
                    element,
                    dtype: scalar_dtype(element),
                    dims: array.dims.clone(),
                },
                // A declaration's `!hal.buffer_view`: a tensor of any element type and rank,
                // passed and returned as it is (iree.runtime takes any array for it).
                None if matches!(*array.element, Type::Unknown) => Node::Unknown,
                None => Node::RefArray {
                    element: Box::new(Slot::compile(&array.element)),
                    dims: array.dims.clone(),
                },
            },
            Type::String => Node::String,
            Type::Opaque => Node::Opaque,
            Type::List(slots) | Type::Tuple(slots) => {
                Node::Sequence(slots.iter().map(Slot::compile).collect())
            }
            Type::Dict(entries) => Node::Dict(
                entries
                    .iter()
                    .map(|(key, _)| (Any::from(key.as_str()), key.clone()))
                    .collect(),
                entries.iter().map(|(_, ty)| Slot::compile(ty)).collect(),
            ),
            Type::TypedList(element) => Node::TypedList(Box::new(Slot::compile(element))),
            Type::Named(_, inner) => return Slot::compile(inner),
            Type::Null => Node::Null,
            Type::Unknown => Node::Unknown,
        };
        Slot {
            node,
            expected: ty.unnamed().to_string(),
        }
    }
}

/// `iree.abi`: one flat argument per top-level record.
pub(super) struct AbiPlan {
    pub(super) args: Vec<Slot>,
    /// The argument names (`Some` for named records), for messages.
    pub(super) names: Vec<Option<String>>,
    /// The records filled by position, in order (the un-named ones).
    pub(super) positional: Vec<usize>,
    pub(super) results: Vec<Slot>,
    /// A single structured result, returned flat as its slots.
    pub(super) inlined: Option<Slot>,
}

/// Where a SIP structure's leaves go.
pub(super) enum Pattern {
    /// The flat argument (or result) with this index.
    Leaf(usize),
    /// A sequence by integer key; `None` for keys the structure skips.
    Sequence(Vec<Option<Pattern>>),
    /// A dict by name, in encoded order.
    Dict(Vec<(Any, String)>, Vec<Pattern>),
}

/// SIP and raw signatures: the leaves of the arguments are the flat arguments.
pub(super) struct LeafPlan {
    pub(super) positional: Vec<Option<Pattern>>,
    pub(super) keywords: Vec<(Any, String)>,
    pub(super) keyword_patterns: Vec<Pattern>,
    pub(super) inputs: Vec<Slot>,
    pub(super) results: Option<Pattern>,
    pub(super) result_slots: Vec<Slot>,
    /// The raw signature's types, when known: needed to pre-allocate results.
    pub(super) raw: Option<(Vec<Type>, Vec<Type>)>,
}

/// How a structured function maps its calls: by a signature, or dynamically.
pub(super) enum Plan {
    Abi(AbiPlan),
    Leaves(LeafPlan),
    Dynamic,
}

impl AbiPlan {
    /// One flat argument per top-level record of `signature`.
    pub(super) fn new(signature: &Signature) -> Result<AbiPlan> {
        let mut names = Vec::new();
        let mut positional = Vec::new();
        for (i, arg) in signature.args.iter().enumerate() {
            match arg {
                Type::Named(name, _) => {
                    if names.iter().flatten().any(|n: &String| n == name) {
                        return Err(bind_error(format!(
                            "iree.abi names argument `{name}` twice"
                        )));
                    }
                    names.push(Some(name.clone()));
                }
                _ => {
                    names.push(None);
                    positional.push(i);
                }
            }
        }
        let inlined = match signature.results.as_slice() {
            [single]
                if matches!(
                    single.unnamed(),
                    Type::List(_) | Type::Tuple(_) | Type::Dict(_)
                ) =>
            {
                Some(Slot::compile(single))
            }
            _ => None,
        };
        let plan = AbiPlan {
            args: signature.args.iter().map(Slot::compile).collect(),
            names,
            positional,
            results: signature.results.iter().map(Slot::compile).collect(),
            inlined,
        };
        Ok(plan)
    }
}

impl LeafPlan {
    /// The leaves of a SIP signature, with leaf types from the raw signature when one is
    /// given.
    pub(super) fn from_sip(sip: &SipSignature, raw: Option<&RawSignature>) -> Result<LeafPlan> {
        let (input_types, result_types) = match raw {
            Some(raw) => {
                let signature = raw.to_signature();
                (Some(signature.args), Some(signature.results))
            }
            None => (None, None),
        };
        let input_count = leaf_count(&sip.inputs, "inputs", input_types.as_ref().map(Vec::len))?;
        let result_count =
            leaf_count(&sip.results, "results", result_types.as_ref().map(Vec::len))?;
        let (positional, keywords, keyword_patterns) = match sip.inputs.roots() {
            [] => (Vec::new(), Vec::new(), Vec::new()),
            [SipNode::Sequence(children)] => (sequence_patterns(children)?, Vec::new(), Vec::new()),
            [SipNode::Dict(children)] => {
                let (keys, patterns) = dict_patterns(children)?;
                (Vec::new(), keys, patterns)
            }
            [leaf @ SipNode::Leaf(_)] => (vec![Some(pattern(leaf)?)], Vec::new(), Vec::new()),
            _ => {
                return Err(bind_error(
                    "the SIP inputs have several roots; a call has one argument list",
                ));
            }
        };
        let results = match sip.results.roots() {
            [] => None,
            [root] => Some(pattern(root)?),
            _ => return Err(bind_error("the SIP results have several roots")),
        };
        let unknown = |count| (0..count).map(|_| Slot::compile(&Type::Unknown)).collect();
        let plan = LeafPlan {
            positional,
            keywords,
            keyword_patterns,
            inputs: match &input_types {
                Some(types) => types.iter().map(Slot::compile).collect(),
                None => unknown(input_count),
            },
            result_slots: match &result_types {
                Some(types) => types.iter().map(Slot::compile).collect(),
                None => unknown(result_count),
            },
            results,
            raw: input_types.zip(result_types),
        };
        Ok(plan)
    }

    /// The items of a raw signature, positional.
    pub(super) fn from_raw(raw: &RawSignature) -> LeafPlan {
        let signature = raw.to_signature();
        let results = match signature.results.len() {
            0 => None,
            1 => Some(Pattern::Leaf(0)),
            n => Some(Pattern::Sequence(
                (0..n).map(|i| Some(Pattern::Leaf(i))).collect(),
            )),
        };
        LeafPlan {
            positional: (0..signature.args.len())
                .map(|i| Some(Pattern::Leaf(i)))
                .collect(),
            keywords: Vec::new(),
            keyword_patterns: Vec::new(),
            inputs: signature.args.iter().map(Slot::compile).collect(),
            result_slots: signature.results.iter().map(Slot::compile).collect(),
            results,
            raw: Some((signature.args, signature.results)),
        }
    }
}

pub(super) fn bind_error(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::VALUE_ERROR, message)
}

// ---------------------------------------------------------------------------------------
// Turning SIP trees into patterns.

fn leaf_count(structure: &SipStructure, side: &str, expected: Option<usize>) -> Result<usize> {
    let mut seen = Vec::new();
    for (_, index) in structure.leaves() {
        let index = usize::try_from(index)
            .map_err(|_| bind_error(format!("SIP {side}: negative raw index {index}")))?;
        if index >= seen.len() {
            if index > 1 << 16 {
                return Err(bind_error(format!(
                    "SIP {side}: raw index {index} is out of range"
                )));
            }
            seen.resize(index + 1, false);
        }
        if std::mem::replace(&mut seen[index], true) {
            return Err(bind_error(format!(
                "SIP {side}: raw index {index} appears twice"
            )));
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(bind_error(format!(
            "SIP {side}: no leaf has raw index {missing}"
        )));
    }
    if let Some(expected) = expected
        && expected != seen.len()
    {
        return Err(bind_error(format!(
            "SIP {side} have {} leaves, the raw signature has {expected}",
            seen.len()
        )));
    }
    Ok(seen.len())
}

fn pattern(node: &SipNode) -> Result<Pattern> {
    Ok(match node {
        SipNode::Leaf(index) => Pattern::Leaf(
            usize::try_from(*index)
                .map_err(|_| bind_error(format!("negative raw index {index}")))?,
        ),
        SipNode::Sequence(children) => Pattern::Sequence(sequence_patterns(children)?),
        SipNode::Dict(children) => {
            let (keys, patterns) = dict_patterns(children)?;
            Pattern::Dict(keys, patterns)
        }
    })
}

fn sequence_patterns(children: &[(i32, SipNode)]) -> Result<Vec<Option<Pattern>>> {
    let mut out: Vec<Option<Pattern>> = Vec::new();
    for (key, child) in children {
        let key = usize::try_from(*key)
            .ok()
            .filter(|&k| k <= 1 << 16)
            .ok_or_else(|| bind_error(format!("SIP sequence key {key} is out of range")))?;
        if key >= out.len() {
            out.resize_with(key + 1, || None);
        }
        if out[key].is_some() {
            return Err(bind_error(format!("SIP sequence key {key} appears twice")));
        }
        out[key] = Some(pattern(child)?);
    }
    Ok(out)
}

/// A dict's keys (as values and as text) and its children's patterns, in encoded order.
type DictPatterns = (Vec<(Any, String)>, Vec<Pattern>);

fn dict_patterns(children: &[(SipKey, SipNode)]) -> Result<DictPatterns> {
    let mut keys = Vec::with_capacity(children.len());
    let mut patterns = Vec::with_capacity(children.len());
    for (key, child) in children {
        // An integer key (IREE's parser accepts them inside dicts) matches an int map key.
        let (value, name) = match key {
            SipKey::Name(name) => (Any::from(name.as_str()), name.clone()),
            SipKey::Index(index) => (Any::from(i64::from(*index)), index.to_string()),
        };
        if keys.iter().any(|(_, n)| *n == name) {
            return Err(bind_error(format!("SIP dict key {name:?} appears twice")));
        }
        keys.push((value, name));
        patterns.push(pattern(child)?);
    }
    Ok((keys, patterns))
}
