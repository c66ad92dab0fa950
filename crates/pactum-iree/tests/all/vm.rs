//! The VM interpreter: the vm_direct fixture against iree-run-module, hand-assembled
//! programs for numeric semantics, traps, budgets and verifier refusals, and a mutation corpus.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use asm::{Func, MV, R};
use pactum_iree::vm::{
    BudgetKind, BuiltNativeModule, CallStack, Context, FunctionName, Limits, LinkError,
    NativeError, NativeModule, NativeModuleBuilder, StatusCode, TrapKind, Value, Variadic,
    VerifyRule, VmError,
};
use pactum_iree::vmfb::VmfbFile;

use crate::asm;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vmfb")
        .join(name)
}

// vm_direct's runs against iree-run-module are in tests/vm_manifest.rs, with every other
// VM-only fixture run, compared as exact text.

#[test]
fn globals_persist_across_calls_and_rodata_is_shared() {
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    let bump = context.lookup_export("vm_direct.bump").unwrap();
    assert_eq!(context.invoke(&bump, &[]).unwrap(), [Value::I32(1)]);
    assert_eq!(context.invoke(&bump, &[]).unwrap(), [Value::I32(2)]);
    assert_eq!(
        context.call("vm_direct.bump", &[]).unwrap(),
        [Value::I32(3)]
    );
    // A second context has its own state.
    let mut other = Context::new(Limits::default());
    other
        .load_bytecode(std::fs::read(fixture("vm_direct_bare.vmfb")).unwrap())
        .unwrap();
    assert_eq!(other.call("vm_direct.bump", &[]).unwrap(), [Value::I32(1)]);
    assert_eq!(
        other.call("vm_direct.rodata_sizes", &[]).unwrap(),
        [Value::I64(18), Value::I64(16)]
    );
}

/// A native module `optional_ext` (which vm_direct imports optionally) of typed functions.
fn frob() -> BuiltNativeModule<()> {
    NativeModuleBuilder::new("optional_ext", 0)
        .function("frob", "0i_i", |_: &(), x: i32| Ok(x * 3))
        .function("sum", "0CiD_i", |_: &(), values: Variadic<'_, i32>| {
            values.iter().sum::<Result<i32, NativeError>>()
        })
        .function(
            "boom",
            "0i_i",
            |_: &(), _: i32| -> Result<i32, NativeError> {
                Err(NativeError::new(StatusCode::Aborted, "boom"))
            },
        )
        .build(())
}

#[test]
fn optional_imports_bind_to_native_modules_when_present() {
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    assert_eq!(
        context
            .call("vm_direct.frob_or_double", &[Value::I32(21)])
            .unwrap(),
        [Value::I32(42)]
    );

    let mut context = Context::new(Limits::default());
    context.register_native(Arc::new(frob())).unwrap();
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    assert_eq!(
        context
            .call("vm_direct.frob_or_double", &[Value::I32(21)])
            .unwrap(),
        [Value::I32(63)]
    );
    // Native functions can be called directly too.
    assert_eq!(
        context.call("optional_ext.frob", &[Value::I32(2)]).unwrap(),
        [Value::I32(6)]
    );
    let err = context
        .call("optional_ext.boom", &[Value::I32(2)])
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Aborted);
}

/// A native function that panics leaves nothing behind in a reused call stack: the next
/// call through the same stack gets its own arguments only (a worker catches a panicking
/// workgroup and reuses its stack for the next one).
#[test]
fn a_call_stack_reused_after_a_native_panic_passes_only_the_new_arguments() {
    let module = NativeModuleBuilder::new("optional_ext", 0)
        .function("frob", "0i_i", |_: &(), x: i32| {
            assert!(x != 13, "frob refuses 13");
            Ok(x * 3)
        })
        .build(());
    let mut context = Context::new(Limits::default());
    context.register_native(Arc::new(module)).unwrap();
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    let function = context.lookup_export("vm_direct.frob_or_double").unwrap();
    let mut stack = CallStack::default();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        context.invoke_on(&function, &[Value::I32(13)], &mut stack)
    }));
    assert!(panicked.is_err(), "frob(13) panics");
    assert_eq!(
        context
            .invoke_on(&function, &[Value::I32(21)], &mut stack)
            .unwrap(),
        [Value::I32(63)]
    );
}

#[test]
fn typed_native_functions_read_their_arguments_by_type() {
    let module = frob();
    let index = |name: &str| {
        module
            .functions()
            .iter()
            .position(|f| f.name == name)
            .unwrap()
    };
    assert_eq!(
        module
            .call(
                index("sum"),
                &[Value::I32(3), Value::I32(1), Value::I32(2), Value::I32(4)]
            )
            .unwrap(),
        [Value::I32(7)]
    );
    // Wrong kinds, missing arguments and variadic counts past the arguments are errors
    // naming the argument, never panics.
    let e = module.call(index("frob"), &[Value::I64(1)]).unwrap_err();
    assert_eq!(e.status, StatusCode::InvalidArgument);
    assert_eq!(e.message, "argument 0 is not an i32");
    let e = module.call(index("frob"), &[]).unwrap_err();
    assert_eq!(e.message, "missing argument 0");
    let e = module
        .call(index("sum"), &[Value::I32(5), Value::I32(1)])
        .unwrap_err();
    assert_eq!(e.message, "argument 0: variadic count 5 too large");
    let e = module.call(index("sum"), &[Value::I32(-1)]).unwrap_err();
    assert_eq!(e.message, "argument 0: negative variadic count");
    let e = module.call(3, &[]).unwrap_err();
    assert_eq!(e.status, StatusCode::NotFound);
}

/// A module reading its arguments dynamically, with the functions it is given.
struct DynamicModule(Vec<pactum_iree::vm::NativeFunction>);

impl NativeModule for DynamicModule {
    fn name(&self) -> &str {
        "dynamic"
    }
    fn functions(&self) -> &[pactum_iree::vm::NativeFunction] {
        &self.0
    }
    fn check_signatures(&self) -> Result<(), pactum_iree::vm::SignatureMismatch> {
        Ok(())
    }
    fn call(&self, _: usize, args: &[Value]) -> Result<Vec<Value>, NativeError> {
        Ok(args.to_vec())
    }
}

#[test]
fn calling_conventions_are_checked_in_every_context_that_registers_them() {
    use pactum_iree::vm::NativeFunction;
    // The program's own conventions are parsed once per process; a bad one is still refused
    // in every context, and a good one linked in every context, as when each parsed it.
    let bad_static = || DynamicModule(vec![NativeFunction::new("f", "0i_q")]);
    let bad_owned = || DynamicModule(vec![NativeFunction::new("f", String::from("0i_q"))]);
    for module in [bad_static(), bad_static(), bad_owned(), bad_owned()] {
        let error = Context::new(Limits::default())
            .register_native(Arc::new(module))
            .unwrap_err();
        match &error {
            VmError::Link {
                module,
                error: LinkError::BadCallingConvention { function, .. },
            } => assert_eq!((module.as_str(), function.as_str()), ("dynamic", "f")),
            other => panic!("{other}"),
        }
    }
    for _ in 0..2 {
        let mut context = Context::new(Limits::default());
        context
            .register_native(Arc::new(DynamicModule(vec![NativeFunction::new(
                "twice", "0iI_iI",
            )])))
            .unwrap();
        let twice = context.lookup_export("dynamic.twice").unwrap();
        assert_eq!(
            context
                .invoke(&twice, &[Value::I32(7), Value::I64(9)])
                .unwrap(),
            [Value::I32(7), Value::I64(9)]
        );
    }
}

#[test]
fn a_typed_function_whose_signature_contradicts_its_convention_is_refused_at_registration() {
    // `frob` declares an i64 result, but the closure returns an i32.
    let module = NativeModuleBuilder::new("optional_ext", 0)
        .function("sum", "0CiD_i", |_: &(), values: Variadic<'_, i32>| {
            values.iter().sum::<Result<i32, NativeError>>()
        })
        .function("frob", "0i_I", |_: &(), x: i32| Ok(x * 3))
        .build(());
    let mismatch = module.check_signatures().unwrap_err();
    assert_eq!(mismatch.function, "optional_ext.frob");
    assert_eq!(mismatch.declared, "0i_I");
    assert_eq!(mismatch.implied, "0i_i");
    let mut context = Context::new(Limits::default());
    let error = context.register_native(Arc::new(module)).unwrap_err();
    match &error {
        VmError::Link {
            module,
            error:
                LinkError::NativeSignature {
                    function,
                    declared,
                    implied,
                },
        } => {
            assert_eq!(module, "optional_ext");
            assert_eq!(
                (function.as_str(), declared.as_str(), implied.as_str()),
                ("optional_ext.frob", "0i_I", "0i_i")
            );
        }
        other => panic!("{other}"),
    }
    assert!(
        error.to_string().contains(
            "native function `optional_ext.frob` declares calling convention `0i_I`, but its \
             Rust signature implies `0i_i`"
        ),
        "{error}"
    );
    // Nothing was registered: a correct module of that name still can be.
    context.register_native(Arc::new(frob())).unwrap();
}

