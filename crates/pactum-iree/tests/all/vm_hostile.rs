//! Hostile modules for the VM: every byte of vm_direct.vmfb's bytecode (and every byte of the
//! file once) mutated, loaded, verified and run under a fuel budget. A refusal or a trap is
//! fine; a panic, a hang or an unbounded allocation is not.

use std::path::Path;
use std::time::Instant;

use pactum_testing::hostile::{LIMIT, Stopwatch};

use pactum_iree::vm::{Context, Limits, Value};
use pactum_iree::vmfb::VmfbFile;

use crate::asm;

fn try_module(bytes: Vec<u8>) -> (bool, usize) {
    let limits = Limits {
        fuel: Some(10_000),
        memory: Some(1 << 20),
        ..Limits::default()
    };
    let mut context = Context::new(limits);
    if context.load_bytecode(bytes).is_err() {
        return (false, 0);
    }
    let mut ran = 0;
    let calls: [(&str, Vec<Value>); 4] = [
        (
            "mix",
            vec![
                Value::I32(1),
                Value::I64(2),
                Value::F32(1.5),
                Value::F64(0.25),
            ],
        ),
        ("frob_or_double", vec![Value::I32(21)]),
        ("bump", vec![]),
        ("rodata_sizes", vec![]),
    ];
    for (name, args) in calls {
        // The mutation may have renamed the module or changed signatures.
        for module in ["vm_direct"] {
            if let Ok(f) = context.lookup_export(&format!("{module}.{name}")) {
                let _ = context.invoke(&f, &args);
                ran += 1;
            }
        }
    }
    (true, ran)
}

#[test]
fn mutated_modules_never_panic_or_hang() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb/vm_direct.vmfb");
    let original = std::fs::read(&path).unwrap();
    let file = VmfbFile::from_bytes(original.clone());
    let module = file.module().unwrap();
    let code = module.bytecode_data();
    let start = code.as_ptr() as usize - file.bytes().as_ptr() as usize;
    let range = start..start + code.len();
    let started = Instant::now();
    let (mut loaded, mut mutations, mut calls) = (0, 0, 0);
    let mut check = |bytes: Vec<u8>, what: &str| {
        let one = Stopwatch::start();
        let (ok, ran) = try_module(bytes);
        one.assert_within(what, LIMIT);
        mutations += 1;
        loaded += usize::from(ok);
        calls += ran;
    };
    for at in range.clone() {
        let b = original[at];
        for value in [
            0x00,
            0xFF,
            0x79,
            0x80,
            b ^ 0x01,
            b.wrapping_add(1),
            b ^ 0x40,
        ] {
            if value == b {
                continue;
            }
            let mut bytes = original.clone();
            bytes[at] = value;
            check(bytes, &format!("bytecode byte {at:#x} = {value:#04x}"));
        }
    }
    for at in 0..original.len() {
        let mut bytes = original.clone();
        bytes[at] ^= 0xFF;
        check(bytes, &format!("file byte {at:#x} inverted"));
    }
    eprintln!(
        "{mutations} mutations ({} bytecode bytes): {loaded} loaded, {calls} calls ran, in {:?}",
        range.len(),
        started.elapsed()
    );
    assert!(loaded > 0 && calls > 0);
}

