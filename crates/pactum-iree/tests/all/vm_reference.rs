//! Differential tests: programs assembled by the pinned `iree-as-module` (and by our own test
//! assembler) run in IREE's `iree-run-module` and in pactum's VM, with identical results.
//! Expected values are never typed by hand: the reference runtime computes them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use asm::{Func, MV, R};
use pactum_iree::vm::{Context, Limits, Value};

use crate::asm;

/// A tool of the pinned iree-base-runtime; missing is a failure (the peer is part of the setup).
fn iree_tool(name: &str) -> PathBuf {
    pactum_testing::iree::tool(name).unwrap_or_else(|message| panic!("{message}"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-vm-ref-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn iree_run(module: &Path, function: &str) -> String {
    let output = Command::new(iree_tool("iree-run-module"))
        .arg(format!("--module={}", module.display()))
        .arg(format!("--function={function}"))
        .output()
        .expect("run iree-run-module");
    assert!(
        output.status.success(),
        "iree-run-module {function}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The integer results iree-run-module printed.
fn parse_ints(stdout: &str) -> Vec<i64> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("result["))
        .map(|rest| {
            let (_, value) = rest.split_once("]: ").unwrap();
            let (ty, v) = value.split_once('=').unwrap();
            assert!(ty == "i32" || ty == "i64", "{line}", line = rest);
            v.parse().unwrap()
        })
        .collect()
}

fn ints(values: &[Value]) -> Vec<i64> {
    values
        .iter()
        .map(|v| match v {
            Value::I32(x) => i64::from(*x),
            Value::I64(x) => *x,
            other => panic!("non-integer result {other:?}"),
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum T {
    I32,
    I64,
    F32,
    F64,
}

impl T {
    fn name(self) -> &'static str {
        match self {
            T::I32 => "i32",
            T::I64 => "i64",
            T::F32 => "f32",
            T::F64 => "f64",
        }
    }
}

/// Writes one function: constants for each case, the instruction, results as integers.
#[derive(Default)]
struct Gen {
    body: String,
    next: u32,
    results: Vec<(String, T)>,
}

impl Gen {
    fn reg(&mut self, t: T) -> String {
        match t {
            T::I32 | T::F32 => {
                self.next += 1;
                format!("%i{}", self.next - 1)
            }
            T::I64 | T::F64 => {
                self.next = self.next.next_multiple_of(2);
                self.next += 2;
                format!("%i{}:{}", self.next - 2, self.next - 1)
            }
        }
    }

    fn line(&mut self, text: String) {
        writeln!(self.body, "  {text}").unwrap();
    }

    fn konst(&mut self, t: T, bits: u64) -> String {
        match t {
            T::I32 => {
                let r = self.reg(T::I32);
                self.line(format!("{r} = vm.const.i32 {}", bits as u32 as i32));
                r
            }
            T::I64 => {
                let r = self.reg(T::I64);
                self.line(format!("{r} = vm.const.i64 {}", bits as i64));
                r
            }
            T::F32 => {
                let i = self.konst(T::I32, bits);
                let r = self.reg(T::F32);
                self.line(format!("{r} = vm.bitcast.i32.f32 {i}"));
                r
            }
            T::F64 => {
                let i = self.konst(T::I64, bits);
                let r = self.reg(T::F64);
                self.line(format!("{r} = vm.bitcast.i64.f64 {i}"));
                r
            }
        }
    }

    fn result(&mut self, r: String, t: T) {
        let (r, t) = match t {
            T::F32 => {
                let i = self.reg(T::I32);
                self.line(format!("{i} = vm.bitcast.f32.i32 {r}"));
                (i, T::I32)
            }
            T::F64 => {
                let i = self.reg(T::I64);
                self.line(format!("{i} = vm.bitcast.f64.i64 {r}"));
                (i, T::I64)
            }
            _ => (r, t),
        };
        self.results.push((r, t));
    }

    fn finish(self, name: &str) -> String {
        let types: Vec<&str> = self.results.iter().map(|(_, t)| t.name()).collect();
        let regs: Vec<&str> = self
            .results
            .iter()
            .map(|(r, _)| r.split(':').next().unwrap())
            .collect();
        format!(
            "vm.export @{name}\nvm.func @{name}() -> ({}) {{\n^bb0:\n{}  vm.return {}\n}}\n",
            types.join(", "),
            self.body,
            regs.join(", ")
        )
    }
}

fn f32s(values: &[f32]) -> Vec<u64> {
    values.iter().map(|v| u64::from(v.to_bits())).collect()
}

fn f64s(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn i32s(values: &[i32]) -> Vec<u64> {
    values.iter().map(|&v| v as u32 as u64).collect()
}

fn i64s(values: &[i64]) -> Vec<u64> {
    values.iter().map(|&v| v as u64).collect()
}

/// Every pair (a, b) of `values`.
fn pairs(values: &[u64]) -> Vec<Vec<u64>> {
    values
        .iter()
        .flat_map(|&a| values.iter().map(move |&b| vec![a, b]))
        .collect()
}

struct Op {
    mnemonic: &'static str,
    args: Vec<T>,
    result: T,
    cases: Vec<Vec<u64>>,
}

fn ops() -> Vec<Op> {
    let mut ops = Vec::new();
    let mut add = |mnemonic: &'static str, args: &[T], result: T, cases: Vec<Vec<u64>>| {
        ops.push(Op {
            mnemonic,
            args: args.to_vec(),
            result,
            cases,
        })
    };
    let i32_vals = i32s(&[
        0,
        1,
        -1,
        7,
        -7,
        3,
        31,
        32,
        33,
        300,
        200,
        -200,
        65537,
        i32::MIN,
        i32::MAX,
        0x8000,
    ]);
    let i32_pairs = pairs(&i32s(&[
        7,
        -7,
        3,
        -1,
        33,
        300,
        i32::MIN,
        i32::MAX,
        0x1234_5678,
    ]));
    let div32: Vec<Vec<u64>> = pairs(&i32s(&[7, -7, 3, -3, 2, i32::MAX, 100, 0x1234_5678]));
    let i64_vals = i64s(&[
        0,
        1,
        -1,
        7,
        9_000_000_000,
        -9_000_000_000,
        i64::MIN,
        i64::MAX,
        1 << 40,
    ]);
    let i64_pairs = pairs(&i64s(&[
        7,
        -7,
        3,
        -1,
        1 << 40,
        i64::MIN,
        i64::MAX,
        0x0123_4567_89AB_CDEF,
    ]));
    let div64 = pairs(&i64s(&[
        7,
        -7,
        3,
        -3,
        i64::MAX,
        1 << 40,
        0x0123_4567_89AB_CDEF,
    ]));
    let shift32: Vec<Vec<u64>> = [
        (1, 32),
        (1, 33),
        (1, -1),
        (-16, 2),
        (-1, 28),
        (0x1234_5678, 4),
        (i32::MIN, 31),
    ]
    .iter()
    .map(|&(a, b): &(i32, i32)| vec![a as u32 as u64, b as u32 as u64])
    .collect();
    let shift64: Vec<Vec<u64>> = [
        (1i64, 64i32),
        (1, 65),
        (1, -1),
        (-16, 2),
        (-1, 60),
        (i64::MIN, 63),
    ]
    .iter()
    .map(|&(a, b)| vec![a as u64, b as u32 as u64])
    .collect();
    let f32_special = [
        5.0,
        3.0,
        -5.0,
        7.0,
        2.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        0.1,
        3.7,
    ];
    let f32_pairs = pairs(&f32s(&f32_special));
    let f32_unary = f32s(&[
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.5,
        1.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        0.1,
        -3.7,
        1e10,
        100.0,
    ]);
    let f32_to_int = f32s(&[
        2.5,
        -2.5,
        0.5,
        -0.5,
        1e10,
        2147483648.0,
        4294967296.0,
        f32::NAN,
        -1.0,
        1e19,
        2e19,
        f32::INFINITY,
        f32::NEG_INFINITY,
        16777217.0,
        -9.3e18,
        9.3e18,
    ]);
    let f64_special = [
        5.0,
        3.0,
        -5.0,
        7.0,
        2.0,
        f64::NAN,
        f64::INFINITY,
        -0.0,
        0.0,
        0.1,
        3.7,
        1e300,
    ];
    let f64_pairs = pairs(&f64s(&f64_special));
    let f64_unary = f64s(&[
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.5,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        0.1,
        -3.7,
        1e10,
        1e300,
        100.0,
    ]);
    let f64_to_int = f64s(&[
        2.5,
        -2.5,
        0.5,
        -0.5,
        0.49999999999999994,
        16777217.0,
        3e9,
        1e10,
        1e19,
        f64::NAN,
        -1.0,
        2147483648.0,
        9.3e18,
        -9.3e18,
    ]);
    let ints_to_float = i64s(&[
        0,
        1,
        -1,
        16777217,
        (1 << 53) + 1,
        i64::MIN,
        i64::MAX,
        -2,
        0x7FFF_FFFF,
    ]);
    let i32_to_float = i32s(&[0, 1, -1, 16777217, i32::MIN, i32::MAX]);
    let single = |v: &[u64]| v.iter().map(|&x| vec![x]).collect::<Vec<_>>();

    use T::*;
    for m in [
        "add.i32",
        "sub.i32",
        "mul.i32",
        "and.i32",
        "or.i32",
        "xor.i32",
        "min.i32.s",
        "min.i32.u",
        "max.i32.s",
        "max.i32.u",
    ] {
        add(m, &[I32, I32], I32, i32_pairs.clone());
    }
    for m in ["cmp.eq.i32", "cmp.ne.i32", "cmp.lt.i32.s", "cmp.lt.i32.u"] {
        add(m, &[I32, I32], I32, i32_pairs.clone());
    }
    for m in ["div.i32.s", "div.i32.u", "rem.i32.s", "rem.i32.u"] {
        add(m, &[I32, I32], I32, div32.clone());
    }
    for m in ["shl.i32", "shr.i32.s", "shr.i32.u"] {
        add(m, &[I32, I32], I32, shift32.clone());
    }
    for m in [
        "not.i32",
        "ctlz.i32",
        "abs.i32",
        "trunc.i32.i8",
        "trunc.i32.i16",
        "ext.i8.i32.s",
        "ext.i8.i32.u",
        "ext.i16.i32.s",
        "ext.i16.i32.u",
        "cmp.nz.i32",
    ] {
        add(m, &[I32], I32, single(&i32_vals));
    }
    add("ext.i32.i64.s", &[I32], I64, single(&i32_vals));
    add("ext.i32.i64.u", &[I32], I64, single(&i32_vals));
    add(
        "fma.i32",
        &[I32, I32, I32],
        I32,
        vec![
            i32s(&[3, 4, 5]),
            i32s(&[i32::MAX, 2, 7]),
            i32s(&[-3, 65537, i32::MIN]),
        ],
    );
    for m in [
        "add.i64",
        "sub.i64",
        "mul.i64",
        "and.i64",
        "or.i64",
        "xor.i64",
        "min.i64.s",
        "min.i64.u",
        "max.i64.s",
        "max.i64.u",
    ] {
        add(m, &[I64, I64], I64, i64_pairs.clone());
    }
    for m in ["cmp.eq.i64", "cmp.ne.i64", "cmp.lt.i64.s", "cmp.lt.i64.u"] {
        add(m, &[I64, I64], I32, i64_pairs.clone());
    }
    for m in ["div.i64.s", "div.i64.u", "rem.i64.s", "rem.i64.u"] {
        add(m, &[I64, I64], I64, div64.clone());
    }
    for m in ["shl.i64", "shr.i64.s", "shr.i64.u"] {
        add(m, &[I64, I32], I64, shift64.clone());
    }
    for m in ["not.i64", "ctlz.i64", "abs.i64"] {
        add(m, &[I64], I64, single(&i64_vals));
    }
    add("cmp.nz.i64", &[I64], I32, single(&i64_vals));
    add("trunc.i64.i32", &[I64], I32, single(&i64_vals));
    add(
        "fma.i64",
        &[I64, I64, I64],
        I64,
        vec![i64s(&[3, 4, 5]), i64s(&[i64::MAX, 2, 7])],
    );

    for m in [
        "add.f32", "sub.f32", "mul.f32", "div.f32", "rem.f32", "min.f32", "max.f32",
    ] {
        add(m, &[F32, F32], F32, f32_pairs.clone());
    }
    for m in [
        "cmp.eq.f32.o",
        "cmp.eq.f32.u",
        "cmp.ne.f32.o",
        "cmp.ne.f32.u",
        "cmp.lt.f32.o",
        "cmp.lt.f32.u",
        "cmp.lte.f32.o",
        "cmp.lte.f32.u",
    ] {
        add(m, &[F32, F32], I32, f32_pairs.clone());
    }
    for m in [
        "abs.f32",
        "neg.f32",
        "ceil.f32",
        "floor.f32",
        "round.f32",
        "round.f32.even",
        "sqrt.f32",
        "rsqrt.f32",
    ] {
        add(m, &[F32], F32, single(&f32_unary));
    }
    add("cmp.nan.f32", &[F32], I32, single(&f32_unary));
    add(
        "fma.f32",
        &[F32, F32, F32],
        F32,
        vec![
            f32s(&[1.0 + f32::EPSILON, 1.0 - f32::EPSILON, -1.0]),
            f32s(&[2.0, 3.0, 4.0]),
        ],
    );
    for m in ["cast.f32.si32", "cast.f32.ui32"] {
        add(m, &[F32], I32, single(&f32_to_int));
    }
    for m in ["cast.f32.si64", "cast.f32.ui64"] {
        add(m, &[F32], I64, single(&f32_to_int));
    }
    for m in ["cast.si32.f32", "cast.ui32.f32"] {
        add(m, &[I32], F32, single(&i32_to_float));
    }
    for m in ["cast.si64.f32", "cast.ui64.f32"] {
        add(m, &[I64], F32, single(&ints_to_float));
    }

    for m in [
        "add.f64", "sub.f64", "mul.f64", "div.f64", "rem.f64", "min.f64", "max.f64",
    ] {
        add(m, &[F64, F64], F64, f64_pairs.clone());
    }
    for m in [
        "cmp.eq.f64.o",
        "cmp.eq.f64.u",
        "cmp.ne.f64.o",
        "cmp.ne.f64.u",
        "cmp.lt.f64.o",
        "cmp.lt.f64.u",
        "cmp.lte.f64.o",
        "cmp.lte.f64.u",
    ] {
        add(m, &[F64, F64], I32, f64_pairs.clone());
    }
    for m in [
        "abs.f64",
        "neg.f64",
        "ceil.f64",
        "floor.f64",
        "round.f64",
        "round.f64.even",
        "sqrt.f64",
        "rsqrt.f64",
    ] {
        add(m, &[F64], F64, single(&f64_unary));
    }
    add("cmp.nan.f64", &[F64], I32, single(&f64_unary));
    add(
        "fma.f64",
        &[F64, F64, F64],
        F64,
        vec![f64s(&[1.0 + f64::EPSILON, 1.0 - f64::EPSILON, -1.0])],
    );
    add("trunc.f64.f32", &[F64], F32, single(&f64_to_int));
    add("ext.f32.f64", &[F32], F64, single(&f32_unary));
    for m in ["cast.f64.si32", "cast.f64.ui32"] {
        add(m, &[F64], I32, single(&f64_to_int));
    }
    for m in ["cast.f64.si64", "cast.f64.ui64"] {
        add(m, &[F64], I64, single(&f64_to_int));
    }
    for m in ["cast.si32.f64", "cast.ui32.f64"] {
        add(m, &[I32], F64, single(&i32_to_float));
    }
    for m in ["cast.si64.f64", "cast.ui64.f64"] {
        add(m, &[I64], F64, single(&ints_to_float));
    }
    // `fpowi` (new in 3.13): square-and-multiply, exact; the f32 form takes an i32 register,
    // the f64 form an i64 one whose low 32 bits are the exponent.
    let exponents = [
        0i64,
        1,
        -1,
        2,
        3,
        -3,
        7,
        30,
        31,
        -30,
        127,
        i32::MIN.into(),
        i32::MAX.into(),
    ];
    let powi_cases = |bases: &[u64], exponent: &dyn Fn(i64) -> u64| -> Vec<Vec<u64>> {
        bases
            .iter()
            .flat_map(|&b| exponents.iter().map(move |&n| vec![b, exponent(n)]))
            .collect()
    };
    add(
        "fpowi.f32",
        &[F32, I32],
        F32,
        powi_cases(
            &f32s(&[
                1.1,
                -2.0,
                0.5,
                0.0,
                -0.0,
                3.0,
                -1.0,
                1e-20,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                0.999,
            ]),
            &|n| n as i32 as u32 as u64,
        ),
    );
    let mut f64_powi = powi_cases(
        &f64s(&[
            1.1,
            -2.0,
            0.5,
            0.0,
            -0.0,
            3.0,
            -1.0,
            1e-200,
            f64::INFINITY,
            f64::NAN,
            0.999_999,
        ]),
        &|n| n as u64,
    );
    // Only the low 32 bits of the i64 count: 2^32 + 3 is 3, -2^32 is 0.
    f64_powi.extend(f64s(&[1.1, -2.0]).into_iter().flat_map(|b| {
        [(1i64 << 32) + 3, -(1i64 << 32), 0x7FFF_FFFF_0000_0005].map(|n| vec![b, n as u64])
    }));
    add("fpowi.f64", &[F64, I64], F64, f64_powi);
    // Transcendentals: both runtimes call the host C library (Rust's `f32::exp` and the like
    // call it too; `erf` is called directly), so they agree bit for bit as well.
    let f32_math = f32s(&[0.5, -0.5, 1.5, 2.5, -0.0, 0.1, 3.7, 1e-3, 10.0, -10.0]);
    let f64_math = f64s(&[0.5, -0.5, 1.5, 2.5, -0.0, 0.1, 3.7, 1e-3, 10.0, -10.0]);
    for m in [
        "atan.f32",
        "cos.f32",
        "sin.f32",
        "exp.f32",
        "exp2.f32",
        "expm1.f32",
        "log.f32",
        "log10.f32",
        "log1p.f32",
        "log2.f32",
        "tanh.f32",
        "erf.f32",
    ] {
        add(m, &[F32], F32, single(&f32_math));
    }
    for m in [
        "atan.f64",
        "cos.f64",
        "sin.f64",
        "exp.f64",
        "exp2.f64",
        "expm1.f64",
        "log.f64",
        "log10.f64",
        "log1p.f64",
        "log2.f64",
        "tanh.f64",
        "erf.f64",
    ] {
        add(m, &[F64], F64, single(&f64_math));
    }
    add(
        "atan2.f32",
        &[F32, F32],
        F32,
        pairs(&f32s(&[1.0, -1.0, 0.0, -0.0, 2.5])),
    );
    add(
        "pow.f32",
        &[F32, F32],
        F32,
        pairs(&f32s(&[2.0, -2.0, 0.5, 0.0, 3.0])),
    );
    add(
        "atan2.f64",
        &[F64, F64],
        F64,
        pairs(&f64s(&[1.0, -1.0, 0.0, -0.0, 2.5])),
    );
    add(
        "pow.f64",
        &[F64, F64],
        F64,
        pairs(&f64s(&[2.0, -2.0, 0.5, 0.0, 3.0])),
    );
    ops
}

fn function_name(mnemonic: &str) -> String {
    format!("op_{}", mnemonic.replace('.', "_"))
}

fn vmasm(ops: &[Op]) -> String {
    let mut text = String::from(
        "vm.module @ref version 1\nvm.type i32\nvm.type i64\nvm.type f32\nvm.type f64\n",
    );
    for op in ops {
        let mut g = Gen::default();
        for case in &op.cases {
            let args: Vec<String> = op
                .args
                .iter()
                .zip(case)
                .map(|(&t, &bits)| g.konst(t, bits))
                .collect();
            let d = g.reg(op.result);
            let line = if op.mnemonic.starts_with("fma.") {
                format!(
                    "{d} = vm.{} {}, {}, {}",
                    op.mnemonic, args[0], args[1], args[2]
                )
            } else {
                format!("{d} = vm.{} {}", op.mnemonic, args.join(", "))
            };
            g.line(line);
            g.result(d, op.result);
        }
        text.push_str(&g.finish(&function_name(op.mnemonic)));
    }
    text
}

#[test]
fn every_numeric_instruction_matches_iree_run_module() {
    let ops = ops();
    let dir = scratch("numeric");
    let source = dir.join("ref.vmasm");
    let module = dir.join("ref.vmfb");
    std::fs::write(&source, vmasm(&ops)).unwrap();
    let status = Command::new(iree_tool("iree-as-module"))
        .arg(format!("--output={}", module.display()))
        .arg(&source)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "iree-as-module failed on {}",
        source.display()
    );
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(std::fs::read(&module).unwrap())
        .unwrap();
    let mut mismatches = Vec::new();
    let mut cases = 0;
    for op in &ops {
        let name = function_name(op.mnemonic);
        let theirs = parse_ints(&iree_run(&module, &name));
        let ours = ints(&context.call(&format!("ref.{name}"), &[]).unwrap());
        assert_eq!(ours.len(), theirs.len(), "{}", op.mnemonic);
        for (k, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            cases += 1;
            if o != t {
                mismatches.push(format!(
                    "{} {:x?}: ours {o:#x}, iree {t:#x}",
                    op.mnemonic, op.cases[k]
                ));
            }
        }
    }
    eprintln!("{} instructions, {cases} cases compared", ops.len());
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Our assembler's modules, written as `.vmfb`, in both runtimes.
fn both(
    funcs: &[Func],
    edit: impl FnOnce(&mut pactum_iree::vmfb::ModuleDef),
    name: &str,
) -> (Vec<i64>, Vec<i64>) {
    let mut def = asm::module("t", funcs);
    edit(&mut def);
    let bytes = asm::bytes(&def);
    let dir = scratch(name);
    let path = dir.join("t.vmfb");
    std::fs::write(&path, &bytes).unwrap();
    let mut context = Context::new(Limits::default());
    context.load_bytecode(bytes).unwrap();
    let ours = ints(&context.call(&format!("t.{name}"), &[]).unwrap());
    let theirs = parse_ints(&iree_run(&path, name));
    eprintln!("{name}: ours {ours:?}");
    (ours, theirs)
}

#[test]
fn buffers_lists_switches_and_selects_match_iree_run_module() {
    // Buffers: alloc, stores of each width, fills, loads of each width and sign, copy
    // (overlapping), compare, clone, hash, length; rodata loads.
    let mut f = Func::new("buffers", "0v_iiiiIIiiIIi", 64, 4);
    f.block();
    f.const_i64(32, 0).const_i32(0, 2);
    f.op(0x6C).r(0).r(2).r(R); // %r0 = alloc 32
    f.const_i64(0, 4).const_i32(0x1234_56F0, 3);
    f.op(0x6A).r(R).r(4).r(3); // store.i32 [0]
    f.const_i64(3, 6).const_i32(-3, 8);
    f.op(0x69).r(R).r(6).r(8); // store.i16 [3] (bytes 6..8)
    f.const_i64(2, 10).const_i64(3, 12).const_i32(0x5A, 9);
    f.op(0x71).r(R).r(10).r(12).r(9); // fill.i8 [2, 5)
    f.const_i64(2, 14).const_i64(0x0102_0304_0506_0708, 16);
    f.op(0x6B).r(R).r(14).r(16); // store.i64 [2] (bytes 16..24)
    f.const_i64(1, 18);
    f.op(0x62).r(R).r(18).r(20); // load.i8.u [1]
    f.op(0x63).r(R).r(4).r(21); // load.i8.s [0]
    f.op(0x64).r(R).r(18).r(22); // load.i16.u [1]
    f.op(0x65).r(R).r(6).r(23); // load.i16.s [3]
    f.op(0x67).r(R).r(14).r(24); // load.i64 [2]
    f.const_i64(8, 26);
    f.op(0x6F).r(R).r(4).r(R).r(18).r(26); // copy bytes 0..8 -> 1..9 (overlap)
    f.op(0x84).r(R).r(4).r(0).r(28); // hash all
    f.const_i32(0, 30);
    f.op(0x6D).r(R).r(18).r(26).r(30).r(R | 1); // clone bytes 1..9
    f.op(0x70).r(R).r(18).r(R | 1).r(4).r(26).r(31); // compare
    f.op(0x6E).r(R | 1).r(32); // length
    f.op(0x11).u32(0).r(R | 2);
    f.op(0x66).r(R | 2).r(18).r(34); // rodata load.i32 [1]
    f.op(0x65).r(R | 2).r(18).r(35); // rodata load.i16.s [1]
    f.op(0x67).r(R).r(4).r(36); // load.i64 [0] after the copy
    f.ret(&[20, 21, 22, 23, 24, 28, 31, 34, 32, 36, 35]);
    let (ours, theirs) = both(
        &[f],
        |def| asm::rodata(def, &[1, 0x80, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFF]),
        "buffers",
    );
    assert_eq!(ours, theirs);

    // Lists of i8, f32, i64 and variants: conversions between kinds and widths.
    let mut f = Func::new("lists", "0v_iiIiiIii", 64, 4);
    f.block();
    f.const_i32(3, 0);
    f.op(0x12).u32(0).r(0).r(R); // list<i8>
    f.op(0x15).r(R).r(0);
    f.const_i32(0, 1)
        .const_i32(1, 2)
        .const_i32(2, 3)
        .const_i32(300, 4)
        .const_i32(200, 5);
    f.op(0x17).r(R).r(1).r(4);
    f.op(0x17).r(R).r(2).r(5);
    f.const_i64(-129, 6);
    f.op(0x19).r(R).r(3).r(6);
    f.op(0x16).r(R).r(1).r(8);
    f.op(0x16).r(R).r(2).r(9);
    f.op(0x18).r(R).r(3).r(10);
    f.op(0x12).u32(2).r(0).r(R | 1); // list<f32>
    f.op(0x15).r(R | 1).r(0);
    f.const_f64(1.0 + f64::EPSILON, 12);
    f.f64op(0x07).r(R | 1).r(1).r(12);
    f.f32op(0x06).r(R | 1).r(1).r(14);
    f.f32op(0x19).r(14).r(15); // bitcast -> i32
    f.op(0x17).r(R | 1).r(2).r(4); // set.i32 into floats: 0
    f.op(0x16).r(R | 1).r(2).r(16); // get.i32 of a float: 0
    f.op(0x12).u32(1).r(0).r(R | 2); // list<i64>
    f.op(0x15).r(R | 2).r(0);
    f.op(0x17).r(R | 2).r(1).r(5);
    f.op(0x18).r(R | 2).r(1).r(18);
    f.op(0x14).r(R | 2).r(20);
    f.op(0x16).r(R | 2).r(1).r(21);
    f.ret(&[8, 9, 10, 15, 16, 18, 20, 21]);
    let (ours, theirs) = both(&[f], |def| def.types[0] = "i8".into(), "lists");
    assert_eq!(ours, theirs);

    // switch.i32/i64 (in and out of range, the i64 quirk), select.
    let mut f = Func::new("switches", "0v_iIIIii", 32, 0);
    f.block();
    f.const_i32(10, 0)
        .const_i32(20, 1)
        .const_i32(30, 2)
        .const_i32(1, 3)
        .const_i32(-1, 4)
        .const_i32(5, 5);
    f.op(0x1F).r(3).r(0).list(&[1, 2]).r(6); // switch.i32 1 -> 30
    f.const_i64(0x0123_4567_89AB_CDEF, 8).const_i64(-5, 10);
    f.op(0x20).r(3).r(10).list(&[10, 8]).r(12); // switch.i64 1 -> quirk
    f.op(0x20).r(4).r(8).list(&[10]).r(14); // out of range -> default (full 64 bits)
    f.f64op(0x09).r(3).r(10).list(&[10, 8]).r(16); // switch.f64 1 -> full bits
    f.f64op(0x1F).r(16).r(16);
    f.op(0x1C).r(4).r(0).r(1).r(18); // select.i32
    f.op(0x1C).r(19).r(0).r(1).r(20); // condition 0
    f.ret(&[6, 12, 14, 16, 18, 20]);
    let (ours, theirs) = both(&[f], |_| {}, "switches");
    assert_eq!(ours, theirs);
}

#[test]
fn references_globals_calls_and_tables_match_iree_run_module() {
    let buffer = asm::TY_BUFFER;
    let mut f = Func::new("refs", "0v_iiiiiiiiiiiiiiII", 32, 16);
    f.block();
    f.op(0x11).u32(0).r(R); // %r0 = rodata 0
    f.op(0x11).u32(0).r(R | 1); // %r1 = rodata 0
    f.op(0x53).r(R).r(R | 1).r(0); // cmp.eq.ref -> 1
    f.const_i64(8, 20).const_i32(0, 22);
    f.op(0x6C).r(20).r(22).r(R | 2); // %r2 = alloc 8
    f.op(0x53).r(R).r(R | 2).r(1);
    f.op(0x54).r(R).r(R | 2).r(2);
    f.op(0x09).u32(0).u32(buffer).r(R | 2); // global.store.ref (retain)
    f.op(0x08).u32(0).u32(buffer).r(R | 3);
    f.op(0x53).r(R | 2).r(R | 3).r(3);
    f.op(0x08).u32(0).u32(buffer).r(R | MV | 3); // load with MOVE: the global is cleared
    f.op(0x08).u32(0).u32(buffer).r(R | 4);
    f.op(0x55).r(R | 4).r(4);
    f.const_i32(2, 23);
    f.op(0x12).u32(asm::TY_OPAQUE).r(23).r(R | 9); // variant list
    f.op(0x15).r(R | 9).r(23);
    f.op(0x1B).r(R | 9).r(22).r(R | 2); // list[0] = %r2
    f.op(0x1A).r(R | 9).r(22).u32(asm::TY_LIST).r(R | 5); // wrong type: null
    f.op(0x55).r(R | 5).r(5);
    f.op(0x1A).r(R | 9).r(22).u32(buffer).r(R | 5);
    f.op(0x53).r(R | 5).r(R | 2).r(6);
    f.op(0x1E).r(0).u32(buffer).r(R).r(R | 2).r(R | 6); // select.ref
    f.op(0x53).r(R | 6).r(R).r(7);
    f.op(0x86).r(R | MV | 2).r(R | 7); // assign.ref (move)
    f.op(0x55).r(R | 2).r(8);
    f.op(0x55).r(R | 7).r(9);
    f.op(0x82).r(R | 7).u32(buffer).r(R | 8); // cast.any.ref
    f.op(0x53).r(R | 8).r(R | 7).r(10);
    f.op(0x85).list(&[R | 8]); // discard.refs
    f.op(0x55).r(R | 8).r(11);
    // br_table on 1: case 1 sets %i12 = 20.
    f.const_i32(1, 13);
    f.op(0x83).r(13);
    let default_at = f.target(0);
    f.remap(&[]);
    f.u16(2);
    let case0 = f.target(0);
    f.remap(&[]);
    let case1 = f.target(0);
    f.remap(&[]);
    let mut exits = Vec::new();
    for (value, at) in [(10, case0), (20, case1), (30, default_at)] {
        let b = f.block();
        f.patch(at, b);
        f.const_i32(value, 12);
        exits.push(f.br(0));
    }
    let exit = f.block();
    for at in exits {
        f.patch(at, exit);
    }
    // An internal call passing a ref, an i64 and an f64; results back in a different order.
    f.const_i64(-5, 24).const_f64(2.5, 26);
    f.call(1, &[R | 7, 24, 26], &[28, R | 10, 16]);
    f.f64op(0x1C).r(28).r(30); // cast.f64.si64 -> %i30:31
    f.op(0x53).r(R | 10).r(R | 7).r(15);
    f.bin(0x2A, 30, 24, 30);
    f.ret(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 16, 30]);
    let mut callee = Func::new("callee", "0rIF_FrI", 8, 2);
    callee.block();
    callee.f64op(0x0A).r(2).r(2).r(4); // d + d
    callee.bin(0x2C, 0, 0, 6); // b * b
    callee.ret(&[4, R | MV, 6]);
    let (ours, theirs) = both(&[f, callee], |def| asm::rodata(def, b"rodata!!"), "refs");
    assert_eq!(ours, theirs);
}

#[test]
fn fail_statuses_match_iree_run_module() {
    for (code, name) in [
        (3, "INVALID_ARGUMENT"),
        (9, "FAILED_PRECONDITION"),
        (11, "OUT_OF_RANGE"),
    ] {
        let mut f = Func::new("fails", "0v_v", 2, 0);
        f.block();
        f.const_i32(code, 0).op(0x5B).r(0).str("pactum says no");
        let def = asm::module("t", &[f]);
        let bytes = asm::bytes(&def);
        let dir = scratch(&format!("fail{code}"));
        let path = dir.join("t.vmfb");
        std::fs::write(&path, &bytes).unwrap();
        let output = Command::new(iree_tool("iree-run-module"))
            .arg(format!("--module={}", path.display()))
            .arg("--function=fails")
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(name) && stderr.contains("pactum says no"),
            "{stderr}"
        );
        let mut context = Context::new(Limits::default());
        context.load_bytecode(bytes).unwrap();
        let err = context.call("t.fails", &[]).unwrap_err();
        assert_eq!(err.status().name(), name);
        assert!(err.to_string().contains("pactum says no"), "{err}");
    }
}

#[test]
fn switch_ref_and_call_yieldable_match_iree_run_module() {
    let buffer = asm::TY_BUFFER;
    let mut f = Func::new("switchref", "0v_iii", 8, 4);
    f.block();
    f.op(0x11).u32(0).r(R);
    f.op(0x11).u32(1).r(R | 1);
    f.const_i32(1, 0);
    f.op(0x21).r(0).u32(buffer).r(R).list(&[R, R | 1]).r(R | 2);
    f.op(0x53).r(R | 2).r(R | 1).r(1);
    f.const_i32(7, 2);
    f.op(0x21).r(2).u32(buffer).r(R).list(&[R, R | 1]).r(R | 3);
    f.op(0x53).r(R | 3).r(R).r(3);
    // call.yieldable to an internal function, continuing in the next block.
    f.const_i32(20, 4);
    f.op(0x87).u32(1).list(&[4]);
    let then = f.target(0);
    f.list(&[5]);
    let b = f.block();
    f.patch(then, b);
    f.ret(&[1, 3, 5]);
    let mut callee = Func::new("twice", "0i_i", 2, 0);
    callee.block();
    callee.bin(0x22, 0, 0, 1).ret(&[1]);
    let (ours, theirs) = both(
        &[f, callee],
        |def| {
            asm::rodata(def, b"one");
            asm::rodata(def, b"two");
        },
        "switchref",
    );
    assert_eq!(ours, [1, 1, 40]);
    assert_eq!(ours, theirs);
}

/// `vm.erf.f32`/`vm.erf.f64` over a sweep of inputs: `count` bit patterns from `first`,
/// `stride` apart, folded into an FNV-1a hash of the result bits (the loop runs in the VM, so
/// a sweep of 10^5 inputs costs one process of the reference).
fn erf_sweep() -> String {
    let function = |float: &str, int: &str, basis: &str, prime: &str| {
        ERF_SWEEP_FUNCTION
            .replace("FLOAT", float)
            .replace("INT", int)
            .replace("BASIS", basis)
            .replace("PRIME", prime)
    };
    format!(
        "\nvm.module @erf_sweep {{\n{}{}}}\n",
        function("f32", "i32", "-2128831035", "16777619"),
        function("f64", "i64", "-3750763034362895579", "1099511628211"),
    )
}

/// One function of [`erf_sweep`]: `vm.erf.FLOAT` over inputs whose bit patterns are `INT`s,
/// hashed with the FNV-1a offset basis `BASIS` and prime `PRIME` of that width.
const ERF_SWEEP_FUNCTION: &str = r#"  vm.export @erf_FLOAT_hash
  vm.func @erf_FLOAT_hash(%first: INT, %stride: INT, %count: i32) -> INT {
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %basis = vm.const.INT BASIS
    %prime = vm.const.INT PRIME
    vm.br ^head(%c0, %first, %basis : i32, INT, INT)
  ^head(%i: i32, %bits: INT, %h: INT):
    %more = vm.cmp.lt.i32.s %i, %count : i32
    vm.cond_br %more, ^body, ^exit
  ^body:
    %x = vm.bitcast.INT.FLOAT %bits : INT -> FLOAT
    %y = vm.erf.FLOAT %x : FLOAT
    %ybits = vm.bitcast.FLOAT.INT %y : FLOAT -> INT
    %mixed = vm.xor.INT %h, %ybits : INT
    %h2 = vm.mul.INT %mixed, %prime : INT
    %i1 = vm.add.i32 %i, %c1 : i32
    %next = vm.add.INT %bits, %stride : INT
    vm.br ^head(%i1, %next, %h2 : i32, INT, INT)
  ^exit:
    vm.return %h : INT
  }
"#;

/// One stretch of an erf sweep: `count` inputs from the bit pattern `first`, `stride` apart.
#[derive(Clone, Copy, Debug)]
struct ErfStretch {
    wide: bool,
    first: i64,
    stride: i64,
    count: i32,
}

impl ErfStretch {
    fn function(&self) -> &'static str {
        if self.wide {
            "erf_f64_hash"
        } else {
            "erf_f32_hash"
        }
    }

    fn args(&self) -> [Value; 3] {
        if self.wide {
            [
                Value::I64(self.first),
                Value::I64(self.stride),
                Value::I32(self.count),
            ]
        } else {
            [
                Value::I32(self.first as i32),
                Value::I32(self.stride as i32),
                Value::I32(self.count),
            ]
        }
    }

    /// The first `count` inputs of this stretch.
    fn prefix(&self, count: i32) -> ErfStretch {
        ErfStretch { count, ..*self }
    }

    /// The bit pattern of input `k`.
    fn input(&self, k: i32) -> i64 {
        let bits = self
            .first
            .wrapping_add(self.stride.wrapping_mul(i64::from(k)));
        if self.wide {
            bits
        } else {
            i64::from(bits as i32 as u32)
        }
    }

    fn theirs(&self, module: &Path) -> i64 {
        let output = Command::new(iree_tool("iree-run-module"))
            .arg(format!("--module={}", module.display()))
            .arg(format!("--function={}", self.function()))
            .args(self.args().map(|v| match v {
                Value::I32(x) => format!("--input={x}"),
                Value::I64(x) => format!("--input={x}"),
                other => unreachable!("{other:?}"),
            }))
            .output()
            .expect("run iree-run-module");
        assert!(
            output.status.success(),
            "iree-run-module {self:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        parse_ints(&String::from_utf8(output.stdout).unwrap())[0]
    }

    fn ours(&self, context: &Context) -> i64 {
        let name = format!("erf_sweep.{}", self.function());
        ints(&context.call(&name, &self.args()).unwrap())[0]
    }
}

#[test]
fn erf_gives_the_bits_of_iree_run_module_over_a_sweep_of_inputs() {
    // The reference calls the C library's erff/erf. A port of musl's (the `libm` crate) was
    // one ulp off glibc's on 582 of the 131072 f32 inputs of each [1e-4, 5.5) sweep below and
    // on 4457 of the 65536 f64 ones: enough to change a GELU in a transformer layer.
    let dir = scratch("erf-sweep");
    let source = dir.join("erf_sweep.mlir");
    let module = dir.join("erf_sweep.vmfb");
    std::fs::write(&source, erf_sweep()).unwrap();
    let output = Command::new(iree_tool("iree-compile"))
        .args(["--compile-mode=vm", "--iree-vm-target-extension-f64"])
        .arg(&source)
        .arg("-o")
        .arg(&module)
        .output()
        .expect("run iree-compile");
    assert!(
        output.status.success(),
        "iree-compile {}: {}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(std::fs::read(&module).unwrap())
        .unwrap();

    const CHUNK: i32 = 16_384;
    let f32_bits = |x: f32| i64::from(x.to_bits());
    let f64_bits = |x: f64| x.to_bits() as i64;
    let sign32 = i64::from(0x8000_0000u32);
    let sweeps = [
        // [1e-4, 5.5) densely, both signs: where erf is neither x·2/√π nor ±1.
        (false, f32_bits(1e-4), 1009_i64, 8 * CHUNK),
        (false, f32_bits(1e-4) | sign32, 1009, 8 * CHUNK),
        // Every magnitude: zero, subnormals, the tails, infinity and NaNs (stride ~2^15).
        (false, 0, 32_749, 4 * CHUNK),
        // f64 over [1e-4, 6), both signs.
        (true, f64_bits(1e-4), 544_451_000_001, 4 * CHUNK),
        (true, f64_bits(-1e-4), 544_451_000_001, 4 * CHUNK),
    ];
    let mut cases = 0;
    let mut mismatches = Vec::new();
    for (wide, first, stride, count) in sweeps {
        for start in (0..count).step_by(CHUNK as usize) {
            let chunk = ErfStretch {
                wide,
                first: first.wrapping_add(stride.wrapping_mul(i64::from(start))),
                stride,
                count: CHUNK.min(count - start),
            };
            cases += chunk.count;
            if chunk.ours(&context) == chunk.theirs(&module) {
                continue;
            }
            // The shortest differing prefix ends at the first input whose bits differ.
            let (mut agree, mut differ) = (0, chunk.count);
            while differ - agree > 1 {
                let mid = agree + (differ - agree) / 2;
                let prefix = chunk.prefix(mid);
                if prefix.ours(&context) == prefix.theirs(&module) {
                    agree = mid;
                } else {
                    differ = mid;
                }
            }
            mismatches.push(format!(
                "{}: first difference at input bits {:#x} (chunk {chunk:?})",
                chunk.function(),
                chunk.input(differ - 1)
            ));
        }
    }
    eprintln!("{cases} erf inputs compared");
    assert!(
        mismatches.is_empty(),
        "{} of the chunks of {CHUNK} inputs differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
