//! [`FunctionAbi`] at run time: read from a TVM FFI attribute map, and bound to a packed
//! function as a [`StructuredFunction`]. The attribute reader itself
//! ([`crate::function_abi`]) is a format layer and knows no runtime values.

use super::StructuredFunction;
use crate::function_abi::{AttributeError, AttributeErrorKind, FunctionAbi};
use pactum::any::Any;
use pactum::containers::Map;
use pactum::error::{Error, ErrorKind, Result};
use pactum::function::Function;

impl FunctionAbi {
    /// Reads the attributes from a map of string keys to string or integer values (a
    /// module's reflection map, as TVM FFI hands it over).
    pub fn from_map(map: &Map) -> std::result::Result<FunctionAbi, AttributeError> {
        let mut pairs = Vec::with_capacity(map.len());
        for (key, value) in map {
            let key = key.get::<String>().map_err(|_| {
                AttributeError::new(format!("{key:?}"), AttributeErrorKind::KeyNotString)
            })?;
            let value = text_of(value).ok_or_else(|| {
                AttributeError::new(
                    key.as_str(),
                    AttributeErrorKind::ValueType {
                        found: value.type_key(),
                    },
                )
            })?;
            pairs.push((key, value));
        }
        FunctionAbi::from_pairs(pairs)
    }

    /// Wraps `flat` into a [`StructuredFunction`] following the most informative signature
    /// present (`iree.abi`, then SIP, then raw; dynamic without one). `allocator` is the
    /// function `fbr` names, when the caller could look it up.
    pub fn bind(&self, flat: Function, allocator: Option<Function>) -> Result<StructuredFunction> {
        let structured = if let Some(abi) = &self.iree_abi {
            StructuredFunction::from_iree_abi(flat, abi.signature())?
        } else if let Some(sip) = &self.sip {
            StructuredFunction::from_sip(flat, sip, self.raw.as_ref())?
        } else if let Some(raw) = &self.raw {
            StructuredFunction::from_raw(flat, raw)?
        } else {
            StructuredFunction::dynamic(flat)
        };
        match allocator {
            Some(allocator) if self.raw.is_some() && self.iree_abi.is_none() => {
                structured.with_result_allocator(allocator)
            }
            Some(_) => Err(Error::new(
                ErrorKind::VALUE_ERROR,
                "a result allocator applies to raw (and SIP) signatures, not to iree.abi",
            )),
            None => Ok(structured),
        }
    }
}

fn text_of(value: &Any) -> Option<String> {
    value
        .get::<String>()
        .ok()
        .or_else(|| value.get::<i64>().ok().map(|n| n.to_string()))
}
