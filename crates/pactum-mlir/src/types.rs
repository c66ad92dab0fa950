//! The MLIR types a memref-convention function can take and return, and their textual form.
//!
//! Only what survives lowering to the C interface is modelled: scalars (integers of any
//! signedness, `index`, `f16`, `bf16`, `f32`, `f64`) and memrefs of those scalars, ranked (with
//! identity or `strided<[...], offset: ...>` layouts) or unranked. `Display` writes each type the
//! way MLIR prints it, so a parsed type prints back as MLIR would.

use std::fmt;

use pactum::dtype::DataType;

/// How an MLIR integer type treats its sign (`iN`, `siN`, `uiN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    /// `iN`: signless; pactum reads and writes it as signed.
    Signless,
    /// `siN`.
    Signed,
    /// `uiN`.
    Unsigned,
}

/// A scalar MLIR type: a function argument or result, or a memref element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `iN`, `siN` or `uiN` with `N` in 1..=64 bits (`i1` is a boolean).
    Integer {
        /// Bits (1 to 64).
        width: u8,
        /// The sign rule.
        signedness: Signedness,
    },
    /// `index`: a pointer-sized signed integer (64 bits with MLIR's default lowering).
    Index,
    /// `f16`.
    F16,
    /// `bf16`.
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl ScalarType {
    /// Bytes one value occupies in a buffer or a C struct (`i1` takes a byte, `i24` four).
    pub fn byte_size(self) -> usize {
        match self {
            ScalarType::Integer { width, .. } => match width {
                0..=8 => 1,
                9..=16 => 2,
                17..=32 => 4,
                _ => 8,
            },
            ScalarType::Index | ScalarType::F64 => 8,
            ScalarType::F32 => 4,
            ScalarType::F16 | ScalarType::BF16 => 2,
        }
    }

    /// Whether the value travels in a floating-point register.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F16 | ScalarType::BF16 | ScalarType::F32 | ScalarType::F64
        )
    }

    /// The DLPack element type of a memref of this scalar: `i1` is `bool`, `iN`/`siN` are
    /// `intN`, `uiN` is `uintN`, `index` is `int64`. `None` for widths DLPack tensors cannot
    /// hold (e.g. `i3`, `i24`).
    pub fn data_type(self) -> Option<DataType> {
        Some(match self {
            ScalarType::Integer { width: 1, .. } => DataType::BOOL,
            ScalarType::Integer { width, signedness } => match (width, signedness) {
                (8 | 16 | 32 | 64, Signedness::Unsigned) => {
                    DataType::scalar(pactum_sys::dlpack::DLDataTypeCode::UINT, width)
                }
                (8 | 16 | 32 | 64, _) => {
                    DataType::scalar(pactum_sys::dlpack::DLDataTypeCode::INT, width)
                }
                _ => return None,
            },
            ScalarType::Index => DataType::I64,
            ScalarType::F16 => DataType::F16,
            ScalarType::BF16 => DataType::BF16,
            ScalarType::F32 => DataType::F32,
            ScalarType::F64 => DataType::F64,
        })
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarType::Integer { width, signedness } => {
                let prefix = match signedness {
                    Signedness::Signless => "i",
                    Signedness::Signed => "si",
                    Signedness::Unsigned => "ui",
                };
                write!(f, "{prefix}{width}")
            }
            ScalarType::Index => f.write_str("index"),
            ScalarType::F16 => f.write_str("f16"),
            ScalarType::BF16 => f.write_str("bf16"),
            ScalarType::F32 => f.write_str("f32"),
            ScalarType::F64 => f.write_str("f64"),
        }
    }
}

/// One extent, stride or offset: a number, or `?` (known only at run time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A value fixed by the type.
    Static(i64),
    /// `?`: the descriptor carries it.
    Dynamic,
}

impl Dim {
    /// The static value, if any.
    pub fn value(self) -> Option<i64> {
        match self {
            Dim::Static(value) => Some(value),
            Dim::Dynamic => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(value) => write!(f, "{value}"),
            Dim::Dynamic => f.write_str("?"),
        }
    }
}

