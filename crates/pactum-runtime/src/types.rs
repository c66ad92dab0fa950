//! The type table: keys, indices, ancestry, reflection records and attribute columns.
//!
//! Entries live at permanent addresses (C callers keep `TVMFFITypeInfo*` and column pointers
//! forever). Registration takes the table lock; like the official runtime, readers of
//! previously returned pointers are not synchronised with later registrations.

use core::cell::UnsafeCell;
use core::ffi::c_int;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use pactum_sys::tvm_ffi::{
    TVMFFIAny, TVMFFIAnyValue, TVMFFIByteArray, TVMFFIFieldInfo, TVMFFIMethodInfo,
    TVMFFISEqHashKind, TVMFFITypeAttrColumn, TVMFFITypeIndex, TVMFFITypeInfo, TVMFFITypeMetadata,
    field_flags,
};

use super::args::{arg_bytes, arg_ref, byte_array_bytes, out_ptr, permanent_bytes};
use super::structural_hooks;
use pactum_core::any::{Any, AnyView};
use pactum_core::error::{Error, ErrorKind, Result};
use pactum_core::internal::STATIC_TYPE_KEYS;
use pactum_core::internal::boundary::{self, EntryKind::CApi, EntryKind::Callback};

/// One registered type. Boxed and leaked: its address is permanent.
struct TypeEntry {
    info: UnsafeCell<TVMFFITypeInfo>,
    ancestors: Vec<*const TVMFFITypeInfo>,
    num_slots: i32,
    allocated_slots: i32,
    can_overflow: bool,
    fields: Vec<TVMFFIFieldInfo>,
    methods: Vec<TVMFFIMethodInfo>,
    metadata: Option<Box<TVMFFITypeMetadata>>,
}

pub(crate) struct TypeTable {
    entries: Vec<Option<&'static UnsafeCell<TypeEntry>>>,
    pub(crate) by_key: HashMap<Box<[u8]>, i32>,
    next_dynamic: i32,
    columns: HashMap<Box<[u8]>, &'static UnsafeCell<Column>>,
}

// SAFETY: the raw pointers inside point to leaked, permanent data; all mutation happens under
// the table mutex.
unsafe impl Send for TypeTable {}

/// An attribute column: the C view plus the values it points into.
struct Column {
    raw: TVMFFITypeAttrColumn,
    values: Vec<Any>,
}

/// Attribute columns readers expect to exist from the start (the official runtime creates
/// them while loading; Python and C++ look several of them up).
const PRECREATED_COLUMNS: &[&str] = &[
    "__any_hash__",
    "__any_equal__",
    "__ffi_convert__",
    "__ffi_init__",
    "__ffi_new__",
    "__ffi_shallow_copy__",
    "__ffi_type_final__",
    "__ffi_repr__",
    "__ffi_eq__",
    "__ffi_hash__",
    "__ffi_compare__",
    "__data_to_json__",
    "__data_from_json__",
    "__s_mutate__",
    "__s_maybe_inplace_mutate__",
    "__s_visit__",
    "__ffi_enum__",
    "__s_equal__",
    "__s_hash__",
];

/// How the table gets the runtime's own reflected types while it is created
/// (`runtime_type_install.rs`). Those types carry Functions, converters and methods built by the
/// layers above this table, so this layer takes the installer as a value: the crate's top
/// ([`crate::register`]) sets it when the program starts, before any table exists.
type RuntimeTypesInstaller = fn(&mut TypeTable) -> Result<()>;

static RUNTIME_TYPES_INSTALLER: OnceLock<RuntimeTypesInstaller> = OnceLock::new();

/// Sets the installer of the runtime's own types (once; later calls change nothing).
pub(crate) fn set_runtime_types_installer(installer: RuntimeTypesInstaller) {
    let _ = RUNTIME_TYPES_INSTALLER.set(installer);
}

fn table() -> MutexGuard<'static, TypeTable> {
    static TABLE: OnceLock<Mutex<TypeTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| Mutex::new(TypeTable::new()))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `std::hash<std::string_view>` of libstdc++ (64-bit `_Hash_bytes`, seed 0xc70f6907): the
