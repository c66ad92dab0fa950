//! `pactum_npy` against real NumPy: Python writes `.npy` files of every supported dtype and
//! layout (C and Fortran order, big-endian, 0-d, empty, format 2.0 and 3.0) that Rust reads,
//! and Rust writes files (every dtype, strided views, a format 2.0 header) that NumPy loads and
//! checks.
//!
//! The interpreter is `PACTUM_PYTHON`, else `.venv/bin/python` at the workspace root (made by
//! `scripts/test.sh`, with NumPy). Without it the tests fail, unless `PACTUM_SKIP_PEER=1`, in
//! which case they are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::Command;

use pactum::sys::dlpack::DLDataTypeCode;
use pactum::{DataType, Tensor};
use pactum_npy as npy;

const RUN_HINT: &str = "run `scripts/test.sh` from the workspace root (it creates .venv with \
     numpy), or point PACTUM_PYTHON at a Python with numpy (PACTUM_SKIP_PEER=1 skips this test)";

/// The Python interpreter with NumPy, or `None` (with a note) when `PACTUM_SKIP_PEER=1`.
fn python() -> Option<PathBuf> {
    let path = match std::env::var_os("PACTUM_PYTHON") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
    };
    let works = Command::new(&path)
        .args(["-c", "import numpy"])
        .output()
        .map(|output| output.status.success());
    match works {
        Ok(true) => Some(path),
        problem => {
            let message = format!(
                "no Python with numpy at {}: {}",
                path.display(),
                match problem {
                    Ok(_) => "`import numpy` failed".to_owned(),
                    Err(error) => error.to_string(),
                }
            );
            if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") {
                eprintln!("note: npy/numpy interop skipped (PACTUM_SKIP_PEER=1): {message}");
                None
            } else {
                panic!("{message}; {RUN_HINT}");
            }
        }
    }
}

/// A fresh, empty scratch directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-npy-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Runs `script` with `dir` as its argument; panics with its output unless it succeeds.
fn run_python(python: &Path, script: &str, dir: &Path) -> String {
    let output = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(dir)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    stdout
}

fn complex(bits: u8) -> DataType {
    DataType::scalar(DLDataTypeCode::COMPLEX, bits)
}

/// NumPy dtype names and the pactum dtypes they map to.
fn dtypes() -> Vec<(&'static str, DataType)> {
    vec![
        ("bool", DataType::BOOL),
        ("int8", DataType::I8),
        ("int16", DataType::I16),
        ("int32", DataType::I32),
        ("int64", DataType::I64),
        ("uint8", DataType::U8),
        ("uint16", DataType::U16),
        ("uint32", DataType::U32),
        ("uint64", DataType::U64),
        ("float16", DataType::F16),
        ("float32", DataType::F32),
        ("float64", DataType::F64),
        ("complex64", complex(64)),
        ("complex128", complex(128)),
    ]
}

fn dtype_named(name: &str) -> DataType {
    dtypes()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("unknown dtype {name}"))
        .1
}

fn itemsize(dtype: DataType) -> usize {
    usize::from(dtype.bits / 8)
}

/// A copy of a contiguous CPU tensor's bytes.
fn bytes_of(tensor: &Tensor) -> Vec<u8> {
    assert!(tensor.is_contiguous());
    let n = tensor.numel() as usize * itemsize(tensor.dtype());
    if n == 0 {
        return Vec::new();
    }
    // SAFETY: a contiguous CPU tensor of numel elements of `itemsize` bytes; nobody writes it.
    unsafe { std::slice::from_raw_parts(tensor.data_ptr().cast::<u8>(), n) }.to_vec()
}