#[test]
fn invoke_checks_arguments_against_the_calling_convention() {
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    let mix = context.lookup_export("vm_direct.mix_alias").unwrap();
    assert_eq!(mix.cconv(), "0iIfF_FIf");
    match context.invoke(&mix, &[Value::I32(1)]) {
        Err(VmError::ArgumentCount {
            expected: 4,
            got: 1,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    let err = context
        .invoke(
            &mix,
            &[
                Value::I32(1),
                Value::I32(2),
                Value::F32(1.0),
                Value::F64(1.0),
            ],
        )
        .unwrap_err();
    assert!(
        matches!(&err, VmError::BadCall { argument: 1, expected, got, .. } if expected == "i64" && got == "i32"),
        "{err}"
    );
    assert!(
        err.to_string().contains("argument 1 must be i64, got i32"),
        "{err}"
    );
    assert!(matches!(
        context.lookup_export("vm_direct.nope"),
        Err(VmError::NotFound(_))
    ));
    assert!(matches!(
        context.lookup_export("nodot"),
        Err(VmError::NotFound(_))
    ));
    let other = Context::new(Limits::default());
    assert!(matches!(
        other.invoke(&mix, &[]),
        Err(VmError::ForeignFunction(_))
    ));
    let as_pactum: pactum::Error = err.into();
    assert!(as_pactum.to_string().contains("argument 1"));
}

// -- Hand-assembled programs.

fn load(funcs: &[Func]) -> Result<Context, VmError> {
    load_with(funcs, Limits::default(), |_| {})
}

fn load_with(
    funcs: &[Func],
    limits: Limits,
    edit: impl FnOnce(&mut pactum_iree::vmfb::ModuleDef),
) -> Result<Context, VmError> {
    let mut def = asm::module("t", funcs);
    edit(&mut def);
    let mut context = Context::new(limits);
    context.load_bytecode(asm::bytes(&def))?;
    Ok(context)
}

fn run(funcs: &[Func], name: &str, args: &[Value]) -> Result<Vec<Value>, VmError> {
    load(funcs)?.call(&format!("t.{name}"), args)
}

/// `(i32, i32) -> i32` applying core opcode `op`.
fn binary_i32(op: u8) -> Func {
    let mut f = Func::new("f", "0ii_i", 3, 0);
    f.block();
    f.bin(op, 0, 1, 2).ret(&[2]);
    f
}

fn binary_i64(op: u8) -> Func {
    let mut f = Func::new("f", "0II_I", 6, 0);
    f.block();
    f.bin(op, 0, 2, 4).ret(&[4]);
    f
}

fn trap_kind(result: Result<Vec<Value>, VmError>) -> TrapKind {
    match result {
        Err(VmError::Trap { kind, .. }) => kind,
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn integer_division_traps_instead_of_undefined_behaviour() {
    let f = binary_i32(0x25);
    assert_eq!(
        run(
            std::slice::from_ref(&f),
            "f",
            &[Value::I32(-7), Value::I32(2)]
        )
        .unwrap(),
        [Value::I32(-3)]
    );
    assert_eq!(
        trap_kind(run(
            std::slice::from_ref(&f),
            "f",
            &[Value::I32(1), Value::I32(0)]
        )),
        TrapKind::DivisionByZero
    );
    assert_eq!(
        trap_kind(run(&[f], "f", &[Value::I32(i32::MIN), Value::I32(-1)])),
        TrapKind::DivisionOverflow
    );
    let rem = binary_i64(0x2F);
    assert_eq!(
        trap_kind(run(
            std::slice::from_ref(&rem),
            "f",
            &[Value::I64(i64::MIN), Value::I64(-1)]
        )),
        TrapKind::DivisionOverflow
    );
    assert_eq!(
        trap_kind(run(
            std::slice::from_ref(&rem),
            "f",
            &[Value::I64(5), Value::I64(0)]
        )),
        TrapKind::DivisionByZero
    );
    assert_eq!(
        run(&[rem], "f", &[Value::I64(-7), Value::I64(3)]).unwrap(),
        [Value::I64(-1)]
    );
    let remu = binary_i32(0x28);
    assert_eq!(
        trap_kind(run(&[remu], "f", &[Value::I32(5), Value::I32(0)])),
        TrapKind::DivisionByZero
    );
    let err = run(&[binary_i32(0x26)], "f", &[Value::I32(1), Value::I32(0)]).unwrap_err();
    assert!(err.to_string().contains("t.f at byte 0x1"), "{err}");
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[test]
fn an_infinite_loop_stops_with_a_fuel_error() {
    let mut f = Func::new("spin", "0v_v", 1, 0);
    let top = f.block();
    f.br(top);
    let context = load_with(&[f], Limits::with_fuel(10_000), |_| {}).unwrap();
    match context.call("t.spin", &[]) {
        Err(VmError::BudgetExhausted {
            kind: BudgetKind::Fuel,
            limit: 10_000,
            location: Some(_),
        }) => {}
        other => panic!("{other:?}"),
    }
    // Fuel is per invocation: the context still works.
    assert!(matches!(
        context.call("t.spin", &[]),
        Err(VmError::BudgetExhausted { .. })
    ));
}

/// `(a, b) -> (compare result, 1 if the branch went to the true block else 0)` for the compare
/// `op` right before a `cond_br` on its result: the pair the interpreter runs as one fused
/// compare-and-branch, which must still write the compare's register.
fn compare_and_branch(op: u8, wide: bool) -> Func {
    let (cconv, a, b, d, which) = if wide {
        ("0II_ii", 0, 2, 4, 5)
    } else {
        ("0ii_ii", 0, 1, 2, 3)
    };
    let mut f = Func::new("f", cconv, 6, 0);
    f.block();
    f.bin(op, a, b, d);
    f.op(0x57).r(d);
    let to_true = f.target(0);
    f.remap(&[]);
    let to_false = f.target(0);
    f.remap(&[]);
    let on_true = f.block();
    f.const_i32(1, which).ret(&[d, which]);
    let on_false = f.block();
    f.const_i32(0, which).ret(&[d, which]);
    f.patch(to_true, on_true);
    f.patch(to_false, on_false);
    f
}

#[test]
fn a_compare_feeding_a_conditional_branch_branches_both_ways_and_writes_its_result() {
    let pairs32: [(i32, i32); 5] = [(1, 2), (2, 1), (3, 3), (-1, 1), (i32::MIN, i32::MAX)];
    type Cmp32 = fn(i32, i32) -> bool;
    let ops32: [(u8, &str, Cmp32); 4] = [
        (0x49, "eq", |a, b| a == b),
        (0x4A, "ne", |a, b| a != b),
        (0x4B, "lt.s", |a, b| a < b),
        (0x4C, "lt.u", |a, b| (a as u32) < (b as u32)),
    ];
    for (op, name, expect) in ops32 {
        let context = load(&[compare_and_branch(op, false)]).unwrap();
        for (a, b) in pairs32 {
            let want = i32::from(expect(a, b));
            assert_eq!(
                context
                    .call("t.f", &[Value::I32(a), Value::I32(b)])
                    .unwrap(),
                [Value::I32(want), Value::I32(want)],
                "cmp.{name}.i32 {a} {b}"
            );
        }
    }
    let pairs64: [(i64, i64); 5] = [
        (1, 2),
        (2, 1),
        (1 << 40, 1 << 40),
        (-1, 1),
        // Equal low halves: the compare must read both halves of each pair.
        (5, 5 + (1 << 32)),
    ];
    type Cmp64 = fn(i64, i64) -> bool;
    let ops64: [(u8, &str, Cmp64); 4] = [
        (0x4E, "eq", |a, b| a == b),
        (0x4F, "ne", |a, b| a != b),
        (0x50, "lt.s", |a, b| a < b),
        (0x51, "lt.u", |a, b| (a as u64) < (b as u64)),
    ];
    for (op, name, expect) in ops64 {
        let context = load(&[compare_and_branch(op, true)]).unwrap();
        for (a, b) in pairs64 {
            let want = i32::from(expect(a, b));
            assert_eq!(
                context
                    .call("t.f", &[Value::I64(a), Value::I64(b)])
                    .unwrap(),
                [Value::I32(want), Value::I32(want)],
                "cmp.{name}.i64 {a} {b}"
            );
        }
    }
}

/// `count(n)`: `i = 0; while i < n { i += 1 }` with the increment's result passed back through
/// a remap of two copies (`i' -> i`, then `i -> j`: the second reads what the first wrote),
/// and `(i, j)` returned. The segments cost 3 (entry), 2 (loop head), 2 (body), 1 (exit),
/// so `n` trips take `4n + 6` fuel. Also returns the byte offsets of the loop head's
/// `cond_br` and of the body's `br`.
fn counting_loop() -> (Func, u32, u32) {
    let mut f = Func::new("count", "0i_ii", 8, 0);
    f.block();
    f.const_i32(0, 1).const_i32(1, 2);
    let to_head = f.br(0);
    let head = f.block();
    f.patch(to_head, head);
    f.bin(0x4B, 1, 0, 3); // cmp.lt.i32.s i, n
    let cond_br = f.pc();
    f.op(0x57).r(3);
    let to_body = f.target(0);
    f.remap(&[]);
    let to_exit = f.target(0);
    f.remap(&[]);
    let body = f.block();
    f.patch(to_body, body);
    f.bin(0x22, 1, 2, 5); // add.i32
    let back = f.pc();
    f.op(0x56);
    f.target(head);
    f.remap(&[(5, 1), (1, 6)]);
    let exit = f.block();
    f.patch(to_exit, exit);
    f.ret(&[1, 6]);
    (f, cond_br, back)
}

fn fuel_error_pc(result: Result<Vec<Value>, VmError>) -> u32 {
    match result {
        Err(VmError::BudgetExhausted {
            kind: BudgetKind::Fuel,
            location: Some(location),
            ..
        }) => location.pc,
        other => panic!("expected the fuel to run out, got {other:?}"),
    }
}

#[test]
fn a_fused_loop_charges_fuel_per_instruction_and_reports_exhaustion_at_the_branch() {
    let (f, cond_br, back) = counting_loop();
    let run_with = |fuel: u64| {
        load_with(std::slice::from_ref(&f), Limits::with_fuel(fuel), |_| {})
            .unwrap()
            .call("t.count", &[Value::I32(10)])
    };
    // The remap's copies apply in order: j is the new i.
    assert_eq!(run_with(46).unwrap(), [Value::I32(10), Value::I32(10)]);
    // One short: the fused compare-and-branch cannot pay for the exit block, and the error
    // names the `cond_br`, not the compare that was fused into it.
    assert_eq!(fuel_error_pc(run_with(45)), cond_br);
    // Entry (3) and the loop head (2) paid, not the body (2).
    assert_eq!(fuel_error_pc(run_with(6)), cond_br);
    // The body paid, not the loop head again: the error names the back edge's `br`.
    assert_eq!(fuel_error_pc(run_with(8)), back);
}

/// The byte offsets of the instructions of [`workgroup_loop`] that can stop it.
struct LoopPcs {
    /// The first instruction (where running out of fuel on entry is reported).
    entry: u32,
    /// The entry block's `br` to the loop head.
    to_head: u32,
    /// The load from `a` at `(i + shift) + 0`.
    first_load: u32,
    /// The load from `a` at `i + shift2`.
    second_load: u32,
    /// The load of the accumulator.
    acc_load: u32,
    /// The store of the accumulator.
    acc_store: u32,
    /// The loop head's `cond_br`.
    cond_br: u32,
    /// The back edge's `br`.
    back: u32,
}

/// The element values of [`workgroup_loop`]'s read-only buffer `a` (rodata segment 0).
const LOOP_A: [f32; 8] = [1.5, 2.0, -3.0, 0.25, 4.0, 5.5, -1.0, 8.0];

/// `mac(n, shift, shift2, acc_at)`: the inner loop of a vmvx matmul, made of the sequences the
/// loader fuses into superinstructions (two `add.i64`s; two `add.i64`s feeding a 4-byte load;
/// one `add.i64` feeding a load; a load, an `fma.f32` on it and a store back; an increment
/// with the back edge that copies it):
/// `for i in 0..n { acc[acc_at] = a[(i + shift) + 0] * a[i + shift2] + acc[acc_at] }`, with
/// `a` the rodata [`LOOP_A`] and `acc` a zeroed 16-byte buffer (or `a` itself when
/// `read_only_acc`). Returns `acc[acc_at]` and the registers the fused instructions write:
/// `t = i + shift`, `o = t + 0`, the two loads, the accumulator's load and the fma's result,
/// and `i`. With `breakers`, a `const.i32` into an unused register follows every instruction
/// of the loop body: the same computation, with no sequence left to fuse. With
/// `increment_in_place`, the increment writes `i` itself and the back edge copies nothing (as
/// IREE's register allocator leaves most loops); otherwise it writes a register of its own
/// that the back edge copies to `i`.
fn workgroup_loop(
    read_only_acc: bool,
    breakers: bool,
    increment_in_place: bool,
) -> (Func, LoopPcs) {
    // i32 bank: n 0:1, shift 2:3, shift2 4:5, acc_at 6:7, zero 8:9, one 10:11, i 12:13,
    // t 14:15, o 16:17, p 18:19, q 20:21, q2 22:23, v 24, w 25, x 26, y 27, cmp 28, align 29,
    // result 30, breaker 31, next i 32:33, length 34:35. Refs: a 0, acc 1.
    let mut f = Func::new("mac", "0IIII_fIIffffI", 36, 2);
    f.block();
    let entry = f.pc();
    f.op(0x11).u32(0).r(R); // %r0 = rodata 0
    if read_only_acc {
        f.op(0x11).u32(0).r(R | 1);
    } else {
        f.const_i64(16, 34).const_i32(0, 29);
        f.op(0x6C).r(34).r(29).r(R | 1); // %r1 = buffer.alloc 16
    }
    f.const_i64(0, 8).const_i64(1, 10).const_i64(0, 12);
    let to_head_pc = f.pc();
    let to_head = f.br(0);
    let head = f.block();
    f.patch(to_head, head);
    f.bin(0x50, 12, 0, 28); // cmp.lt.i64.s i, n
    let cond_br = f.pc();
    f.op(0x57).r(28);
    let to_body = f.target(0);
    f.remap(&[]);
    let to_exit = f.target(0);
    f.remap(&[]);
    let body = f.block();
    f.patch(to_body, body);
    let breaker = |f: &mut Func| {
        if breakers {
            f.const_i32(0, 31);
        }
    };
    f.bin(0x2A, 6, 8, 20); // q = acc_at + 0
    breaker(&mut f);
    f.bin(0x2A, 20, 8, 22); // q2 = q + 0
    breaker(&mut f);
    f.bin(0x2A, 12, 2, 14); // t = i + shift
    breaker(&mut f);
    f.bin(0x2A, 8, 14, 16); // o = 0 + t (the add that reads t second)
    breaker(&mut f);
    let first_load = f.pc();
    f.f32op(0x33).r(R).r(16).r(24); // v = a[o]
    breaker(&mut f);
    f.bin(0x2A, 12, 4, 18); // p = i + shift2
    breaker(&mut f);
    let second_load = f.pc();
    f.f32op(0x33).r(R).r(18).r(25); // w = a[p]
    breaker(&mut f);
    let acc_load = f.pc();
    f.f32op(0x33).r(R | 1).r(22).r(26); // x = acc[q2]
    breaker(&mut f);
    f.f32op(0x0F).r(24).r(25).r(26).r(27); // y = v * w + x
    breaker(&mut f);
    let acc_store = f.pc();
    f.f32op(0x34).r(R | 1).r(22).r(27); // acc[q2] = y
    breaker(&mut f);
    let back = if increment_in_place {
        f.bin(0x2A, 12, 10, 12); // i = i + 1
        breaker(&mut f);
        let back = f.pc();
        f.br(head);
        back
    } else {
        f.bin(0x2A, 12, 10, 32); // next i = i + 1
        breaker(&mut f);
        let back = f.pc();
        f.op(0x56);
        f.target(head);
        f.remap(&[(32, 12), (33, 13)]);
        back
    };
    let exit = f.block();
    f.patch(to_exit, exit);
    f.f32op(0x33).r(R | 1).r(6).r(30);
    f.ret(&[30, 14, 16, 24, 25, 26, 27, 12]);
    let pcs = LoopPcs {
        entry,
        to_head: to_head_pc,
        first_load,
        second_load,
        acc_load,
        acc_store,
        cond_br,
        back,
    };
    (f, pcs)
}

fn load_workgroup_loop(f: &Func, limits: Limits) -> Context {
    let bytes: Vec<u8> = LOOP_A.iter().flat_map(|v| v.to_le_bytes()).collect();
    load_with(std::slice::from_ref(f), limits, |def| {
        asm::rodata(def, &bytes)
    })
    .unwrap()
}

fn mac(
    context: &Context,
    n: i64,
    shift: i64,
    shift2: i64,
    acc_at: i64,
) -> Result<Vec<Value>, VmError> {
    let args = [n, shift, shift2, acc_at].map(Value::I64);
    context.call("t.mac", &args)
}

/// A trap's kind, detail and byte offset.
fn trap_at(result: Result<Vec<Value>, VmError>) -> (TrapKind, String, u32) {
    match result {
        Err(VmError::Trap {
            kind,
            detail,
            location,
        }) => (kind, detail, location.pc),
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn fused_workgroup_loops_compute_write_and_trap_as_their_instructions_do() {
    for increment_in_place in [false, true] {
        check_workgroup_loop(increment_in_place);
    }
}

fn check_workgroup_loop(increment_in_place: bool) {
    let (fused, pcs) = workgroup_loop(false, false, increment_in_place);
    let (unfused, unfused_pcs) = workgroup_loop(false, true, increment_in_place);
    let fused = load_workgroup_loop(&fused, Limits::default());
    let unfused = load_workgroup_loop(&unfused, Limits::default());
    // Results and every register the sequences write, against the same loop unfused and
    // against the sums computed here.
    for (n, shift, shift2, acc_at) in [(0, 0, 0, 0), (1, 3, 5, 2), (5, 1, 3, 3), (8, 0, 0, 0)] {
        let got = mac(&fused, n, shift, shift2, acc_at).unwrap();
        assert_eq!(got, mac(&unfused, n, shift, shift2, acc_at).unwrap());
        let (mut acc, mut x) = (0f32, 0f32);
        for i in 0..n {
            x = acc;
            acc += LOOP_A[(i + shift) as usize] * LOOP_A[(i + shift2) as usize];
        }
        if n > 0 {
            let last = n - 1;
            let (v, w) = (
                LOOP_A[(last + shift) as usize],
                LOOP_A[(last + shift2) as usize],
            );
            let want = [
                Value::F32(acc),
                Value::I64(last + shift),
                Value::I64(last + shift),
                Value::F32(v),
                Value::F32(w),
                Value::F32(x),
                Value::F32(acc),
                Value::I64(n),
            ];
            assert_eq!(got, want, "mac({n}, {shift}, {shift2}, {acc_at})");
        }
    }
    // Each load out of range, on the loop's last trip (the trips before it run fused) or on
    // its first (a negative offset, an accumulator past the buffer's end): the trap of the
    // unfused instruction, with its message, at its own offset.
    let cases = [
        ((4, 5, 0, 0), pcs.first_load, unfused_pcs.first_load),
        ((4, 0, 5, 0), pcs.second_load, unfused_pcs.second_load),
        ((4, 0, 0, 4), pcs.acc_load, unfused_pcs.acc_load),
        ((4, -1, 0, 0), pcs.first_load, unfused_pcs.first_load),
    ];
    for ((n, shift, shift2, acc_at), pc, unfused_pc) in cases {
        let (kind, detail, at) = trap_at(mac(&fused, n, shift, shift2, acc_at));
        let (unfused_kind, unfused_detail, unfused_at) =
            trap_at(mac(&unfused, n, shift, shift2, acc_at));
        assert_eq!((kind, &detail), (unfused_kind, &unfused_detail));
        assert_eq!(kind, TrapKind::OutOfRange);
        assert_eq!((at, unfused_at), (pc, unfused_pc), "{detail}");
    }
    // A read-only accumulator: its load succeeds and its store traps.
    let (read_only, read_only_pcs) = workgroup_loop(true, false, increment_in_place);
    let (read_only_unfused, _) = workgroup_loop(true, true, increment_in_place);
    let read_only = load_workgroup_loop(&read_only, Limits::default());
    let read_only_unfused = load_workgroup_loop(&read_only_unfused, Limits::default());
    let (kind, detail, at) = trap_at(mac(&read_only, 2, 0, 0, 1));
    let (unfused_kind, unfused_detail, _) = trap_at(mac(&read_only_unfused, 2, 0, 0, 1));
    assert_eq!((kind, &detail), (unfused_kind, &unfused_detail));
    assert_eq!((kind, at), (TrapKind::ReadOnly, read_only_pcs.acc_store));
}

#[test]
fn a_fused_back_edge_pays_for_its_branch_and_reports_exhaustion_there() {
    for increment_in_place in [false, true] {
        check_back_edge_fuel(increment_in_place);
    }
}

fn check_back_edge_fuel(increment_in_place: bool) {
    let (f, pcs) = workgroup_loop(false, false, increment_in_place);
    let run_with = |fuel: u64| {
        mac(
            &load_workgroup_loop(&f, Limits::with_fuel(fuel)),
            3,
            0,
            1,
            0,
        )
    };
    let need = (0..1000)
        .find(|&fuel| run_with(fuel).is_ok())
        .expect("3 trips run on 1000 fuel");
    // Short of fuel, the run stops where it cannot pay: on entry, at the entry block's `br`,
    // the head's `cond_br` or the back edge's `br`, never at an instruction fused with
    // either, and each of them is reached by some budget.
    let mut stops = std::collections::BTreeSet::new();
    for fuel in 0..need {
        stops.insert(fuel_error_pc(run_with(fuel)));
    }
    assert_eq!(
        stops,
        [pcs.entry, pcs.to_head, pcs.cond_br, pcs.back].into(),
        "fuel error offsets"
    );
}

/// The byte offsets of the instructions of a loop that can stop it for want of fuel.
struct FuelStops {
    entry: u32,
    to_head: u32,
    cond_br: u32,
    back: u32,
}

/// `xorshift(n, x) -> (x, y, acc, i, t, bit, f, wide)`: the fixture's `vm_scalars.spin` with
/// the seed an argument, its loop made of the pairs the loader fuses (three xorshift steps, a
/// widening into an i64 sum, an `and` then a cast) and a back edge of four copies; it returns
/// the loop's state and every register those pairs write. With `breakers`, a `const.i32` into
/// an unused register follows every instruction of the body: the same computation, unfused.
fn xorshift_loop(breakers: bool) -> (Func, FuelStops) {
    // i32 bank: n 0, i 1 (the seed on entry), one 2, x 3, y 4:5, acc 6, k 7, shifts 8 9 10,
    // t 11, wide 12:13, bit 14, f 15, breaker 16, zero 17.
    let mut f = Func::new("xorshift", "0ii_iIfiiifI", 18, 0);
    f.block();
    let entry = f.pc();
    f.const_i32(0, 17).const_i32(1, 2);
    f.const_i64(88172645463325252, 4);
    f.const_f32(0.0, 6).const_f32(0.25, 7);
    f.const_i32(13, 8).const_i32(17, 9).const_i32(5, 10);
    let to_head_pc = f.pc();
    f.op(0x56);
    let to_head = f.target(0);
    f.remap(&[(1, 3), (17, 1)]); // x = seed, then i = 0
    let head = f.block();
    f.patch(to_head, head);
    f.bin(0x4B, 1, 0, 11); // cmp.lt.i32.s i, n
    let cond_br = f.pc();
    f.op(0x57).r(11);
    let to_body = f.target(0);
    f.remap(&[]);
    let to_exit = f.target(0);
    f.remap(&[]);
    let body = f.block();
    f.patch(to_body, body);
    let breaker = |f: &mut Func| {
        if breakers {
            f.const_i32(0, 16);
        }
    };
    for (op, a, b, d) in [
        (0x3A, 3, 8, 11),   // t = x << 13
        (0x35, 3, 11, 11),  // t = x ^ t
        (0x3C, 11, 9, 12),  // u = t >> 17
        (0x35, 11, 12, 12), // u = t ^ u
        (0x3A, 12, 10, 11), // t = u << 5
        (0x35, 12, 11, 11), // t = u ^ t
    ] {
        f.bin(op, a, b, d);
        breaker(&mut f);
    }
    f.op(0x48).r(11).r(12); // wide = zext t
    breaker(&mut f);
    f.bin(0x2A, 4, 12, 12); // wide = y + wide
    breaker(&mut f);
    f.bin(0x33, 11, 2, 14); // bit = t & 1
    breaker(&mut f);
    f.f32op(0x14).r(14).r(15); // f = (float) bit
    breaker(&mut f);
    f.f32op(0x0F).r(15).r(7).r(6).r(15); // f = f * 0.25 + acc
    breaker(&mut f);
    f.bin(0x22, 1, 2, 1); // i = i + 1
    breaker(&mut f);
    let back = f.pc();
    f.op(0x56);
    f.target(head);
    f.remap(&[(15, 6), (12, 4), (13, 5), (11, 3)]);
    let exit = f.block();
    f.patch(to_exit, exit);
    f.ret(&[3, 4, 6, 1, 11, 14, 15, 12]);
    let stops = FuelStops {
        entry,
        to_head: to_head_pc,
        cond_br,
        back,
    };
    (f, stops)
}

/// The set of byte offsets where `run_with` stops for want of fuel, over every budget below
/// the one that completes.
fn fuel_stops(run_with: impl Fn(u64) -> Result<Vec<Value>, VmError>) -> BTreeSet<u32> {
    let need = (0..2000)
        .find(|&fuel| run_with(fuel).is_ok())
        .expect("the loop runs on 2000 fuel");
    (0..need)
        .map(|fuel| fuel_error_pc(run_with(fuel)))
        .collect()
}

#[test]
fn fused_register_pairs_and_a_four_copy_back_edge_compute_as_their_instructions_do() {
    let (fused, stops) = xorshift_loop(false);
    let (unfused, _) = xorshift_loop(true);
    let fused_context = load(std::slice::from_ref(&fused)).unwrap();
    let unfused_context = load(std::slice::from_ref(&unfused)).unwrap();
    for (n, seed) in [(0, 12345), (1, 12345), (7, -1), (100, 1 << 30)] {
        let args = [Value::I32(n), Value::I32(seed)];
        let got = fused_context.call("t.xorshift", &args).unwrap();
        assert_eq!(got, unfused_context.call("t.xorshift", &args).unwrap());
        // The same loop computed here: the state after `n` trips and the registers of the
        // last trip.
        let (mut x, mut y, mut acc) = (seed as u32, 88172645463325252u64, 0f32);
        let (mut bit, mut f, mut wide) = (0u32, 0f32, 0u64);
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            wide = y.wrapping_add(u64::from(x));
            bit = x & 1;
            f = (bit as f32).mul_add(0.25, acc);
            (y, acc) = (wide, f);
        }
        if n > 0 {
            let want = [
                Value::I32(x as i32),
                Value::I64(y as i64),
                Value::F32(acc),
                Value::I32(n),
                // `t`'s register is also the head's compare (as in `spin`): false on exit.
                Value::I32(0),
                Value::I32(bit as i32),
                Value::F32(f),
                Value::I64(wide as i64),
            ];
            assert_eq!(got, want, "xorshift({n}, {seed})");
        }
    }
    // Short of fuel, the run stops at a branch it cannot pay for, never inside a pair.
    let run_with = |fuel: u64| {
        load_with(
            std::slice::from_ref(&fused),
            Limits::with_fuel(fuel),
            |_| {},
        )
        .unwrap()
        .call("t.xorshift", &[Value::I32(3), Value::I32(7)])
    };
    assert_eq!(
        fuel_stops(run_with),
        [stops.entry, stops.to_head, stops.cond_br, stops.back].into(),
        "fuel error offsets"
    );
}

/// `fsum(n, a) -> (acc, i)`: `acc = acc * 0.5 + a` for `i` in `0..n`, in i64, with the fma's
/// result copied to the accumulator by the back edge after the increment (the form of
/// `bench/iree_paths/loop_f32.mlir`, which the loader makes one `FmaAddBrMove1`, the
/// increment and back edge an `AddBrMove1` behind it); with `breakers`, unfused.
fn fsum_loop(breakers: bool) -> (Func, FuelStops) {
    // i32 bank: n 0:1, a 2, half 3, i 4:5, one 6:7, acc 8, next 9, cmp 10, breaker 11.
    let mut f = Func::new("fsum", "0If_fI", 12, 0);
    f.block();
    let entry = f.pc();
    f.const_i64(0, 4)
        .const_i64(1, 6)
        .const_f32(0.5, 3)
        .const_f32(0.0, 8);
    let to_head_pc = f.pc();
    let to_head = f.br(0);
    let head = f.block();
    f.patch(to_head, head);
    f.bin(0x50, 4, 0, 10); // cmp.lt.i64.s i, n
    let cond_br = f.pc();
    f.op(0x57).r(10);
    let to_body = f.target(0);
    f.remap(&[]);
    let to_exit = f.target(0);
    f.remap(&[]);
    let body = f.block();
    f.patch(to_body, body);
    f.f32op(0x0F).r(8).r(3).r(2).r(9); // next = acc * 0.5 + a
    if breakers {
        f.const_i32(0, 11);
    }
    f.bin(0x2A, 4, 6, 4); // i = i + 1
    if breakers {
        f.const_i32(0, 11);
    }
    let back = f.pc();
    f.op(0x56);
    f.target(head);
    f.remap(&[(9, 8)]);
    let exit = f.block();
    f.patch(to_exit, exit);
    f.ret(&[8, 4]);
    let stops = FuelStops {
        entry,
        to_head: to_head_pc,
        cond_br,
        back,
    };
    (f, stops)
}

#[test]
fn a_fused_increment_and_one_copy_back_edge_computes_and_pays_as_its_instructions_do() {
    let (fused, stops) = fsum_loop(false);
    let (unfused, _) = fsum_loop(true);
    let fused_context = load(std::slice::from_ref(&fused)).unwrap();
    let unfused_context = load(std::slice::from_ref(&unfused)).unwrap();
    for n in [0, 1, 5, 40] {
        let args = [Value::I64(n), Value::F32(1.5)];
        let got = fused_context.call("t.fsum", &args).unwrap();
        assert_eq!(got, unfused_context.call("t.fsum", &args).unwrap());
        let acc = (0..n).fold(0f32, |acc, _| acc.mul_add(0.5, 1.5));
        assert_eq!(got, [Value::F32(acc), Value::I64(n)], "fsum({n})");
    }
    let run_with = |fuel: u64| {
        load_with(
            std::slice::from_ref(&fused),
            Limits::with_fuel(fuel),
            |_| {},
        )
        .unwrap()
        .call("t.fsum", &[Value::I64(3), Value::F32(1.5)])
    };
    assert_eq!(
        fuel_stops(run_with),
        [stops.entry, stops.to_head, stops.cond_br, stops.back].into(),
        "fuel error offsets"
    );
}

#[test]
fn branches_copy_one_or_two_registers_in_order() {
    // A `br` with a single copy: `x -> y`, then `y` returned.
    let mut f = Func::new("one", "0i_i", 2, 0);
    f.block();
    let to_exit = f.op(0x56).target(0);
    f.remap(&[(0, 1)]);
    let exit = f.block();
    f.patch(to_exit, exit);
    f.ret(&[1]);
    // Two copies where the second reads the first's destination, and a swap that is not one
    // (sequential copies: b = a, then a = b leaves both equal to a).
    let mut g = Func::new("two", "0ii_ii", 2, 0);
    g.block();
    let to_exit = g.op(0x56).target(0);
    g.remap(&[(0, 1), (1, 0)]);
    let exit = g.block();
    g.patch(to_exit, exit);
    g.ret(&[0, 1]);
    let context = load(&[f, g]).unwrap();
    assert_eq!(
        context.call("t.one", &[Value::I32(7)]).unwrap(),
        [Value::I32(7)]
    );
    assert_eq!(
        context
            .call("t.two", &[Value::I32(3), Value::I32(4)])
            .unwrap(),
        [Value::I32(3), Value::I32(3)]
    );
}

/// A function that moves its arguments to other registers with one `br` (remap `moves`) and
/// returns registers `results`; also returns the `br`'s byte offset.
fn remapping_branch(name: &str, cconv: &str, moves: &[(u16, u16)], results: &[u16]) -> (Func, u32) {
    let mut f = Func::new(name, cconv, 8, 0);
    f.block();
    let at = f.pc();
    let to_exit = f.op(0x56).target(0);
    f.remap(moves);
    let exit = f.block();
    f.patch(to_exit, exit);
    f.ret(results);
    (f, at)
}

#[test]
fn branches_copy_a_register_pair_or_many_registers_in_order() {
    // The two halves of an i64 pair to another pair: one 64-bit copy.
    let (pair, pair_at) = remapping_branch("pair", "0I_I", &[(0, 2), (1, 3)], &[2]);
    // Three copies where each reads the previous one's destination: all end up equal to
    // the first argument (sequential copies, not a rotation).
    let (chain, chain_at) =
        remapping_branch("chain", "0iii_iii", &[(0, 3), (3, 4), (4, 5)], &[3, 4, 5]);
    let (rotate, _) = remapping_branch("rotate", "0iii_iii", &[(0, 1), (1, 2), (2, 0)], &[0, 1, 2]);
    // Four copies (held in the instruction, as three are) and five (the function's table).
    let (chain4, chain4_at) = remapping_branch(
        "chain4",
        "0iii_iiii",
        &[(0, 3), (3, 4), (4, 5), (5, 6)],
        &[3, 4, 5, 6],
    );
    let (chain5, chain5_at) = remapping_branch(
        "chain5",
        "0iii_iiiii",
        &[(0, 3), (3, 4), (4, 5), (5, 6), (6, 7)],
        &[3, 4, 5, 6, 7],
    );
    // Copies of a pair's halves that are not a pair copy: the high half's destination is
    // read by the second copy.
    let (overlap, _) = remapping_branch("overlap", "0I_ii", &[(0, 1), (1, 2)], &[1, 2]);
    let funcs = [pair, chain, rotate, overlap, chain4, chain5];
    let context = load(&funcs).unwrap();
    let big = -0x1234_5678_9abc_def0_i64;
    assert_eq!(
        context.call("t.pair", &[Value::I64(big)]).unwrap(),
        [Value::I64(big)]
    );
    let three = [Value::I32(1), Value::I32(2), Value::I32(3)];
    assert_eq!(
        context.call("t.chain", &three).unwrap(),
        [Value::I32(1), Value::I32(1), Value::I32(1)]
    );
    assert_eq!(
        context.call("t.rotate", &three).unwrap(),
        [Value::I32(1), Value::I32(1), Value::I32(1)]
    );
    assert_eq!(
        context.call("t.overlap", &[Value::I64(big)]).unwrap(),
        [Value::I32(big as i32), Value::I32(big as i32)]
    );
    assert_eq!(
        context.call("t.chain4", &three).unwrap(),
        vec![Value::I32(1); 4]
    );
    assert_eq!(
        context.call("t.chain5", &three).unwrap(),
        vec![Value::I32(1); 5]
    );
    // With fuel for the entry block only, the branch cannot pay for the exit block: the
    // error names the `br`, and one more unit of fuel runs the function.
    for (name, at, args) in [
        ("t.pair", pair_at, vec![Value::I64(big)]),
        ("t.chain", chain_at, three.to_vec()),
        ("t.chain4", chain4_at, three.to_vec()),
        ("t.chain5", chain5_at, three.to_vec()),
    ] {
        let run_with = |fuel: u64| {
            load_with(&funcs, Limits::with_fuel(fuel), |_| {})
                .unwrap()
                .call(name, &args)
        };
        assert_eq!(fuel_error_pc(run_with(1)), at, "{name}");
        assert!(run_with(2).is_ok(), "{name}");
    }
}

/// A division that traps after instructions the fast loop runs is reported at its own
/// instruction with its operands, and writes nothing; one that succeeds there gives the
/// quotient (the fast loop runs divisions on their success path only).
#[test]
fn a_division_trap_names_its_operands_and_instruction() {
    // f(a, b) = (a + b) / b, then % b: the add runs on the fast path before the division.
    let mut f = Func::new("f", "0ii_ii", 5, 0);
    f.block();
    f.bin(0x22, 0, 1, 2);
    let div_at = f.pc();
    f.bin(0x25, 2, 1, 3);
    let rem_at = f.pc();
    f.bin(0x27, 2, 1, 4).ret(&[3, 4]);
    let context = load(&[f]).unwrap();
    assert_eq!(
        context
            .call("t.f", &[Value::I32(-9), Value::I32(2)])
            .unwrap(),
        [Value::I32(-3), Value::I32(-1)]
    );
    let trap = |args: &[Value]| match context.call("t.f", args) {
        Err(VmError::Trap {
            kind,
            detail,
            location,
        }) => (kind, detail, location.pc),
        other => panic!("expected a trap, got {other:?}"),
    };
    assert_eq!(
        trap(&[Value::I32(7), Value::I32(0)]),
        (TrapKind::DivisionByZero, "7 / 0".to_owned(), div_at)
    );
    // i32::MIN = (i32::MIN + 1) + -1: the quotient by -1 overflows.
    assert_eq!(
        trap(&[Value::I32(i32::MIN + 1), Value::I32(-1)]),
        (
            TrapKind::DivisionOverflow,
            format!("{} / -1", i32::MIN),
            div_at
        )
    );
    assert_ne!(div_at, rem_at);
}

#[test]
fn deep_recursion_stops_with_a_stack_error() {
    let mut f = Func::new("down", "0i_i", 2, 0);
    f.block();
    let call_at = f.pc();
    f.call(0, &[0], &[1]).ret(&[1]);
    let context = load(&[f]).unwrap();
    // The error is located at the call that would push the frame past the limit.
    match context.call("t.down", &[Value::I32(0)]) {
        Err(VmError::BudgetExhausted {
            kind: BudgetKind::Frames,
            limit: 1024,
            location: Some(location),
        }) => {
            assert_eq!(location.module, "t");
            assert_eq!(location.function, FunctionName::Named("down".to_owned()));
            assert_eq!(location.pc, call_at);
        }
        other => panic!("{other:?}"),
    }
    // A frame with many registers runs out of register memory first.
    let mut f = Func::new("down", "0i_i", 0x4000, 0);
    f.block();
    f.call(0, &[0], &[1]).ret(&[1]);
    let context = load(&[f]).unwrap();
    match context.call("t.down", &[Value::I32(0)]) {
        Err(VmError::BudgetExhausted {
            kind: BudgetKind::StackBytes,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

/// Calls between functions of a module that pass only values are made by the fast loop
/// (`interp/hot.rs`); they compute, trap, and run out of fuel where the main loop's calls do:
/// a trap in the callee names the callee's instruction, and fuel that cannot pay for a call
/// (its continuation and the callee's entry) is reported at the call.
#[test]
fn calls_in_the_fast_loop_trap_and_run_out_of_fuel_at_their_instructions() {
    // leaf(a, b) = (a + b) / b.
    let mut leaf = Func::new("leaf", "0ii_i", 4, 0);
    leaf.block();
    leaf.bin(0x22, 0, 1, 2);
    let div_at = leaf.pc();
    leaf.bin(0x25, 2, 1, 3).ret(&[3]);
    // twice(x, d) = leaf(leaf(x, d), d).
    let mut twice = Func::new("twice", "0ii_i", 4, 0);
    twice.block();
    let entry = twice.pc();
    twice.call(0, &[0, 1], &[2]);
    let second_call = twice.pc();
    twice.call(0, &[2, 1], &[3]).ret(&[3]);
    let funcs = [leaf, twice];
    let run_with = |limits: Limits, args: &[Value]| {
        load_with(&funcs, limits, |_| {})
            .unwrap()
            .call("t.twice", args)
    };
    // (10 + 2) / 2 = 6, then (6 + 2) / 2 = 4.
    let args = [Value::I32(10), Value::I32(2)];
    assert_eq!(run_with(Limits::default(), &args).unwrap(), [Value::I32(4)]);
    // A trap in the callee is located in the callee.
    match run_with(Limits::default(), &[Value::I32(7), Value::I32(0)]) {
        Err(VmError::Trap {
            kind: TrapKind::DivisionByZero,
            detail,
            location,
        }) => {
            assert_eq!(detail, "7 / 0");
            assert_eq!(location.function, FunctionName::Named("leaf".to_owned()));
            assert_eq!(location.pc, div_at);
        }
        other => panic!("expected a division trap, got {other:?}"),
    }
    // Short of fuel, the run stops on entry or at one of the two calls, in the caller.
    let need = (0..1000)
        .find(|&fuel| run_with(Limits::with_fuel(fuel), &args).is_ok())
        .expect("two calls run on 1000 fuel");
    let mut stops = std::collections::BTreeSet::new();
    for fuel in 0..need {
        match run_with(Limits::with_fuel(fuel), &args) {
            Err(VmError::BudgetExhausted {
                kind: BudgetKind::Fuel,
                location: Some(location),
                ..
            }) => {
                assert_eq!(location.function, FunctionName::Named("twice".to_owned()));
                stops.insert(location.pc);
            }
            other => panic!("expected the fuel to run out, got {other:?}"),
        }
    }
    let first_call = entry;
    assert_eq!(stops, [first_call, second_call].into_iter().collect());
}

#[test]
fn calls_pass_arguments_by_the_callee_calling_convention() {
    // callee(i32, i64, f32, f64) -> (f64, i64, i32): returns d*2, b+1, a+c as int.
    let mut callee = Func::new("callee", "0iIfF_FIi", 16, 0);
    callee.block();
    callee.const_i64(1, 8).bin(0x2A, 2, 8, 10); // b + 1
    callee.f64op(0x0A).r(6).r(6).r(12); // d + d
    callee.f32op(0x16).r(4).r(14); // cast c to i32
    callee.bin(0x22, 0, 14, 15); // a + c
    callee.ret(&[12, 10, 15]);
    let mut caller = Func::new("caller", "0v_FIi", 16, 0);
    caller.block();
    caller
        .const_i32(5, 1)
        .const_i64(1 << 40, 4)
        .const_f32(2.5, 3)
        .const_f64(0.25, 8);
    caller.call(0, &[1, 4, 3, 8], &[10, 6, 0]).ret(&[10, 6, 0]);
    assert_eq!(
        run(&[callee, caller], "caller", &[]).unwrap(),
        [Value::F64(0.5), Value::I64((1 << 40) + 1), Value::I32(8)]
    );
}

#[test]
fn fail_reports_its_status_and_message() {
    let mut f = Func::new("f", "0i_v", 1, 0);
    f.block();
    f.op(0x5B).r(0).str("it broke");
    let context = load(&[f]).unwrap();
    match context.call("t.f", &[Value::I32(9)]) {
        Err(VmError::Fail {
            code: 9,
            message,
            location,
        }) => {
            assert_eq!(message, "it broke");
            assert_eq!(location.pc, 1);
        }
        other => panic!("{other:?}"),
    }
    let err = context.call("t.f", &[Value::I32(9)]).unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert_eq!(
        trap_kind(context.call("t.f", &[Value::I32(0)])),
        TrapKind::FailWithOk
    );
}

#[test]
fn branches_apply_their_remaps_in_order() {
    // loop: sum = 0; i = n; while i != 0 { sum += i; i -= 1 } — with the block arguments passed
    // through remaps.
    let mut f = Func::new("sum", "0i_i", 8, 0);
    f.block();
    f.const_i32(0, 1).const_i32(1, 2);
    let to_loop = f.br(0); // patched below
    let head = f.block();
    f.patch(to_loop, head);
    f.op(0x4D).r(0).r(3); // cmp.nz i
    f.op(0x57).r(3);
    let body_at = f.target(0);
    f.remap(&[]);
    let exit_at = f.target(0);
    f.remap(&[(1, 4)]);
    let body = f.block();
    f.patch(body_at, body);
    f.bin(0x22, 1, 0, 5).bin(0x23, 0, 2, 6);
    f.op(0x56);
    f.target(head);
    f.remap(&[(5, 1), (6, 0)]);
    let exit = f.block();
    f.patch(exit_at, exit);
    f.ret(&[4]);
    assert_eq!(
        run(&[f], "sum", &[Value::I32(100)]).unwrap(),
        [Value::I32(5050)]
    );
}

#[test]
fn buffers_follow_the_reference_semantics() {
    // alloc 16 bytes; store.i32 at element 1; fill.i8 [8, 12) with 0xAB; load back; hash;
    // compare with a clone; copy into itself (overlapping).
    let mut f = Func::new("f", "0v_iiIIiI", 16, 4);
    f.block();
    f.const_i64(16, 0).const_i32(0, 2);
    f.op(0x6C).r(0).r(2).r(R); // %r0 = buffer.alloc 16
    f.const_i64(1, 4).const_i32(-2, 3);
    f.op(0x6A).r(R).r(4).r(3); // store.i32 %r0[1] = -2
    f.const_i64(8, 6).const_i64(4, 8).const_i32(0x1AB, 10);
    f.op(0x71).r(R).r(6).r(8).r(10); // fill.i8 [8, 12)
    f.op(0x66).r(R).r(4).r(11); // load.i32 %r0[1]
    f.op(0x63).r(R).r(6).r(12); // load.i8.s %r0[8]
    f.const_i64(0, 14);
    f.op(0x84).r(R).r(14).r(0).r(6); // hash all 16 bytes -> %i6:7
    f.const_i32(0, 13);
    f.op(0x6D).r(R).r(14).r(0).r(13).r(R | 1); // %r1 = clone
    f.op(0x70).r(R).r(14).r(R | 1).r(14).r(0).r(13); // compare -> %i13
    f.op(0x6E).r(R | 1).r(8); // length -> %i8:9
    f.ret(&[11, 12, 6, 8, 13, 6]);
    let results = run(&[f], "f", &[]).unwrap();
    let mut bytes = [0u8; 16];
    bytes[4..8].copy_from_slice(&(-2i32).to_le_bytes());
    bytes[8..12].fill(0xAB);
    let expected_hash = pactum_iree::vm::VmBuffer::from_bytes(&bytes)
        .hash(0, 16)
        .unwrap() as i64;
    assert_eq!(
        results,
        [
            Value::I32(-2),
            Value::I32(-85),
            Value::I64(expected_hash),
            Value::I64(16),
            Value::I32(1),
            Value::I64(expected_hash)
        ]
    );
}

#[test]
fn buffer_faults_are_traps() {
    // store.i32 into rodata segment 0 (read-only), at element `i`.
    let mut f = Func::new("f", "0I_v", 4, 2);
    f.block();
    f.op(0x11).u32(0).r(R); // %r0 = rodata 0
    f.const_i32(1, 2);
    f.op(0x6A).r(R).r(0).r(2);
    f.ret(&[]);
    let mut g = Func::new("g", "0I_i", 4, 2);
    g.block();
    g.op(0x11).u32(0).r(R);
    g.op(0x66).r(R).r(0).r(2); // load.i32 rodata[i]
    g.ret(&[2]);
    let mut h = Func::new("h", "0v_i", 4, 2);
    h.block();
    h.op(0x6E).r(R | 1).r(0); // length of a null buffer
    h.ret(&[0]);
    let context = load_with(&[f, g, h], Limits::default(), |def| {
        asm::rodata(def, &[1, 0, 0, 0, 2, 0, 0, 0])
    })
    .unwrap();
    assert_eq!(
        trap_kind(context.call("t.f", &[Value::I64(0)])),
        TrapKind::ReadOnly
    );
    assert_eq!(
        context.call("t.g", &[Value::I64(1)]).unwrap(),
        [Value::I32(2)]
    );
    assert_eq!(
        trap_kind(context.call("t.g", &[Value::I64(2)])),
        TrapKind::OutOfRange
    );
    assert_eq!(
        trap_kind(context.call("t.g", &[Value::I64(-1)])),
        TrapKind::OutOfRange
    );
    assert_eq!(
        trap_kind(context.call("t.g", &[Value::I64(i64::MAX)])),
        TrapKind::OutOfRange
    );
    assert_eq!(trap_kind(context.call("t.h", &[])), TrapKind::NullReference);
}

#[test]
fn huge_allocations_hit_the_memory_budget() {
    let mut f = Func::new("f", "0I_v", 4, 1);
    f.block();
    f.const_i32(0, 2);
    f.op(0x6C).r(0).r(2).r(R);
    f.ret(&[]);
    let mut g = Func::new("g", "0i_v", 4, 1);
    g.block();
    g.op(0x12).u32(asm::TY_LIST).r(0).r(R); // list.alloc capacity i
    g.ret(&[]);
    let context = load(&[f, g]).unwrap();
    context.call("t.f", &[Value::I64(1 << 20)]).unwrap();
    for args in [[Value::I64(1 << 40)], [Value::I64(-1)]] {
        match context.call("t.f", &args) {
            Err(VmError::BudgetExhausted {
                kind: BudgetKind::Memory,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(
        context.call("t.g", &[Value::I32(-1)]),
        Err(VmError::BudgetExhausted {
            kind: BudgetKind::Memory,
            ..
        })
    ));
    assert_eq!(context.memory_budget().unwrap().used(), 16 + 2 * 24);
}

#[test]
fn lists_convert_like_the_reference() {
    // list<i8>: resize 2, set.i32 [0] = 300, [1] = 200; get both; get.i64 [1]; size.
    let mut f = Func::new("f", "0v_iiIi", 16, 2);
    f.block();
    f.const_i32(2, 0);
    f.op(0x12).u32(asm::TY_LIST).r(0).r(R); // typed list<i32> by the table... use i8 below
    f.op(0x15).r(R).r(0); // resize 2
    f.const_i32(0, 1)
        .const_i32(300, 2)
        .const_i32(1, 3)
        .const_i32(200, 4);
    f.op(0x17).r(R).r(1).r(2);
    f.op(0x17).r(R).r(3).r(4);
    f.op(0x16).r(R).r(1).r(5);
    f.op(0x16).r(R).r(3).r(6);
    f.op(0x18).r(R).r(3).r(8);
    f.op(0x14).r(R).r(7);
    f.ret(&[5, 6, 8, 7]);
    let context = load_with(&[f], Limits::default(), |def| {
        def.types[asm::TY_LIST as usize] = "i8".into()
    })
    .unwrap();
    assert_eq!(
        context.call("t.f", &[]).unwrap(),
        [
            Value::I32(44),
            Value::I32(-56),
            Value::I64(-56),
            Value::I32(2)
        ]
    );
}

/// A list access that fails (an index out of range, a null list) is reported at its own
/// instruction and writes nothing, and the accesses that succeed give their values (the fast
/// loop runs list accesses on their success path only).
#[test]
fn a_failed_list_access_is_reported_at_its_instruction() {
    // f(i, j): a list<i32> of 2; [0] = 7; [i] = 9; returns [j] and [0].
    let mut f = Func::new("f", "0ii_ii", 8, 2);
    f.block();
    f.const_i32(2, 2);
    f.op(0x12).u32(asm::TY_LIST).r(2).r(R);
    f.op(0x15).r(R).r(2);
    f.const_i32(0, 3).const_i32(7, 4).const_i32(9, 5);
    f.op(0x17).r(R).r(3).r(4);
    let set_at = f.pc();
    f.op(0x17).r(R).r(0).r(5);
    let get_at = f.pc();
    f.op(0x16).r(R).r(1).r(6);
    f.op(0x16).r(R).r(3).r(7);
    f.ret(&[6, 7]);
    // g(): get [0] of a null list.
    let mut g = Func::new("g", "0v_i", 2, 2);
    g.block();
    g.const_i32(0, 0);
    let null_at = g.pc();
    g.op(0x16).r(R).r(0).r(1);
    g.ret(&[1]);
    let context = load_with(&[f, g], Limits::default(), |def| {
        def.types[asm::TY_LIST as usize] = "i32".into()
    })
    .unwrap();
    assert_eq!(
        context
            .call("t.f", &[Value::I32(1), Value::I32(1)])
            .unwrap(),
        [Value::I32(9), Value::I32(7)]
    );
    let trap = |name: &str, args: &[Value]| match context.call(name, args) {
        Err(VmError::Trap { kind, location, .. }) => (kind, location.pc),
        other => panic!("expected a trap, got {other:?}"),
    };
    assert_eq!(
        trap("t.f", &[Value::I32(2), Value::I32(0)]),
        (TrapKind::OutOfRange, set_at)
    );
    assert_eq!(
        trap("t.f", &[Value::I32(0), Value::I32(-1)]),
        (TrapKind::OutOfRange, get_at)
    );
    assert_eq!(trap("t.g", &[]), (TrapKind::NullReference, null_at));
}

#[test]
fn ref_globals_are_type_checked_and_moves_clear_registers() {
    // %r0 = rodata 0; global.store.ref [0] (type buffer) %r0 MOVE; cmp.nz %r0 -> 0;
    // global.load.ref [0] -> %r1; cmp.nz -> 1; store into a list-typed global: trap.
    let mut f = Func::new("f", "0v_ii", 4, 2);
    f.block();
    f.op(0x11).u32(0).r(R);
    f.op(0x09).u32(0).u32(asm::TY_BUFFER).r(R | MV);
    f.op(0x55).r(R).r(0);
    f.op(0x08).u32(0).u32(asm::TY_BUFFER).r(R | 1);
    f.op(0x55).r(R | 1).r(1);
    f.ret(&[0, 1]);
    let mut g = Func::new("g", "0v_v", 4, 2);
    g.block();
    g.op(0x11).u32(0).r(R);
    g.op(0x09).u32(1).u32(asm::TY_LIST).r(R);
    g.ret(&[]);
    let context = load_with(&[f, g], Limits::default(), |def| asm::rodata(def, b"data")).unwrap();
    assert_eq!(
        context.call("t.f", &[]).unwrap(),
        [Value::I32(0), Value::I32(1)]
    );
    assert_eq!(trap_kind(context.call("t.g", &[])), TrapKind::TypeMismatch);
}

#[test]
fn natives_receive_variadic_spans_as_a_count_and_the_tuples() {
    let mut f = Func::new("f", "0iii_i", 4, 0);
    f.block();
    f.op(0x59)
        .u32(0x8000_0001)
        .list(&[3])
        .list(&[0, 1, 2])
        .list(&[3]);
    f.ret(&[3]);
    let mut def = asm::module("t", &[f]);
    asm::import(&mut def, "optional_ext.frob", "0i_i", false);
    asm::import(&mut def, "optional_ext.sum", "0CiD_i", false);
    let mut context = Context::new(Limits::default());
    context.register_native(Arc::new(frob())).unwrap();
    context.load_bytecode(asm::bytes(&def)).unwrap();
    assert_eq!(
        context
            .call("t.f", &[Value::I32(1), Value::I32(2), Value::I32(39)])
            .unwrap(),
        [Value::I32(42)]
    );
}

#[test]
fn imports_link_against_earlier_bytecode_modules() {
    let mut f = Func::new("twice_bump", "0v_i", 2, 0);
    f.block();
    f.call(0x8000_0000, &[], &[0])
        .call(0x8000_0000, &[], &[1])
        .bin(0x22, 0, 1, 0)
        .ret(&[0]);
    let mut def = asm::module("user", &[f]);
    asm::import(&mut def, "vm_direct.bump", "0v_i", false);
    let mut context = Context::new(Limits::default());
    // Registered first, the import cannot resolve.
    match context.load_bytecode(asm::bytes(&def)) {
        Err(VmError::Link {
            error: pactum_iree::vm::LinkError::UnresolvedImport(name),
            ..
        }) => assert_eq!(name, "vm_direct.bump"),
        other => panic!("{other:?}"),
    }
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    context.load_bytecode(asm::bytes(&def)).unwrap();
    assert_eq!(
        context.call("user.twice_bump", &[]).unwrap(),
        [Value::I32(3)]
    );
    assert_eq!(
        context.call("vm_direct.bump", &[]).unwrap(),
        [Value::I32(3)]
    );
    // A signature mismatch is refused.
    let mut def2 = asm::module("user2", &[]);
    asm::import(&mut def2, "vm_direct.bump", "0i_i", false);
    let err = context.load_bytecode(asm::bytes(&def2)).unwrap_err();
    assert!(err.to_string().contains("calling convention"), "{err}");
}

#[test]
fn an_init_export_runs_at_load() {
    let mut init = Func::new("__init", "0v_v", 2, 0);
    init.block();
    init.const_i32(41, 0).op(0x01).u32(4).r(0).ret(&[]);
    let mut get = Func::new("get", "0v_i", 2, 0);
    get.block();
    get.op(0x00).u32(4).r(0).ret(&[0]);
    assert_eq!(run(&[init, get], "get", &[]).unwrap(), [Value::I32(41)]);
}

// -- Verifier refusals.

fn refusal(funcs: &[Func]) -> (VerifyRule, String) {
    match load(funcs) {
        Err(VmError::Verify {
            rule,
            function,
            offset,
            detail,
            ..
        }) => {
            let message = format!("{function} at {offset:#x}: {rule}: {detail}");
            eprintln!("REFUSED {message}");
            (rule, message)
        }
        Err(other) => panic!("expected a verification error, got {other}"),
        Ok(_) => panic!("expected a verification error, the module loaded"),
    }
}

#[test]
fn the_verifier_refuses_bad_registers() {
    // %i4 in a function of 2 (rounded to 2) registers.
    let mut f = Func::new("f", "0i_i", 2, 0);
    f.block();
    f.bin(0x22, 0, 4, 1).ret(&[1]);
    let (rule, message) = refusal(&[f]);
    assert_eq!(rule, VerifyRule::RegisterRange);
    assert!(message.starts_with("f at 0x1"), "{message}");
    // A ref register where an i32 is required.
    let mut f = Func::new("f", "0i_i", 2, 1);
    f.block();
    f.bin(0x22, 0, R, 1).ret(&[1]);
    assert_eq!(refusal(&[f]).0, VerifyRule::RegisterBank);
    // An odd i64 pair.
    let mut f = Func::new("f", "0I_I", 4, 0);
    f.block();
    f.bin(0x2A, 1, 0, 0).ret(&[0]);
    assert_eq!(refusal(&[f]).0, VerifyRule::RegisterAlignment);
    // MOVE on an operand that may not carry it (buffer.length's buffer).
    let mut f = Func::new("f", "0r_I", 2, 1);
    f.block();
    f.op(0x6E).r(R | MV).r(0).ret(&[0]);
    assert_eq!(refusal(&[f]).0, VerifyRule::MoveBit);
}

#[test]
fn the_verifier_refuses_bad_control_flow() {
    // A branch into the middle of a block.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.br(3);
    assert_eq!(refusal(&[f]).0, VerifyRule::BranchTarget);
    // A block without a terminator.
    let mut f = Func::new("f", "0v_i", 1, 0);
    f.block();
    f.const_i32(1, 0);
    assert_eq!(refusal(&[f]).0, VerifyRule::Terminator);
    // Code after a terminator that is not a block.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.ret(&[]).const_i32(1, 0).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::BlockMarker);
    // The wrong block count.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.ret(&[]);
    f.blocks = 2;
    assert_eq!(refusal(&[f]).0, VerifyRule::BlockCount);
    // An unknown opcode, and an ExtF64 instruction without the requirement.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.op(0x95).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::UnknownOpcode);
    let mut f = Func::new("f", "0v_v", 2, 0);
    f.requirements = 1;
    f.block();
    f.f64op(0x04).r(0).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::Extension);
    // Truncated.
    let mut f = Func::new("f", "0v_v", 2, 0);
    f.block();
    f.op(0x0D).u16(1);
    assert_eq!(refusal(&[f]).0, VerifyRule::Truncated);
}

#[test]
fn the_verifier_refuses_bad_calls_and_ordinals() {
    let mut callee = Func::new("callee", "0ii_i", 2, 0);
    callee.block();
    callee.ret(&[0]);
    // Wrong arity.
    let mut f = Func::new("f", "0i_i", 2, 0);
    f.block();
    f.call(0, &[0], &[1]).ret(&[1]);
    let (rule, message) = refusal(&[callee.clone(), f]);
    assert_eq!(rule, VerifyRule::CallSignature);
    assert!(message.contains("fewer"), "{message}");
    // A ref operand where the callee takes an i32.
    let mut f = Func::new("f", "0I_i", 4, 1);
    f.block();
    f.call(0, &[0, R], &[1]).ret(&[1]);
    assert_eq!(refusal(&[callee.clone(), f]).0, VerifyRule::CallSignature);
    // A function ordinal out of range.
    let mut f = Func::new("f", "0i_i", 2, 0);
    f.block();
    f.call(7, &[0, 0], &[1]).ret(&[1]);
    assert_eq!(refusal(&[callee.clone(), f]).0, VerifyRule::CalleeOrdinal);
    // A return that does not match the results.
    let mut f = Func::new("f", "0v_I", 2, 0);
    f.block();
    f.ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::ReturnSignature);
    // Type ids, global offsets (+8 for i64), rodata ordinals.
    let mut f = Func::new("f", "0v_v", 2, 1);
    f.block();
    f.op(0x12).u32(99).r(0).r(R).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::TypeId);
    let mut f = Func::new("f", "0v_v", 2, 0);
    f.block();
    f.op(0x04).u32(12).r(0).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::GlobalOffset);
    let mut f = Func::new("f", "0v_v", 2, 0);
    f.block();
    f.f64op(0x00).u32(12).r(0).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::GlobalOffset);
    let mut f = Func::new("f", "0v_v", 2, 1);
    f.block();
    f.op(0x11).u32(0).r(R).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::RodataOrdinal);
    // Arguments that do not fit the registers.
    let mut f = Func::new("f", "0III_v", 2, 0);
    f.block();
    f.ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::CallingConvention);
    // call.variadic to an internal function.
    let mut f = Func::new("f", "0ii_i", 2, 0);
    f.block();
    f.op(0x59)
        .u32(0)
        .list(&[0xFFFF, 0xFFFF])
        .list(&[0, 1])
        .list(&[0])
        .ret(&[0]);
    assert_eq!(refusal(&[callee, f]).0, VerifyRule::Variadic);
}

#[test]
fn a_context_is_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Value>();
    let mut context = Context::new(Limits::default());
    context
        .load_bytecode(VmfbFile::open(fixture("vm_direct.vmfb")).unwrap())
        .unwrap();
    let bump = context.lookup_export("vm_direct.bump").unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..100 {
                    context.invoke(&bump, &[]).unwrap();
                }
            });
        }
    });
    // Relaxed byte stores: concurrent increments may be lost, never torn into garbage.
    let now = context.invoke(&bump, &[]).unwrap()[0].as_i32().unwrap();
    assert!((2..=401).contains(&now), "{now}");
}

/// Every function of every fixture IREE compiled passes the verifier; modules that import
/// the HAL stop at linking (no `hal` module is registered here).
#[test]
fn every_compiled_fixture_verifies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "vmfb") {
            continue;
        }
        let file = VmfbFile::open(&path).unwrap();
        let types: Vec<String> = file.module().unwrap().types().map(str::to_owned).collect();
        let mut context = Context::new(Limits::default());
        for ty in &types {
            if let Some(name) = ty.strip_prefix('!').filter(|n| !n.starts_with("vm.")) {
                context.register_ref_type(name);
            }
        }
        match context.load_bytecode(file) {
            Ok(_) => {}
            Err(VmError::Link { error, .. }) => {
                assert!(
                    matches!(
                        error,
                        pactum_iree::vm::LinkError::UnresolvedImport(_)
                            | pactum_iree::vm::LinkError::Dependency { .. }
                    ),
                    "{}: {error}",
                    path.display()
                );
            }
            Err(other) => panic!("{}: {other}", path.display()),
        }
        checked += 1;
    }
    assert!(checked >= 9);
}

