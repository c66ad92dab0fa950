//! VM values: the four scalar kinds and reference-counted references, and `!vm.list<T>`
//! (lists hold values and references, and references can be lists, so they live together).
//!
//! A list is a growable list of values of one element type, typed references, or variants
//! (any value or reference per slot). Value gets and sets convert as the reference runtime
//! does (facts sheet §5): integer widths sign-extend or truncate, `f32` and `f64` convert into
//! each other, and a conversion between an integer and a float kind gives 0.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use super::buffer::VmBuffer;
use crate::memory_budget::{Charge, MemoryBudget, OverBudget};

/// One VM value: an argument, a result or a list element.
#[derive(Clone, Debug)]
pub enum Value {
    /// `i`: a 32-bit integer.
    I32(i32),
    /// `I`: a 64-bit integer.
    I64(i64),
    /// `f`: a 32-bit float.
    F32(f32),
    /// `F`: a 64-bit float.
    F64(f64),
    /// `r`: a reference, or null.
    Ref(Option<Ref>),
}

impl Value {
    /// The calling-convention character of this value's kind (`i`, `I`, `f`, `F`, `r`).
    pub fn kind_char(&self) -> char {
        match self {
            Value::I32(_) => 'i',
            Value::I64(_) => 'I',
            Value::F32(_) => 'f',
            Value::F64(_) => 'F',
            Value::Ref(_) => 'r',
        }
    }

    /// A short name of the kind (`i32`, `ref`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::I32(_) => "i32",
            Value::I64(_) => "i64",
            Value::F32(_) => "f32",
            Value::F64(_) => "f64",
            Value::Ref(_) => "ref",
        }
    }

    /// The integer, if this is an `I32`.
    pub fn as_i32(&self) -> Option<i32> {
        match self {
            Value::I32(v) => Some(*v),
            _ => None,
        }
    }

    /// The integer, if this is an `I64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::I64(v) => Some(*v),
            _ => None,
        }
    }

    /// The float, if this is an `F32`.
    pub fn as_f32(&self) -> Option<f32> {
        match self {
            Value::F32(v) => Some(*v),
            _ => None,
        }
    }

    /// The float, if this is an `F64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::F64(v) => Some(*v),
            _ => None,
        }
    }

    /// The reference, if this is a non-null `Ref`.
    pub fn as_ref(&self) -> Option<&Ref> {
        match self {
            Value::Ref(r) => r.as_ref(),
            _ => None,
        }
    }
}

/// Bitwise equality for floats; pointer identity for references.
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::I32(a), Value::I32(b)) => a == b,
            (Value::I64(a), Value::I64(b)) => a == b,
            (Value::F32(a), Value::F32(b)) => a.to_bits() == b.to_bits(),
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            (Value::Ref(a), Value::Ref(b)) => a == b,
            _ => false,
        }
    }
}

/// `i32=42`, `f64=1.75`, `ref=vm.buffer@0x...`, `ref=null`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::I32(v) => write!(f, "i32={v}"),
            Value::I64(v) => write!(f, "i64={v}"),
            Value::F32(v) => write!(f, "f32={v}"),
            Value::F64(v) => write!(f, "f64={v}"),
            Value::Ref(None) => f.write_str("ref=null"),
            Value::Ref(Some(r)) => write!(f, "ref={}", r.type_name()),
        }
    }
}

/// Downcasting support for [`RefObject`]; implemented for every `'static` type.
pub trait AsAny {
    /// `self` as `&dyn Any`.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A reference type the VM does not look into (a HAL buffer view, a fence, ...). Bytecode only
/// moves, compares and type-checks these, and passes them to imports.
pub trait RefObject: AsAny + Send + Sync + fmt::Debug {
    /// The registered type name, without the `!` (`hal.buffer_view`).
    fn type_name(&self) -> &str;
}

/// A counted reference to a VM object. Cloning retains; dropping releases.
#[derive(Clone, Debug)]
pub enum Ref {
    /// A `!vm.buffer`.
    Buffer(Arc<VmBuffer>),
    /// A `!vm.list<...>`.
    List(Arc<VmList>),
    /// Any other registered reference type.
    Object(Arc<dyn RefObject>),
}

impl Ref {
    /// The type name: `vm.buffer`, `vm.list` or the object's.
    pub fn type_name(&self) -> &str {
        match self {
            Ref::Buffer(_) => "vm.buffer",
            Ref::List(_) => "vm.list",
            Ref::Object(o) => o.type_name(),
        }
    }

