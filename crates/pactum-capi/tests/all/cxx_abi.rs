//! The C++ ABI of `libtvm_ffi.so`, as C++ programs built from the official headers use it,
//! checked on the official library and on pactum's.
//!
//! `error_what`: errors the library makes are read as C strings (`Error::what()` returns the
//! message's `data`); the program runs under AddressSanitizer, so a message without its NUL
//! is a heap-buffer-overflow report and a failed run.
//!
//! `module_cxx`: C++ module classes derived from the library's `ModuleObj` (its vtable and
//! typeinfo), `ModuleObj`'s exported member functions on C++ modules and on a module the
//! library loads, every virtual function and `dynamic_cast` on the modules the library makes
//! (a loaded shared library, the system library: C++ objects on both), `Module::LoadFromFile`, `Module::VisitContextSymbols`, JSON, JSON graphs,
//! structural equality and hashing, repr, deep copy and the recursive comparisons: the same
//! output on both libraries.
//!
//! `legacy_stringify`: `json::Stringify` called as clients built against apache-tvm-ffi 0.1.12
//! call it (its `Optional<int>` by value, in that release's layout), on pactum's library.
//!
//! And the exported dynamic symbols: the same names, of the same kinds, as the official
//! library's, plus the named compatibility symbols for older clients.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

/// Compiles `tests/cxx_abi/<program>.cc` with `extra_flags` against the headers, linked to the
/// `libtvm_ffi.so` in `libdir` (found through an rpath), into `build`.
fn compile(
    program: &str,
    include: &str,
    libdir: &Path,
    build: &Path,
    extra_flags: &[&str],
) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/cxx_abi/{program}.cc"));
    let exe = build.join(program);
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let mut flags: Vec<String> = [
        "-std=c++17",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pthread",
    ]
    .iter()
    .chain(extra_flags)
    .map(|f| f.to_string())
    .collect();
    flags.push(format!("-isystem{include}"));
    support::compile_client(&cxx, &flags, &source, &exe, libdir);
    exe
}

/// Runs `exe` with a clean loader environment and `env`, and fails the test (with its output)
/// unless it exits 0.
fn run(exe: &Path, what: &str, env: &[(&str, &str)]) -> String {
    let output = Command::new(exe)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .envs(env.iter().copied())
        .output()
        .expect("run the C++ program");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} on {what} failed ({}):\n{stdout}\n{stderr}",
        exe.display(),
        output.status
    );
    stdout
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pactum-cxx-abi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn error_messages_are_c_strings_under_address_sanitizer_on_both_libraries() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let official = PathBuf::from(support::config_value(&config, "--libdir"));
    // Leaks are the library's business elsewhere (valgrind runs of the C suite); here only
    // reads past the end matter.
    let asan = [("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")];
    let asan_flags = ["-fsanitize=address", "-fno-omit-frame-pointer"];
    let libraries = [
        ("official", "the official library", official),
        ("pactum", "pactum's library", support::pactum_libdir()),
    ];
    for (name, what, libdir) in libraries {
        let build = scratch(name);
        let exe = compile("error_what", &include, &libdir, &build, &asan_flags);
        let stdout = run(&exe, what, &asan);
        assert!(
            stdout.ends_with("all terminated\n"),
            "error_what on {what} did not finish:\n{stdout}"
        );
        let _ = std::fs::remove_dir_all(&build);
    }
}

/// The defined dynamic symbols of `library` as `nm -D --defined-only` prints them: (name,
/// kind letter), e.g. `T` a function, `W` a weak function, `V` a weak object, `u` a unique
/// object.
fn exported_symbols(library: &Path) -> std::collections::BTreeSet<(String, String)> {
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library)
        .output()
        .expect("run nm (binutils) to read the dynamic symbol table");
    assert!(
        output.status.success(),
        "nm -D {} failed:\n{}",
        library.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("nm prints UTF-8")
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 3, "unexpected nm line: {line}");
            (fields[2].to_owned(), fields[1].to_owned())
        })
        .collect()
}

