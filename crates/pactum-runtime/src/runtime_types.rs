//! The reflected types the official runtime defines for itself at start-up, with the same
//! fields (names, offsets, storage, flags, docs, schemas), metadata and type attributes, so
//! hosts read and build them as they would on the official library: `ffi.EnumState` and the
//! enum bases the Python package's enums are built on, the access-path and structural-key
//! objects, the structural visitor and mutator (whose objects only the traversals make), the
//! visit error context and the visit interrupt. Their objects are layout objects
//! (`dataclass.rs`).

use core::ffi::c_int;

use pactum_sys::tvm_ffi::{TVMFFIObjectHandle, TVMFFITypeIndex, field_flags};

use super::dataclass::{RuntimeField, Storage, new_layout_object};
use super::registry::BuiltinGlobal;
use pactum_core::any::{Any, AnyView};
use pactum_core::containers::{Dict, List};
use pactum_core::error::Result;
use pactum_core::function::Function;
use pactum_core::internal::boundary::{self, EntryKind::Callback};
use pactum_core::object::ObjectRef;

/// One runtime type: `(key, parent key)` first, then what it reflects.
pub(crate) struct RuntimeType {
    pub(crate) key: &'static str,
    pub(crate) parent: &'static str,
    /// The reflection the official runtime registers, when pactum provides it.
    pub(crate) reflection: Option<Reflection>,
}

pub(crate) struct Reflection {
    pub(crate) total_size: i32,
    /// `TVMFFISEqHashKind`.
    pub(crate) structural_kind: i32,
    pub(crate) is_final: bool,
    pub(crate) fields: &'static [RuntimeField],
    /// An explicit `__ffi_init__` taking no arguments (the object as the creator makes it).
    pub(crate) init_without_arguments: bool,
    /// Registers a `__ffi_convert__` accepting the type's instances.
    pub(crate) converts_instances: bool,
    /// The metadata creator (also enabling `__ffi_new__`); the traversal objects have none.
    pub(crate) creator: Option<unsafe extern "C" fn(*mut TVMFFIObjectHandle) -> c_int>,
}

/// A method of a runtime type: its name, whether it is static, and the typed function (whose
/// metadata is the method's).
pub(crate) struct RuntimeMethod {
    pub(crate) name: &'static str,
    pub(crate) is_static: bool,
    pub(crate) global: BuiltinGlobal,
}

