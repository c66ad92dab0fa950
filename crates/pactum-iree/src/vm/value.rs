//! VM values: the four scalar kinds and reference-counted references.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::buffer::VmBuffer;
use super::list::VmList;

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