    /// Whether this reference is of type `ty`.
    pub fn is_of(&self, ty: &RefType) -> bool {
        match (self, ty) {
            (Ref::Buffer(_), RefType::Buffer) | (Ref::List(_), RefType::List) => true,
            (Ref::Object(o), RefType::Object(name)) => o.type_name() == &**name,
            _ => false,
        }
    }

    /// The object as `T`, when it is one.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        match self {
            Ref::Buffer(b) => (&**b as &dyn Any).downcast_ref(),
            Ref::List(l) => (&**l as &dyn Any).downcast_ref(),
            Ref::Object(o) => (**o).as_any().downcast_ref(),
        }
    }

    /// The buffer, when this is one.
    pub fn as_buffer(&self) -> Option<&Arc<VmBuffer>> {
        match self {
            Ref::Buffer(b) => Some(b),
            _ => None,
        }
    }

    /// The list, when this is one.
    pub fn as_list(&self) -> Option<&Arc<VmList>> {
        match self {
            Ref::List(l) => Some(l),
            _ => None,
        }
    }

    fn address(&self) -> *const () {
        match self {
            Ref::Buffer(b) => Arc::as_ptr(b).cast(),
            Ref::List(l) => Arc::as_ptr(l).cast(),
            Ref::Object(o) => Arc::as_ptr(o).cast(),
        }
    }
}

/// Identity: the same object.
impl PartialEq for Ref {
    fn eq(&self, other: &Ref) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.address() == other.address()
    }
}

impl Eq for Ref {}

impl From<Arc<VmBuffer>> for Ref {
    fn from(buffer: Arc<VmBuffer>) -> Ref {
        Ref::Buffer(buffer)
    }
}

impl From<Arc<VmList>> for Ref {
    fn from(list: Arc<VmList>) -> Ref {
        Ref::List(list)
    }
}

impl From<Ref> for Value {
    fn from(r: Ref) -> Value {
        Value::Ref(Some(r))
    }
}

/// A reference type, for type checks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RefType {
    /// `!vm.buffer`.
    Buffer,
    /// `!vm.list<...>` (one type whatever the element type).
    List,
    /// A registered object type, by name without the `!` (`hal.fence`).
    Object(Arc<str>),
}

impl fmt::Display for RefType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefType::Buffer => f.write_str("vm.buffer"),
            RefType::List => f.write_str("vm.list"),
            RefType::Object(name) => f.write_str(name),
        }
    }
}

/// A primitive element type of lists and the type table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl ValueType {
    /// The size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            ValueType::I8 => 1,
            ValueType::I16 => 2,
            ValueType::I32 | ValueType::F32 => 4,
            ValueType::I64 | ValueType::F64 => 8,
        }
    }

    /// Whether this is `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, ValueType::F32 | ValueType::F64)
    }
}

/// An entry of a module's type table, resolved.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VmType {
    /// `i8` ... `f64`.
    Value(ValueType),
    /// `!vm.opaque`: no reference type (variant lists).
    Opaque,
    /// A reference type.
    Ref(RefType),
}

impl VmType {
    /// Resolves a type-table name. `is_registered` says whether an object type name (without
    /// `!`) is registered; `None` when the name is unknown.
    pub fn resolve(name: &str, is_registered: impl Fn(&str) -> bool) -> Option<VmType> {
        Some(match name {
            "i8" => VmType::Value(ValueType::I8),
            "i16" => VmType::Value(ValueType::I16),
            "i32" => VmType::Value(ValueType::I32),
            "i64" => VmType::Value(ValueType::I64),
            "f32" => VmType::Value(ValueType::F32),
            "f64" => VmType::Value(ValueType::F64),
            "!vm.opaque" => VmType::Opaque,
            "!vm.buffer" => VmType::Ref(RefType::Buffer),
            _ if name.starts_with("!vm.list<") || name == "!vm.list" => VmType::Ref(RefType::List),
            _ => {
                let bare = name.strip_prefix('!')?;
                let bare = bare
                    .strip_prefix("vm.ref<")
                    .and_then(|s| s.strip_suffix('>'))
                    .unwrap_or(bare);
                let bare = bare.strip_prefix('!').unwrap_or(bare);
                if bare == "vm.buffer" {
                    return Some(VmType::Ref(RefType::Buffer));
                }
                if bare.starts_with("vm.list") {
                    return Some(VmType::Ref(RefType::List));
                }
                if !is_registered(bare) {
                    return None;
                }
                VmType::Ref(RefType::Object(Arc::from(bare)))
            }
        })
    }