/// A new tensor whose bytes follow the pattern the Python checker recomputes.
fn patterned(dtype: DataType, shape: &[i64]) -> Tensor {
    let tensor = Tensor::empty(shape, dtype).expect("tensor");
    let n = tensor.numel() as usize * itemsize(dtype);
    if n == 0 {
        return tensor;
    }
    // SAFETY: a fresh compact CPU tensor of exactly n bytes that nothing else references.
    let data = unsafe { std::slice::from_raw_parts_mut(tensor.data_ptr().cast::<u8>(), n) };
    for (j, byte) in data.iter_mut().enumerate() {
        *byte = if dtype == DataType::BOOL {
            u8::from(j % 3 == 0)
        } else {
            ((j * 31 + 7) % 256) as u8
        };
    }
    tensor
}

/// A strided view of `base` (same dtype, CPU memory inside base's allocation).
fn view(base: &Tensor, shape: &[i64], strides: &[i64], byte_offset: u64) -> Tensor {
    let mut shape = shape.to_vec();
    let mut strides = strides.to_vec();
    let mut dl = *base.dl_tensor();
    dl.ndim = shape.len() as i32;
    dl.shape = shape.as_mut_ptr();
    dl.strides = strides.as_mut_ptr();
    dl.byte_offset = byte_offset;
    // SAFETY: every caller passes a shape, strides and offset addressing elements of `base`;
    // the arrays are copied by `unsafe_view`.
    unsafe { base.unsafe_view(&dl) }.expect("view")
}

const NUMPY_WRITES: &str = r#"
import os, sys
import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(20240611)
cases = {}
base = np.arange(24).reshape(2, 3, 4)
names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "complex64", "complex128"]
for name in names:
    dt = np.dtype(name)
    if dt.kind == "b":
        a = base % 3 == 0
        extremes = np.array([True, False, True])
    elif dt.kind in "iu":
        a = (base * 1234567 - 9999999).astype(dt)
        info = np.iinfo(dt)
        extremes = np.array([info.min, info.max, 0, 1], dtype=dt)
    elif dt.kind == "f":
        a = ((base - 10) * 0.375).astype(dt)
        info = np.finfo(dt)
        extremes = np.array([np.nan, np.inf, -np.inf, -0.0, info.tiny, info.max, info.eps], dtype=dt)
    else:
        a = ((base - 7.5) + 1j * (base * 0.25)).astype(dt)
        extremes = np.array([complex(np.nan, 1), complex(np.inf, -np.inf), -0.0j], dtype=dt)
    cases[name + "_c"] = a
    cases[name + "_f"] = np.asfortranarray(a)
    cases[name + "_extremes"] = extremes
    if dt.itemsize > 1:
        be = a.astype(dt.newbyteorder(">"))
        cases[name + "_be"] = be
        cases[name + "_fbe"] = np.asfortranarray(be)
        cases[name + "_extremes_be"] = extremes.astype(dt.newbyteorder(">"))
    cases[name + "_0d"] = a.reshape(-1)[5].copy().reshape(())
    cases[name + "_empty"] = np.zeros((0, 3), dtype=dt)

cases["f64_scalar"] = np.array(3.25)
cases["f32_arange"] = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
cases["f64_fortran_arange"] = np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4))
cases["i64_be_arange"] = np.arange(-5, 5, dtype=">i8")
cases["f32_large"] = rng.standard_normal((64, 33, 17)).astype(np.float32)
cases["f32_large_f"] = np.asfortranarray(rng.standard_normal((17, 64, 33)).astype(np.float32))
cases["c128_large_fbe"] = np.asfortranarray(
    (rng.standard_normal((9, 8, 7)) + 1j * rng.standard_normal((9, 8, 7))).astype(">c16"))
cases["i32_empty_middle"] = np.zeros((2, 0, 3), dtype=np.int32)
cases["u8_empty_f"] = np.asfortranarray(np.zeros((3, 0), dtype=np.uint8))
cases["f32_1d"] = np.array([1.0, -2.0, 3.5, 0.0, 1e-3], dtype=np.float32)
cases["i16_sliced"] = np.arange(100, dtype=np.int16).reshape(10, 10)[::3, 1::2]