/// official `type_key_hash`.
pub(crate) fn type_key_hash(key: &[u8]) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const SEED: u64 = 0xc70f_6907;
    let shift = |v: u64| v ^ (v >> 47);
    let mut hash = SEED ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        hash = (hash ^ shift(word.wrapping_mul(M)).wrapping_mul(M)).wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        hash = (hash ^ u64::from_le_bytes(word)).wrapping_mul(M);
    }
    shift(shift(hash).wrapping_mul(M))
}

impl TypeTable {
    fn new() -> TypeTable {
        let mut table = TypeTable {
            entries: Vec::new(),
            by_key: HashMap::new(),
            next_dynamic: 128,
            columns: HashMap::new(),
        };
        for &(index, key) in STATIC_TYPE_KEYS {
            let (depth, parent) = if index > TVMFFITypeIndex::OBJECT.0 {
                (1, TVMFFITypeIndex::OBJECT.0)
            } else {
                (0, -1)
            };
            let can_overflow = index == TVMFFITypeIndex::OBJECT.0;
            table
                .alloc(key.as_bytes(), index, depth, 0, can_overflow, parent)
                .expect("static type table");
        }
        // The static types the official runtime gives metadata (and so a structural kind, none
        // of them supported), with the size of their objects there.
        for (index, total_size) in [
            (TVMFFITypeIndex::OBJECT, 24),
            (TVMFFITypeIndex::MODULE, 48),
            (TVMFFITypeIndex::BIG_INT, 32),
        ] {
            let metadata = TVMFFITypeMetadata {
                doc: empty(),
                creator: None,
                total_size,
                structural_eq_hash_kind: TVMFFISEqHashKind(0),
            };
            table
                .set_metadata(index.0, &metadata)
                .expect("static type metadata");
        }
        for name in PRECREATED_COLUMNS {
            table.column(name.as_bytes());
        }
        let install_runtime_types = RUNTIME_TYPES_INSTALLER.get().expect(
            "pactum-runtime: the type table is used before the runtime registered itself \
             (pactum_runtime::register)",
        );
        install_runtime_types(&mut table).expect("runtime type table");
        for (index, name, hook) in structural_hooks::builtin_hooks() {
            table.set_attr(index, name, hook).expect("fresh column");
        }
        let (hash, equal) = big_int_hooks();
        table
            .set_attr(TVMFFITypeIndex::BIG_INT.0, b"__any_hash__", hash)
            .expect("fresh column");
        table
            .set_attr(TVMFFITypeIndex::BIG_INT.0, b"__any_equal__", equal)
            .expect("fresh column");
        table
    }

    /// The depth of registered type `index` in the hierarchy.
    pub(crate) fn depth_of(&self, index: i32) -> Result<i32> {
        let entry = self.entry(index).ok_or_else(|| missing_type(index))?;
        // SAFETY: a permanent entry, read under the table lock (or during construction).
        Ok(unsafe { (*(*entry.get()).info.get()).type_depth })
    }

