//! Structured calls: a packed function that takes and returns nested values (maps, lists,
//! named arguments), built over one that takes the flat arguments a signature describes.
//!
//! IREE-compiled functions take flat argument lists; their metadata says how nested user
//! values map onto them. [`StructuredFunction`] applies that mapping to any [`Function`], in
//! one of four modes:
//!
//! - **`iree.abi`** ([`StructuredFunction::from_iree_abi`]): each top-level argument record is
//!   one flat argument. A structure (`slist`, `stuple`, `sdict`, `py_homogeneous_list`)
//!   travels as one [`Array`] of its slot values in record order, nested structures as nested
//!   arrays; `sdict` keys are not passed, and a map must have exactly the record's keys.
//!   `["named", k, T]` arguments are passed by keyword. A single structured result arrives as
//!   its slots, one flat result each, and is rebuilt.
//! - **SIP** ([`StructuredFunction::from_sip`]): the leaves of the input structure are the flat
//!   arguments, by raw index; a root sequence binds the positional arguments and a root dict the
//!   keyword arguments. The results are rebuilt into the result structure.
//! - **raw** ([`StructuredFunction::from_raw`]): positional arguments, each checked against its
//!   raw signature item. A result allocator (`fbr`) can pre-allocate the results.
//! - **dynamic** ([`StructuredFunction::dynamic`]): no metadata. Lists become arrays and maps
//!   become arrays of their values ordered by key; keyword arguments are refused.
//!
//! The extended V1 conventions hold in every mode: strings travel as lists of `i8` values,
//! arrays of references as `[values, dims]` (values in row-major order), typed lists as
//! arrays. Tensors are checked against their `ndarray` records by the
//! [buffer oracle](crate::tensor_fit): a strided tensor is copied to a contiguous one, a
//! different element type is cast only with [`StructuredFunction::allow_casts`].
//!
//! Flat functions return their results packed the usual way: none as `None`, one as itself,
//! several as an [`Array`]. The structured function does the same with its user-level results.
//!
//! Every mismatch is an error that names the place in the value:
//! `args[1]["w"][2]: expected ndarray<f32, 2>, got int`.
//!
//! Over the C ABI ([`StructuredFunction::into_function`]), keyword arguments use TVM FFI's
//! KWARGS protocol: the positional arguments, then the `ffi.GetKwargsObject()` sentinel, then
//! `name, value` pairs.
//!
//! ```
//! use pactum_iree::signature::abi_json::IreeAbi;
//! use pactum_iree::structured::StructuredFunction;
//! use pactum::{Any, AnyView, Array, Function, Map};
//!
//! // The flat function receives the dict's slot values as one list, in record order.
//! let flat = Function::from_typed(|slots: Array| -> pactum::Result<i64> {
//!     Ok(slots.get_as::<i64>(0)? * 10 + slots.get_as::<i64>(1)?)
//! });
//! let abi = IreeAbi::parse(r#"{"a":[["sdict",["hi","i32"],["lo","i32"]]],"r":["i32"],"v":1}"#)?;
//! let structured = StructuredFunction::from_iree_abi(flat, abi.signature())?;
//! let value = Map::from_pairs([(Any::from("lo"), Any::from(2i64)), (Any::from("hi"), Any::from(4i64))]);
//! let result = structured.call(&[AnyView::from(&value)], &[])?;
//! assert_eq!(result.cast::<i64>()?, 42);
//!
//! let wrong = Map::from_pairs([(Any::from("hi"), Any::from(4i64))]);
//! let error = structured.call(&[AnyView::from(&wrong)], &[]).unwrap_err();
//! assert_eq!(error.message(), r#"args[0]: missing key "lo""#);
//! # Ok::<(), pactum::Error>(())
//! ```
//!
//! [`Array`]: pactum::containers::Array

// Safe Rust only: calls go through pactum's safe API.
#![forbid(unsafe_code)]

use std::fmt;

use self::convert::Options;
use self::plan::{AbiPlan, LeafPlan, Plan, bind_error};
use crate::signature::raw::RawSignature;
use crate::signature::sip::SipSignature;
use pactum::any::{Any, AnyView};
use pactum::error::Result;
use pactum::function::Function;
use pactum::function::kwargs::split_kwargs;

mod abi;
mod binder;
mod convert;
mod path;
mod plan;
mod values;