/// `__deinit` runs when the context is dropped: here it calls a native function that records
/// the call.
#[test]
fn deinit_runs_when_the_context_is_dropped() {
    use std::sync::atomic::{AtomicI32, Ordering};
    static SEEN: AtomicI32 = AtomicI32::new(0);
    let probe = NativeModuleBuilder::new("probe", 0)
        .function("seen", "0i_v", |_: &(), value: i32| {
            SEEN.store(value, Ordering::SeqCst);
            Ok(())
        })
        .build(());
    let mut deinit = Func::new("__deinit", "0v_v", 2, 0);
    deinit.block();
    deinit
        .const_i32(77, 0)
        .call(0x8000_0000, &[0], &[])
        .ret(&[]);
    let mut def = asm::module("t", &[deinit]);
    asm::import(&mut def, "probe.seen", "0i_v", false);
    let mut context = Context::new(Limits::default());
    context.register_native(Arc::new(probe)).unwrap();
    context.load_bytecode(asm::bytes(&def)).unwrap();
    assert_eq!(SEEN.load(Ordering::SeqCst), 0);
    drop(context);
    assert_eq!(SEEN.load(Ordering::SeqCst), 77);
}

#[test]
fn the_verifier_refuses_bad_descriptors_and_globals() {
    // No blocks.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.ret(&[]);
    f.blocks = 0;
    assert_eq!(refusal(&[f]).0, VerifyRule::Descriptor);
    // A requirement bit the VM does not know.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.requirements = 0x13;
    f.block();
    f.ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::Requirements);
    // 0x4001 i32 registers round up to 0x8000, past the limit.
    let mut f = Func::new("f", "0v_v", 0x4001, 0);
    f.block();
    f.ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::RegisterCount);
    // A ref global past the module's two.
    let mut f = Func::new("f", "0v_v", 1, 1);
    f.block();
    f.op(0x08).u32(2).u32(asm::TY_BUFFER).r(R).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::GlobalRef);
    // import.resolved of an internal ordinal.
    let mut f = Func::new("f", "0v_i", 1, 0);
    f.block();
    f.op(0x5C).u32(0).r(0).ret(&[0]);
    assert_eq!(refusal(&[f]).0, VerifyRule::CalleeOrdinal);
    // discard.refs of an i32 register.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.op(0x85).list(&[0]).ret(&[]);
    assert_eq!(refusal(&[f]).0, VerifyRule::RegisterBank);
    // A remap between banks.
    let mut f = Func::new("f", "0v_v", 2, 1);
    let b = f.block();
    f.op(0x56).u32(b);
    f.remap(&[(0, R)]);
    assert_eq!(refusal(&[f]).0, VerifyRule::RegisterBank);
}