    pub(crate) fn register_field(&mut self, type_index: i32, info: &TVMFFIFieldInfo) -> Result<()> {
        let entry = self
            .entry(type_index)
            .ok_or_else(|| missing_type(type_index))?;
        // SAFETY: mutation of a permanent entry under the table lock.
        let entry = unsafe { &mut *entry.get() };
        // SAFETY: reading the caller's name.
        let name = unsafe { byte_array_bytes(&info.name) };
        // SAFETY: permanent key.
        let type_key = std::string::String::from_utf8_lossy(unsafe {
            byte_array_bytes(&(*entry.info.get()).type_key)
        })
        .into_owned();
        for existing in &entry.fields {
            // SAFETY: permanent copies.
            if unsafe { byte_array_bytes(&existing.name) } == name {
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!(
                        "Check failed: (std::string_view(existing.name.data, existing.name.size) != new_name) is false: Duplicate field name \"{}\" in type \"{type_key}\"",
                        std::string::String::from_utf8_lossy(name)
                    ),
                ));
            }
        }
        for &ancestor in &entry.ancestors {
            // SAFETY: ancestors are permanent infos.
            let ancestor = unsafe { &*ancestor };
            for i in 0..ancestor.num_fields.max(0) as usize {
                // SAFETY: `fields` holds `num_fields` permanent records.
                let field = unsafe { &*ancestor.fields.add(i) };
                // SAFETY: permanent strings.
                if unsafe { byte_array_bytes(&field.name) } == name {
                    eprintln!(
                        "[WARNING] Field \"{}\" in type \"{type_key}\" duplicates an ancestor field in \"{}\". Child types should not re-register inherited fields.",
                        std::string::String::from_utf8_lossy(name),
                        // SAFETY: permanent key.
                        std::string::String::from_utf8_lossy(unsafe {
                            byte_array_bytes(&ancestor.type_key)
                        })
                    );
                }
            }
        }
        entry.fields.push(copy_field(info)?);
        // SAFETY: under the lock; readers of the old pointer race as in the official runtime.
        unsafe {
            (*entry.info.get()).fields = entry.fields.as_ptr();
            (*entry.info.get()).num_fields = entry.fields.len() as i32;
        }
        Ok(())
    }

    pub(crate) fn register_method(
        &mut self,
        type_index: i32,
        info: &TVMFFIMethodInfo,
    ) -> Result<()> {
        let entry = self
            .entry(type_index)
            .ok_or_else(|| missing_type(type_index))?;
        // SAFETY: mutation of a permanent entry under the table lock.
        let entry = unsafe { &mut *entry.get() };
        let mut copy = *info;
        // SAFETY: the caller's strings and value are valid for the call; copies are permanent.
        unsafe {
            copy.name = permanent_bytes(byte_array_bytes(&info.name));
            copy.doc = permanent_bytes(byte_array_bytes(&info.doc));
            copy.metadata = permanent_bytes(byte_array_bytes(&info.metadata));
            copy.method = AnyView::from_raw(info.method).to_any()?.into_raw();
        }
        entry.methods.push(copy);
        // SAFETY: under the lock.
        unsafe {
            (*entry.info.get()).methods = entry.methods.as_ptr();
            (*entry.info.get()).num_methods = entry.methods.len() as i32;
        }
        Ok(())
    }

    pub(crate) fn set_attr(&mut self, type_index: i32, name: &[u8], value: Any) -> Result<()> {
        let column = self.column(name);
        // SAFETY: mutation of a permanent column under the table lock (or during construction).
        let column = unsafe { &mut *column.get() };
        if type_index == 0 {
            return Ok(());
        }
        if type_index < 0 {
            return Err(Error::new(
                ErrorKind::INTERNAL_ERROR,
                format!("invalid type index {type_index} for a type attribute"),
            ));
        }
        let slot = type_index as usize;
        if column.values.len() <= slot {
            column.values.resize_with(slot + 1, Any::none);
        }
        if !column.values[slot].is_none() {
            return Err(Error::new(
                ErrorKind::RUNTIME_ERROR,
                format!(
                    "TypeAttr `{}` is already registered for type index {type_index}. To update the stored value, register a mutable container (e.g., Dict/List) once and mutate it in place on subsequent calls.",
                    std::string::String::from_utf8_lossy(name)
                ),
            ));
        }
        column.values[slot] = value;
        column.raw = TVMFFITypeAttrColumn {
            data: column.values.as_ptr().cast(),
            size: column.values.len() as i32,
            begin_index: 0,
        };
        Ok(())
    }

    fn entry(&self, index: i32) -> Option<&'static UnsafeCell<TypeEntry>> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.entries.get(i).copied().flatten())
    }

    pub(crate) fn alloc(
        &mut self,
        key: &[u8],
        static_index: i32,
        depth: i32,
        child_slots: i32,
        can_overflow: bool,
        parent: i32,
    ) -> Result<i32> {
        if let Some(&index) = self.by_key.get(key) {
            return Ok(index);
        }
        let key_text = || std::string::String::from_utf8_lossy(key).into_owned();
        let parent_entry = if parent >= 0 {
            if parent as usize >= self.entries.len() {
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!(
                        "Check failed: parent_type_index < type_table_.size() ({parent} vs. {}) :  type_key={}, static_index={static_index}",
                        self.entries.len(),
                        key_text()
                    ),
                ));
            }
            Some(self.entry(parent).ok_or_else(|| {
                Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!("parent type index {parent} is not registered"),
                )
            })?)
        } else {
            None
        };
        let child_slots = child_slots.max(0);
        let index = if static_index >= 0 {
            if static_index as usize
                >= self
                    .entries
                    .len()
                    .max(TVMFFITypeIndex::DYN_OBJECT_BEGIN.0 as usize)
            {
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!(
                        "Check failed: static_type_index < type_table_.size() ({static_index} vs. {}) : ",
                        self.entries.len()
                    ),
                ));
            }
            if let Some(existing) = self.entry(static_index) {
                // SAFETY: entries are permanent; reading under the table lock.
                let existing_key =
                    unsafe { byte_array_bytes(&(*(*existing.get()).info.get()).type_key) };
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!(
                        "Check failed: (type_table_[static_type_index] == nullptr) is false: Conflicting static index {static_index} between {} and {}",
                        std::string::String::from_utf8_lossy(existing_key),
                        key_text()
                    ),
                ));
            }
            static_index
        } else {
            let Some(parent_entry) = parent_entry else {
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    "Check not null: parent ",
                ));
            };
            // SAFETY: mutation of a permanent entry under the table lock.
            let parent_entry = unsafe { &mut *parent_entry.get() };
            let need = child_slots + 1;
            if parent_entry.allocated_slots + need <= parent_entry.num_slots {
                // SAFETY: reading the parent's permanent info under the lock.
                let index =
                    unsafe { (*parent_entry.info.get()).type_index } + parent_entry.allocated_slots;
                parent_entry.allocated_slots += need;
                index
            } else if parent_entry.can_overflow {
                let index = self.next_dynamic;
                self.next_dynamic += need;
                index
            } else {
                // SAFETY: reading the parent's permanent info under the lock.
                let parent_key = unsafe { byte_array_bytes(&(*parent_entry.info.get()).type_key) };
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!(
                        "Check failed: (parent->child_slots_can_overflow) is false: Reach maximum number of sub-classes for {}",
                        std::string::String::from_utf8_lossy(parent_key)
                    ),
                ));
            }
        };
        let mut ancestors = Vec::new();
        let mut can_overflow = can_overflow;
        if let Some(parent_entry) = parent_entry {
            // SAFETY: reading a permanent entry under the lock.
            let parent_entry = unsafe { &*parent_entry.get() };
            // SAFETY: as above.
            let parent_depth = unsafe { (*parent_entry.info.get()).type_depth };
            if depth != 0 && depth != parent_depth + 1 {
                return Err(Error::new(
                    ErrorKind::INTERNAL_ERROR,
                    format!(
                        "Check failed: type_depth == parent->type_depth + 1 ({depth} vs. {}) : ",
                        parent_depth + 1
                    ),
                ));
            }
            if depth != 0 {
                ancestors.extend_from_slice(&parent_entry.ancestors);
                ancestors.push(parent_entry.info.get().cast_const());
            }
            can_overflow &= parent_entry.can_overflow;
        } else if depth != 0 {
            return Err(Error::new(
                ErrorKind::INTERNAL_ERROR,
                "Check not null: parent ",
            ));
        }
        let key_bytes = permanent_bytes(key);
        let entry: &'static UnsafeCell<TypeEntry> =
            Box::leak(Box::new(UnsafeCell::new(TypeEntry {
                info: UnsafeCell::new(TVMFFITypeInfo {
                    type_index: index,
                    type_depth: depth,
                    type_key: key_bytes,
                    type_ancestors: core::ptr::null(),
                    type_key_hash: type_key_hash(key),
                    num_fields: 0,
                    num_methods: 0,
                    fields: core::ptr::null(),
                    methods: core::ptr::null(),
                    metadata: core::ptr::null(),
                }),
                ancestors,
                num_slots: child_slots + 1,
                allocated_slots: 1,
                can_overflow,
                fields: Vec::new(),
                methods: Vec::new(),
                metadata: None,
            })));
        // SAFETY: the fresh entry is exclusively ours until published below.
        unsafe {
            let e = &mut *entry.get();
            if !e.ancestors.is_empty() {
                (*e.info.get()).type_ancestors = e.ancestors.as_ptr();
            }
        }
        let slot = index as usize;
        if self.entries.len() <= slot {
            self.entries.resize(slot + 1, None);
        }
        self.entries[slot] = Some(entry);
        self.by_key.insert(key.into(), index);
        Ok(index)
    }

    pub(crate) fn set_metadata(&mut self, index: i32, metadata: &TVMFFITypeMetadata) -> Result<()> {
        let entry = self.entry(index).ok_or_else(|| missing_type(index))?;
        // SAFETY: mutation of a permanent entry under the table lock.
        let entry = unsafe { &mut *entry.get() };
        if entry.metadata.is_some() {
            // SAFETY: reading permanent info under the lock.
            let key = unsafe { byte_array_bytes(&(*entry.info.get()).type_key) };
            let message = format!(
                "Overriding {}, possible causes:\n- two ObjectDef<T>() calls for the same T \n- when we forget to assign _type_key to ObjectRef<Y> that inherits from T\n- another type with the same key is already registered\nCross check the reflection registration.",
                std::string::String::from_utf8_lossy(key)
            );
            eprintln!("Traceback (most recent call last):\nRuntimeError: {message}");
            return Err(Error::new(ErrorKind::RUNTIME_ERROR, message));
        }
        let mut copy = Box::new(*metadata);
        // SAFETY: the caller's doc is valid for the call; we keep a permanent copy.
        copy.doc = permanent_bytes(unsafe { byte_array_bytes(&metadata.doc) });
        // SAFETY: as above, under the lock.
        unsafe { (*entry.info.get()).metadata = &*copy };
        entry.metadata = Some(copy);
        Ok(())
    }

    fn column(&mut self, name: &[u8]) -> &'static UnsafeCell<Column> {
        if let Some(column) = self.columns.get(name) {
            return column;
        }
        let column: &'static UnsafeCell<Column> = Box::leak(Box::new(UnsafeCell::new(Column {
            raw: TVMFFITypeAttrColumn {
                data: core::ptr::null(),
                size: 0,
                begin_index: 0,
            },
            values: Vec::new(),
        })));
        self.columns.insert(name.into(), column);
        column
    }
}

