//! Installs the runtime's own reflected types (`runtime_types.rs`) into the type table while
//! it is created: their fields, metadata, `__ffi_new__`/`__ffi_init__`/`__ffi_shallow_copy__`,
//! the methods and attributes of the access paths and structural keys, and the built-in
//! types' `__ffi_convert__`. The table reaches this through the installer the crate's top sets
//! when the program starts (`types::set_runtime_types_installer`), so the layers these come from
//! stay above it.

use pactum_sys::tvm_ffi::{
    TVMFFIMethodInfo, TVMFFISEqHashKind, TVMFFITypeIndex, TVMFFITypeMetadata, field_flags,
};

use super::args::byte_view;
use super::runtime_types::{self, RUNTIME_TYPES, RuntimeType, TypeExtras};
use super::types::{TypeTable, empty};
use super::{access_path, conversions, dataclass, structural_globals};
use pactum_core::any::Any;
use pactum_core::error::Result;

/// Adds the runtime's own types, and the built-in types' converters, to a new `table`.
pub(crate) fn install_runtime_types(table: &mut TypeTable) -> Result<()> {
    for (index, converter) in conversions::builtin_converters() {
        table.set_attr(index, b"__ffi_convert__", converter)?;
    }
    for (n, ty) in RUNTIME_TYPES.iter().enumerate() {
        add_runtime_type(table, n, ty)?;
    }
    // `ffi.Module`'s one reflected field, as the official runtime registers it: the imports,
    // at the same place in its modules (C++ `ModuleObj::imports_`) and in ours. Python reads
    // `Module.imports` through it.
    let imports = dataclass::RuntimeField {
        name: "imports_",
        doc: "",
        schema: r#"{"type":"ffi.Array","args":[{"type":"Any"}]}"#,
        offset: 24,
        storage: dataclass::Storage::Object,
        static_type_index: TVMFFITypeIndex::ARRAY.0,
        flags: 0,
    };
    imports.with_info(|info| table.register_field(TVMFFITypeIndex::MODULE.0, info))?;
    Ok(())
}

/// The methods and type attributes the official runtime gives a runtime type besides its
/// fields.
fn extras_of(key: &str) -> Option<TypeExtras> {
    match key {
        "ffi.reflection.AccessStep" => Some(access_path::access_step_extras()),
        "ffi.reflection.AccessPath" => Some(access_path::access_path_extras()),
        "ffi.StructuralKey" => Some(structural_globals::structural_key_extras()),
        _ => None,
    }
}

/// Allocates one of the runtime's own types and registers its reflection.
fn add_runtime_type(table: &mut TypeTable, n: usize, ty: &RuntimeType) -> Result<()> {
    let parent = table.by_key[ty.parent.as_bytes()];
    let depth = table.depth_of(parent)? + 1;
    let index = match table.by_key.get(ty.key.as_bytes()) {
        // A static type: allocated already, only its reflection is added.
        Some(&index) => index,
        None => table.alloc(ty.key.as_bytes(), -1, depth, 0, true, parent)?,
    };
    let Some(reflection) = &ty.reflection else {
        return Ok(());
    };
    for field in reflection.fields {
        field.with_info(|info| table.register_field(index, info))?;
    }
    table.set_metadata(
        index,
        &TVMFFITypeMetadata {
            doc: empty(),
            creator: reflection.creator,
            total_size: reflection.total_size,
            structural_eq_hash_kind: TVMFFISEqHashKind(reflection.structural_kind),
        },
    )?;
    if reflection.creator.is_none() {
        // The traversal objects: only their final flag (a shallow copy of one would copy
        // a traversal's state, which nothing may share).
        return table.set_attr(index, b"__ffi_type_final__", Any::from(reflection.is_final));
    }
    table.set_attr(
        index,
        b"__ffi_new__",
        Any::from(runtime_types::constructor(n)),
    )?;
    if reflection.init_without_arguments {
        let init = runtime_types::init_without_arguments(n);
        table.register_method(
            index,
            &TVMFFIMethodInfo {
                name: byte_view(b"__ffi_init__"),
                doc: empty(),
                metadata: byte_view(
                    br#"{"type_schema":"{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[{\"type\":\"ffi.Object\"}],\"params\":[]}}"}"#,
                ),
                flags: field_flags::IS_STATIC_METHOD,
                method: *Any::from(init.clone()).as_raw(),
            },
        )?;
        table.set_attr(index, b"__ffi_init__", Any::from(init))?;
    }
    let total_size = reflection.total_size as usize;
    table.set_attr(
        index,
        b"__ffi_shallow_copy__",
        Any::from(dataclass::shallow_copy_function(total_size)),
    )?;
    if let Some(extras) = extras_of(ty.key) {
        for method in extras.methods {
            table.register_method(
                index,
                &TVMFFIMethodInfo {
                    name: byte_view(method.name.as_bytes()),
                    doc: empty(),
                    metadata: byte_view(method.global.metadata.as_bytes()),
                    flags: if method.is_static {
                        field_flags::IS_STATIC_METHOD
                    } else {
                        0
                    },
                    method: *Any::from(method.global.function).as_raw(),
                },
            )?;
        }
        for (name, value) in extras.attrs {
            table.set_attr(index, name.as_bytes(), value)?;
        }
    }
    if reflection.converts_instances {
        let converter = conversions::instance_converter(index, ty.key);
        table.set_attr(index, b"__ffi_convert__", converter)?;
    }
    table.set_attr(index, b"__ffi_type_final__", Any::from(reflection.is_final))
}