#[test]
fn load_errors_name_what_is_missing() {
    // An unregistered reference type.
    let mut f = Func::new("f", "0v_v", 1, 0);
    f.block();
    f.ret(&[]);
    let err = load_with(&[f.clone()], Limits::default(), |def| {
        def.types.push("!hal.fence".into())
    })
    .unwrap_err();
    assert!(
        matches!(&err, VmError::Link { error: pactum_iree::vm::LinkError::UnknownType(t), .. } if t == "!hal.fence"),
        "{err}"
    );
    // A bytecode version from the future.
    let err = load_with(&[f.clone()], Limits::default(), |def| {
        def.bytecode_version = 18 << 16
    })
    .unwrap_err();
    assert!(err.to_string().contains("bytecode version 18.0"), "{err}");
    // A required dependency that is not registered, and one too old.
    let err = load_with(&[f.clone()], Limits::default(), |def| {
        def.dependencies.push(pactum_iree::vmfb::DependencyDef {
            name: "hal".into(),
            minimum_version: 5,
            flags: 1,
        })
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"hal\" (version >= 5), which is not registered"),
        "{err}"
    );
    // Globals larger than the memory budget.
    let limits = Limits {
        memory: Some(1024),
        ..Limits::default()
    };
    let err = load_with(&[f], limits, |def| {
        def.module_state = Some(pactum_iree::vmfb::ModuleStateDef {
            global_bytes_capacity: 1 << 20,
            global_ref_count: 0,
        })
    })
    .unwrap_err();
    assert!(err.to_string().contains("memory budget"), "{err}");
}

