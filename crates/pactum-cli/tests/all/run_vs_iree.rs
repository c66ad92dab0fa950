//! `pactum run` against the pinned native `iree-run-module` (IREE 3.13, from the
//! `iree-base-runtime` wheel in `.venv`): the same argument list through both programs must
//! print the same stdout and exit with the same status, on the checked-in fixtures and on
//! modules linked at test time (`liba` exporting functions, `app` importing them) compiled by
//! the pinned `iree-compile`. `--output` files must be byte for byte the same. And `pactum
//! bench`'s report.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::cli::{pactum, scratch, stderr, stdout};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    repo_root()
        .join("crates/pactum-iree/tests/fixtures/vmfb")
        .join(name)
        .display()
        .to_string()
}

/// A missing peer tool panics (the tools are part of the test setup) unless
/// `PACTUM_SKIP_PEER=1`, which skips the test and says so.
fn peer_or_skip(path: Option<PathBuf>, what: &str, test: &str) -> Option<PathBuf> {
    match path.filter(|p| p.exists()) {
        Some(path) => Some(path),
        None if std::env::var("PACTUM_SKIP_PEER").as_deref() == Ok("1") => {
            eprintln!("SKIPPED {test} (PACTUM_SKIP_PEER=1): {what} missing");
            None
        }
        None => panic!(
            "{test}: {what} missing: run scripts/test.sh (it installs the pinned IREE 3.13 \
             wheels) or set PACTUM_IREE_BIN (PACTUM_SKIP_PEER=1 skips this test)"
        ),
    }
}

/// The native `iree-run-module` binary (not the `.venv/bin` Python wrapper):
/// `$PACTUM_IREE_BIN/iree-run-module` or the wheel's `_runtime_libs` folder.
fn iree_run_module(test: &str) -> Option<PathBuf> {
    let found = match std::env::var_os("PACTUM_IREE_BIN") {
        Some(dir) => Some(PathBuf::from(dir).join("iree-run-module")),
        None => std::fs::read_dir(repo_root().join(".venv/lib"))
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .map(|python| {
                python
                    .path()
                    .join("site-packages/iree/_runtime_libs/iree-run-module")
            })
            .find(|path| path.exists()),
    };
    peer_or_skip(found, "the native iree-run-module", test)
}

fn run_both(tool: &Path, args: &[String], dir: &Path) -> (Output, Output) {
    let theirs = Command::new(tool)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run iree-run-module");
    let mut ours_args = vec!["run"];
    ours_args.extend(args.iter().map(String::as_str));
    (pactum(&ours_args, dir), theirs)
}

/// Runs `args` through both programs in `dir`: the same stdout and exit status; returns the
/// stdout.
fn assert_same(tool: &Path, args: &[String], dir: &Path) -> String {
    let (ours, theirs) = run_both(tool, args, dir);
    assert_eq!(
        stdout(&ours),
        stdout(&theirs),
        "stdout of `pactum run` (left) and iree-run-module (right) for {args:?}\n\
         pactum stderr: {}\niree stderr: {}",
        stderr(&ours),
        stderr(&theirs)
    );
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "exit status for {args:?}: pactum stderr {}; iree stderr {}",
        stderr(&ours),
        stderr(&theirs)
    );
    assert!(!stderr(&ours).contains("panicked"), "{}", stderr(&ours));
    stdout(&ours)
}