pub(crate) fn empty() -> TVMFFIByteArray {
    TVMFFIByteArray {
        data: core::ptr::null(),
        size: 0,
    }
}

pub(crate) fn missing_type(index: i32) -> Error {
    Error::new(
        ErrorKind::INTERNAL_ERROR,
        format!(
            "Check failed: (entry != nullptr) is false: Cannot find type info for type_index={index}"
        ),
    )
}

/// All registered type keys in index order.
pub(crate) fn registered_keys() -> Vec<std::string::String> {
    let table = table();
    table
        .entries
        .iter()
        .flatten()
        .map(|e| {
            // SAFETY: permanent entries, read under the lock.
            std::string::String::from_utf8_lossy(unsafe {
                byte_array_bytes(&(*(*e.get()).info.get()).type_key)
            })
            .into_owned()
        })
        .collect()
}

#[allow(non_snake_case)]
/// `TVMFFITypeKeyToIndex`.
///
/// # Safety
/// The C contract of `TVMFFITypeKeyToIndex` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITypeKeyToIndex(
    type_key: *const TVMFFIByteArray,
    out_tindex: *mut i32,
) -> c_int {
    boundary::status(CApi, || {
        let key = arg_bytes(type_key, "type_key")?;
        let out = out_ptr(out_tindex, "out_tindex")?;
        match table().by_key.get(key) {
            Some(&index) => {
                // SAFETY: checked non-null out pointer.
                unsafe { *out = index };
                Ok(())
            }
            None => Err(Error::new(
                ErrorKind::INTERNAL_ERROR,
                format!(
                    "Check failed: (it != type_key2index_.end()) is false: Cannot find type `{}`",
                    std::string::String::from_utf8_lossy(key)
                ),
            )),
        }
    })
}

