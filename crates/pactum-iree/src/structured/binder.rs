//! The binder: a call's arguments walked against the plan into flat arguments, the flat
//! function called, and its results unpacked (or pre-allocated, for a result allocator).

use super::StructuredFunction;
use super::convert::{pack, pack_dynamic, unpack};
use super::path::{Path, Segment, error_at};
use super::plan::{AbiPlan, LeafPlan, Node, Pattern};
use super::values::{Mapping, describe, for_each_value, mismatch, sequence};
use crate::signature::Type;
use crate::tensor_fit::{BufferType, scalar_dtype};
use pactum::any::{Any, AnyView};
use pactum::containers::{Array, Map};
use pactum::error::{Error, ErrorKind, Result};
use pactum::function::Function;
use pactum::tensor::Tensor;
use pactum::tensor_view::TensorView;

impl StructuredFunction {
    pub(super) fn call_abi(
        &self,
        plan: &AbiPlan,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        if positional.len() > plan.positional.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "takes {} positional arguments but {} were given{}",
                    plan.positional.len(),
                    positional.len(),
                    named_hint(&plan.names)
                ),
            ));
        }
        let mut filled: Vec<Option<(AnyView<'_>, Path<'_>)>> = vec![None; plan.args.len()];
        for (i, value) in positional.iter().enumerate() {
            filled[plan.positional[i]] = Some((*value, Path::root(Segment::Arg(i))));
        }
        for (name, value) in keywords {
            let Some(slot) = plan.names.iter().position(|n| n.as_deref() == Some(*name)) else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "unexpected keyword argument `{name}`{}",
                        named_hint(&plan.names)
                    ),
                ));
            };
            if filled[slot].is_some() {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("got multiple values for argument `{name}`"),
                ));
            }
            filled[slot] = Some((*value, Path::root(Segment::Keyword(name))));
        }
        let mut flat_args = Vec::with_capacity(plan.args.len());
        for (i, (slot, entry)) in plan.args.iter().zip(&filled).enumerate() {
            let Some((value, path)) = entry else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    match &plan.names[i] {
                        Some(name) => format!("missing keyword argument `{name}`"),
                        None => format!(
                            "missing positional argument {} (of {})",
                            plan.positional.iter().position(|&p| p == i).unwrap_or(i),
                            plan.positional.len()
                        ),
                    },
                ));
            };
            flat_args.push(pack(slot, value, path, self.options)?);
        }
        let views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
        let out = self.flat.call(&views)?;
        match &plan.inlined {
            Some(structure) => {
                let count = match &structure.node {
                    Node::Sequence(slots) => slots.len(),
                    Node::Dict(_, slots) => slots.len(),
                    _ => 1,
                };
                let slots = split_results(out, count)?;
                unpack(
                    structure,
                    Array::new(slots).into(),
                    &Path::root(Segment::Result(0)),
                )
            }
            None => {
                let values = split_results(out, plan.results.len())?;
                let mut results = Vec::with_capacity(values.len());
                for (i, (slot, value)) in plan.results.iter().zip(values).enumerate() {
                    results.push(unpack(slot, value, &Path::root(Segment::Result(i)))?);
                }
                Ok(join_results(results))
            }
        }
    }

    pub(super) fn call_leaves(
        &self,
        plan: &LeafPlan,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        if positional.len() != plan.positional.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "takes {} positional arguments but {} were given",
                    plan.positional.len(),
                    positional.len()
                ),
            ));
        }
        let mut flat: Vec<Option<Any>> = vec![None; plan.inputs.len()];
        for (i, (pattern, value)) in plan.positional.iter().zip(positional).enumerate() {
            let path = Path::root(Segment::Arg(i));
            match pattern {
                Some(pattern) => self.scatter(plan, pattern, value, &path, &mut flat)?,
                None if value.is_none() => {}
                None => {
                    return Err(mismatch(
                        &path,
                        &"None (a position the signature skips)",
                        value,
                    ));
                }
            }
        }
        for (name, _) in keywords {
            if !plan.keywords.iter().any(|(_, n)| n == name) {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("unexpected keyword argument `{name}`"),
                ));
            }
        }
        for ((_, name), pattern) in plan.keywords.iter().zip(&plan.keyword_patterns) {
            let mut matches = keywords.iter().filter(|(n, _)| n == name);
            let Some((_, value)) = matches.next() else {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("missing keyword argument `{name}`"),
                ));
            };
            if matches.next().is_some() {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!("got multiple values for argument `{name}`"),
                ));
            }
            self.scatter(
                plan,
                pattern,
                value,
                &Path::root(Segment::Keyword(name)),
                &mut flat,
            )?;
        }
        let flat_args: Vec<Any> = flat
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                value.ok_or_else(|| {
                    Error::new(
                        ErrorKind::INTERNAL_ERROR,
                        format!("flat argument {i} was not bound"),
                    )
                })
            })
            .collect::<Result<_>>()?;
        let result_count = plan.result_slots.len();
        let mut results = match (&self.allocator, &plan.raw) {
            (Some(allocator), Some((input_types, result_types))) => {
                let preallocated = preallocate(allocator, input_types, result_types, &flat_args)?;
                let mut views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
                views.extend(preallocated.iter().map(Any::view));
                let out = self.flat.call(&views)?;
                let returned = if out.is_none() && result_count != 1 {
                    vec![Any::none(); result_count]
                } else {
                    split_results(out, result_count)?
                };
                let mut merged = Vec::with_capacity(result_count);
                for (j, (returned, preallocated)) in
                    returned.into_iter().zip(preallocated).enumerate()
                {
                    let value = if returned.is_none() {
                        preallocated
                    } else {
                        returned
                    };
                    if value.is_none()
                        && !matches!(
                            plan.result_slots[j].node,
                            Node::Null | Node::Unknown | Node::Opaque
                        )
                    {
                        return Err(Error::new(
                            ErrorKind::VALUE_ERROR,
                            format!(
                                "result {j} was neither pre-allocated nor returned by the function"
                            ),
                        ));
                    }
                    merged.push(Some(value));
                }
                merged
            }
            _ => {
                let views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
                let out = self.flat.call(&views)?;
                split_results(out, result_count)?
                    .into_iter()
                    .map(Some)
                    .collect()
            }
        };
        match &plan.results {
            None => Ok(Any::none()),
            Some(pattern) => gather(
                plan,
                pattern,
                &mut results,
                &Path::root(Segment::Result(0)),
                true,
            ),
        }
    }

    fn scatter(
        &self,
        plan: &LeafPlan,
        pattern: &Pattern,
        value: &AnyView<'_>,
        path: &Path<'_>,
        flat: &mut [Option<Any>],
    ) -> Result<()> {
        match pattern {
            Pattern::Leaf(index) => {
                flat[*index] = Some(pack(&plan.inputs[*index], value, path, self.options)?);
                Ok(())
            }
            Pattern::Sequence(children) => {
                let Some(items) = sequence(value) else {
                    return Err(mismatch(
                        path,
                        &format_args!("a list of {}", children.len()),
                        value,
                    ));
                };
                if items.len() != children.len() {
                    return Err(error_at(
                        ErrorKind::VALUE_ERROR,
                        path,
                        format_args!(
                            "expected a list of {} values, got {}",
                            children.len(),
                            items.len()
                        ),
                    ));
                }
                for (i, (child, item)) in children.iter().zip(&items).enumerate() {
                    let path = path.index(i);
                    match child {
                        Some(child) => self.scatter(plan, child, item.as_view(), &path, flat)?,
                        None if item.is_none() => {}
                        None => {
                            return Err(mismatch(
                                &path,
                                &"None (a position the signature skips)",
                                item.as_view(),
                            ));
                        }
                    }
                }
                Ok(())
            }
            Pattern::Dict(keys, children) => {
                let Some(mapping) = Mapping::of(value) else {
                    return Err(mismatch(path, &"a dict", value));
                };
                for_each_value(&mapping, keys, path, |i, item| {
                    self.scatter(plan, &children[i], item, &path.key(&keys[i].1), flat)
                })
            }
        }
    }

    pub(super) fn call_dynamic(
        &self,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        if let Some((name, _)) = keywords.first() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "unexpected keyword argument `{name}`: keyword arguments need a signature (iree.abi or SIP)"
                ),
            ));
        }
        let mut flat_args = Vec::with_capacity(positional.len());
        for (i, value) in positional.iter().enumerate() {
            flat_args.push(pack_dynamic(value, &Path::root(Segment::Arg(i)), 0)?);
        }
        let views: Vec<AnyView<'_>> = flat_args.iter().map(Any::view).collect();
        self.flat.call(&views)
    }
}