/// The methods and type attributes of a runtime type.
pub(crate) struct TypeExtras {
    pub(crate) methods: Vec<RuntimeMethod>,
    pub(crate) attrs: Vec<(&'static str, Any)>,
}

/// Positions in [`RUNTIME_TYPES`] of the types other modules make objects of.
pub(crate) const ACCESS_STEP_TYPE: usize = 4;
pub(crate) const ACCESS_PATH_TYPE: usize = 5;
pub(crate) const STRUCTURAL_KEY_TYPE: usize = 9;

const INT: i32 = TVMFFITypeIndex::INT.0;
const ANY: i32 = TVMFFITypeIndex::ANY.0;
const OBJECT: i32 = TVMFFITypeIndex::OBJECT.0;
const LIST: i32 = TVMFFITypeIndex::LIST.0;
const OBJECT_SIZE: i32 = 48;

const fn field(
    name: &'static str,
    doc: &'static str,
    schema: &'static str,
    offset: i64,
    storage: Storage,
    static_type_index: i32,
    flags: i64,
) -> RuntimeField {
    RuntimeField {
        name,
        doc,
        schema,
        offset,
        storage,
        static_type_index,
        flags,
    }
}

const INT_SCHEMA: &str = r#"{"type":"int"}"#;
const STR_SCHEMA: &str = r#"{"type":"ffi.String"}"#;
const ANY_SCHEMA: &str = r#"{"type":"Any"}"#;
const INT_DOC: &str = "Canonical integer index.";
const STR_DOC: &str = "Canonical string index.";
const HIDDEN_INDEX: i64 = field_flags::INIT_OFF | field_flags::SEQ_HASH_IGNORE;

/// The official start-up order, which fixes the indices of the dynamic ones (128..=137); the
/// static `ffi.VisitInterrupt` (index 77) comes last, only for its reflection.
pub(crate) const RUNTIME_TYPES: &[RuntimeType] = &[
    RuntimeType {
        key: "ffi.EnumState",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 0,
            is_final: true,
            fields: &[
                field(
                    "entries",
                    "Enum singletons in registration order.",
                    r#"{"type":"ffi.List","args":[{"type":"ffi.Object"}]}"#,
                    24,
                    Storage::Object,
                    LIST,
                    field_flags::INIT_OFF,
                ),
                field(
                    "indexes",
                    "Canonical integer and string indices to enum singletons.",
                    r#"{"type":"ffi.Dict","args":[{"type":"Any"},{"type":"ffi.Object"}]}"#,
                    32,
                    Storage::Object,
                    OBJECT,
                    field_flags::INIT_OFF,
                ),
                field(
                    "attrs",
                    "Extensible-attribute columns keyed by enum singleton.",
                    r#"{"type":"ffi.Dict","args":[{"type":"ffi.String"},{"type":"ffi.Dict","args":[{"type":"ffi.Object"},{"type":"Any"}]}]}"#,
                    40,
                    Storage::Object,
                    OBJECT,
                    field_flags::INIT_OFF,
                ),
            ],
            init_without_arguments: true,
            converts_instances: false,
            creator: Some(create::<0>),
        }),
    },
    RuntimeType {
        key: "ffi.Enum",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 5,
            is_final: false,
            fields: &[
                field(
                    "_int_index",
                    INT_DOC,
                    INT_SCHEMA,
                    24,
                    Storage::Int64,
                    INT,
                    field_flags::SEQ_HASH_IGNORE,
                ),
                field("_str_index", STR_DOC, STR_SCHEMA, 32, Storage::Any, ANY, 0),
            ],
            init_without_arguments: false,
            converts_instances: false,
            creator: Some(create::<1>),
        }),
    },
    RuntimeType {
        key: "ffi.IntEnum",
        parent: "ffi.Enum",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 5,
            is_final: false,
            fields: &[field(
                "value",
                INT_DOC,
                INT_SCHEMA,
                24,
                Storage::Int64,
                INT,
                HIDDEN_INDEX,
            )],
            init_without_arguments: false,
            converts_instances: true,
            creator: Some(create::<2>),
        }),
    },
    RuntimeType {
        key: "ffi.StrEnum",
        parent: "ffi.Enum",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 5,
            is_final: false,
            fields: &[field(
                "value",
                STR_DOC,
                STR_SCHEMA,
                32,
                Storage::Any,
                ANY,
                HIDDEN_INDEX,
            )],
            init_without_arguments: false,
            converts_instances: true,
            creator: Some(create::<3>),
        }),
    },
    RuntimeType {
        key: "ffi.reflection.AccessStep",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 4,
            is_final: true,
            fields: &[
                field("kind", "", INT_SCHEMA, 24, Storage::Int32, INT, 0),
                field("key", "", ANY_SCHEMA, 32, Storage::Any, ANY, 0),
            ],
            init_without_arguments: false,
            converts_instances: false,
            creator: Some(create::<4>),
        }),
    },
    RuntimeType {
        key: "ffi.reflection.AccessPath",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 4,
            is_final: true,
            fields: &[
                field(
                    "parent",
                    "",
                    r#"{"type":"Optional","args":[{"type":"ffi.Object"}]}"#,
                    24,
                    Storage::Object,
                    ANY,
                    0,
                ),
                field(
                    "step",
                    "",
                    r#"{"type":"Optional","args":[{"type":"ffi.reflection.AccessStep"}]}"#,
                    32,
                    Storage::Object,
                    ANY,
                    0,
                ),
                field("depth", "", INT_SCHEMA, 40, Storage::Int32, INT, 0),
            ],
            init_without_arguments: false,
            converts_instances: false,
            creator: Some(create::<5>),
        }),
    },
    RuntimeType {
        key: "ffi.StructuralVisitor",
        parent: "ffi.Object",
        reflection: Some(TRAVERSAL),
    },
    RuntimeType {
        key: "ffi.VisitErrorContext",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: TRAVERSAL_SIZE,
            structural_kind: 0,
            is_final: true,
            fields: &[
                field(
                    "reverse_visit_pattern",
                    "",
                    r#"{"type":"ffi.List","args":[{"type":"ffi.Object"}]}"#,
                    24,
                    Storage::Object,
                    LIST,
                    0,
                ),
                field(
                    "prev_error_context",
                    "",
                    r#"{"type":"Optional","args":[{"type":"ffi.Object"}]}"#,
                    32,
                    Storage::Object,
                    ANY,
                    0,
                ),
            ],
            init_without_arguments: false,
            converts_instances: false,
            creator: Some(create::<7>),
        }),
    },
    RuntimeType {
        key: "ffi.StructuralMutator",
        parent: "ffi.Object",
        reflection: Some(TRAVERSAL),
    },
    RuntimeType {
        key: "ffi.StructuralKey",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: OBJECT_SIZE,
            structural_kind: 0,
            is_final: true,
            fields: &[
                field("key", "", ANY_SCHEMA, 24, Storage::Any, ANY, 0),
                field("hash_i64", "", INT_SCHEMA, 40, Storage::Int64, INT, 0),
            ],
            init_without_arguments: false,
            converts_instances: false,
            creator: Some(create::<9>),
        }),
    },
    // A static type (its index is fixed), given its reflection here.
    RuntimeType {
        key: "ffi.VisitInterrupt",
        parent: "ffi.Object",
        reflection: Some(Reflection {
            total_size: TRAVERSAL_SIZE,
            structural_kind: 0,
            is_final: true,
            fields: &[field(
                "value",
                "",
                ANY_SCHEMA,
                24,
                Storage::Any,
                ANY,
                field_flags::HAS_DEFAULT,
            )],
            init_without_arguments: false,
            converts_instances: false,
            creator: Some(create::<10>),
        }),
    },
];

