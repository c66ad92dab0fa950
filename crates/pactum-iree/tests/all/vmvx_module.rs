//! The `vmvx` module (the microkernels of vmvx executables compiled with
//! `--iree-vmvx-enable-microkernels`): its export table against IREE 3.13's, which exports the
//! compiler's output exercises (the fixtures `vmvx_ukernels.vmfb` and `vmvx_mmt4d.vmfb`, whose
//! runs `hal_manifest.rs` compares with iree-run-module), the two exports the compiler never
//! emits, and refusals of calls that do not fit their buffers.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pactum_iree::hal::{executables_in_vmfb, vmvx_module};
use pactum_iree::vm::{
    ByteSource, Context, Limits, NativeModule, Ref, StatusCode, Value, VmBuffer, VmError,
};
use pactum_iree::vmfb::VmfbFile;
use pactum_testing::hostile::Stopwatch;
use pactum_testing::iree::fixtures_dir;

/// IREE 3.13's export table (`runtime/src/iree/modules/vmvx/exports.inl`): name and calling
/// convention, in order.
const IREE_EXPORTS: &[(&str, &str)] = &[
    ("abs.2d.f32", "0rIIIrIIIII_v"),
    ("add.2d.f32", "0rIIIrIIIrIIIII_v"),
    ("add.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("and.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("ceil.2d.f32", "0rIIIrIIIII_v"),
    ("copy.2d.x16", "0rIIIrIIIII_v"),
    ("copy.2d.x32", "0rIIIrIIIII_v"),
    ("copy.2d.x64", "0rIIIrIIIII_v"),
    ("copy.2d.x8", "0rIIIrIIIII_v"),
    ("ctlz.2d.i32", "0rIIIrIIIII_v"),
    ("div.2d.f32", "0rIIIrIIIrIIIII_v"),
    ("divs.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("divu.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("exp.2d.f32", "0rIIIrIIIII_v"),
    ("fill.2d.x32", "0irIIII_v"),
    ("floor.2d.f32", "0rIIIrIIIII_v"),
    ("log.2d.f32", "0rIIIrIIIII_v"),
    ("mmt4d", "0rIIrIIrIIIIIiiii_v"),
    ("mul.2d.f32", "0rIIIrIIIrIIIII_v"),
    ("mul.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("neg.2d.f32", "0rIIIrIIIII_v"),
    ("or.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("pack", "0rIIIrIIIIIIIIIIi_v"),
    ("query_tile_sizes.2d", "0IIi_II"),
    ("rsqrt.2d.f32", "0rIIIrIIIII_v"),
    ("shl.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("shrs.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("shru.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("sub.2d.f32", "0rIIIrIIIrIIIII_v"),
    ("sub.2d.i32", "0rIIIrIIIrIIIII_v"),
    ("unpack", "0rIIIrIIIIIIIIIi_v"),
    ("xor.2d.i32", "0rIIIrIIIrIIIII_v"),
];

/// Exports `iree-compile` 3.13 never emits: no lowering makes `vmvx.shru` (a right shift of
/// unsigned integers stays a VM loop) or `vmvx.query_tile_sizes.2d` (tile sizes are fixed at
/// compile time). They are tested directly below.
const NOT_EMITTED: &[&str] = &["query_tile_sizes.2d", "shru.2d.i32"];

fn context() -> Context {
    let mut context = Context::new(Limits::default());
    context.register_native(vmvx_module()).unwrap();
    context
}

fn buffer(bytes: &[u8]) -> Value {
    Value::Ref(Some(Ref::Buffer(Arc::new(VmBuffer::from_bytes(bytes)))))
}

fn words(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn read_words(value: &Value) -> Vec<u32> {
    let Value::Ref(Some(Ref::Buffer(buffer))) = value else {
        panic!("not a buffer: {value:?}")
    };
    buffer
        .to_vec()
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// A strided 2-D operand: buffer, offset, strides.
fn operand(buffer: &Value, offset: i64, strides: [i64; 2]) -> [Value; 4] {
    [
        buffer.clone(),
        Value::I64(offset),
        Value::I64(strides[0]),
        Value::I64(strides[1]),
    ]
}

fn binary_args(lhs: &Value, rhs: &Value, out: &Value, sizes: [i64; 2]) -> Vec<Value> {
    let mut args = Vec::new();
    args.extend(operand(lhs, 0, [sizes[1], 1]));
    args.extend(operand(rhs, 0, [sizes[1], 1]));
    args.extend(operand(out, 0, [sizes[1], 1]));
    args.extend([Value::I64(sizes[0]), Value::I64(sizes[1])]);
    args
}

fn status_of(result: Result<Vec<Value>, VmError>) -> (StatusCode, String) {
    let error = result.expect_err("the call must fail");
    (error.status(), error.to_string())
}

#[test]
fn the_module_exports_what_iree_3_13_exports() {
    let module = vmvx_module();
    assert_eq!(module.name(), "vmvx");
    assert_eq!(module.version(), 0);
    let ours: Vec<(&str, &str)> = module
        .functions()
        .iter()
        .map(|f| (f.name.as_ref(), f.cconv.as_ref()))
        .collect();
    assert_eq!(ours, IREE_EXPORTS);
    // The conventions are the ones the functions' Rust types imply.
    module.check_signatures().unwrap();
}

/// The `vmvx.*` imports of every executable of the microkernel fixtures.
fn imports_of_the_fixtures() -> BTreeSet<String> {
    let mut imports = BTreeSet::new();
    for fixture in ["vmvx_ukernels.vmfb", "vmvx_mmt4d.vmfb"] {
        let file = VmfbFile::open(fixtures_dir().join(fixture)).unwrap();
        let executables = executables_in_vmfb(&file).unwrap();
        assert!(!executables.is_empty(), "{fixture} has no executable");
        for executable in executables {
            assert_eq!(executable.format, "vmvx-bytecode-fb");
            let module = VmfbFile::from_bytes(executable.data);
            let module = module.module().unwrap();
            for import in module.imports() {
                if let Some(name) = import.full_name.strip_prefix("vmvx.") {
                    imports.insert(name.to_owned());
                }
            }
        }
    }
    imports
}

#[test]
fn the_fixtures_exercise_every_export_the_compiler_emits() {
    let imports = imports_of_the_fixtures();
    let exports: BTreeSet<String> = IREE_EXPORTS.iter().map(|(n, _)| n.to_string()).collect();
    let missing: Vec<&String> = exports.difference(&imports).collect();
    assert_eq!(missing, NOT_EMITTED, "exports no fixture imports");
    let unknown: Vec<&String> = imports.difference(&exports).collect();
    assert!(unknown.is_empty(), "imports the module lacks: {unknown:?}");
}

#[test]
fn shru_shifts_in_zeros_modulo_32() {
    let context = context();
    let a = [0x8000_0000u32, 0xffff_ffff, 12345, 7, 0xdead_beef, 1];
    let s = [31u32, 4, 0, 1, 32, 33];
    let out = buffer(&[0; 24]);
    let args = binary_args(&buffer(&words(&a)), &buffer(&words(&s)), &out, [2, 3]);
    context.call("vmvx.shru.2d.i32", &args).unwrap();
    let expected: Vec<u32> = a.iter().zip(&s).map(|(a, s)| a >> (s % 32)).collect();
    assert_eq!(read_words(&out), expected);
}

#[test]
fn query_tile_sizes_answers_the_portable_matmul_tiles() {
    let context = context();
    let query = |flags: i32| {
        context.call(
            "vmvx.query_tile_sizes.2d",
            &[Value::I64(100), Value::I64(200), Value::I32(flags)],
        )
    };
    // IREE's generic sizes (ukernel/query_tile_sizes.c): M 8, K 4, N 8, for every matmul.
    for operation in [0x100, 0x200, 0x300, 0x400, 0x500, 0x600] {
        assert_eq!(
            query(operation | 1).unwrap(),
            [Value::I64(8), Value::I64(4)]
        );
        assert_eq!(
            query(operation | 2).unwrap(),
            [Value::I64(8), Value::I64(4)]
        );
        assert_eq!(
            query(operation | 3).unwrap(),
            [Value::I64(8), Value::I64(8)]
        );
    }
    for flags in [0, 0x101 | 0x10000, 0x700 | 1, 0x104, 0x100] {
        let (status, message) = status_of(query(flags));
        assert_eq!(status, StatusCode::InvalidArgument, "{flags:#x}: {message}");
        assert!(message.contains("vmvx.query_tile_sizes.2d"), "{message}");
    }
}

#[test]
fn integer_division_by_zero_or_overflow_is_an_error_naming_the_element() {
    let context = context();
    for (function, lhs, rhs) in [
        ("vmvx.divs.2d.i32", [6u32, 7], [3u32, 0]),
        ("vmvx.divs.2d.i32", [6, i32::MIN as u32], [3, -1i32 as u32]),
        ("vmvx.divu.2d.i32", [6, 7], [3, 0]),
    ] {
        let out = buffer(&[0; 8]);
        let args = binary_args(&buffer(&words(&lhs)), &buffer(&words(&rhs)), &out, [1, 2]);
        let (status, message) = status_of(context.call(function, &args));
        assert_eq!(status, StatusCode::InvalidArgument, "{message}");
        assert!(
            message.contains(function) && message.contains("element [0, 1]"),
            "{message}"
        );
    }
}

#[test]
fn operands_outside_their_buffers_are_refused_before_anything_is_written() {
    let context = context();
    let data = words(&[1, 2, 3, 4, 5, 6]);
    let out = buffer(&[0xAA; 24]);
    // [out offset, lhs offset, lhs row stride]: each too far by one element.
    for (out_offset, lhs_offset, lhs_stride, operand_name) in
        [(1, 0, 3, "out"), (0, 1, 3, "lhs"), (0, 0, 4, "lhs")]
    {
        let mut args = Vec::new();
        args.extend(operand(&buffer(&data), lhs_offset, [lhs_stride, 1]));
        args.extend(operand(&buffer(&data), 0, [3, 1]));
        args.extend(operand(&out, out_offset, [3, 1]));
        args.extend([Value::I64(2), Value::I64(3)]);
        let (status, message) = status_of(context.call("vmvx.add.2d.i32", &args));
        assert_eq!(status, StatusCode::OutOfRange, "{message}");
        assert!(
            message.contains(&format!("vmvx.add.2d.i32: {operand_name}:")),
            "{message}"
        );
        assert_eq!(
            read_words(&out),
            [0xAAAA_AAAA; 6],
            "written before the refusal"
        );
    }
}

#[test]
fn hostile_sizes_strides_and_offsets_are_errors_not_panics() {
    let context = context();
    let data = buffer(&words(&[1, 2, 3, 4]));
    let out = buffer(&[0; 16]);
    let cases: &[(i64, [i64; 2], [i64; 2], StatusCode)] = &[
        (-1, [2, 1], [2, 2], StatusCode::InvalidArgument),
        (0, [-2, 1], [2, 2], StatusCode::InvalidArgument),
        (0, [2, 1], [-1, 2], StatusCode::InvalidArgument),
        (i64::MAX, [2, 1], [2, 2], StatusCode::OutOfRange),
        (0, [i64::MAX, 1], [2, 2], StatusCode::OutOfRange),
        (0, [2, i64::MAX], [2, 2], StatusCode::OutOfRange),
        (0, [0, 0], [i64::MAX, i64::MAX], StatusCode::OutOfRange),
        (0, [0, 0], [1 << 40, 1 << 40], StatusCode::OutOfRange),
    ];
    for &(offset, strides, sizes, status) in cases {
        let mut args = Vec::new();
        args.extend(operand(&data, offset, strides));
        args.extend(operand(&out, 0, [0, 0]));
        args.extend([Value::I64(sizes[0]), Value::I64(sizes[1])]);
        for function in ["vmvx.copy.2d.x32", "vmvx.exp.2d.f32"] {
            let (got, message) = status_of(context.call(function, &args));
            assert_eq!(
                got, status,
                "{function} {offset} {strides:?} {sizes:?}: {message}"
            );
        }
    }
    // An output of overlapping elements cannot make a call do more work than its buffer
    // holds: a zero-stride output of 2^40 x 2^40 elements is refused.
    let mut args = Vec::new();
    args.extend(operand(&data, 0, [0, 0]));
    args.extend(operand(&out, 0, [0, 0]));
    args.extend([Value::I64(1 << 40), Value::I64(1 << 40)]);
    let (status, message) = status_of(context.call("vmvx.copy.2d.x32", &args));
    assert_eq!(status, StatusCode::OutOfRange, "{message}");
}

#[test]
fn a_read_only_output_is_refused() {
    let context = context();
    let bytes: &'static [u8] = &[0; 16];
    let source: Arc<dyn ByteSource> = Arc::new(bytes);
    let read_only = Value::Ref(Some(Ref::Buffer(Arc::new(
        VmBuffer::read_only(source, 0..16).unwrap(),
    ))));
    let args = [
        Value::I32(7),
        read_only,
        Value::I64(0),
        Value::I64(2),
        Value::I64(2),
        Value::I64(2),
    ];
    let (status, message) = status_of(context.call("vmvx.fill.2d.x32", &args));
    assert_eq!(status, StatusCode::PermissionDenied, "{message}");
}

fn mmt4d_args(
    lhs: &Value,
    rhs: &Value,
    out: &Value,
    mnk: [i64; 3],
    tile: [i32; 3],
    flags: i32,
) -> Vec<Value> {
    let [m, n, k] = mnk;
    let [m0, n0, k0] = tile;
    let row = |b: &Value, stride: i64| [b.clone(), Value::I64(0), Value::I64(stride)];
    let mut args = Vec::new();
    args.extend(row(lhs, k * i64::from(m0 * k0)));
    args.extend(row(rhs, k * i64::from(n0 * k0)));
    args.extend(row(out, n * i64::from(m0 * n0)));
    args.extend([Value::I64(m), Value::I64(n), Value::I64(k)]);
    args.extend([
        Value::I32(m0),
        Value::I32(n0),
        Value::I32(k0),
        Value::I32(flags),
    ]);
    args
}

/// The f32 elementwise kernels flush subnormal operands and results to zero of their sign
/// (IREE's FTZ/DAZ dispatch threads), and `abs`/`neg` move bits only, element by element
/// over strided rows.
#[test]
fn elementwise_f32_kernels_flush_subnormals_and_abs_neg_move_bits() {
    let context = context();
    let tiny = f32::from_bits(0x0000_0001);
    let lhs = [
        1.5f32,
        tiny,
        -tiny,
        1e-20,
        3.0,
        -0.0,
        1e30,
        f32::NAN.copysign(-1.0),
    ];
    let rhs = [2.0f32, 1.0, 0.0, 1e-20, -tiny, 1.0, 1e30, 2.0];
    let flush = |x: f32| {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    let bits = |v: &[f32]| words(&v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    type Op = fn(f32, f32) -> f32;
    let ops: [(&str, Op); 4] = [
        ("add.2d.f32", |x, y| x + y),
        ("sub.2d.f32", |x, y| x - y),
        ("mul.2d.f32", |x, y| x * y),
        ("div.2d.f32", |x, y| x / y),
    ];
    for (name, op) in ops {
        let out = buffer(&[0; 32]);
        let args = binary_args(&buffer(&bits(&lhs)), &buffer(&bits(&rhs)), &out, [2, 4]);
        context.call(&format!("vmvx.{name}"), &args).unwrap();
        let expected: Vec<u32> = lhs
            .iter()
            .zip(&rhs)
            .map(|(&x, &y)| flush(op(flush(x), flush(y))).to_bits())
            .collect();
        assert_eq!(read_words(&out), expected, "{name}");
    }
    for (name, op) in [("abs.2d.f32", 0x7fff_ffffu32), ("neg.2d.f32", 0)] {
        let out = buffer(&[0; 32]);
        let mut args = Vec::new();
        args.extend(operand(&buffer(&bits(&lhs)), 0, [4, 1]));
        args.extend(operand(&out, 0, [4, 1]));
        args.extend([Value::I64(2), Value::I64(4)]);
        context.call(&format!("vmvx.{name}"), &args).unwrap();
        let expected: Vec<u32> = lhs
            .iter()
            .map(|x| match op {
                0 => x.to_bits() ^ 0x8000_0000,
                mask => x.to_bits() & mask,
            })
            .collect();
        assert_eq!(read_words(&out), expected, "{name}");
    }
}

/// `pack` of a strided 3x7 i32 input into 2x3 tiles, for each transposition flag: element
/// `[r, c]` lands in tile `[r / 2, c / 3]` (swapped by the outer flag) at `[r % 2, c % 3]`
/// (swapped by the inner flag), and the cells past the input hold the padding.
#[test]
fn pack_places_elements_tiles_and_padding_for_every_transposition() {
    let context = context();
    let (rows, cols, row_stride) = (3usize, 7usize, 9usize);
    let input: Vec<u32> = (0..rows * row_stride).map(|k| 100 + k as u32).collect();
    let padding = 0xdead_beef_u32;
    for flags in [0x03, 0x103, 0x203, 0x303] {
        let (outer_t, inner_t) = (flags & 0x200 != 0, flags & 0x100 != 0);
        let swap = |[a, b]: [usize; 2], yes: bool| if yes { [b, a] } else { [a, b] };
        let outer = swap([2, 3], outer_t);
        let tile = swap([2, 3], inner_t);
        let mut expected = Vec::new();
        for o0 in 0..outer[0] {
            for o1 in 0..outer[1] {
                for p0 in 0..tile[0] {
                    for p1 in 0..tile[1] {
                        let [i, j] = swap([o0, o1], outer_t);
                        let [a, b] = swap([p0, p1], inner_t);
                        let (r, c) = (i * 2 + a, j * 3 + b);
                        expected.push(if r < rows && c < cols {
                            input[r * row_stride + c]
                        } else {
                            padding
                        });
                    }
                }
            }
        }
        let out = buffer(&vec![0; expected.len() * 4]);
        let mut args = Vec::new();
        args.extend(operand(&buffer(&words(&input)), 0, [row_stride as i64, 1]));
        args.extend(operand(&out, 0, [(outer[1] * 6) as i64, 6]));
        args.extend(
            [rows, cols, outer[0], outer[1], tile[0], tile[1]].map(|v| Value::I64(v as i64)),
        );
        args.extend([Value::I64(i64::from(padding)), Value::I32(flags)]);
        context.call("vmvx.pack", &args).unwrap();
        assert_eq!(read_words(&out), expected, "flags 0x{flags:x}");
    }
}

/// f32 `mmt4d` gives the bits of IREE's generic tile function: per output cell, K steps
/// then K0, one multiply then one add each, subnormal operands, products and sums flushed
/// to zero of their sign; with the accumulate flag the sums start from the output's values.
#[test]
fn mmt4d_f32_sums_in_iree_order_with_subnormals_flushed() {
    let context = context();
    let (m, n, k, m0, n0, k0) = (2usize, 3usize, 3usize, 2usize, 5usize, 3usize);
    // Values of mixed magnitude (sums that depend on their order), a few subnormal, and
    // products small enough to be subnormal.
    let value = |seed: usize| -> f32 {
        match seed % 11 {
            0 => f32::from_bits(0x0000_0400 + seed as u32),
            1 => 1e-20 * (seed as f32 + 1.0),
            _ => ((seed * 7919 % 1013) as f32 - 500.0) * 10f32.powi((seed % 7) as i32 - 3),
        }
    };
    let lhs: Vec<f32> = (0..m * k * m0 * k0).map(|i| value(i * 3 + 1)).collect();
    let rhs: Vec<f32> = (0..n * k * n0 * k0).map(|i| value(i * 5 + 2)).collect();
    let start: Vec<f32> = (0..m * n * m0 * n0).map(|i| value(i * 7 + 3)).collect();
    let flush = |x: f32| {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    let bits = |v: &[f32]| words(&v.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    for accumulate in [false, true] {
        let mut expected = Vec::new();
        for i in 0..m {
            for j in 0..n {
                for i0 in 0..m0 {
                    for j0 in 0..n0 {
                        let cell = (i * n + j) * m0 * n0 + i0 * n0 + j0;
                        let mut acc = if accumulate { flush(start[cell]) } else { 0.0 };
                        for step in 0..k {
                            for c in 0..k0 {
                                let x = flush(lhs[((i * k + step) * m0 + i0) * k0 + c]);
                                let y = flush(rhs[((j * k + step) * n0 + j0) * k0 + c]);
                                acc = flush(acc + flush(x * y));
                            }
                        }
                        expected.push(acc.to_bits());
                    }
                }
            }
        }
        let out = buffer(&bits(&start));
        let flags = 1 | if accumulate { 0x100 } else { 0 };
        let args = mmt4d_args(
            &buffer(&bits(&lhs)),
            &buffer(&bits(&rhs)),
            &out,
            [m as i64, n as i64, k as i64],
            [m0 as i32, n0 as i32, k0 as i32],
            flags,
        );
        context.call("vmvx.mmt4d", &args).unwrap();
        assert_eq!(read_words(&out), expected, "accumulate: {accumulate}");
    }
}

#[test]
fn mmt4d_refuses_element_types_and_flags_it_does_not_handle() {
    let context = context();
    let lhs = buffer(&[0; 64]);
    let rhs = buffer(&[0; 64]);
    let out = buffer(&[0; 64]);
    // f16*f16->f32 (0x03) and bf16 (0x05) are ukernel types the vmvx module does not take;
    // 0x800 is no flag.
    for flags in [0x00, 0x03, 0x05, 0x0B, 0x801] {
        let args = mmt4d_args(&lhs, &rhs, &out, [1, 1, 1], [2, 2, 1], flags);
        let (status, message) = status_of(context.call("vmvx.mmt4d", &args));
        assert_eq!(status, StatusCode::InvalidArgument, "{flags:#x}: {message}");
    }
    // Tile sizes beyond IREE's 16-bit limit, and M beyond 31 bits.
    for (mnk, tile) in [([1, 1, 1], [1 << 15, 1, 1]), ([1 << 31, 1, 1], [1, 1, 1])] {
        let args = mmt4d_args(&lhs, &rhs, &out, mnk, tile, 1);
        let (status, message) = status_of(context.call("vmvx.mmt4d", &args));
        assert_eq!(status, StatusCode::InvalidArgument, "{message}");
    }
    // A K that reaches past the end of the LHS.
    let args = mmt4d_args(&lhs, &rhs, &out, [1, 1, 9], [1, 1, 2], 1);
    let (status, message) = status_of(context.call("vmvx.mmt4d", &args));
    assert_eq!(status, StatusCode::OutOfRange, "{message}");
}

#[test]
fn pack_and_unpack_refuse_inconsistent_shapes() {
    let context = context();
    let input = buffer(&[0; 64]);
    let out = buffer(&[0; 256]);
    let pack = |in_sizes: [i64; 2], out_sizes: [i64; 4], out_stride1: i64, flags: i32| {
        let mut args = Vec::new();
        args.extend(operand(&input, 0, [in_sizes[1], 1]));
        args.extend(operand(&out, 0, [out_sizes[1] * out_stride1, out_stride1]));
        args.extend(in_sizes.map(Value::I64));
        args.extend(out_sizes.map(Value::I64));
        args.extend([Value::I64(0), Value::I32(flags)]);
        context.call("vmvx.pack", &args)
    };
    // 4x4 f32 in 2x2 tiles of 2x2: fine.
    pack([4, 4], [2, 2, 2, 2], 4, 1).unwrap();
    for (in_sizes, out_sizes, out_stride1, flags) in [
        ([4, 4], [2, 2, 2, 2], 3, 1),    // stride 1 is not the tile size
        ([5, 4], [2, 2, 2, 2], 4, 1),    // 2 tiles of 2 do not cover 5 rows
        ([4, 4], [2, 2, 2, 2], 4, 0x04), // f16 is not a vmvx pack type
        ([4, 4], [2, 2, 2, 2], 4, 0x401),
        ([4, 4], [2, -2, 2, 2], 4, 1),
    ] {
        let (status, message) = status_of(pack(in_sizes, out_sizes, out_stride1, flags));
        assert_eq!(status, StatusCode::InvalidArgument, "{message}");
        assert!(message.contains("vmvx.pack"), "{message}");
    }
    // unpack has no i8 variant.
    let mut args = Vec::new();
    args.extend(operand(&input, 0, [4, 4]));
    args.extend(operand(&out, 0, [4, 1]));
    args.extend([2, 2, 2, 2, 4, 4].map(Value::I64));
    args.push(Value::I32(0x02));
    let (status, message) = status_of(context.call("vmvx.unpack", &args));
    assert_eq!(status, StatusCode::InvalidArgument, "{message}");
}

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// Random arguments (sizes, strides and offsets from 0 to `i64::MAX` and negative, every
/// flag family, buffers of 0 to 96 bytes, some read-only) for random exports: each call
/// returns or fails naming its function, within half a second of CPU time (zero sizes with
/// huge others, or a K0 of zero with a huge K, do no work).
#[test]
fn random_calls_of_every_export_return_or_fail_without_a_panic() {
    let context = context();
    let bytes: &'static [u8] = &[0x5A; 96];
    let source: Arc<dyn ByteSource> = Arc::new(bytes);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sizes: &[i64] = &[
        -1,
        0,
        1,
        2,
        3,
        4,
        5,
        8,
        16,
        1 << 31,
        1 << 40,
        i64::MAX,
        i64::MIN,
    ];
    let flags: &[i32] = &[
        0, 1, 2, 3, 4, 0x101, 0x102, 0x201, 0x301, 0x302, 0x303, 0x401, 0x601, 0x602, 0x203, -1,
    ];
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..20_000 {
        let (name, cconv) = rng.pick(IREE_EXPORTS);
        let (params, _) = cconv[1..].split_once('_').unwrap();
        let args: Vec<Value> = params
            .chars()
            .map(|kind| match kind {
                'r' => match rng.next() % 4 {
                    0 => Value::Ref(Some(Ref::Buffer(Arc::new(
                        VmBuffer::read_only(source.clone(), 0..96).unwrap(),
                    )))),
                    n => buffer(&vec![0xA5; [0, 16, 64, 96][n as usize]]),
                },
                'I' => Value::I64(rng.pick(sizes)),
                'i' => Value::I32(rng.pick(flags)),
                other => panic!("{name}: unexpected argument kind {other}"),
            })
            .collect();
        let one = Stopwatch::start();
        let result = context.call(&format!("vmvx.{name}"), &args);
        one.assert_within(&format!("vmvx.{name} {args:?}"), Duration::from_millis(500));
        match result {
            Ok(_) => ok += 1,
            Err(error) => {
                assert!(
                    error.to_string().contains(&format!("vmvx.{name}")),
                    "{error}"
                );
                failed += 1;
            }
        }
    }
    // Both outcomes are reached, so the calls are not all refused up front.
    assert!(ok > 500 && failed > 500, "{ok} returned, {failed} failed");
}

#[test]
fn empty_work_with_huge_other_sizes_returns_at_once() {
    let context = context();
    let data = buffer(&[0; 16]);
    let out = buffer(&[0; 16]);
    let one = Stopwatch::start();
    // i64::MAX rows of no elements.
    let mut args = Vec::new();
    args.extend(operand(&data, 0, [0, 1]));
    args.extend(operand(&out, 0, [0, 1]));
    args.extend([Value::I64(i64::MAX), Value::I64(0)]);
    context.call("vmvx.copy.2d.x32", &args).unwrap();
    // K of 2^31 - 1 steps of K0 = 0 elements: 2x2 tiles of zero sums.
    let args = mmt4d_args(
        &data,
        &data,
        &out,
        [1, 1, i64::from(i32::MAX)],
        [2, 2, 0],
        1,
    );
    context.call("vmvx.mmt4d", &args).unwrap();
    one.assert_within("empty work", Duration::from_millis(500));
}