#[allow(non_snake_case)]
/// `TVMFFITypeGetOrAllocIndex`. Where the official runtime exits the process on a bad
/// request, this raises the error and returns -1.
///
/// # Safety
/// The C contract of `TVMFFITypeGetOrAllocIndex` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITypeGetOrAllocIndex(
    type_key: *const TVMFFIByteArray,
    static_type_index: i32,
    type_depth: i32,
    num_child_slots: i32,
    child_slots_can_overflow: i32,
    parent_type_index: i32,
) -> i32 {
    boundary::value(CApi, -1, || {
        let key = arg_bytes(type_key, "type_key")?;
        let mut table = table();
        if parent_type_index == -2 {
            return Ok(table.by_key.get(key).copied().unwrap_or(-2));
        }
        table.alloc(
            key,
            static_type_index,
            type_depth,
            num_child_slots,
            child_slots_can_overflow != 0,
            parent_type_index,
        )
    })
}

#[allow(non_snake_case)]
/// `TVMFFIGetTypeInfo`. An unregistered index raises an error and returns NULL (the official
/// runtime exits the process).
///
/// # Safety
/// The C contract of `TVMFFIGetTypeInfo` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIGetTypeInfo(type_index: i32) -> *const TVMFFITypeInfo {
    boundary::value(CApi, core::ptr::null(), || {
        let entry = table()
            .entry(type_index)
            .ok_or_else(|| missing_type(type_index))?;
        // SAFETY: a permanent entry.
        Ok(unsafe { (*entry.get()).info.get().cast_const() })
    })
}