/// `vm.yield` suspends an invocation until the host resumes it; pactum's hosts are
/// synchronous, so it resumes at once: its remap, then its target. A loop whose back edge is
/// a yield computes what the same loop with a branch computes, and still stops on fuel.
#[test]
fn yield_resumes_at_once_on_a_synchronous_host() {
    // sum(n): s = 0; while n != 0 { s += n; n -= 1 }, the back edge a `br` (0x56) or a
    // `yield` (0x5D), the loop state in registers 1 (s) and 0 (n).
    let sum = |back_edge: u8| -> Vec<u8> {
        let mut f = Func::new("sum", "0i_i", 8, 0);
        f.block();
        f.const_i32(0, 1).const_i32(1, 2);
        let to_head = f.br(0);
        let head = f.block();
        f.patch(to_head, head);
        // more = (n != 0) (cmp.nz.i32); if more -> body else -> exit
        f.op(0x4D).r(0).r(3);
        f.op(0x57).r(3);
        let to_body = f.target(0);
        f.remap(&[]);
        let to_exit = f.target(0);
        f.remap(&[]);
        let body = f.block();
        f.patch(to_body, body);
        f.bin(0x22, 1, 0, 1).bin(0x23, 0, 2, 0);
        f.op(back_edge);
        let back = f.target(head);
        f.remap(&[]);
        let _ = back;
        let exit = f.block();
        f.patch(to_exit, exit);
        f.ret(&[1]);
        asm::bytes(&asm::module("y", &[f]))
    };
    let run = |bytes: Vec<u8>, n: i32, limits: Limits| {
        let mut context = Context::new(limits);
        context.load_bytecode(bytes).unwrap();
        context.call("y.sum", &[Value::I32(n)])
    };
    for n in [0, 1, 10, 1000] {
        let yielding = run(sum(0x5D), n, Limits::default()).unwrap();
        assert_eq!(
            yielding,
            run(sum(0x56), n, Limits::default()).unwrap(),
            "sum({n})"
        );
        assert_eq!(yielding, [Value::I32(n * (n + 1) / 2)], "sum({n})");
    }
    let error = run(sum(0x5D), 1_000_000, Limits::with_fuel(10_000)).unwrap_err();
    assert!(
        error.to_string().contains("fuel") || error.to_string().contains("instruction"),
        "{error}"
    );
}