fn named_hint(names: &[Option<String>]) -> String {
    let named: Vec<String> = names.iter().flatten().map(|n| format!("`{n}`")).collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" (keyword arguments: {})", named.join(", "))
    }
}

/// Splits what a flat function returned into `count` results: none is `None`, one is itself,
/// several come as an array.
fn split_results(out: Any, count: usize) -> Result<Vec<Any>> {
    match count {
        0 if out.is_none() => Ok(Vec::new()),
        0 => Err(Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "the flat function returned {}, but the signature has no results",
                describe(out.as_view())
            ),
        )),
        1 => Ok(vec![out]),
        _ => match sequence(out.as_view()) {
            Some(items) if items.len() == count => Ok(items.into_vec()),
            _ => Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "the flat function returned {}, expected {count} results as a list",
                    describe(out.as_view())
                ),
            )),
        },
    }
}

fn join_results(mut results: Vec<Any>) -> Any {
    match results.len() {
        0 => Any::none(),
        1 => results.pop().unwrap_or_else(Any::none),
        _ => Array::new(results).into(),
    }
}

fn gather(
    plan: &LeafPlan,
    pattern: &Pattern,
    results: &mut [Option<Any>],
    path: &Path<'_>,
    root: bool,
) -> Result<Any> {
    match pattern {
        Pattern::Leaf(index) => {
            let value = results[*index].take().ok_or_else(|| {
                Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!("result {index} used twice"),
                )
            })?;
            let path = if root {
                Path::root(Segment::Result(*index))
            } else {
                *path
            };
            unpack(&plan.result_slots[*index], value, &path)
        }
        Pattern::Sequence(children) => {
            let mut out = Vec::with_capacity(children.len());
            for (i, child) in children.iter().enumerate() {
                out.push(match child {
                    Some(child) => gather(plan, child, results, &path.index(i), false)?,
                    None => Any::none(),
                });
            }
            Ok(Array::new(out).into())
        }
        Pattern::Dict(keys, children) => {
            let mut pairs = Vec::with_capacity(children.len());
            for (child, (key, name)) in children.iter().zip(keys) {
                pairs.push((
                    key.clone(),
                    gather(plan, child, results, &path.key(name), false)?,
                ));
            }
            Ok(Map::from_pairs(pairs).into())
        }
    }
}