fn copy_field(info: &TVMFFIFieldInfo) -> Result<TVMFFIFieldInfo> {
    let mut copy = *info;
    // SAFETY: the caller's strings are valid for the call; copies are permanent.
    unsafe {
        copy.name = permanent_bytes(byte_array_bytes(&info.name));
        copy.doc = permanent_bytes(byte_array_bytes(&info.doc));
        copy.metadata = permanent_bytes(byte_array_bytes(&info.metadata));
    }
    copy.default_value_or_factory = if info.flags & field_flags::HAS_DEFAULT != 0 {
        // SAFETY: the caller passes a valid view; the owned copy is kept forever.
        let owned = unsafe { AnyView::from_raw(info.default_value_or_factory) }.to_any()?;
        owned.into_raw()
    } else {
        TVMFFIAny::NONE
    };
    if info.flags & field_flags::SETTER_IS_FUNCTION_OBJ != 0 && !info.setter.is_null() {
        // SAFETY: the setter is a live Function object; the extra reference is kept forever.
        unsafe { pactum_core::internal::header::inc_ref(info.setter.cast()) };
    }
    Ok(copy)
}

#[allow(non_snake_case)]
/// `TVMFFITypeRegisterField`.
///
/// # Safety
/// The C contract of `TVMFFITypeRegisterField` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITypeRegisterField(
    type_index: i32,
    info: *const TVMFFIFieldInfo,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: checked non-null; the caller passes a valid record.
        let info = unsafe { arg_ref(info, "info")? };
        table().register_field(type_index, info)
    })
}

#[allow(non_snake_case)]
/// `TVMFFITypeRegisterMethod`.
///
/// # Safety
/// The C contract of `TVMFFITypeRegisterMethod` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITypeRegisterMethod(
    type_index: i32,
    info: *const TVMFFIMethodInfo,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: checked non-null; the caller passes a valid record.
        let info = unsafe { arg_ref(info, "info")? };
        table().register_method(type_index, info)
    })
}

#[allow(non_snake_case)]
/// `TVMFFITypeRegisterMetadata`.
///
/// # Safety
/// The C contract of `TVMFFITypeRegisterMetadata` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITypeRegisterMetadata(
    type_index: i32,
    metadata: *const TVMFFITypeMetadata,
) -> c_int {
    boundary::status(CApi, || {
        // SAFETY: checked non-null; the caller passes a valid record.
        let metadata = unsafe { arg_ref(metadata, "metadata")? };
        table().set_metadata(type_index, metadata)
    })
}

#[allow(non_snake_case)]
/// `TVMFFITypeRegisterAttr`.
///
/// # Safety
/// The C contract of `TVMFFITypeRegisterAttr` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFITypeRegisterAttr(
    type_index: i32,
    attr_name: *const TVMFFIByteArray,
    attr_value: *const TVMFFIAny,
) -> c_int {
    boundary::status(CApi, || {
        let name = arg_bytes(attr_name, "attr_name")?;
        // SAFETY: checked non-null; the caller passes a valid view.
        let value = unsafe { AnyView::from_raw(*arg_ref(attr_value, "attr_value")?) };
        let owned = if type_index > 0 {
            value.to_any()?
        } else {
            Any::none()
        };
        table().set_attr(type_index, name, owned)
    })
}