lines = []
for name, a in cases.items():
    path = os.path.join(out, name + ".npy")
    np.save(path, a)
    native = a.astype(a.dtype.newbyteorder("="), copy=True)
    with open(os.path.join(out, name + ".raw"), "wb") as f:
        f.write(native.tobytes(order="C"))
    lines.append("%s\t%s\t%s" % (name, a.dtype.name, ",".join(str(d) for d in a.shape)))

# Other format versions, written explicitly.
for version in [(2, 0), (3, 0)]:
    a = np.arange(12, dtype="<u4").reshape(3, 4)
    name = "u32_v%d" % version[0]
    with open(os.path.join(out, name + ".npy"), "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    with open(os.path.join(out, name + ".raw"), "wb") as f:
        f.write(a.tobytes())
    lines.append("%s\t%s\t%s" % (name, a.dtype.name, "3,4"))

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
print(len(lines))
"#;

#[test]
fn rust_reads_what_numpy_writes() {
    let Some(python) = python() else { return };
    let dir = scratch("from-numpy");
    let count: usize = run_python(&python, NUMPY_WRITES, &dir)
        .trim()
        .parse()
        .expect("count");
    let manifest = std::fs::read_to_string(dir.join("manifest.txt")).expect("manifest");
    let mut checked = 0;
    let mut fortran = 0;
    let mut big_endian = 0;
    for line in manifest.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [name, dtype_name, shape_text] = fields[..] else {
            panic!("bad manifest line {line:?}");
        };
        let shape: Vec<i64> = shape_text
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().expect("dim"))
            .collect();
        let path = dir.join(format!("{name}.npy"));
        let file = std::fs::read(&path).expect("npy file");
        let header = String::from_utf8_lossy(&file[..file.len().min(256)]).into_owned();
        if header.contains("'fortran_order': True") {
            fortran += 1;
        }
        if header.contains("'descr': '>") {
            big_endian += 1;
        }
        let tensor = npy::read_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(tensor.dtype(), dtype_named(dtype_name), "{name}");
        assert_eq!(tensor.shape(), &shape[..], "{name}");
        assert!(tensor.is_contiguous(), "{name}");
        let raw = std::fs::read(dir.join(format!("{name}.raw"))).expect("raw");
        assert_eq!(bytes_of(&tensor), raw, "{name}: elements differ");
        checked += 1;
    }
    assert_eq!(checked, count);
    assert!(checked > 80, "only {checked} cases");
    assert!(fortran >= 20, "only {fortran} Fortran-ordered files");
    assert!(big_endian >= 20, "only {big_endian} big-endian files");

    // A few values checked directly, not only against NumPy's own bytes.
    let load = |name: &str| npy::read_file(dir.join(format!("{name}.npy"))).expect(name);
    assert_eq!(load("f64_scalar").to_vec::<f64>().unwrap(), vec![3.25]);
    assert_eq!(load("f64_scalar").shape(), &[] as &[i64]);
    let arange: Vec<f32> = (0..24).map(|v| v as f32).collect();
    assert_eq!(load("f32_arange").to_vec::<f32>().unwrap(), arange);
    let arange: Vec<f64> = (0..24).map(f64::from).collect();
    assert_eq!(load("f64_fortran_arange").to_vec::<f64>().unwrap(), arange);
    assert_eq!(
        load("i64_be_arange").to_vec::<i64>().unwrap(),
        (-5..5).collect::<Vec<i64>>()
    );
    assert_eq!(
        load("i16_sliced").to_vec::<i16>().unwrap(),
        vec![
            1, 3, 5, 7, 9, 31, 33, 35, 37, 39, 61, 63, 65, 67, 69, 91, 93, 95, 97, 99
        ]
    );
    assert_eq!(load("i32_empty_middle").shape(), &[2, 0, 3]);
    assert_eq!(
        load("u32_v3").to_vec::<u32>().unwrap(),
        (0..12).collect::<Vec<u32>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const NUMPY_CHECKS: &str = r#"
import os, sys
import numpy as np

out = sys.argv[1]
failures = []
checked = 0

def pattern(dtype, nbytes):
    if dtype == np.bool_:
        return bytes(int(j % 3 == 0) for j in range(nbytes))
    return bytes((j * 31 + 7) % 256 for j in range(nbytes))

def check_header(path, version=(1, 0)):
    with open(path, "rb") as f:
        got = np.lib.format.read_magic(f)
        if got != version:
            failures.append("%s: version %r, expected %r" % (path, got, version))
            return None
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=10**7)
        if fortran:
            failures.append("%s: fortran_order True" % path)
        if f.tell() % 64:
            failures.append("%s: data starts at %d, not a multiple of 64" % (path, f.tell()))
        if dtype.itemsize > 1 and dtype.byteorder not in "<=":
            failures.append("%s: descr %r is not little-endian" % (path, dtype.str))
        return shape, dtype