/// A ranked memref's layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// No layout attribute: row-major and compact, offset 0. The lowered code never reads the
    /// descriptor's offset or strides, so the buffer must really be laid out this way.
    Identity,
    /// `strided<[s0, s1, ...], offset: o>`: strides and offset in elements, each static or `?`.
    Strided {
        /// One stride per dimension.
        strides: Vec<Dim>,
        /// The offset of the first element.
        offset: Dim,
    },
}

/// `memref<d0 x d1 x ... x T[, layout]>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemRefType {
    /// Extents, outermost first (empty for a 0-d memref).
    pub shape: Vec<Dim>,
    /// The element type.
    pub element: ScalarType,
    /// The layout.
    pub layout: Layout,
}

impl MemRefType {
    /// The rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The strides the lowered code uses for each dimension: the layout's strides, or for an
    /// identity layout the compact row-major strides (dynamic where they depend on a dynamic
    /// extent).
    pub fn effective_strides(&self) -> Vec<Dim> {
        match &self.layout {
            Layout::Strided { strides, .. } => strides.clone(),
            Layout::Identity => {
                let mut strides = vec![Dim::Static(1); self.shape.len()];
                let mut running = Some(1i64);
                for (stride, dim) in strides.iter_mut().zip(&self.shape).rev() {
                    *stride = running.map_or(Dim::Dynamic, Dim::Static);
                    running = match (running, dim) {
                        (Some(r), Dim::Static(d)) => r.checked_mul(*d),
                        _ => None,
                    };
                }
                strides
            }
        }
    }

    /// The offset the lowered code uses: the layout's, or 0 for an identity layout.
    pub fn effective_offset(&self) -> Dim {
        match &self.layout {
            Layout::Strided { offset, .. } => *offset,
            Layout::Identity => Dim::Static(0),
        }
    }
}

impl fmt::Display for MemRefType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("memref<")?;
        for dim in &self.shape {
            write!(f, "{dim}x")?;
        }
        write!(f, "{}", self.element)?;
        if let Layout::Strided { strides, offset } = &self.layout {
            f.write_str(", strided<[")?;
            for (i, stride) in strides.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{stride}")?;
            }
            f.write_str("]")?;
            if *offset != Dim::Static(0) {
                write!(f, ", offset: {offset}")?;
            }
            f.write_str(">")?;
        }
        f.write_str(">")
    }
}

/// The type of one argument or result.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MlirType {
    /// A scalar, passed by value.
    Scalar(ScalarType),
    /// A ranked memref, passed as a pointer to its descriptor.
    MemRef(MemRefType),
    /// `memref<*xT>`: passed as a pointer to `{rank, descriptor*}`.
    UnrankedMemRef(ScalarType),
}

impl fmt::Display for MlirType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MlirType::Scalar(scalar) => write!(f, "{scalar}"),
            MlirType::MemRef(memref) => write!(f, "{memref}"),
            MlirType::UnrankedMemRef(element) => write!(f, "memref<*x{element}>"),
        }
    }
}

/// A function's name (when known), argument and result types.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionType {
    /// The symbol name without `@` (a bare function type has none).
    pub name: Option<String>,
    /// Argument types in order.
    pub args: Vec<MlirType>,
    /// Result types in order.
    pub results: Vec<MlirType>,
    /// Whether the declaration carries `llvm.emit_c_interface` (so `_mlir_ciface_<name>` exists).
    pub emit_c_interface: bool,
}

impl fmt::Display for FunctionType {
    /// Writes the function type `(A, B) -> (C, D)` (`-> C` for one result; `-> ()` for none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{arg}")?;
        }
        f.write_str(") -> ")?;
        match self.results.as_slice() {
            [single] => write!(f, "{single}"),
            results => {
                f.write_str("(")?;
                for (i, result) in results.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{result}")?;
                }
                f.write_str(")")
            }
        }
    }
}