fn words(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn run_prints_what_iree_run_module_prints() {
    let test = "run_prints_what_iree_run_module_prints";
    let Some(tool) = iree_run_module(test) else {
        return;
    };
    let dir = scratch("run-vs-iree");
    let scalars = format!("--module={}", fixture("multi_export_vmvx.vmfb"));
    let tensors = format!("--module={}", fixture("vmvx_tensors.vmfb"));
    let mlp = format!("--module={}", fixture("mlp_llvm_cpu.vmfb"));
    let async_vmvx = format!("--module={}", fixture("async_export_vmvx.vmfb"));
    let async_cpu = format!("--module={}", fixture("async_export_llvm_cpu.vmfb"));
    let add = [
        "--function=add_mat",
        "--input=2x3xf32=1 2 3 4 5 6",
        "--input=2x3xf32=1",
    ];
    // add_mat of vmvx_tensors with `extra` flags.
    let add_mat = |extra: &[&'static str]| [&[tensors.as_str()][..], &add[..], extra].concat();
    let cases: Vec<Vec<&str>> = vec![
        vec![&scalars, "--function=add", "--input=2", "--input=3"],
        vec![
            &scalars,
            "--function=mul_add",
            "--input=2",
            "--input=3",
            "--input=0.5",
        ],
        vec![&scalars, "--function=twice_i64", "--input=-4000000000"],
        vec![
            &scalars,
            "--function=add",
            "--input=2",
            "--input=3",
            "--output=-",
        ],
        // Failures: too few inputs, no such function, no --function with several exports, a
        // value that is not an i32.
        vec![&scalars, "--function=add", "--input=2"],
        vec![&scalars, "--function=nope"],
        vec![&scalars, "--input=2"],
        vec![&scalars, "--function=add", "--input=2", "--input=x"],
        // Tensors, lists of results, elision past --output_max_element_count.
        add_mat(&[]),
        vec![&tensors, "--function=stats", "--input=4xf32=1 2 3 4"],
        vec![
            &tensors,
            "--function=stats",
            "--input=4xf32=1 2 3 4",
            "--output=-",
            "--output=",
            "--output=-",
            "--output=-",
        ],
        vec![
            &tensors,
            "--function=transpose",
            "--input=2x3xf32=[1 2 3][4 5 6]",
            "--output_max_element_count=3",
        ],
        vec![
            &tensors,
            "--function=scale_rows",
            "--input=2x3xf32=1 2 3 4 5 6",
            "--input=2",
        ],
        // llvm-cpu dispatches on each device, and coarse-fences (async) exports, whose
        // fences the runner makes.
        vec![&mlp, "--function=logits", "--input=4x16xf32=0.5"],
        vec![
            &mlp,
            "--function=logits",
            "--input=4x16xf32=0.25",
            "--device=local-sync",
        ],
        vec![
            &mlp,
            "--function=logits",
            "--input=4x16xf32=0.5",
            "--task_topology_group_count=2",
        ],
        vec![&async_vmvx, "--input=4xf32=1 2 3 4", "--input=4xf32=1"],
        vec![
            &async_cpu,
            "--input=4xf32=1 2 3 4",
            "--input=4xf32=1",
            "--device=local-sync",
        ],
        // A shape the program's assertion refuses.
        vec![
            &tensors,
            "--function=add_mat",
            "--input=2x3xf32=1",
            "--input=2x2xf32=1",
        ],
        // --expected_output: a match, one within the default f32 tolerance, one beyond it, the
        // same with a wider threshold, exact mode, another shape, (ignored) results, the wrong
        // count, and a scalar (which IREE 3.13 reports as a type mismatch, exit status 1).
        add_mat(&["--expected_output=2x3xf32=2 3 4 5 6 7"]),
        add_mat(&["--expected_output=2x3xf32=2 3 4 5 6 7.00001"]),
        add_mat(&["--expected_output=2x3xf32=2 3 4 5 6 7.1"]),
        add_mat(&[
            "--expected_output=2x3xf32=2 3 4 5 6 7.1",
            "--expected_f32_threshold=0.2",
        ]),
        add_mat(&[
            "--expected_output=2x3xf32=2 3 4 5 6 7.00001",
            "--equality_mode=exact",
        ]),
        add_mat(&[
            "--expected_output=2x3xf32=2 3 4 5 6 8",
            "--expected_rtol=0.2",
        ]),
        add_mat(&["--expected_output=3x2xf32=2 3 4 5 6 7"]),
        add_mat(&["--expected_output=2x3xi32=2 3 4 5 6 7"]),
        add_mat(&["--expected_output=(ignored)"]),
        add_mat(&["--expected_output=(ignored)", "--expected_output=(ignored)"]),
        vec![
            &tensors,
            "--function=scale_rows",
            "--input=2x3xf32=1 2 3 4 5 6",
            "--input=2",
            "--expected_output=2x3xf32=2 4 6 8 10 12",
            "--expected_output=(ignored)",
        ],
        vec![
            &tensors,
            "--function=stats",
            "--input=4xf32=1 2 3 4",
            "--expected_output=f32=2.5",
            "--expected_output=(ignored)",
            "--expected_output=(ignored)",
            "--expected_output=(ignored)",
        ],
        vec![
            &scalars,
            "--function=add",
            "--input=2",
            "--input=3",
            "--expected_output=5",
        ],
    ];
    let mut failures = 0;
    for case in &cases {
        let (ours, _) = run_both(&tool, &words(case), &dir);
        failures += usize::from(!ours.status.success());
        assert_same(&tool, &words(case), &dir);
    }
    // Both outcomes are covered: some runs pass, some fail.
    assert!(
        failures >= 8 && failures < cases.len(),
        "{failures} of {}",
        cases.len()
    );
    let passed = assert_same(
        &tool,
        &words(&add_mat(&["--expected_output=2x3xf32=2 3 4 5 6 7"])),
        &dir,
    );
    assert_eq!(
        passed,
        "EXEC @add_mat\n[SUCCESS] all function outputs matched their expected values.\n"
    );
    let failed = assert_same(
        &tool,
        &words(&add_mat(&["--expected_output=2x3xf32=2 3 4 5 6 7.1"])),
        &dir,
    );
    assert!(
        failed.contains(
            "[FAILED] result[0]: element at index 5 (7) does not match the expected (7.1)"
        ),
        "{failed}"
    );
}

/// Two arrays in one `.npy` file (read with `@` then `+`, or `*`) and a raw file.
fn write_inputs(dir: &Path) {
    let a = pactum::Tensor::from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap();
    let b = pactum::Tensor::from_slice(&[1.0f32; 6], &[2, 3]).unwrap();
    let mut both = pactum_npy::write(&a).unwrap();
    both.extend(pactum_npy::write(&b).unwrap());
    std::fs::write(dir.join("in.npy"), both).unwrap();
    let raw: Vec<u8> = [0.5f32, 1.5, 2.5, 3.5, 4.5, 5.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(dir.join("raw.bin"), raw).unwrap();
}

#[test]
fn run_reads_and_writes_files_as_iree_run_module_does() {
    let test = "run_reads_and_writes_files_as_iree_run_module_does";
    let Some(tool) = iree_run_module(test) else {
        return;
    };
    let tensors = format!("--module={}", fixture("vmvx_tensors.vmfb"));
    // Inputs from files: the same in both.
    let dir = scratch("run-files");
    write_inputs(&dir);
    for inputs in [
        vec!["--input=@in.npy", "--input=+in.npy"],
        vec!["--input=*in.npy"],
        vec!["--input=@in.npy", "--input=@in.npy"],
        vec!["--input=2x3xf32=@raw.bin", "--input=@in.npy"],
        // Errors: a third array that is not there, a raw file too short, not a .npy file.
        vec!["--input=@in.npy", "--input=+in.npy", "--input=+in.npy"],
        vec!["--input=4x3xf32=@raw.bin", "--input=@in.npy"],
        vec!["--input=@raw.bin", "--input=@in.npy"],
    ] {
        let mut args = vec![tensors.as_str(), "--function=add_mat"];
        args.extend(inputs);
        assert_same(&tool, &words(&args), &dir);
    }

    // Outputs written (and appended) to .npy and raw files: the same bytes.
    let ours_dir = scratch("run-outputs-pactum");
    let theirs_dir = scratch("run-outputs-iree");
    let args = words(&[
        &tensors,
        "--function=stats",
        "--input=4xf32=1 2 3 4",
        "--output=@a.npy",
        "--output=+a.npy",
        "--output=@b.bin",
        "--output=@c.npy",
    ]);
    let mut ours_args = vec!["run"];
    ours_args.extend(args.iter().map(String::as_str));
    let ours = pactum(&ours_args, &ours_dir);
    let theirs = Command::new(&tool)
        .args(&args)
        .current_dir(&theirs_dir)
        .output()
        .unwrap();
    assert_eq!(stdout(&ours), stdout(&theirs));
    assert_eq!(stdout(&ours), "EXEC @stats\n");
    assert!(ours.status.success(), "{}", stderr(&ours));
    for file in ["a.npy", "b.bin", "c.npy"] {
        let ours = std::fs::read(ours_dir.join(file)).unwrap();
        let theirs = std::fs::read(theirs_dir.join(file)).unwrap();
        assert!(!ours.is_empty(), "{file} empty");
        assert_eq!(
            ours, theirs,
            "{file}: pactum's bytes differ from iree-run-module's"
        );
    }
    // The wrong number of --output specs fails in both.
    let args = words(&[
        &tensors,
        "--function=stats",
        "--input=4xf32=1 2 3 4",
        "--output=-",
    ]);
    assert_same(&tool, &args, &ours_dir);
}

/// Compiles `source` with `compiler` for vmvx, from `dir/<name>.mlir` to `dir/<name>.vmfb`.
fn compile_vmvx(compiler: &Path, dir: &Path, name: &str, source: &str) -> PathBuf {
    let input = dir.join(format!("{name}.mlir"));
    let output = dir.join(format!("{name}.vmfb"));
    std::fs::write(&input, source).unwrap();
    let result = Command::new(compiler)
        .arg(&input)
        .args([
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=vmvx",
            "-o",
        ])
        .arg(&output)
        .output()
        .expect("run iree-compile");
    assert!(
        result.status.success(),
        "iree-compile {name}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    output
}

/// The weights `w` of scope `model` that the parameter tests' programs read.
const MODEL_W: [f32; 4] = [1.5, -2.0, 0.25, 8.0];

/// Writes [`MODEL_W`] as entry `w` of `dir/model.irpa`.
fn write_model_irpa(dir: &Path) {
    let mut model = pactum_iree::parameters::ParameterIndex::new();
    model.add_data(
        "w",
        MODEL_W
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    model.write_irpa_file(dir.join("model.irpa")).unwrap();
}

/// `liba` exports functions (scalar and tensor) and `app` imports them, compiled once per
/// test run by the pinned `iree-compile`.
fn linked_modules(test: &str) -> Option<&'static (PathBuf, PathBuf)> {
    static MODULES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    let compiler = peer_or_skip(
        Some(repo_root().join(".venv/bin/iree-compile")),
        "the pinned iree-compile (.venv)",
        test,
    )?;
    Some(MODULES.get_or_init(|| {
        let dir = scratch("linked-modules");
        let liba = r#"
module @liba {
  func.func @add_one(%x: i32) -> i32 {
    %c1 = arith.constant 1 : i32
    %r = arith.addi %x, %c1 : i32
    return %r : i32
  }
  func.func @double(%t: tensor<4xf32>) -> tensor<4xf32> {
    %r = arith.addf %t, %t : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
"#;
        // Declarations named `liba.<function>` are imports of module `liba`.
        let app = r#"
module @app {
  func.func private @liba.add_one(i32) -> i32
  func.func private @liba.double(tensor<4xf32>) -> tensor<4xf32>
  func.func @main(%x: i32) -> i32 {
    %r = call @liba.add_one(%x) : (i32) -> i32
    %s = arith.muli %r, %r : i32
    return %s : i32
  }
  func.func @quad(%t: tensor<4xf32>) -> tensor<4xf32> {
    %r = call @liba.double(%t) : (tensor<4xf32>) -> tensor<4xf32>
    %s = call @liba.double(%r) : (tensor<4xf32>) -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}
"#;
        (
            compile_vmvx(&compiler, &dir, "liba", liba),
            compile_vmvx(&compiler, &dir, "app", app),
        )
    }))
}

#[test]
fn run_links_modules_as_iree_run_module_does() {
    let test = "run_links_modules_as_iree_run_module_does";
    let (Some(tool), Some((liba, app))) = (iree_run_module(test), linked_modules(test)) else {
        return;
    };
    let dir = scratch("run-linked");
    let liba = format!("--module={}", liba.display());
    let app = format!("--module={}", app.display());
    let main = assert_same(
        &tool,
        &words(&[&liba, &app, "--function=main", "--input=4"]),
        &dir,
    );
    assert_eq!(main, "EXEC @main\nresult[0]: i32=25\n");
    let quad = assert_same(
        &tool,
        &words(&[&liba, &app, "--function=quad", "--input=4xf32=1 2 3 4"]),
        &dir,
    );
    assert_eq!(
        quad,
        "EXEC @quad\nresult[0]: hal.buffer_view\n4xf32=4 8 12 16\n"
    );
    assert_same(
        &tool,
        &words(&[
            &liba,
            &app,
            "--function=quad",
            "--input=4xf32=1 2 3 4",
            "--expected_output=4xf32=4 8 12 16",
        ]),
        &dir,
    );
    // The last --module is the one called: liba's own export, with app loaded first, fails in
    // both (app needs liba registered before it).
    assert_same(&tool, &words(&[&app, "--function=main", "--input=4"]), &dir);
    assert_same(
        &tool,
        &words(&[&app, &liba, "--function=add_one", "--input=4"]),
        &dir,
    );
    // liba alone.
    assert_same(
        &tool,
        &words(&[&liba, "--function=add_one", "--input=4"]),
        &dir,
    );
}

#[test]
fn call_links_modules_with_module_flags() {
    let test = "call_links_modules_with_module_flags";
    let Some((liba, app)) = linked_modules(test) else {
        return;
    };
    let dir = scratch("call-linked");
    let (liba, app) = (liba.display().to_string(), app.display().to_string());
    let output = pactum(&["call", &app, "main", "4", "--module", &liba], &dir);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "25\n");
    let output = pactum(&["call", "--module", &liba, &app, "main", "6"], &dir);
    assert_eq!(stdout(&output), "49\n", "{}", stderr(&output));
    // Without liba: the error names the module that is missing.
    let output = pactum(&["call", &app, "main", "4"], &dir);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("depends on module \"liba\""),
        "{}",
        stderr(&output)
    );
}

#[test]
fn run_and_call_refuse_bad_flags_clearly() {
    let dir = scratch("run-flags");
    let module = format!("--module={}", fixture("multi_export_vmvx.vmfb"));
    for (args, expected) in [
        (
            vec!["run", "--modul=x.vmfb"],
            "unknown flag `--modul` for pactum run",
        ),
        (vec!["run", &module, "extra"], "unexpected argument `extra`"),
        (vec!["run"], "no module given; use --module=file.vmfb"),
        (
            vec!["run", &module, "--device=cuda"],
            "--device=cuda: pactum runs the local-task, local-sync and vulkan devices",
        ),
        (
            vec![
                "run",
                &module,
                "--function=add",
                "--input=1",
                "--input=2",
                "--input=3",
            ],
            "function expected fewer input values",
        ),
        (vec!["run", "--module=/no/such.vmfb"], "/no/such.vmfb"),
        (
            vec![
                "run",
                &module,
                "--function=add",
                "--parameters=model=/no/such.irpa",
            ],
            "--parameters=model=/no/such.irpa",
        ),
        (
            vec!["run", &module, "--equality_mode=fuzzy"],
            "--equality_mode=fuzzy",
        ),
        (
            vec![
                "bench",
                &module,
                "--function=add",
                "--benchmark_repetitions=0",
            ],
            "--benchmark_repetitions must be at least 1",
        ),
    ] {
        let output = pactum(&args, &dir);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        let err = stderr(&output);
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: expected {expected:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // --help describes the flags (it is not an unknown flag).
    for command in ["run", "bench"] {
        let output = pactum(&[command, "--help"], &dir);
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(stdout(&output).contains("--benchmark_repetitions") == (command == "bench"));
        assert!(stdout(&output).contains("--module"), "{}", stdout(&output));
    }
    // A .vmfb-only option on a shared library is refused.
    let output = pactum(&["call", "/bin/true", "f", "--module", "x.vmfb"], &dir);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn bench_reports_each_repetition_and_aggregates_per_iteration() {
    let dir = scratch("bench");
    let module = format!("--module={}", fixture("vmvx_tensors.vmfb"));
    let output = pactum(
        &[
            "bench",
            &module,
            "--function=add_mat",
            "--input=2x3xf32=1 2 3 4 5 6",
            "--input=2x3xf32=1",
            "--benchmark_repetitions=2",
            "--benchmark_min_time=7x",
            "--device=local-sync",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("----") && lines[2].starts_with("----"),
        "{text}"
    );
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header, ["Benchmark", "Time", "CPU", "Iterations"]);
    let rows: Vec<Vec<&str>> = lines[3..]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    let base = "BM_add_mat/process_time/real_time";
    assert_eq!(
        names,
        [
            base.to_owned(),
            base.to_owned(),
            format!("{base}_mean"),
            format!("{base}_median"),
            format!("{base}_stddev"),
            format!("{base}_min"),
            format!("{base}_max"),
            format!("{base}_cv"),
        ]
    );
    // Repetitions: 7 iterations each; aggregates: over the 14 timed iterations, in ms.
    for row in &rows[..2] {
        assert_eq!(row[2], "ms");
        assert_eq!(row[5], "7");
        assert!(row[1].parse::<f64>().unwrap() > 0.0, "{row:?}");
    }
    let value = |row: &Vec<&str>| row[1].parse::<f64>().unwrap();
    for row in &rows[2..7] {
        assert_eq!(row[5], "14", "{row:?}");
    }
    let (mean, median, min, max) = (
        value(&rows[2]),
        value(&rows[3]),
        value(&rows[5]),
        value(&rows[6]),
    );
    assert!(
        min <= median && median <= max && min <= mean && mean <= max,
        "{text}"
    );
    assert_eq!(rows[7][2], "%");

    // JSON: Google Benchmark's fields.
    let output = pactum(
        &[
            "bench",
            &module,
            "--function=add_mat",
            "--input=2x3xf32=1",
            "--input=2x3xf32=1",
            "--benchmark_min_time=3x",
            "--benchmark_format=json",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let benchmarks = report["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks[0]["run_type"], "iteration");
    assert_eq!(benchmarks[0]["iterations"], 3);
    assert_eq!(benchmarks[0]["time_unit"], "ms");
    let aggregates: Vec<&str> = benchmarks[1..]
        .iter()
        .map(|b| b["aggregate_name"].as_str().unwrap())
        .collect();
    assert_eq!(aggregates, ["mean", "median", "stddev", "min", "max", "cv"]);

    // A function the module does not export: a clear error, nothing timed.
    let output = pactum(
        &[
            "bench",
            &module,
            "--function=nope",
            "--benchmark_min_time=3x",
        ],
        &dir,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert!(
        err.starts_with("error: ")
            && err.contains("has no export `nope`")
            && err.contains("add_mat"),
        "{err}"
    );
    // A call that fails (a shape the program refuses) fails the benchmark before any timing.
    let output = pactum(
        &[
            "bench",
            &module,
            "--function=add_mat",
            "--input=2x2xf32=1",
            "--input=2x2xf32=1",
            "--benchmark_min_time=3x",
        ],
        &dir,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("invoking function 'add_mat'"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn run_reads_parameter_archives_as_iree_run_module_does() {
    use pactum_iree::parameters::ParameterIndex;

    let test = "run_reads_parameter_archives_as_iree_run_module_does";
    let Some(tool) = iree_run_module(test) else {
        return;
    };
    let Some(compiler) = peer_or_skip(
        Some(repo_root().join(".venv/bin/iree-compile")),
        "the pinned iree-compile (.venv)",
        test,
    ) else {
        return;
    };
    let dir = scratch("run-parameters");
    // `x * w + b` with w in scope "model" and b in the unnamed scope.
    let source = r#"
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4xf32>
util.global private @b = #flow.parameter.named<"b"> : tensor<4xf32>
func.func @affine(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4xf32>
  %b = util.global.load @b : tensor<4xf32>
  %0 = arith.mulf %x, %w : tensor<4xf32>
  %1 = arith.addf %0, %b : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"#;
    compile_vmvx(&compiler, &dir, "affine", source);
    write_model_irpa(&dir);
    let mut unnamed = ParameterIndex::new();
    unnamed.add_splat("b", &0.5f32.to_le_bytes(), 16).unwrap();
    unnamed.write_irpa_file(dir.join("bias.irpa")).unwrap();

    let run = |extra: &[&str]| -> Vec<String> {
        let mut args = words(&[
            "--module=affine.vmfb",
            "--function=affine",
            "--input=4xf32=1 2 3 4",
            "--parameters=model=model.irpa",
            "--parameters=bias.irpa",
        ]);
        args.extend(words(extra));
        args
    };
    let printed = assert_same(&tool, &run(&[]), &dir);
    assert_eq!(
        printed,
        "EXEC @affine\nresult[0]: hal.buffer_view\n4xf32=2 -3.5 1.25 32.5\n"
    );
    assert_same(
        &tool,
        &run(&["--expected_output=4xf32=2 -3.5 1.25 32.5"]),
        &dir,
    );
    // The same weights from a .safetensors file (8-byte header length, JSON header, data).
    let header = br#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    let mut safetensors = (header.len() as u64).to_le_bytes().to_vec();
    safetensors.extend_from_slice(header);
    safetensors.extend(MODEL_W.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.join("model.safetensors"), safetensors).unwrap();
    let mut from_safetensors = run(&[]);
    from_safetensors[3] = "--parameters=model=model.safetensors".to_owned();
    assert_eq!(assert_same(&tool, &from_safetensors, &dir), printed);
    // A missing archive, and a missing scope, fail in both.
    let mut missing_scope = run(&[]);
    missing_scope.retain(|a| a != "--parameters=model=model.irpa");
    assert_same(&tool, &missing_scope, &dir);
    let mut missing_file = run(&[]);
    missing_file.push("--parameters=other=/no/such.irpa".to_owned());
    assert_same(&tool, &missing_file, &dir);
}

#[test]
fn test_command_links_modules_and_reads_parameters() {
    let test = "test_command_links_modules_and_reads_parameters";
    let Some((liba, _)) = linked_modules(test) else {
        return;
    };
    let compiler = repo_root().join(".venv/bin/iree-compile");
    let dir = scratch("test-linked");
    // Tests calling liba's export and reading a parameter of scope "model".
    let source = r#"
module @app_test {
  func.func private @liba.double(tensor<4xf32>) -> tensor<4xf32>
  util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4xf32>
  func.func @double_works() {
    %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %r = call @liba.double(%t) : (tensor<4xf32>) -> tensor<4xf32>
    check.expect_almost_eq_const(%r, dense<[2.0, 4.0, 6.0, 8.0]> : tensor<4xf32>) : tensor<4xf32>
    return
  }
  func.func @double_fails() {
    %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %r = call @liba.double(%t) : (tensor<4xf32>) -> tensor<4xf32>
    check.expect_almost_eq_const(%r, dense<[2.0, 4.0, 6.0, 9.0]> : tensor<4xf32>) : tensor<4xf32>
    return
  }
  func.func @weights_are_loaded() {
    %w = util.global.load @w : tensor<4xf32>
    check.expect_almost_eq_const(%w, dense<[1.5, -2.0, 0.25, 8.0]> : tensor<4xf32>) : tensor<4xf32>
    return
  }
}
"#;
    compile_vmvx(&compiler, &dir, "app_test", source);
    write_model_irpa(&dir);
    let liba = liba.display().to_string();

    let output = pactum(
        &[
            "test",
            "app_test.vmfb",
            "--module",
            &liba,
            "--parameters",
            "model=model.irpa",
        ],
        &dir,
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}{}", stderr(&output));
    assert!(text.contains("PASS  double_works\n"), "{text}");
    assert!(
        text.contains("FAIL  double_fails (1 failed check(s))"),
        "{text}"
    );
    assert!(text.contains("PASS  weights_are_loaded\n"), "{text}");
    assert!(
        text.contains("3 test(s) of app_test: 2 passed, 1 failed, 0 error(s)"),
        "{text}"
    );
    let output = pactum(
        &[
            "test",
            "app_test.vmfb",
            "double_works",
            "weights_are_loaded",
            "--module",
            &liba,
            "--parameters=model=model.irpa",
        ],
        &dir,
    );
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    // Without liba, or without the archive its initializer reads, the module does not load.
    let output = pactum(&["test", "app_test.vmfb"], &dir);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("depends on module \"liba\""),
        "{}",
        stderr(&output)
    );
    let output = pactum(
        &[
            "test",
            "app_test.vmfb",
            "weights_are_loaded",
            "--module",
            &liba,
        ],
        &dir,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no parameters registered for scope \"model\""),
        "{}",
        stderr(&output)
    );
}

/// Doubles its 32768-float argument in place (`hal.tensor.alias`): a program that writes its
/// input; adds two; and returns a small constant and its input.
const DOUBLE_IN_PLACE: &str = r#"
func.func @add(%a: tensor<32768xf32>, %b: tensor<32768xf32>) -> tensor<32768xf32> {
  %r = arith.addf %a, %b : tensor<32768xf32>
  return %r : tensor<32768xf32>
}
func.func @double_in_place(%arg0: !hal.buffer_view) -> !hal.buffer_view {
  %t = hal.tensor.import %arg0 : !hal.buffer_view -> tensor<32768xf32>
  %r = arith.addf %t, %t : tensor<32768xf32>
  %a = hal.tensor.alias %r : tensor<32768xf32> to %arg0 : !hal.buffer_view
  %o = hal.tensor.export %a : tensor<32768xf32> -> !hal.buffer_view
  return %o : !hal.buffer_view
}
func.func @small_then_input(%arg0: !hal.buffer_view) -> (tensor<4xf32>, !hal.buffer_view) {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %c, %arg0 : tensor<4xf32>, !hal.buffer_view
}
"#;

/// A `.npy` file of 32768 floats (128 KiB: large enough to be mapped) whose data starts at
/// byte `data_start` (a version 1.0 header padded to it, as NumPy pads to 64 and NumPy before
/// 1.14 to 16).
fn npy_of_floats(values: &[f32], data_start: usize) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    let header_len = data_start - 10;
    let mut header = dict.into_bytes();
    header.resize(header_len - 1, b' ');
    header.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header_len as u16).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    bytes
}

#[test]
fn run_reads_large_npy_inputs_in_place_and_a_program_writing_one_never_changes_the_file() {
    let test =
        "run_reads_large_npy_inputs_in_place_and_a_program_writing_one_never_changes_the_file";
    let Some(tool) = iree_run_module(test) else {
        return;
    };
    let Some(compiler) = peer_or_skip(
        Some(repo_root().join(".venv/bin/iree-compile")),
        "the pinned iree-compile (.venv)",
        test,
    ) else {
        return;
    };
    let dir = scratch("run-npy-in-place");
    compile_vmvx(&compiler, &dir, "double", DOUBLE_IN_PLACE);
    let values: Vec<f32> = (0..32768).map(|i| i as f32 * 0.25 - 7.0).collect();
    let doubled: Vec<String> = values[..4].iter().map(|v| (v * 2.0).to_string()).collect();
    // Data at byte 128 (mapped: a multiple of 64) and at byte 80 (copied: 16 past one).
    let aligned = npy_of_floats(&values, 128);
    let misaligned = npy_of_floats(&values, 80);
    std::fs::write(dir.join("aligned.npy"), &aligned).unwrap();
    std::fs::write(dir.join("misaligned.npy"), &misaligned).unwrap();
    for input in ["@aligned.npy", "@misaligned.npy"] {
        let printed = assert_same(
            &tool,
            &words(&[
                "--module=double.vmfb",
                "--function=double_in_place",
                &format!("--input={input}"),
            ]),
            &dir,
        );
        assert!(
            printed.contains(&format!("32768xf32={} ", doubled.join(" "))),
            "{input}: {printed:.200}"
        );
    }
    // The program wrote its input; the files never change.
    assert_eq!(std::fs::read(dir.join("aligned.npy")).unwrap(), aligned);
    assert_eq!(
        std::fs::read(dir.join("misaligned.npy")).unwrap(),
        misaligned
    );
    // Two arrays in one file, the second read on from the first (`+`): its data is at its
    // own offset in the file.
    let others: Vec<f32> = (0..32768).map(|i| 1000.0 - i as f32).collect();
    let mut two = aligned.clone();
    two.extend_from_slice(&npy_of_floats(&others, 128));
    std::fs::write(dir.join("two.npy"), &two).unwrap();
    let printed = assert_same(
        &tool,
        &words(&[
            "--module=double.vmfb",
            "--function=add",
            "--input=@two.npy",
            "--input=+two.npy",
        ]),
        &dir,
    );
    let sums: Vec<String> = (0..4)
        .map(|i| (values[i] + others[i]).to_string())
        .collect();
    assert!(
        printed.contains(&format!("32768xf32={} ", sums.join(" "))),
        "{printed:.200}"
    );
    assert_eq!(std::fs::read(dir.join("two.npy")).unwrap(), two);

    // Results written over the mapped input file: the first (4 floats) truncates the file
    // the second result's pages come from. Both runtimes must end with the same file, and
    // pactum must not lose the pages from under the second result (a SIGBUS).
    let mut written = Vec::new();
    for runner in ["pactum", "iree"] {
        std::fs::write(dir.join("over.npy"), &aligned).unwrap();
        let args = words(&[
            "--module=double.vmfb",
            "--function=small_then_input",
            "--input=@over.npy",
            "--output=@over.npy",
            "--output=@over.npy",
        ]);
        let output = if runner == "pactum" {
            let mut all = vec!["run".to_string()];
            all.extend(args);
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            pactum(&all, &dir)
        } else {
            std::process::Command::new(&tool)
                .args(&args)
                .current_dir(&dir)
                .output()
                .unwrap()
        };
        assert_eq!(
            output.status.code(),
            Some(0),
            "{runner}: {}",
            stderr(&output)
        );
        written.push(std::fs::read(dir.join("over.npy")).unwrap());
    }
    assert_eq!(
        written[0], written[1],
        "pactum's file (left) and IREE's (right)"
    );
}