    /// The reference type, when this is one.
    pub fn ref_type(&self) -> Option<&RefType> {
        match self {
            VmType::Ref(r) => Some(r),
            _ => None,
        }
    }
}

/// Checks `r` against the reference type of a type-table entry: null always passes; a
/// non-null reference passes only if the entry is a reference type and `r` is of it.
pub fn type_check(r: Option<&Ref>, ty: &VmType) -> bool {
    match r {
        None => true,
        Some(r) => ty.ref_type().is_some_and(|t| r.is_of(t)),
    }
}

// -- Lists.

/// What a list holds, fixed when it is made.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// Values of one primitive type.
    Value(ValueType),
    /// References of one type (or null).
    Ref(RefType),
    /// Any value or reference per slot (`!vm.opaque` elements).
    Variant,
}

/// Why a list access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListError {
    /// `index` is not below the list's size.
    OutOfRange {
        /// The index.
        index: u64,
        /// The list's size.
        size: u64,
    },
    /// The list (or the variant slot) holds another kind of element.
    WrongKind,
    /// A reference of the wrong type for a typed reference list.
    TypeMismatch,
    /// The memory budget does not allow the growth.
    OverBudget(OverBudget),
    /// The host could not allocate the memory.
    AllocationFailed,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListError::OutOfRange { index, size } => {
                write!(f, "index {index} is outside the list of {size} elements")
            }
            ListError::WrongKind => f.write_str("the list holds another kind of element"),
            ListError::TypeMismatch => f.write_str("the reference is of another type"),
            ListError::OverBudget(o) => write!(f, "memory budget of {} bytes exceeded", o.limit),
            ListError::AllocationFailed => f.write_str("could not allocate the list storage"),
        }
    }
}

enum Store {
    /// Integers sign-extended to 64 bits; floats as their bits.
    Values(Vec<u64>),
    Refs(Vec<Option<Ref>>),
    /// `None` is an empty slot.
    Variants(Vec<Option<Value>>),
}

impl Store {
    fn len(&self) -> usize {
        match self {
            Store::Values(v) => v.len(),
            Store::Refs(v) => v.len(),
            Store::Variants(v) => v.len(),
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Store::Values(v) => v.capacity(),
            Store::Refs(v) => v.capacity(),
            Store::Variants(v) => v.capacity(),
        }
    }

    fn slot_size(&self) -> usize {
        match self {
            Store::Values(_) => 8,
            Store::Refs(_) => std::mem::size_of::<Option<Ref>>(),
            Store::Variants(_) => std::mem::size_of::<Option<Value>>(),
        }
    }

    fn try_reserve(&mut self, additional: usize) -> Result<(), ListError> {
        let r = match self {
            Store::Values(v) => v.try_reserve_exact(additional),
            Store::Refs(v) => v.try_reserve_exact(additional),
            Store::Variants(v) => v.try_reserve_exact(additional),
        };
        r.map_err(|_| ListError::AllocationFailed)
    }

    fn take_refs(&mut self) -> Vec<Ref> {
        match self {
            Store::Values(_) => Vec::new(),
            Store::Refs(v) => std::mem::take(v).into_iter().flatten().collect(),
            Store::Variants(v) => std::mem::take(v)
                .into_iter()
                .filter_map(|s| match s {
                    Some(Value::Ref(r)) => r,
                    _ => None,
                })
                .collect(),
        }
    }
}

struct Items {
    store: Store,
    charge: Charge,
}