/// `(n: i64) -> i32`: a vmvx-style loop over a 16-byte buffer holding the i32s 1, 2, 3, 4:
/// for `i` in `0..n`, load element `i` and add it to a sum. Returns the function and the pc of
/// its `buffer.load.i32`.
fn buffer_loop() -> (Func, u32) {
    let mut f = Func::new("walk", "0I_i", 16, 1);
    f.block();
    f.const_i64(16, 2).const_i32(0, 4);
    f.op(0x6C).r(2).r(4).r(R); // %r0 = buffer.alloc 16
    for element in 0..4 {
        f.const_i64(element, 6).const_i32(element as i32 + 1, 12);
        f.op(0x6A).r(R).r(6).r(12); // buffer.store.i32 %r0[element] = element + 1
    }
    f.const_i64(0, 6).const_i64(1, 8).const_i32(0, 10);
    let to_head = f.br(0);
    let head = f.block();
    f.patch(to_head, head);
    f.bin(0x50, 6, 0, 13); // cmp.lt.i64.s i, n
    f.op(0x57).r(13);
    let to_body = f.target(0);
    f.remap(&[]);
    let to_exit = f.target(0);
    f.remap(&[]);
    let body = f.block();
    f.patch(to_body, body);
    let load = f.pc();
    f.op(0x66).r(R).r(6).r(11); // buffer.load.i32 %r0[i]
    f.bin(0x22, 10, 11, 10); // sum += loaded
    f.bin(0x2A, 6, 8, 6); // i += 1
    f.br(head);
    let exit = f.block();
    f.patch(to_exit, exit);
    f.ret(&[10]);
    (f, load)
}

