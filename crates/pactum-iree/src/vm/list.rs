//! `!vm.list<T>`: a growable list of values of one element type, typed references, or
//! variants (any value or reference per slot).
//!
//! Value gets and sets convert as the reference runtime does (facts sheet §5): integer widths
//! sign-extend or truncate, `f32` and `f64` convert into each other, and a conversion between
//! an integer and a float kind gives 0.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use super::budget::{Charge, MemoryBudget, OverBudget};
use super::value::{Ref, RefType, Value, ValueType};

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
                        v.split_off(size)
                            .into_iter()
                            .map(|r| Value::Ref(r))
                            .collect()
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
mod tests {
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
