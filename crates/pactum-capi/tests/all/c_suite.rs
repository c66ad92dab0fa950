//! The C/C++ conformance suite (tests/c, tests/cpp), run against the official
//! `libtvm_ffi.so` and against pactum's: every program must pass under both and print the
//! same output.

use std::path::Path;
use std::process::Command;

use crate::support;

fn run_suite(libdir: &Path, outdir: &Path, config: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run_c_suite.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(libdir)
        .arg(outdir)
        .env("TVM_FFI_CONFIG", config)
        .output()
        .expect("run the C suite");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "C suite failed against {}:\n{log}",
        libdir.display()
    );
}

#[test]
fn c_suite_prints_the_same_under_official_and_pactum() {
    let Some(config) = support::tvm_ffi_config() else {
        return;
    };
    let official = support::config_value(&config, "--libdir");
    let scratch = std::env::temp_dir().join(format!("pactum-c-suite-{}", std::process::id()));
    let (official_out, pactum_out) = (scratch.join("official"), scratch.join("pactum"));
    run_suite(Path::new(&official), &official_out, &config);
    run_suite(&support::pactum_libdir(), &pactum_out, &config);

    let mut names: Vec<_> = std::fs::read_dir(&official_out)
        .expect("official outputs")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert!(
        names.len() >= 12,
        "expected every program's output, got {names:?}"
    );
    let mut mismatches = Vec::new();
    for name in &names {
        let expected = std::fs::read_to_string(official_out.join(name)).expect("official output");
        let actual = std::fs::read_to_string(pactum_out.join(name)).unwrap_or_default();
        if expected != actual {
            let first = expected
                .lines()
                .zip(actual.lines().chain(std::iter::repeat("<missing>")))
                .find(|(e, a)| e != a)
                .map(|(e, a)| format!("\n  official: {e}\n  pactum:   {a}"))
                .unwrap_or_default();
            mismatches.push(format!("{}:{first}", name.to_string_lossy()));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        mismatches.is_empty(),
        "outputs differ:\n{}",
        mismatches.join("\n")
    );
}