with open(os.path.join(out, "manifest.txt")) as f:
    manifest = [line.split("\t") for line in f.read().splitlines() if line]

for name, dtype_name, shape_text in manifest:
    path = os.path.join(out, name + ".npy")
    try:
        check_header(path)
        a = np.load(path)
        shape = tuple(int(d) for d in shape_text.split(",") if d)
        if a.dtype != np.dtype(dtype_name) or a.shape != shape:
            failures.append("%s: got %s %r, expected %s %r" % (name, a.dtype, a.shape, dtype_name, shape))
            continue
        expected = pattern(a.dtype, a.size * a.itemsize)
        if a.astype(a.dtype.newbyteorder("<")).tobytes() != expected:
            failures.append("%s: element bytes differ" % name)
        checked += 1
    except Exception as e:
        failures.append("%s: %r" % (name, e))

grid = np.arange(24, dtype=np.int32).reshape(4, 6)
expected_arrays = {
    "view_slice": grid[1:3, ::2],
    "view_transpose": grid.T,
    "view_reversed": np.arange(24, dtype=np.float64)[11:5:-1],
    "view_broadcast": np.broadcast_to(np.array([7, 8, 9], dtype=np.uint16), (4, 3)),
    "view_complex_column": (np.arange(12) + 0.5j * np.arange(12)).astype(np.complex64).reshape(3, 4)[:, 1],
    "view_bool": (np.arange(24).reshape(4, 6) % 3 == 0)[::-2, 1:5],
    "f32_values": np.array([1.5, -2.25, np.nan, np.inf, -0.0], dtype=np.float32),
    "f16_values": np.array([[0.5, -1.0], [65504.0, 2.0**-24]], dtype=np.float16),
}
for name, want in expected_arrays.items():
    path = os.path.join(out, name + ".npy")
    try:
        check_header(path)
        a = np.load(path)
        if a.dtype != want.dtype or a.shape != want.shape:
            failures.append("%s: got %s %r, expected %s %r" % (name, a.dtype, a.shape, want.dtype, want.shape))
        elif not np.array_equal(a, want, equal_nan=a.dtype.kind in "fc"):
            failures.append("%s: got %r, expected %r" % (name, a, want))
        elif a.dtype.kind == "f" and not np.array_equal(np.signbit(a), np.signbit(want)):
            failures.append("%s: signs of zeros differ" % name)
        checked += 1
    except Exception as e:
        failures.append("%s: %r" % (name, e))

# A header over 64 KiB: format 2.0 (NumPy cannot make arrays of 30000 dimensions, so only the
# header is checked).
try:
    shape, dtype = check_header(os.path.join(out, "many_dims.npy"), version=(2, 0))
    if shape != (1,) * 30000 or dtype != np.float64:
        failures.append("many_dims: header says %d dims of %s" % (len(shape), dtype))
    checked += 1
except Exception as e:
    failures.append("many_dims: %r" % (e,))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(checked)
"#;