#[allow(non_snake_case)]
/// `TVMFFIGetTypeAttrColumn`.
///
/// # Safety
/// The C contract of `TVMFFIGetTypeAttrColumn` in the official headers (pointer arguments valid as
/// documented there); NULL arguments the official runtime would crash on are reported.
pub unsafe extern "C" fn TVMFFIGetTypeAttrColumn(
    attr_name: *const TVMFFIByteArray,
) -> *const TVMFFITypeAttrColumn {
    boundary::value(CApi, core::ptr::null(), || {
        let name = arg_bytes(attr_name, "attr_name")?;
        let table = table();
        let column = table.columns.get(name);
        // Columns are leaked boxes: their addresses are permanent.
        Ok(column.map_or(core::ptr::null(), |c| {
            // SAFETY: only the address of the permanent column's C view is taken.
            unsafe { core::ptr::addr_of!((*c.get()).raw) }
        }))
    })
}

/// The value of type attribute `name` registered for `type_index`, if any (None counts as
/// absent).
pub(crate) fn attr_value(type_index: i32, name: &[u8]) -> Option<Any> {
    let table = table();
    let column = table.columns.get(name)?;
    // SAFETY: a permanent column, read under the table lock.
    let column = unsafe { &*column.get() };
    let value = column.values.get(usize::try_from(type_index).ok()?)?;
    (!value.is_none()).then(|| value.clone())
}

/// Registers type attribute `name` of `type_index` (as `TVMFFITypeRegisterAttr`).
pub(crate) fn register_attr(type_index: i32, name: &[u8], value: Any) -> Result<()> {
    table().set_attr(type_index, name, value)
}

/// The BigInt hash and equality hooks the official runtime registers, as OpaquePtr values,
/// so C++ code hashing BigInt keys agrees with us.
fn big_int_hooks() -> (Any, Any) {
    // On a panic the hooks raise it and answer 0 and false.
    unsafe extern "C" fn big_int_hash(value: *const TVMFFIAny) -> TVMFFIAny {
        boundary::value(Callback, Any::from(0i64).into_raw(), || {
            // SAFETY: the hash hook is called with a live BigInt value.
            let words = unsafe { super::values::big_int_words(&*value) };
            Ok(Any::from(super::values::big_int_hash(&words) as i64).into_raw())
        })
    }
    unsafe extern "C" fn big_int_equal(lhs: *const TVMFFIAny, rhs: *const TVMFFIAny) -> TVMFFIAny {
        boundary::value(Callback, Any::from(false).into_raw(), || {
            // SAFETY: the equality hook is called with two live BigInt values.
            let equal = unsafe {
                super::values::big_int_words(&*lhs) == super::values::big_int_words(&*rhs)
            };
            Ok(Any::from(equal).into_raw())
        })
    }
    (
        native_hook(big_int_hash as *mut core::ffi::c_void),
        native_hook(big_int_equal as *mut core::ffi::c_void),
    )
}

/// A native function pointer as the OpaquePtr value a type attribute column stores for a
/// native hook (`__any_hash__`, `__any_equal__`).
pub(crate) fn native_hook(function: *mut core::ffi::c_void) -> Any {
    // SAFETY: an OpaquePtr value owns nothing.
    unsafe {
        Any::from_raw(TVMFFIAny {
            type_index: TVMFFITypeIndex::OPAQUE_PTR.0,
            small_str_len: 0,
            value: TVMFFIAnyValue { v_ptr: function },
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::types::type_key_hash;

    #[test]
    fn type_key_hash_matches_libstdcxx() {
        assert_eq!(type_key_hash(b"None"), 0xfb6ac968ce0ca5aa);
        assert_eq!(type_key_hash(b"ffi.Object"), 0x33a211b274fa0106);
        assert_eq!(type_key_hash(b""), 0x553e93901e462a6e);
    }
}