/// The size of the traversal objects (header, vtable pointer, region kind) and of the
/// objects the traversals make.
const TRAVERSAL_SIZE: i32 = 40;

/// The reflection of `ffi.StructuralVisitor` and `ffi.StructuralMutator`: no fields, no
/// creator (only a traversal makes them).
const TRAVERSAL: Reflection = Reflection {
    total_size: TRAVERSAL_SIZE,
    structural_kind: 0,
    is_final: false,
    fields: &[],
    init_without_arguments: false,
    converts_instances: false,
    creator: None,
};

/// A new object of runtime type `N` as its default constructor makes it (an `EnumState`
/// starts with empty containers; the others with zero/None fields).
pub(crate) fn new_runtime_object(n: usize) -> Result<ObjectRef> {
    let ty = &RUNTIME_TYPES[n];
    let total_size = ty.reflection.as_ref().map_or(24, |r| r.total_size) as usize;
    let object = new_layout_object(pactum_core::object::type_index_of_key(ty.key)?, total_size)?;
    if ty.key == "ffi.EnumState" {
        let fields = super::reflection::fields_of(object.type_index());
        let empty = [
            Any::from(List::new()),
            Any::from(Dict::new()),
            Any::from(Dict::new()),
        ];
        for (field, value) in fields.iter().zip(empty) {
            super::reflection::write_field(&object, field, value.as_view())?;
        }
    }
    Ok(object)
}

/// A new object of the runtime type `key`, as [`new_runtime_object`] makes it.
pub(crate) fn new_runtime_object_of(key: &str) -> Result<ObjectRef> {
    let n = RUNTIME_TYPES
        .iter()
        .position(|ty| ty.key == key)
        .ok_or_else(|| {
            pactum_core::error::Error::new(
                pactum_core::error::ErrorKind::INTERNAL_ERROR,
                format!("{key} is not one of the runtime's own types"),
            )
        })?;
    new_runtime_object(n)
}

/// The metadata creator of runtime type `N`.
unsafe extern "C" fn create<const N: usize>(out: *mut TVMFFIObjectHandle) -> c_int {
    boundary::status(Callback, || {
        let object = new_runtime_object(N)?;
        if out.is_null() {
            return Err(pactum_core::error::Error::new(
                pactum_core::error::ErrorKind::VALUE_ERROR,
                "object creator called with a NULL result pointer",
            ));
        }
        // SAFETY: checked non-null; the caller takes the reference.
        unsafe { out.write(object.into_raw().cast()) };
        Ok(())
    })
}

/// `__ffi_new__` of runtime type `n`.
pub(crate) fn constructor(n: usize) -> Function {
    Function::from_packed(move |_: &[AnyView<'_>]| new_runtime_object(n).map(Any::from_object_ref))
}

/// The explicit `__ffi_init__()` of runtime type `n`, which takes no arguments.
pub(crate) fn init_without_arguments(n: usize) -> Function {
    Function::from_packed(move |args: &[AnyView<'_>]| {
        if !args.is_empty() {
            return Err(pactum_core::error::Error::new(
                pactum_core::error::ErrorKind::TYPE_ERROR,
                format!(
                    "{}.__ffi_init__() takes 0 argument(s), but {} were given",
                    RUNTIME_TYPES[n].key,
                    args.len()
                ),
            ));
        }
        new_runtime_object(n).map(Any::from_object_ref)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_name_their_types() {
        assert_eq!(
            RUNTIME_TYPES[ACCESS_STEP_TYPE].key,
            "ffi.reflection.AccessStep"
        );
        assert_eq!(
            RUNTIME_TYPES[ACCESS_PATH_TYPE].key,
            "ffi.reflection.AccessPath"
        );
        assert_eq!(RUNTIME_TYPES[STRUCTURAL_KEY_TYPE].key, "ffi.StructuralKey");
    }
}
