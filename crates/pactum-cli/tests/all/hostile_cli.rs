//! Hostile input on the `pactum` command line (`docs/RELIABILITY.md`, "Hostile input"): damaged
//! and huge files, deep nesting, huge length claims and bytes that are not UTF-8. Every failure
//! must be a clean one-line `error:` (exit status 1, no panic, no crash) or clap's usage error
//! (exit status 2), and refusals of huge input must come back within [`LIMIT`].
//!
//! Files of 1 GiB are sparse (made with `set_len`), so they cost no disk.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pactum::Tensor;

/// How long a refusal may take, process start included. Generous: debug build, parallel tests.
const LIMIT: Duration = Duration::from_secs(2);

/// One GiB: the size of the sparse files.
const GIB: u64 = 1 << 30;

fn kernels() -> PathBuf {
    // The test binary lives in target/<profile>/deps/, where cargo also builds the kernels.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let library = deps.join("libpactum_example_kernels.so");
    assert!(library.exists(), "{} missing", library.display());
    library
}

/// Runs `pactum` with `args` in `dir`, and checks that it finished within [`LIMIT`].
fn pactum<S: AsRef<OsStr>>(args: &[S], dir: &Path) -> Output {
    let start = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run pactum");
    let elapsed = start.elapsed();
    let words: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    // Instrumented runs (scripts/sanitize.sh sets PACTUM_SANITIZER) are several times slower.
    let limit = if std::env::var_os("PACTUM_SANITIZER").is_some() {
        LIMIT * 10
    } else {
        LIMIT
    };
    assert!(
        elapsed < limit,
        "pactum {words:?} took {elapsed:?} (limit {limit:?})"
    );
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("pactum-hostile-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// A sparse file of `len` bytes that starts with `head`.
fn sparse_file(path: &Path, head: &[u8], len: u64) {
    fs::write(path, head).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// A failed command: exit status 1, one `error:` line on stderr, no panic. Prints the line.
fn assert_clean_failure(output: &Output, expected: &[&str]) {
    let err = stderr(output);
    eprintln!("HOSTILE {}", err.trim_end());
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for part in expected {
        assert!(err.contains(part), "expected {part:?} in {err}");
    }
}

#[test]
fn truncated_libraries_are_refused_not_loaded() {
    let dir = scratch("truncated");
    let library = fs::read(kernels()).unwrap();
    fs::write(dir.join("truncated.so"), &library[..4096]).unwrap();
    // glibc's dlopen would map the missing segments and die of SIGBUS touching them.
    assert_clean_failure(
        &pactum(&["call", "truncated.so", "echo_int", "1"], &dir),
        &[
            "cannot load truncated.so",
            "the file is truncated: loadable segment",
        ],
    );
    assert_clean_failure(
        &pactum(&["inspect", "truncated.so"], &dir),
        &["truncated.so"],
    );
    assert_clean_failure(
        &pactum(
            &[
                "call",
                "truncated.so",
                "f",
                "--mlir",
                "func.func @f(%a: memref<?xf32>)",
            ],
            &dir,
        ),
        &["cannot load truncated.so", "the file is truncated"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn files_of_a_gibibyte_are_refused_quickly() {
    let dir = scratch("huge");
    let library = fs::read(kernels()).unwrap();
    // A gibibyte that starts like the library: read through a cache, never whole.
    sparse_file(&dir.join("huge.so"), &library[..64], GIB);
    assert_clean_failure(&pactum(&["inspect", "huge.so"], &dir), &["huge.so"]);
    assert_clean_failure(
        &pactum(&["call", "huge.so", "echo_int", "1"], &dir),
        &["cannot load huge.so"],
    );
    // A gibibyte of zeros: neither a library nor a module.
    sparse_file(&dir.join("zeros.bin"), &[], GIB);
    assert_clean_failure(
        &pactum(&["inspect", "zeros.bin"], &dir),
        &["not a shared library or an IREE bytecode module"],
    );
    // A gibibyte that starts like a module: the zeros are checked in place, not read.
    let mut vmfb = b"PK\x03\x04".to_vec();
    vmfb.resize(64, 0);
    sparse_file(&dir.join("huge.vmfb"), &vmfb, GIB);
    assert_clean_failure(
        &pactum(&["inspect", "huge.vmfb"], &dir),
        &["huge.vmfb: not a valid IREE bytecode module"],
    );
    // A .npy whose small header says 8 bytes of data follow, in a gibibyte.
    let mut npy = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
    npy.extend_from_slice(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
    npy.resize(127, b' ');
    npy.push(b'\n');
    sparse_file(&dir.join("huge.npy"), &npy, GIB);
    let lib = kernels();
    assert_clean_failure(
        &pactum(
            &[
                OsStr::new("call"),
                lib.as_os_str(),
                OsStr::new("sum"),
                OsStr::new("@huge.npy"),
            ],
            &dir,
        ),
        &[
            "argument 0 (`@huge.npy`): cannot read huge.npy",
            "file holds 1073741696 bytes of data, shape (2,) with dtype float32 needs 8",
        ],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn deeply_nested_signatures_are_refused() {
    let dir = scratch("deep");
    // Each argument stays under Linux's 128 KiB limit for one word.
    let depth = 10_000;
    let abi = format!(
        r#"{{"a":[{}"i32"{}],"r":[]}}"#,
        r#"["slist","#.repeat(depth),
        "]".repeat(depth)
    );
    assert_clean_failure(
        &pactum(&["sig", "explain", &abi], &dir),
        &["iree.abi JSON: at byte 2310: type records nested deeper than 256 levels"],
    );
    let cconv = format!("0{}i{}_r", "C".repeat(50_000), "D".repeat(50_000));
    assert_clean_failure(
        &pactum(&["sig", "explain", &cconv], &dir),
        &["variadic spans nested deeper than 256 levels"],
    );
    let declaration = format!(
        "sync func @f(%x: {}i32{}) -> ()",
        "!util.list<".repeat(5_000),
        ">".repeat(5_000)
    );
    assert_clean_failure(
        &pactum(&["sig", "explain", &declaration], &dir),
        &["brackets nested deeper than 256 levels"],
    );
    let mlir = format!("func.func @f() {{{}", "[".repeat(100_000));
    let lib = kernels();
    let lib = lib.to_str().unwrap();
    assert_clean_failure(
        &pactum(&["call", lib, "f", "--mlir", &mlir], &dir),
        &["brackets nested deeper than 256 levels"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn huge_length_claims_are_refused() {
    let dir = scratch("lengths");
    assert_clean_failure(
        &pactum(&["sig", "render", "I999999999!B1!R1!"], &dir),
        &["span 'I' of length 999999999 runs past the end of the input"],
    );
    // Inside a span, IREE's own (lenient) reading ends the item list at a malformed item, as
    // `sig render` reproduces; the claim is never followed.
    let output = pactum(&["sig", "render", "I8!B999!t6R1!"], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "() -> ()");
    let lib = kernels();
    let lib = lib.to_str().unwrap();
    assert_clean_failure(
        &pactum(&["call", lib, "echo_int", "99999999999999999999"], &dir),
        &["argument 0 (`99999999999999999999`): integer out of range for int64"],
    );
    // A string argument of 100 KiB is an ordinary value.
    let long = format!("\"{}\"", "x".repeat(100_000));
    let output = pactum(&["call", lib, "echo_str", &long], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn bytes_that_are_not_utf8_are_refused() {
    let dir = scratch("utf8");
    let lib = kernels();
    // Arguments are text: clap refuses other bytes before pactum sees them.
    let output = pactum(
        &[
            OsStr::new("call"),
            lib.as_os_str(),
            OsStr::new("echo_str"),
            OsStr::from_bytes(b"\"\xff\xfe\""),
        ],
        &dir,
    );
    let err = stderr(&output);
    eprintln!("HOSTILE {}", err.lines().next().unwrap_or(""));
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: invalid UTF-8 was detected"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let output = pactum(
        &[
            OsStr::new("sig"),
            OsStr::new("explain"),
            OsStr::from_bytes(b"{\"a\":[\"\xff\"],\"r\":[]}"),
        ],
        &dir,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    // File names are bytes: any name works, and a missing one says so.
    let name = OsStr::from_bytes(b"lib\xff.so");
    assert_clean_failure(
        &pactum(&[OsStr::new("inspect"), name], &dir),
        &["lib\u{fffd}.so: no such file"],
    );
    assert_clean_failure(
        &pactum(&[OsStr::new("call"), name, OsStr::new("f")], &dir),
        &["lib\u{fffd}.so: no such file"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn shapes_and_errors_from_the_library_are_one_line_errors() {
    let dir = scratch("shapes");
    pactum_npy::write_file(
        dir.join("matrix.npy"),
        &Tensor::from_slice(&[1.0f32; 4], &[2, 2]).unwrap(),
    )
    .unwrap();
    let lib = kernels();
    let lib = lib.to_str().unwrap();
    assert_clean_failure(
        &pactum(
            &["call", lib, "saxpy", "2.0", "@matrix.npy", "@matrix.npy"],
            &dir,
        ),
        &[
            "saxpy failed: ValueError",
            "expected a 1-d tensor, got 2 dimension(s)",
        ],
    );
    assert_clean_failure(
        &pactum(
            &["call", lib, "raise_error", "'KeyError'", "'no such key'"],
            &dir,
        ),
        &["raise_error failed: KeyError: no such key"],
    );
    assert_clean_failure(
        &pactum(&["call", lib, "echo_int", "1", "2"], &dir),
        &[
            "echo_int failed: TypeError: Mismatched number of arguments",
            "Expected 1 but got 2",
        ],
    );
    let _ = fs::remove_dir_all(&dir);
}