#[test]
fn a_buffer_loop_running_out_of_its_buffer_traps_at_the_load() {
    let (f, load) = buffer_loop();
    let context = load_with(&[f], Limits::default(), |_| {}).unwrap();
    assert_eq!(
        context.call("t.walk", &[Value::I64(4)]).unwrap(),
        [Value::I32(10)]
    );
    // The fifth trip loads element 4: bytes 16..20 of 16.
    match context.call("t.walk", &[Value::I64(6)]) {
        Err(VmError::Trap {
            kind,
            detail,
            location,
        }) => {
            assert_eq!(kind, TrapKind::OutOfRange);
            assert_eq!(
                detail,
                "byte range 16..16+4 is outside the buffer of 16 bytes"
            );
            assert_eq!(location.pc, load, "{location}");
            assert_eq!(location.function.to_string(), "walk");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[test]
fn buffer_loads_and_stores_of_every_width_read_and_write_the_same_bytes() {
    // alloc 16; store.i8 [1] = 0x1FF; store.i16 [1] = 0x18081; store.i32 [1] = 0x89ABCDEF;
    // store.i64 [1] = 0x0123456789ABCDEF; load every width back, and element 0 as i32.
    let mut f = Func::new("f", "0v_iiiiiIi", 40, 1);
    f.block();
    f.const_i64(16, 0).const_i32(0, 2);
    f.op(0x6C).r(0).r(2).r(R);
    f.const_i64(1, 4).const_i64(0, 6);
    f.const_i32(0x1FF, 8)
        .const_i32(0x18081, 9)
        .const_i32(0x89AB_CDEFu32 as i32, 10);
    f.const_i64(0x0123_4567_89AB_CDEF, 12);
    f.op(0x68).r(R).r(4).r(8); // store.i8 [1]
    f.op(0x69).r(R).r(4).r(9); // store.i16 [1]
    f.op(0x6A).r(R).r(4).r(10); // store.i32 [1]
    f.op(0x6B).r(R).r(4).r(12); // store.i64 [1]
    f.op(0x62).r(R).r(4).r(20); // load.i8.u [1]
    f.op(0x63).r(R).r(4).r(21); // load.i8.s [1]
    f.op(0x64).r(R).r(4).r(22); // load.i16.u [1]
    f.op(0x65).r(R).r(4).r(23); // load.i16.s [1]
    f.op(0x66).r(R).r(4).r(24); // load.i32 [1]
    f.op(0x67).r(R).r(4).r(26); // load.i64 [1]
    f.op(0x66).r(R).r(6).r(28); // load.i32 [0]
    f.ret(&[20, 21, 22, 23, 24, 26, 28]);
    assert_eq!(
        run(&[f], "f", &[]).unwrap(),
        [
            Value::I32(0xFF),
            Value::I32(-1),
            Value::I32(0x8081),
            Value::I32(0x8081u16 as i16 as i32),
            Value::I32(0x89AB_CDEFu32 as i32),
            Value::I64(0x0123_4567_89AB_CDEF),
            Value::I32(0x8081_FF00u32 as i32),
        ]
    );
}
