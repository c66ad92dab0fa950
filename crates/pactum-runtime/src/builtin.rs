//! How the runtime declares its built-in `ffi.*` global functions: parameter and result
//! types with their names and `type_schema` JSON, typed globals that check their arguments
//! with the official messages, and packed ones.

use core::ffi::{c_int, c_void};

use pactum_sys::tvm_ffi::{TVMFFIAny, TVMFFIFunctionCell, TVMFFITypeIndex};

use super::registry::BuiltinGlobal;
use pactum_core::any::{Any, AnyView, FromAnyView};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::function::Function;
use pactum_core::internal::boundary;
use pactum_core::internal::is_instance;
use pactum_core::object::{ObjectRef, type_key_of};

/// A parameter or result type: its name in signatures and its schema JSON.
#[derive(Clone, Copy)]
pub(crate) struct Ty {
    text: &'static str,
    schema: &'static str,
}

impl Ty {
    /// A type named `text` in signatures, with schema JSON `schema`.
    pub(crate) const fn new(text: &'static str, schema: &'static str) -> Ty {
        Ty { text, schema }
    }
}

macro_rules! ty {
    ($name:ident, $text:literal, $schema:literal) => {
        pub(crate) const $name: Ty = Ty {
            text: $text,
            schema: $schema,
        };
    };
}
ty!(INT, "int", r#"{"type":"int"}"#);
ty!(BOOL, "bool", r#"{"type":"bool"}"#);
ty!(NONE, "None", r#"{"type":"None"}"#);
ty!(ANY, "Any", r#"{"type":"Any"}"#);
ty!(VOID_PTR, "void*", r#"{"type":"void*"}"#);
ty!(DEVICE, "Device", r#"{"type":"Device"}"#);
ty!(STR, "str", r#"{"type":"ffi.String"}"#);
ty!(BYTES, "bytes", r#"{"type":"ffi.Bytes"}"#);
ty!(OBJECT, "ffi.Object", r#"{"type":"ffi.Object"}"#);
ty!(FUNCTION, "ffi.Function", r#"{"type":"ffi.Function"}"#);
ty!(ARRAY, "ffi.Array", r#"{"type":"ffi.Array"}"#);
ty!(
    ARRAY_OF_STR,
    "ffi.Array<str>",
    r#"{"type":"ffi.Array","args":[{"type":"ffi.String"}]}"#
);
ty!(LIST, "ffi.List", r#"{"type":"ffi.List"}"#);
ty!(
    LIST_OF_ANY,
    "ffi.List<Any>",
    r#"{"type":"ffi.List","args":[{"type":"Any"}]}"#
);
ty!(MAP, "ffi.Map", r#"{"type":"ffi.Map"}"#);
ty!(DICT, "ffi.Dict", r#"{"type":"ffi.Dict"}"#);
ty!(
    DICT_OF_ANY,
    "ffi.Dict<Any, Any>",
    r#"{"type":"ffi.Dict","args":[{"type":"Any"},{"type":"Any"}]}"#
);
ty!(MODULE, "ffi.Module", r#"{"type":"ffi.Module"}"#);
ty!(
    ACCESS_STEP,
    "ffi.reflection.AccessStep",
    r#"{"type":"ffi.reflection.AccessStep"}"#
);
ty!(
    ACCESS_PATH,
    "ffi.reflection.AccessPath",
    r#"{"type":"ffi.reflection.AccessPath"}"#
);
ty!(
    ARRAY_OF_ACCESS_STEP,
    "ffi.Array<ffi.reflection.AccessStep>",
    r#"{"type":"ffi.Array","args":[{"type":"ffi.reflection.AccessStep"}]}"#
);
ty!(
    OPTIONAL_ACCESS_PATH_PAIR,
    "Optional<Tuple<ffi.reflection.AccessPath, ffi.reflection.AccessPath>>",
    r#"{"type":"Optional","args":[{"type":"Tuple","args":[{"type":"ffi.reflection.AccessPath"},{"type":"ffi.reflection.AccessPath"}]}]}"#
);
ty!(
    STRUCTURAL_KEY,
    "ffi.StructuralKey",
    r#"{"type":"ffi.StructuralKey"}"#
);
ty!(
    OPTIONAL_STR,
    "Optional<str>",
    r#"{"type":"Optional","args":[{"type":"ffi.String"}]}"#
);
ty!(
    OPTIONAL_INT,
    "Optional<int>",
    r#"{"type":"Optional","args":[{"type":"int"}]}"#
);
ty!(
    OPTIONAL_FUNCTION,
    "Optional<ffi.Function>",
    r#"{"type":"Optional","args":[{"type":"ffi.Function"}]}"#
);

ty!(ANY_VIEW, "AnyView", r#"{"type":"Any"}"#);
ty!(
    CALLBACKS,
    "Array<Tuple<int, ffi.Function>>",
    r#"{"type":"ffi.Array","args":[{"type":"Tuple","args":[{"type":"int"},{"type":"ffi.Function"}]}]}"#
);
ty!(
    CALLBACKS_WITH_MODE,
    "Array<Tuple<int, ffi.Function, bool>>",
    r#"{"type":"ffi.Array","args":[{"type":"Tuple","args":[{"type":"int"},{"type":"ffi.Function"},{"type":"bool"}]}]}"#
);
ty!(
    OPTIONAL_INTERRUPT,
    "Optional<ffi.VisitInterrupt>",
    r#"{"type":"Optional","args":[{"type":"ffi.VisitInterrupt"}]}"#
);
ty!(
    ACCESS_PATHS,
    "Array<ffi.reflection.AccessPath>",
    r#"{"type":"ffi.Array","args":[{"type":"ffi.reflection.AccessPath"}]}"#
);
ty!(VOID, "void", r#"{"type":"None"}"#);

/// The metadata of packed (untyped) globals.
const PACKED_METADATA: &str = r#"{"type_schema":"{\"type\":\"ffi.Function\"}"}"#;

fn typed_metadata(params: &[Ty], ret: Ty) -> std::string::String {
    let params = params
        .iter()
        .map(|p| p.schema)
        .collect::<Vec<_>>()
        .join(",");
    let schema = format!(
        r#"{{"type":"ffi.Function","named_args":{{"return":[{}],"params":[{params}]}}}}"#,
        ret.schema
    );
    let escaped = schema.replace('\\', "\\\\").replace('"', "\\\"");
    format!(r#"{{"type_schema":"{escaped}"}}"#)
}

/// The arguments of a typed global, with what is needed to report a mismatch.
pub(crate) struct Args<'a> {
    signature: &'a str,
    params: &'static [Ty],
    values: &'a [AnyView<'a>],
}

impl<'a> Args<'a> {
    /// Argument `index` converted to `T`, or the official mismatch `TypeError`.
    pub(crate) fn get<T: FromAnyView<'a>>(&self, index: usize) -> Result<T> {
        T::from_any_view(&self.values[index]).map_err(|_| self.mismatch(index))
    }

    /// Argument `index` as an object of type `type_index` (or a subtype), or the official
    /// mismatch `TypeError`.
    pub(crate) fn object_of_type(&self, index: usize, type_index: i32) -> Result<ObjectRef> {
        self.get::<ObjectRef>(index)
            .ok()
            .filter(|object| is_instance(object.type_index(), type_index))
            .ok_or_else(|| self.mismatch(index))
    }

    /// The official `TypeError` for argument `index` not being of its declared type.
    pub(crate) fn mismatch(&self, index: usize) -> Error {
        self.mismatch_detail(index, &type_key_of(self.values[index].type_index()))
    }

    /// The official `TypeError` for argument `index`, describing what was passed as `got`
    /// (for a container, the official `Array[index 0: int]` form naming the bad element).
    pub(crate) fn mismatch_detail(&self, index: usize, got: &str) -> Error {
        Error::new(
            ErrorKind::TYPE_ERROR,
            format!(
                "Mismatched type on argument #{index} when calling: `{}`. Expected `{}` but got `{got}`",
                self.signature, self.params[index].text,
            ),
        )
    }

    /// Argument `index`'s bytes if it is a string (`ffi.String`, small or not, or a C
    /// string), UTF-8 or not, as the official `String` (a byte string) accepts; else the
    /// official mismatch `TypeError`.
    pub(crate) fn string_bytes(&self, index: usize) -> Result<&'a [u8]> {
        let view = &self.values[index];
        match TVMFFITypeIndex(view.type_index()) {
            TVMFFITypeIndex::SMALL_STR | TVMFFITypeIndex::STR | TVMFFITypeIndex::RAW_STR => {
                Ok(pactum_core::internal::view_bytes(view).unwrap_or(&[]))
            }
            _ => self.get::<pactum_core::String>(index).map(|_| &[][..]),
        }
    }

    /// Argument `index` as a view.
    pub(crate) fn view(&self, index: usize) -> &'a AnyView<'a> {
        &self.values[index]
    }

    /// Argument `index` as an owned value, as C++ `Any` parameters receive it (C strings
    /// become String values, so they compare equal to stored strings).
    pub(crate) fn owned(&self, index: usize) -> Result<Any> {
        self.values[index].to_any()
    }
}

/// A typed global: checks the argument count, then runs `body`.
pub(crate) fn typed(
    name: &'static str,
    params: &'static [Ty],
    ret: Ty,
    body: impl for<'a> Fn(&Args<'a>) -> Result<Any> + Send + Sync + 'static,
) -> BuiltinGlobal {
    let signature = {
        let params = params
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{i}: {}", p.text))
            .collect::<Vec<_>>()
            .join(", ");
        format!("{name}({params}) -> {}", ret.text)
    };
    let function = Function::from_packed(move |values: &[AnyView<'_>]| {
        if values.len() != params.len() {
            return Err(Error::new(
                ErrorKind::TYPE_ERROR,
                format!(
                    "Mismatched number of arguments when calling: `{signature}`. Expected {} but got {} arguments",
                    params.len(),
                    values.len()
                ),
            ));
        }
        body(&Args {
            signature: &signature,
            params,
            values,
        })
    });
    BuiltinGlobal {
        name,
        function,
        metadata: typed_metadata(params, ret),
    }
}

/// What a fast entry returns for a call it leaves to the typed global behind it (see
/// [`with_fast_entry`]).
pub(crate) const FALL_THROUGH: c_int = 1;

/// The fast entry of a global: the safe-call convention without the handle. It answers the
/// calls it can (0, or -1 with the error raised) and returns [`FALL_THROUGH`] for the others,
/// leaving `result` untouched.
pub(crate) type FastEntry = unsafe extern "C" fn(*const TVMFFIAny, i32, *mut TVMFFIAny) -> c_int;

struct FastEntryPayload {
    fast: FastEntry,
    typed: Function,
}

/// `global` with `fast` in front: the calls Python makes in a loop are answered without the
/// typed global's closure, argument conversions and reference counting, and every other call
/// (wrong arguments included, so the messages stay the typed global's) goes on to `global`.
pub(crate) fn with_fast_entry(global: BuiltinGlobal, fast: FastEntry) -> BuiltinGlobal {
    let payload = Box::into_raw(Box::new(FastEntryPayload {
        fast,
        typed: global.function,
    }));
    // SAFETY: fast_entry_safe_call follows the safe-call convention for this payload, which
    // stays alive until release_fast_entry drops it, once, when the function dies; the payload
    // is immutable and its parts are thread-safe.
    let function = unsafe {
        Function::from_safe_call(
            payload.cast(),
            fast_entry_safe_call,
            Some(release_fast_entry),
        )
    };
    BuiltinGlobal { function, ..global }
}

unsafe extern "C" fn fast_entry_safe_call(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: the handle is the payload with_fast_entry made, alive as long as the function
    // being called.
    let payload = unsafe { &*handle.cast::<FastEntryPayload>() };
    // SAFETY: the caller's arguments and result slot, as the convention passes them.
    let answered = unsafe { (payload.fast)(args, num_args, result) };
    if answered != FALL_THROUGH {
        return answered;
    }
    let typed = payload.typed.as_object_ref().as_raw();
    // SAFETY: a live Function object (the payload holds a reference to it), whose cell follows
    // the header and has a safe_call (every Function object has one); the same arguments.
    unsafe {
        let cell = &*typed.add(1).cast::<TVMFFIFunctionCell>();
        (cell.safe_call.unwrap_unchecked())(typed.cast(), args, num_args, result)
    }
}

unsafe extern "C" fn release_fast_entry(payload: *mut c_void) {
    boundary::deleter(|| {
        // SAFETY: the payload with_fast_entry boxed; the function runs its deleter once.
        drop(unsafe { Box::from_raw(payload.cast::<FastEntryPayload>()) })
    })
}

/// A packed global taking any arguments.
pub(crate) fn packed(
    name: &'static str,
    body: impl Fn(&[AnyView<'_>]) -> Result<Any> + Send + Sync + 'static,
) -> BuiltinGlobal {
    BuiltinGlobal {
        name,
        function: Function::from_packed(body),
        metadata: PACKED_METADATA.to_owned(),
    }
}

/// The official `IndexError` for `index` in a sequence of `size`.
pub(crate) fn index_error(index: i64, size: usize) -> Error {
    Error::new(
        ErrorKind::INDEX_ERROR,
        format!("Index {index} out of bounds {size}"),
    )
}

/// `index` as a position in a sequence of `size`, or the official `IndexError`.
pub(crate) fn checked_index(index: i64, size: usize) -> Result<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < size)
        .ok_or_else(|| index_error(index, size))
}