/// Gathers the dynamic extents of the inputs, asks the allocator for the dynamic results and
/// allocates the static ones.
fn preallocate(
    allocator: &Function,
    input_types: &[Type],
    result_types: &[Type],
    inputs: &[Any],
) -> Result<Vec<Any>> {
    let mut dynamic_dims = Vec::new();
    for (i, (ty, value)) in input_types.iter().zip(inputs).enumerate() {
        let Type::NdArray(array) = ty.unnamed() else {
            continue;
        };
        let Some(dims) = &array.dims else { continue };
        if dims.iter().all(Option::is_some) {
            continue;
        }
        let view: TensorView = value.as_view().get().map_err(|e| {
            error_at(
                ErrorKind::custom(&e.kind()),
                &Path::root(Segment::Arg(i)),
                e.message(),
            )
        })?;
        for (axis, dim) in dims.iter().enumerate() {
            if dim.is_none() {
                dynamic_dims.push(Any::from(view.shape()[axis]));
            }
        }
    }
    let dynamic_results: Vec<usize> = result_types
        .iter()
        .enumerate()
        .filter(|(_, ty)| BufferType::from_type(ty).is_some_and(|b| b.static_shape().is_none()))
        .map(|(j, _)| j)
        .collect();
    let allocated = if dynamic_results.is_empty() {
        Vec::new()
    } else {
        let dims = Array::new(dynamic_dims);
        let out = allocator.call(&[AnyView::from(&dims)])?;
        match sequence(out.as_view()) {
            Some(items) if items.len() == dynamic_results.len() => items.into_vec(),
            _ => {
                return Err(Error::new(
                    ErrorKind::TYPE_ERROR,
                    format!(
                        "the result allocator returned {}, expected a list of {} buffers (one per dynamic result)",
                        describe(out.as_view()),
                        dynamic_results.len()
                    ),
                ));
            }
        }
    };
    let mut allocated = allocated.into_iter();
    let mut preallocated = Vec::with_capacity(result_types.len());
    for (j, ty) in result_types.iter().enumerate() {
        let buffer = BufferType::from_type(ty);
        let value = match buffer {
            Some(buffer) => match buffer.static_shape() {
                Some(shape) => Any::from(Tensor::empty(&shape, scalar_dtype(buffer.element))?),
                None if dynamic_results.contains(&j) => allocated.next().unwrap_or_else(Any::none),
                None => Any::none(),
            },
            None => Any::none(),
        };
        preallocated.push(value);
    }
    Ok(preallocated)
}
