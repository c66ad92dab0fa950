//! The instructions that touch only the frame's registers and cannot fail (constants,
//! copies, selects, integer arithmetic, compares, conversions, float arithmetic), listed once.
//!
//! Both loops match them: the fast path (`hot.rs`), which runs them, and the main loop
//! (`interp.rs`), whose `match` stays exhaustive and complete on its own (the fast path runs
//! these before it returns, so the main loop rarely gets one). Each row is the instruction's
//! pattern and its handler, so an operation's semantics are written here and nowhere else; a
//! loop adds its own arms for everything else.

/// `match $inst` over the rows below and the caller's own `arms`. `$r` is the caller's
/// `&mut Registers` and `$ftz` its flush-to-zero mode, a `float::Flush` (the handlers name
/// them; identifiers of a macro's body do not see the caller's locals).
macro_rules! match_register_ops {
    (match $inst:expr, registers $r:ident, ftz $ftz:ident { $($arms:tt)* }) => {
        match $inst {
            // Constants and copies.
            Inst::Const32 { value, d } => constants::const32($r, value, d),
            Inst::Const64 { lo, hi, d } => constants::const64($r, lo, hi, d),
            Inst::Copy32 { s, d } => constants::copy32($r, s, d),
            Inst::Copy64 { s, d } => constants::copy64($r, s, d),

            // Selects.
            Inst::Select32 { c, t, f, d } => select::select32($r, c, t, f, d),
            Inst::Select64 { c, t, f, d } => select::select64($r, c, t, f, d),

            // Integer arithmetic (the variants of the most frequent operations first).
            Inst::AddI32 { a, b, d } => integer::add_i32($r, a, b, d),
            Inst::SubI32 { a, b, d } => integer::sub_i32($r, a, b, d),
            Inst::AddI64 { a, b, d } => {
                integer::add_i64($r, a, b, d);
            }
            Inst::MulI32 { a, b, d } => integer::bin32($r, IBin::Mul, a, b, d),
            Inst::AndI32 { a, b, d } => integer::bin32($r, IBin::And, a, b, d),
            Inst::OrI32 { a, b, d } => integer::bin32($r, IBin::Or, a, b, d),
            Inst::XorI32 { a, b, d } => integer::bin32($r, IBin::Xor, a, b, d),
            Inst::ShlI32 { a, b, d } => integer::shift32($r, Shift::Shl, a, b, d),
            Inst::ShrI32S { a, b, d } => integer::shift32($r, Shift::ShrS, a, b, d),
            Inst::ShrI32U { a, b, d } => integer::shift32($r, Shift::ShrU, a, b, d),
            Inst::SubI64 { a, b, d } => integer::bin64($r, IBin::Sub, a, b, d),
            Inst::MulI64 { a, b, d } => integer::bin64($r, IBin::Mul, a, b, d),
            Inst::AndI64 { a, b, d } => integer::bin64($r, IBin::And, a, b, d),
            Inst::OrI64 { a, b, d } => integer::bin64($r, IBin::Or, a, b, d),
            Inst::XorI64 { a, b, d } => integer::bin64($r, IBin::Xor, a, b, d),
            Inst::ShlI64 { a, b, d } => integer::shift64($r, Shift::Shl, a, b, d),
            Inst::ShrI64S { a, b, d } => integer::shift64($r, Shift::ShrS, a, b, d),
            Inst::ShrI64U { a, b, d } => integer::shift64($r, Shift::ShrU, a, b, d),
            Inst::Bin32 { op, a, b, d } => integer::bin32($r, op, a, b, d),
            Inst::Bin64 { op, a, b, d } => integer::bin64($r, op, a, b, d),
            Inst::Fma32 { a, b, c, d } => integer::fma32($r, a, b, c, d),
            Inst::Fma64 { a, b, c, d } => integer::fma64($r, a, b, c, d),
            Inst::Un32 { op, a, d } => integer::un32($r, op, a, d),
            Inst::Un64 { op, a, d } => integer::un64($r, op, a, d),

            // Integer comparisons (the compares that fuse with a branch return their result,
            // unused here).
            Inst::CmpEqI32 { a, b, d } => compare::eq_i32($r, a, b, d),
            Inst::CmpLtI32S { a, b, d } => {
                compare::lt_i32_s($r, a, b, d);
            }
            Inst::NzI32 { a, d } => compare::nz_i32($r, a, d),
            Inst::Cmp32 { op, a, b, d } => {
                compare::cmp32($r, op, a, b, d);
            }
            Inst::Cmp64 { op, a, b, d } => {
                compare::cmp64($r, op, a, b, d);
            }

            // Conversions.
            Inst::ExtI32I64S { a, d } => convert::ext_i32_i64_s($r, a, d),
            Inst::ExtI32I64U { a, d } => convert::ext_i32_i64_u($r, a, d),
            Inst::TruncI64I32 { a, d } => convert::trunc_i64_i32($r, a, d),
            Inst::CastSi32F32 { a, d } => convert::cast_si32_f32($r, a, d),
            Inst::Convert32 { op, a, d } => convert::convert32($r, op, a, d),
            Inst::Convert32To64 { op, a, d } => convert::convert32_to_64($r, $ftz, op, a, d),
            Inst::Convert64To32 { op, a, d } => convert::convert64_to_32($r, $ftz, op, a, d),
            Inst::Convert64 { op, a, d } => convert::convert64($r, op, a, d),

            // Float arithmetic and comparisons.
            Inst::BinF32 { op, a, b, d } => float::bin_f32($r, $ftz, op, a, b, d),
            Inst::BinF64 { op, a, b, d } => float::bin_f64($r, $ftz, op, a, b, d),
            Inst::FmaF32 { a, b, c, d } => {
                float::fma_f32($r, $ftz, a, b, c, d);
            }
            Inst::FmaF64 { a, b, c, d } => float::fma_f64($r, $ftz, a, b, c, d),
            Inst::CmpF32 { op, a, b, d } => float::cmp_f32($r, $ftz, op, a, b, d),
            Inst::CmpF64 { op, a, b, d } => float::cmp_f64($r, $ftz, op, a, b, d),

            $($arms)*
        }
    };
}

pub(super) use match_register_ops;
