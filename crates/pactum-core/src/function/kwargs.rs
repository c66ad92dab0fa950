//! TVM FFI's KWARGS protocol: a packed call with keyword arguments passes the positional
//! arguments, then the runtime's sentinel object (`ffi.GetKwargsObject()`), then `name, value`
//! pairs. The official Python package calls this way for `f(x, scale=2)`.

use std::sync::OnceLock;

use crate::any::{AnyView, display_type_name};
use crate::error::{Error, ErrorKind, Result};
use crate::function::Function;
use crate::object::ObjectRef;

/// The positional arguments of a packed call, and its keyword arguments as `(name, value)`.
pub type SplitArguments<'a, 'b> = (&'a [AnyView<'b>], Vec<(&'a str, AnyView<'b>)>);

/// The runtime's KWARGS sentinel object, fetched once (`None` where the runtime has none).
pub fn kwargs_sentinel() -> Option<&'static ObjectRef> {
    static SENTINEL: OnceLock<Option<ObjectRef>> = OnceLock::new();
    SENTINEL
        .get_or_init(|| {
            let get = Function::get_global("ffi.GetKwargsObject")?;
            get.call(&[]).ok()?.cast::<ObjectRef>().ok()
        })
        .as_ref()
}

/// Splits packed arguments at the KWARGS sentinel into the positional ones and the
/// `(name, value)` keyword pairs; arguments without the sentinel are all positional.
///
/// A pair whose name is not a string, or an odd number of values after the sentinel, is a
/// `TypeError`.
pub fn split_kwargs<'a, 'b>(args: &'a [AnyView<'b>]) -> Result<SplitArguments<'a, 'b>> {
    let Some(sentinel) = kwargs_sentinel() else {
        return Ok((args, Vec::new()));
    };
    let Some(at) = args
        .iter()
        .position(|arg| arg.object_ptr() == Some(sentinel.as_raw()))
    else {
        return Ok((args, Vec::new()));
    };
    let pairs = &args[at + 1..];
    if pairs.len() % 2 != 0 {
        return Err(Error::new(
            ErrorKind::TYPE_ERROR,
            "keyword arguments after KWARGS must come as name, value pairs",
        ));
    }
    let mut keywords = Vec::with_capacity(pairs.len() / 2);
    for (i, pair) in pairs.chunks_exact(2).enumerate() {
        let name: &str = pair[0].get().map_err(|_| {
            Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "keyword {i} after KWARGS: expected a name (str), got {}",
                    display_type_name(pair[0].type_index())
                ),
            )
        })?;
        keywords.push((name, pair[1]));
    }
    Ok((&args[..at], keywords))
}