/// A function using buffers, lists, globals, calls and branches, every byte of its code
/// mutated (several values each), verified and run.
#[test]
fn mutated_hand_assembled_programs_never_panic_or_hang() {
    use asm::{Func, MV, R};
    let mut f = Func::new("f", "0I_iI", 24, 4);
    f.block();
    f.const_i64(64, 2).const_i32(0, 4);
    f.op(0x6C).r(2).r(4).r(R); // buffer.alloc
    f.op(0x6A).r(R).r(0).r(4); // store.i32 [arg]
    f.op(0x84).r(R).r(0).r(2).r(6); // hash
    f.op(0x12).u32(asm::TY_OPAQUE).r(4).r(R | 1); // variant list
    f.const_i32(4, 8);
    f.op(0x15).r(R | 1).r(8); // resize
    f.op(0x1B).r(R | 1).r(4).r(R | MV); // list.set.ref [0] = buffer (moved)
    f.op(0x1A).r(R | 1).r(4).u32(asm::TY_BUFFER).r(R | 2); // get it back
    f.op(0x09).u32(0).u32(asm::TY_BUFFER).r(R | 2); // global.store.ref
    f.op(0x02).r(4).r(9); // global.load.indirect.i32
    f.call(1, &[9], &[10]);
    f.op(0x57).r(10);
    let t = f.target(0);
    f.remap(&[]);
    let e = f.target(0);
    f.remap(&[(10, 11)]);
    let b1 = f.block();
    f.patch(e, b1);
    f.ret(&[11, 6]);
    let b2 = f.block();
    f.patch(t, b2);
    f.op(0x5B).r(10).str("failed");
    let mut g = Func::new("g", "0i_i", 4, 0);
    g.block();
    g.bin(0x22, 0, 0, 1).ret(&[1]);
    let original = asm::module("t", &[f, g]);
    let code_len = original.function_descriptors[0].bytecode_length as usize;
    let limits = Limits {
        fuel: Some(10_000),
        memory: Some(1 << 20),
        ..Limits::default()
    };
    let (mut mutations, mut loaded) = (0, 0);
    for at in 0..code_len {
        let b = original.bytecode_data[at];
        for value in [
            0x00,
            0xFF,
            0x79,
            0x80,
            0x7F,
            0x40,
            b ^ 0x01,
            b ^ 0x80,
            b.wrapping_add(2),
        ] {
            let mut def = original.clone();
            def.bytecode_data[at] = value;
            let mut context = Context::new(limits.clone());
            mutations += 1;
            let one = Stopwatch::start();
            if context.load_bytecode(asm::bytes(&def)).is_ok() {
                loaded += 1;
                for arg in [0, 1, -1, 15, 16, i64::MAX] {
                    let _ = context.call("t.f", &[Value::I64(arg)]);
                }
            }
            one.assert_within(&format!("byte {at} = {value:#04x}"), LIMIT);
        }
    }
    // The unmutated program runs.
    let mut context = Context::new(limits);
    context.load_bytecode(asm::bytes(&original)).unwrap();
    let results = context.call("t.f", &[Value::I64(0)]).unwrap();
    assert_eq!(results[0], Value::I32(0));
    eprintln!("{mutations} mutations of {code_len} bytes: {loaded} loaded");
}

/// Found by the vm_load fuzz target: a module whose name holds a '.' loaded, but none of its
/// exports could be named (`module.function` splits at the first '.'). It is refused at load.
#[test]
fn module_names_with_a_dot_are_refused_at_load() {
    use pactum_iree::vm::{Context, Limits, LinkError, VmError};
    use pactum_iree::vmfb::{BytecodeModule, Container, ModuleDef};
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vmfb/vm_direct.vmfb");
    let bytes = std::fs::read(path).unwrap();
    let mut def = ModuleDef::from_module(&BytecodeModule::parse(&bytes).unwrap()).unwrap();
    for name in ["vm.direct", "a.b.c"] {
        def.name = name.to_owned();
        let renamed = def.write(Container::FlatBuffer);
        let error = Context::new(Limits::default())
            .load_bytecode(renamed)
            .unwrap_err();
        assert!(
            matches!(&error, VmError::Link { error: LinkError::BadModuleName(n), .. } if n == name),
            "{error}"
        );
    }
}

/// The fast loop reads registers and fetches instructions without bounds checks, relying on
/// what the verifier proved at load: every register operand is inside the function's window,
/// and every branch lands on an instruction of the function. Modules that break either are
/// refused at load, whatever the operand's value (just past the window, or the largest one the
/// encoding holds).
#[test]
fn registers_past_the_window_and_branches_out_of_the_function_are_refused_at_load() {
    use asm::Func;
    use pactum_iree::vm::{VerifyRule, VmError};
    fn refusal(f: Func) -> VerifyRule {
        match Context::new(Limits::default()).load_bytecode(asm::bytes(&asm::module("t", &[f]))) {
            Err(VmError::Verify { rule, .. }) => rule,
            Err(other) => panic!("expected a verification error, got {other}"),
            Ok(_) => panic!("expected a verification error, the module loaded"),
        }
    }
    // An i32 operand (source or destination) at the window's size and at the largest index.
    for reg in [4, 5, 0x7FFF] {
        for (a, d) in [(reg, 1), (0, reg)] {
            let mut f = Func::new("f", "0i_i", 4, 0);
            f.block();
            f.bin(0x22, a, 0, d).ret(&[1]);
            assert_eq!(refusal(f), VerifyRule::RegisterRange, "register {reg}");
        }
    }
    // An i64 pair whose high half is past the window (window of 4: the pair 4-5), and one at the
    // largest even index.
    for pair in [4, 0x7FFE] {
        let mut f = Func::new("f", "0I_I", 4, 0);
        f.block();
        f.bin(0x2A, pair, 0, 0).ret(&[0]);
        assert_eq!(refusal(f), VerifyRule::RegisterRange, "pair {pair}");
    }
    // Branches into the branch itself (not a block), past the end of the code, and far past it.
    for target in [1, 9, 1000, u32::MAX] {
        let mut f = Func::new("f", "0v_v", 1, 0);
        f.block();
        f.br(target);
        assert_eq!(refusal(f), VerifyRule::BranchTarget, "target {target}");
    }
}