/// A VM list.
pub struct VmList {
    element: ElementType,
    items: Mutex<Items>,
}

impl fmt::Debug for VmList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VmList")
            .field("element", &self.element)
            .field("len", &self.len())
            .finish()
    }
}

fn out_of_range(index: u32, size: usize) -> ListError {
    ListError::OutOfRange {
        index: u64::from(index),
        size: size as u64,
    }
}

impl VmList {
    /// An empty list with room for `capacity` elements, charged to `budget`.
    pub fn new(
        element: ElementType,
        capacity: usize,
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<VmList, ListError> {
        let store = match element {
            ElementType::Value(_) => Store::Values(Vec::new()),
            ElementType::Ref(_) => Store::Refs(Vec::new()),
            ElementType::Variant => Store::Variants(Vec::new()),
        };
        let charge = Charge::new(budget, 0).map_err(ListError::OverBudget)?;
        let list = VmList {
            element,
            items: Mutex::new(Items { store, charge }),
        };
        list.reserve(capacity)?;
        Ok(list)
    }

    /// A list holding `values`, each converted to `element` as `list.set.*` would.
    pub fn from_values(
        element: ElementType,
        values: impl IntoIterator<Item = Value>,
    ) -> Result<VmList, ListError> {
        let list = VmList::new(element, 0, None)?;
        for value in values {
            list.push(value)?;
        }
        Ok(list)
    }

    fn lock(&self) -> MutexGuard<'_, Items> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The element type.
    pub fn element_type(&self) -> &ElementType {
        &self.element
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.lock().store.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.lock().store.capacity()
    }

    fn grow_to(items: &mut Items, capacity: usize) -> Result<(), ListError> {
        let current = items.store.capacity();
        if capacity <= current {
            return Ok(());
        }
        let bytes = capacity
            .checked_mul(items.store.slot_size())
            .ok_or(ListError::AllocationFailed)?;
        items.charge.resize(bytes).map_err(ListError::OverBudget)?;
        let len = items.store.len();
        if let Err(e) = items.store.try_reserve(capacity - len) {
            let _ = items
                .charge
                .resize(items.store.capacity() * items.store.slot_size());
            return Err(e);
        }
        Ok(())
    }

    /// Ensures room for `capacity` elements (`list.reserve`).
    pub fn reserve(&self, capacity: usize) -> Result<(), ListError> {
        Self::grow_to(&mut self.lock(), capacity)
    }

    /// Sets the size (`list.resize`): new elements are zero values, null references or empty
    /// variant slots; dropped references are released.
    pub fn resize(&self, size: usize) -> Result<(), ListError> {
        let dropped;
        {
            let mut items = self.lock();
            if size > items.store.capacity() {
                Self::grow_to(&mut items, size)?;
            }
            dropped = match &mut items.store {
                Store::Values(v) => {
                    v.resize(size, 0);
                    Vec::new()
                }
                Store::Refs(v) => {
                    if size < v.len() {
                        v.split_off(size).into_iter().map(Value::Ref).collect()
                    } else {
                        v.resize(size, None);
                        Vec::new()
                    }
                }
                Store::Variants(v) => {
                    if size < v.len() {
                        v.split_off(size).into_iter().flatten().collect()
                    } else {
                        v.resize(size, None);
                        Vec::new()
                    }
                }
            };
        }
        // Released outside the lock: a dropped list may hold this one.
        drop(dropped);
        Ok(())
    }

    /// Appends `value` (converted to the element type), growing the list.
    pub fn push(&self, value: Value) -> Result<(), ListError> {
        let index = u32::try_from(self.len()).map_err(|_| ListError::AllocationFailed)?;
        self.resize(index as usize + 1)?;
        self.set(index, value)
    }

    /// Element `index` as a value: scalars as their element type, references as `Ref`; `None`
    /// for an empty variant slot or an index out of range.
    pub fn get(&self, index: u32) -> Option<Value> {
        let items = self.lock();
        let i = index as usize;
        match (&items.store, &self.element) {
            (Store::Values(v), ElementType::Value(ty)) => {
                let raw = *v.get(i)?;
                Some(match ty {
                    ValueType::I8 | ValueType::I16 | ValueType::I32 => Value::I32(raw as i32),
                    ValueType::I64 => Value::I64(raw as i64),
                    ValueType::F32 => Value::F32(f32::from_bits(raw as u32)),
                    ValueType::F64 => Value::F64(f64::from_bits(raw)),
                })
            }
            (Store::Refs(v), _) => Some(Value::Ref(v.get(i)?.clone())),
            (Store::Variants(v), _) => v.get(i)?.clone(),
            _ => None,
        }
    }

    /// Sets element `index` from any value, with the conversions of `list.set.*`.
    pub fn set(&self, index: u32, value: Value) -> Result<(), ListError> {
        match value {
            Value::I32(v) => self.set_i32(index, v),
            Value::I64(v) => self.set_i64(index, v),
            Value::F32(v) => self.set_f32(index, v),
            Value::F64(v) => self.set_f64(index, v),
            Value::Ref(r) => self.set_ref(index, r),
        }
    }

    /// All elements (see [`get`](VmList::get)).
    pub fn to_values(&self) -> Vec<Option<Value>> {
        (0..self.len() as u32).map(|i| self.get(i)).collect()
    }

    fn set_scalar(
        &self,
        index: u32,
        raw: impl Fn(ValueType) -> u64,
        variant: Value,
    ) -> Result<(), ListError> {
        let old;
        {
            let mut items = self.lock();
            let size = items.store.len();
            let i = index as usize;
            match (&mut items.store, &self.element) {
                (Store::Values(v), ElementType::Value(ty)) => {
                    let slot = v.get_mut(i).ok_or(out_of_range(index, size))?;
                    *slot = raw(*ty);
                    return Ok(());
                }
                (Store::Variants(v), _) => {
                    let slot = v.get_mut(i).ok_or(out_of_range(index, size))?;
                    old = slot.replace(variant);
                }
                _ => return Err(ListError::WrongKind),
            }
        }
        drop(old);
        Ok(())
    }

    /// `list.set.i32`.
    pub fn set_i32(&self, index: u32, value: i32) -> Result<(), ListError> {
        self.set_scalar(
            index,
            |ty| match ty {
                ValueType::I8 => value as i8 as i64 as u64,
                ValueType::I16 => value as i16 as i64 as u64,
                ValueType::I32 | ValueType::I64 => value as i64 as u64,
                ValueType::F32 | ValueType::F64 => 0,
            },
            Value::I32(value),
        )
    }

    /// `list.set.i64`.
    pub fn set_i64(&self, index: u32, value: i64) -> Result<(), ListError> {
        self.set_scalar(
            index,
            |ty| match ty {
                ValueType::I8 => value as i8 as i64 as u64,
                ValueType::I16 => value as i16 as i64 as u64,
                ValueType::I32 => value as i32 as i64 as u64,
                ValueType::I64 => value as u64,
                ValueType::F32 | ValueType::F64 => 0,
            },
            Value::I64(value),
        )
    }

    /// `list.set.f32`.
    pub fn set_f32(&self, index: u32, value: f32) -> Result<(), ListError> {
        self.set_scalar(
            index,
            |ty| match ty {
                ValueType::F32 => u64::from(value.to_bits()),
                ValueType::F64 => f64::from(value).to_bits(),
                _ => 0,
            },
            Value::F32(value),
        )
    }

    /// `list.set.f64`.
    pub fn set_f64(&self, index: u32, value: f64) -> Result<(), ListError> {
        self.set_scalar(
            index,
            |ty| match ty {
                ValueType::F32 => u64::from((value as f32).to_bits()),
                ValueType::F64 => value.to_bits(),
                _ => 0,
            },
            Value::F64(value),
        )
    }

    /// Reads a scalar element: `(raw, type)` for value lists, the value for variant slots.
    fn get_scalar<T>(
        &self,
        index: u32,
        from_raw: impl Fn(u64, ValueType) -> T,
        from_value: impl Fn(&Value) -> Option<T>,
    ) -> Result<T, ListError> {
        let items = self.lock();
        let size = items.store.len();
        let i = index as usize;
        match (&items.store, &self.element) {
            (Store::Values(v), ElementType::Value(ty)) => {
                let raw = *v.get(i).ok_or(out_of_range(index, size))?;
                Ok(from_raw(raw, *ty))
            }
            (Store::Variants(v), _) => match v.get(i).ok_or(out_of_range(index, size))? {
                Some(value) => from_value(value).ok_or(ListError::WrongKind),
                None => Err(ListError::WrongKind),
            },
            _ => Err(ListError::WrongKind),
        }
    }

    /// `list.get.i32`.
    pub fn get_i32(&self, index: u32) -> Result<i32, ListError> {
        self.get_scalar(
            index,
            |raw, ty| if ty.is_float() { 0 } else { raw as i32 },
            |v| match v {
                Value::I32(x) => Some(*x),
                Value::I64(x) => Some(*x as i32),
                Value::F32(_) | Value::F64(_) => Some(0),
                Value::Ref(_) => None,
            },
        )
    }

    /// `list.get.i64`.
    pub fn get_i64(&self, index: u32) -> Result<i64, ListError> {
        self.get_scalar(
            index,
            |raw, ty| if ty.is_float() { 0 } else { raw as i64 },
            |v| match v {
                Value::I32(x) => Some(i64::from(*x)),
                Value::I64(x) => Some(*x),
                Value::F32(_) | Value::F64(_) => Some(0),
                Value::Ref(_) => None,
            },
        )
    }

    /// `list.get.f32`.
    pub fn get_f32(&self, index: u32) -> Result<f32, ListError> {
        self.get_scalar(
            index,
            |raw, ty| match ty {
                ValueType::F32 => f32::from_bits(raw as u32),
                ValueType::F64 => f64::from_bits(raw) as f32,
                _ => 0.0,
            },
            |v| match v {
                Value::F32(x) => Some(*x),
                Value::F64(x) => Some(*x as f32),
                Value::I32(_) | Value::I64(_) => Some(0.0),
                Value::Ref(_) => None,
            },
        )
    }

    /// `list.get.f64`.
    pub fn get_f64(&self, index: u32) -> Result<f64, ListError> {
        self.get_scalar(
            index,
            |raw, ty| match ty {
                ValueType::F32 => f64::from(f32::from_bits(raw as u32)),
                ValueType::F64 => f64::from_bits(raw),
                _ => 0.0,
            },
            |v| match v {
                Value::F32(x) => Some(f64::from(*x)),
                Value::F64(x) => Some(*x),
                Value::I32(_) | Value::I64(_) => Some(0.0),
                Value::Ref(_) => None,
            },
        )
    }

    /// `list.get.ref`: the reference at `index` (null for an empty variant slot), retained, or
    /// moved out of the list when `take` is set.
    pub fn get_ref(&self, index: u32, take: bool) -> Result<Option<Ref>, ListError> {
        let mut items = self.lock();
        let size = items.store.len();
        let i = index as usize;
        match &mut items.store {
            Store::Refs(v) => {
                let slot = v.get_mut(i).ok_or(out_of_range(index, size))?;
                Ok(if take { slot.take() } else { slot.clone() })
            }
            Store::Variants(v) => {
                let slot = v.get_mut(i).ok_or(out_of_range(index, size))?;
                match slot {
                    None => Ok(None),
                    Some(Value::Ref(r)) => Ok(if take { r.take() } else { r.clone() }),
                    Some(_) => Err(ListError::WrongKind),
                }
            }
            Store::Values(_) => Err(ListError::WrongKind),
        }
    }

    /// `list.set.ref`: typed lists check the reference's type (null always fits).
    pub fn set_ref(&self, index: u32, value: Option<Ref>) -> Result<(), ListError> {
        let old;
        {
            let mut items = self.lock();
            let size = items.store.len();
            let i = index as usize;
            match (&mut items.store, &self.element) {
                (Store::Refs(v), ElementType::Ref(ty)) => {
                    if value.as_ref().is_some_and(|r| !r.is_of(ty)) {
                        return Err(ListError::TypeMismatch);
                    }
                    let slot = v.get_mut(i).ok_or(out_of_range(index, size))?;
                    old = Some(Value::Ref(std::mem::replace(slot, value)));
                }
                (Store::Variants(v), _) => {
                    let slot = v.get_mut(i).ok_or(out_of_range(index, size))?;
                    old = slot.replace(Value::Ref(value));
                }
                _ => return Err(ListError::WrongKind),
            }
        }
        drop(old);
        Ok(())
    }
}

/// Lists of lists are released without recursion, so a long chain cannot overflow the stack.
impl Drop for VmList {
    fn drop(&mut self) {
        let items = self.items.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut pending = items.store.take_refs();
        while let Some(r) = pending.pop() {
            if let Ref::List(list) = r
                && let Some(mut inner) = Arc::into_inner(list)
            {
                let items = inner.items.get_mut().unwrap_or_else(|e| e.into_inner());
                pending.extend(items.store.take_refs());
            }
        }
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;

    #[test]
    fn narrowing_and_cross_kind_conversions() {
        let list = VmList::new(ElementType::Value(ValueType::I8), 4, None).unwrap();
        list.resize(2).unwrap();
        list.set_i32(0, 300).unwrap();
        assert_eq!(list.get_i32(0).unwrap(), 44);
        list.set_i32(1, 200).unwrap();
        assert_eq!(list.get_i32(1).unwrap(), -56);
        assert_eq!(list.get_f32(1).unwrap(), 0.0);
        list.set_f32(1, 2.5).unwrap();
        assert_eq!(list.get_i32(1).unwrap(), 0);
        assert_eq!(
            list.get_i32(2),
            Err(ListError::OutOfRange { index: 2, size: 2 })
        );
        assert_eq!(list.get_ref(0, false), Err(ListError::WrongKind));

        let floats = VmList::new(ElementType::Value(ValueType::F32), 0, None).unwrap();
        floats.resize(1).unwrap();
        floats.set_f64(0, 1.0 + f64::EPSILON).unwrap();
        assert_eq!(floats.get_f64(0).unwrap(), 1.0);
    }

    #[test]
    fn variant_slots_hold_values_and_refs() {
        let list = VmList::new(ElementType::Variant, 0, None).unwrap();
        list.resize(2).unwrap();
        assert_eq!(list.get_i32(0), Err(ListError::WrongKind));
        assert_eq!(list.get_ref(0, false), Ok(None));
        list.set_i64(0, 1 << 40).unwrap();
        assert_eq!(list.get_i32(0).unwrap(), 0);
        assert_eq!(list.get_i64(0).unwrap(), 1 << 40);
        let buffer = Ref::Buffer(Arc::new(super::super::buffer::VmBuffer::from_bytes(&[1])));
        list.set_ref(1, Some(buffer.clone())).unwrap();
        assert_eq!(list.get_ref(1, true).unwrap(), Some(buffer));
        assert_eq!(list.get_ref(1, false).unwrap(), None);
    }

    #[test]
    fn typed_ref_lists_check_types() {
        let list = VmList::new(ElementType::Ref(RefType::List), 0, None).unwrap();
        list.resize(1).unwrap();
        let buffer = Ref::Buffer(Arc::new(super::super::buffer::VmBuffer::from_bytes(&[1])));
        assert_eq!(list.set_ref(0, Some(buffer)), Err(ListError::TypeMismatch));
        list.set_ref(0, None).unwrap();
    }

    #[test]
    fn a_long_chain_of_lists_drops_without_recursion() {
        let mut head = Arc::new(VmList::new(ElementType::Variant, 0, None).unwrap());
        for _ in 0..200_000 {
            let next = VmList::new(ElementType::Variant, 1, None).unwrap();
            next.resize(1).unwrap();
            next.set_ref(0, Some(Ref::List(head))).unwrap();
            head = Arc::new(next);
        }
        drop(head);
    }

    #[test]
    fn the_budget_limits_capacity() {
        let budget = MemoryBudget::new(1024);
        assert!(VmList::new(ElementType::Value(ValueType::I32), 1 << 20, Some(&budget)).is_err());
        let list = VmList::new(ElementType::Value(ValueType::I32), 16, Some(&budget)).unwrap();
        assert_eq!(budget.used(), 128);
        assert!(list.resize(1000).is_err());
        drop(list);
        assert_eq!(budget.used(), 0);
    }
}