/// A packed function taking and returning nested values, over one taking flat arguments.
/// See the [module documentation](self).
pub struct StructuredFunction {
    flat: Function,
    plan: Plan,
    options: Options,
    allocator: Option<Function>,
}

impl fmt::Debug for StructuredFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.plan {
            Plan::Abi(_) => "iree.abi",
            Plan::Leaves(_) => "sip/raw",
            Plan::Dynamic => "dynamic",
        };
        f.debug_struct("StructuredFunction")
            .field("mode", &mode)
            .finish_non_exhaustive()
    }
}

impl StructuredFunction {
    /// Follows an `iree.abi` signature (see the [module documentation](self)).
    pub fn from_iree_abi(
        flat: Function,
        signature: &crate::signature::Signature,
    ) -> Result<StructuredFunction> {
        Ok(StructuredFunction::new(
            flat,
            Plan::Abi(AbiPlan::new(signature)?),
        ))
    }

    /// Follows a SIP signature, with leaf types from the raw signature when one is given
    /// (without it, leaves are passed as they are).
    pub fn from_sip(
        flat: Function,
        sip: &SipSignature,
        raw: Option<&RawSignature>,
    ) -> Result<StructuredFunction> {
        Ok(StructuredFunction::new(
            flat,
            Plan::Leaves(LeafPlan::from_sip(sip, raw)?),
        ))
    }

    /// Follows a raw signature: positional arguments checked against its items; one result
    /// returned as itself, several as an array.
    pub fn from_raw(flat: Function, raw: &RawSignature) -> Result<StructuredFunction> {
        Ok(StructuredFunction::new(
            flat,
            Plan::Leaves(LeafPlan::from_raw(raw)),
        ))
    }

    /// No signature: lists become arrays, maps become arrays of their values ordered by key
    /// (keys must be strings), everything else passes as it is; keyword arguments are refused
    /// and results are returned as they come.
    pub fn dynamic(flat: Function) -> StructuredFunction {
        StructuredFunction::new(flat, Plan::Dynamic)
    }

    fn new(flat: Function, plan: Plan) -> StructuredFunction {
        StructuredFunction {
            flat,
            plan,
            options: Options::default(),
            allocator: None,
        }
    }

    /// Whether tensors of another numeric element type are cast to the one the signature
    /// asks for (default: refused with an error, since a cast changes values).
    pub fn allow_casts(mut self, allow: bool) -> StructuredFunction {
        self.options.allow_casts = allow;
        self
    }

    /// Pre-allocates results with a result allocator (the function an `fbr` attribute
    /// names), for signatures built from a raw signature.
    ///
    /// Each call then gathers the extents of the inputs' dynamic dimensions (in input and
    /// axis order) into an array of ints and calls `allocator(dims)`, which returns an array
    /// with one entry per result that has a dynamic dimension: a tensor, or `None` when it
    /// cannot be allocated ahead. Results with a static shape are allocated here. The flat
    /// function receives the inputs followed by one argument per result (the pre-allocated
    /// tensor, or `None`), writes into them, and returns `None`; or it returns results, which
    /// take the place of the pre-allocated ones (needed for a `None` slot).
    pub fn with_result_allocator(mut self, allocator: Function) -> Result<StructuredFunction> {
        match &self.plan {
            Plan::Leaves(LeafPlan { raw: Some(_), .. }) => {
                self.allocator = Some(allocator);
                Ok(self)
            }
            _ => Err(bind_error(
                "a result allocator needs the raw signature's buffer types (from_raw, or from_sip with a raw signature)",
            )),
        }
    }

    /// Calls with positional and keyword arguments; returns the user-level results (none as
    /// `None`, one as itself, several as an array).
    pub fn call(
        &self,
        positional: &[AnyView<'_>],
        keywords: &[(&str, AnyView<'_>)],
    ) -> Result<Any> {
        match &self.plan {
            Plan::Abi(plan) => self.call_abi(plan, positional, keywords),
            Plan::Leaves(plan) => self.call_leaves(plan, positional, keywords),
            Plan::Dynamic => self.call_dynamic(positional, keywords),
        }
    }

    /// The structured function as a packed [`Function`]; keyword arguments follow TVM FFI's
    /// KWARGS protocol.
    pub fn into_function(self) -> Function {
        Function::from_packed(move |args: &[AnyView<'_>]| {
            let (positional, keywords) = split_kwargs(args)?;
            self.call(positional, &keywords)
        })
    }
}