/// The symbols pactum's library exports beyond the official 0.1.15.post2 library's: C++
/// functions of older apache-tvm-ffi releases that clients built against those releases still
/// import (`cxx/compat_abi.cc`), each a function (`T`). A client loading with `RTLD_NOW` fails
/// on a missing one, and one called lazily aborts the process, so the list is part of the ABI
/// pactum offers; anything else extra, or anything missing, is a difference from the official
/// library.
const COMPATIBILITY_SYMBOLS: &[(&str, &str)] = &[
    // json::Stringify(const Any&, Optional<int> indent) of 0.1.11 and 0.1.12 (the indent by
    // value; 0.1.15 takes it by const reference): tilelang 0.1.15's libtvm_runtime.so and
    // libtvm_compiler.so import it.
    (
        "_ZN3tvm3ffi4json9StringifyERKNS0_3AnyENS0_8OptionalIivEE",
        "T",
    ),
];

#[test]
fn pactum_exports_exactly_the_official_dynamic_symbols_with_their_kinds() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let official_lib =
        PathBuf::from(support::config_value(&config, "--libdir")).join("libtvm_ffi.so");
    let pactum_lib = support::pactum_libdir().join("libtvm_ffi.so");
    let official = exported_symbols(&official_lib);
    let pactum = exported_symbols(&pactum_lib);
    let describe = |set: &std::collections::BTreeSet<&(String, String)>| {
        set.iter()
            .map(|(name, kind)| format!("  {kind} {name}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let compatibility: std::collections::BTreeSet<(String, String)> = COMPATIBILITY_SYMBOLS
        .iter()
        .map(|&(name, kind)| (name.to_owned(), kind.to_owned()))
        .collect();
    assert!(
        official.is_disjoint(&compatibility),
        "the official library now exports a compatibility symbol itself: drop it from the list"
    );
    let expected: std::collections::BTreeSet<_> = official.union(&compatibility).cloned().collect();
    let missing: std::collections::BTreeSet<_> = expected.difference(&pactum).collect();
    let extra: std::collections::BTreeSet<_> = pactum.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "pactum's libtvm_ffi.so ({} symbols) does not export what the official one ({} symbols) \
         does plus the compatibility symbols.\nExpected but not in pactum's (or of another \
         kind there):\n{}\nOnly in pactum's (or of another kind in the expected set):\n{}",
        pactum.len(),
        official.len(),
        describe(&missing),
        describe(&extra)
    );
    // The pinned release's count: 50 C functions and 50 C++ symbols.
    assert_eq!(official.len(), 100, "the pinned official library changed");
}

#[test]
fn the_stringify_of_0_1_12_clients_gives_the_current_text() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let build = scratch("legacy-stringify");
    // pactum's library only: the official 0.1.15.post2 one no longer exports the function.
    let exe = compile(
        "legacy_stringify",
        &include,
        &support::pactum_libdir(),
        &build,
        &[],
    );
    let stdout = run(&exe, "pactum's library", &[]);
    assert_eq!(stdout, "legacy Stringify matches\n");
    let _ = std::fs::remove_dir_all(&build);
}

/// Compiles `tests/c/modules/sample_module.c`, the module library `module_cxx` loads.
fn sample_module(include: &str, libdir: &Path, build: &Path) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let module = build.join("sample_module.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".to_owned());
    let compiled = Command::new(&cc)
        .args(["-std=c11", "-O1", "-shared", "-fPIC", "-fvisibility=hidden"])
        .arg(format!("-I{include}"))
        .arg(manifest.join("tests/c/modules/sample_module.c"))
        .arg("-o")
        .arg(&module)
        .arg(format!("-L{}", libdir.display()))
        .args(["-Wl,--no-as-needed", "-ltvm_ffi"])
        .output()
        .expect("run the C compiler");
    assert!(
        compiled.status.success(),
        "compiling sample_module.c failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    module
}

#[test]
fn cxx_modules_json_and_structural_functions_work_alike_on_both_libraries() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let include = support::config_value(&config, "--includedir");
    let official = PathBuf::from(support::config_value(&config, "--libdir"));
    let mut outputs = Vec::new();
    for (name, what, libdir) in [
        ("module-official", "the official library", official),
        (
            "module-pactum",
            "pactum's library",
            support::pactum_libdir(),
        ),
    ] {
        let build = scratch(name);
        let module = sample_module(&include, &libdir, &build);
        let exe = compile("module_cxx", &include, &libdir, &build, &[]);
        let output = Command::new(&exe)
            .arg(&module)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("LD_PRELOAD")
            .output()
            .expect("run module_cxx");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success() && stdout.ends_with("done\n"),
            "module_cxx on {what} failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        outputs.push(stdout);
        let _ = std::fs::remove_dir_all(&build);
    }
    assert_eq!(
        outputs[0], outputs[1],
        "module_cxx prints differently on the official library (left) and pactum's (right)"
    );
}