#[test]
fn numpy_reads_what_rust_writes() {
    let Some(python) = python() else { return };
    let dir = scratch("to-numpy");
    let mut manifest = String::new();
    let shapes: [&[i64]; 5] = [&[2, 3, 4], &[], &[5], &[0, 3], &[3, 1, 2, 1]];
    for (name, dtype) in dtypes() {
        for (i, shape) in shapes.iter().enumerate() {
            let file = format!("{name}_{i}");
            npy::write_file(dir.join(format!("{file}.npy")), &patterned(dtype, shape))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
            manifest.push_str(&format!("{file}\t{name}\t{}\n", dims.join(",")));
        }
    }
    std::fs::write(dir.join("manifest.txt"), &manifest).expect("manifest");
    let files = manifest.lines().count();

    let write = |name: &str, tensor: &Tensor| {
        npy::write_file(dir.join(format!("{name}.npy")), tensor)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    };
    // Strided views, written in C order.
    let grid = Tensor::from_slice(&(0..24).collect::<Vec<i32>>(), &[4, 6]).unwrap();
    let slice = view(&grid, &[2, 3], &[6, 2], 6 * 4);
    assert!(!slice.is_contiguous());
    write("view_slice", &slice);
    write("view_transpose", &view(&grid, &[6, 4], &[1, 6], 0));
    let line = Tensor::from_slice(&(0..24).map(f64::from).collect::<Vec<f64>>(), &[24]).unwrap();
    write("view_reversed", &view(&line, &[6], &[-1], 11 * 8));
    let row = Tensor::from_slice(&[7u16, 8, 9], &[3]).unwrap();
    write("view_broadcast", &view(&row, &[4, 3], &[0, 1], 0));
    let mut pairs = Vec::new();
    for k in 0..12 {
        pairs.extend_from_slice(&[k as f32, 0.5 * k as f32]);
    }
    let interleaved = Tensor::from_slice(&pairs, &[3, 4, 2]).unwrap();
    let complex_grid = view(&interleaved, &[3, 4], &[4, 1], 0);
    // Reinterpret the (3, 4, 2) float32 storage as (3, 4) complex64, then take column 1.
    let mut dl = *complex_grid.dl_tensor();
    dl.dtype = complex(64).into();
    let mut shape = [3i64];
    let mut strides = [4i64];
    dl.ndim = 1;
    dl.shape = shape.as_mut_ptr();
    dl.strides = strides.as_mut_ptr();
    dl.byte_offset = 8;
    // SAFETY: elements 1, 5 and 9 of the 12 complex64 values stored in `interleaved`.
    let column = unsafe { interleaved.unsafe_view(&dl) }.unwrap();
    write("view_complex_column", &column);
    let bools = patterned(DataType::BOOL, &[4, 6]);
    // Rows 3 and 1, columns 1..5.
    write(
        "view_bool",
        &view(&bools, &[2, 4], &[-12, 1], (3 * 6 + 1) as u64),
    );
    write(
        "f32_values",
        &Tensor::from_slice(&[1.5f32, -2.25, f32::NAN, f32::INFINITY, -0.0], &[5]).unwrap(),
    );
    // float16 0.5, -1.0, 65504 (max) and 2**-24 (smallest subnormal), as bits.
    let halves = Tensor::from_slice(&[0x3800u16, 0xbc00, 0x7bff, 0x0001], &[2, 2]).unwrap();
    let mut dl = *halves.dl_tensor();
    dl.dtype = DataType::F16.into();
    let mut shape = [2i64, 2];
    let mut strides = [2i64, 1];
    dl.shape = shape.as_mut_ptr();
    dl.strides = strides.as_mut_ptr();
    // SAFETY: the same four 16-bit elements, labelled float16.
    write("f16_values", &unsafe { halves.unsafe_view(&dl) }.unwrap());
    let many_dims = Tensor::from_slice(&[2.5f64], &[1; 30000]).unwrap();
    write("many_dims", &many_dims);

    let checked: usize = run_python(&python, NUMPY_CHECKS, &dir)
        .trim()
        .parse()
        .expect("count");
    assert_eq!(checked, files + 8 + 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The types `ml_dtypes` adds to NumPy, written by pactum with their names as the descr:
/// NumPy (with `ml_dtypes` imported) loads each file as that type, with pactum's bytes.
#[test]
fn numpy_with_ml_dtypes_loads_what_pactum_writes_for_its_types() {
    let Some(python) = python() else { return };
    let dir = scratch("ml-dtypes");
    let names = [
        "bfloat16",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "int4",
        "uint4",
        "int2",
        "uint2",
    ];
    for name in names {
        let dtype = DataType::parse(name).unwrap();
        let tensor = Tensor::empty(&[2, 3], dtype).unwrap();
        let size = dtype.element_bytes().unwrap();
        let start = tensor.data_ptr().cast::<u8>();
        // SAFETY: a fresh compact CPU tensor of 6 elements of `size` bytes, referenced by
        // nothing else.
        let data = unsafe { std::slice::from_raw_parts_mut(start, 6 * size) };
        for (j, byte) in data.iter_mut().enumerate() {
            // Valid bits for every type: the sub-byte integers use only their low bits.
            *byte = (j % 3) as u8;
        }
        npy::write_file(dir.join(format!("{name}.npy")), &tensor).unwrap();
    }
    let script = format!(
        r#"
import sys, pathlib, numpy as np, ml_dtypes
d = pathlib.Path(sys.argv[1])
for name in {names:?}:
    a = np.load(d / (name + ".npy"))
    assert a.dtype == np.dtype(name), (name, a.dtype)
    assert a.shape == (2, 3), (name, a.shape)
    raw = a.reshape(-1).view(np.uint8).tolist()
    assert raw == [j % 3 for j in range(6 * a.dtype.itemsize)], (name, raw)
print("ok")
"#
    );
    assert_eq!(run_python(&python, &script, &dir).trim(), "ok");
}

#[test]
fn in_place_layouts_are_found_exactly_where_the_file_holds_what_read_returns() {
    let Some(python) = python() else { return };
    let dir = scratch("in-place");
    let script = r#"
import sys, numpy as np
d = sys.argv[1]
a = np.arange(12, dtype=np.float32).reshape(3, 4)
np.save(f"{d}/c.npy", a)
np.save(f"{d}/big_endian.npy", a.astype(">f4"))
np.save(f"{d}/fortran.npy", np.asfortranarray(a))
np.save(f"{d}/fortran_1d.npy", np.asfortranarray(np.arange(5, dtype=np.int16)))
np.save(f"{d}/bool.npy", np.array([True, False]))
np.save(f"{d}/bytes.npy", np.arange(7, dtype=np.uint8))
"#;
    run_python(&python, script, &dir);
    // (file, whether its elements are read()'s bytes as they are)
    let cases = [
        ("c", true),
        ("big_endian", cfg!(target_endian = "big")),
        ("fortran", false),
        ("fortran_1d", true),
        ("bool", false),
        ("bytes", true),
    ];
    for (name, in_place) in cases {
        let bytes = std::fs::read(dir.join(format!("{name}.npy"))).unwrap();
        let layout = npy::in_place_layout(&bytes, bytes.len()).unwrap();
        assert_eq!(layout.is_some(), in_place, "{name}");
        let Some(layout) = layout else { continue };
        let tensor = npy::read(&bytes).unwrap();
        assert_eq!(layout.dtype, tensor.dtype(), "{name}");
        assert_eq!(layout.shape, tensor.shape(), "{name}");
        assert_eq!(
            layout.data_start % 64,
            0,
            "{name}: NumPy pads its header to 64"
        );
        assert_eq!(layout.data_start + layout.data_len, bytes.len(), "{name}");
        let elements = npy::write(&tensor).unwrap();
        assert_eq!(
            &bytes[layout.data_start..],
            &elements[elements.len() - layout.data_len..],
            "{name}: the file's elements are read()'s"
        );
    }
    // A malformed array is an error, as for read().
    let bytes = std::fs::read(dir.join("c.npy")).unwrap();
    assert!(npy::in_place_layout(&bytes[..bytes.len() - 1], bytes.len() - 1).is_err());
    std::fs::remove_dir_all(&dir).ok();
}
