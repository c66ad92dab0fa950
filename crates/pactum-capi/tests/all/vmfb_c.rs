//! A C program loads a `.vmfb` through pactum's `libtvm_ffi.so` (`tests/c/vmfb/load_vmfb.c`):
//! `ffi.ModuleLoadFromFile` finds `ffi.Module.load_from_file.vmfb`, which the library registers
//! when it is loaded, and the program calls the module's exports through the C API.
//!
//! Only against pactum's library: the official one has no `.vmfb` loader. The program's results
//! are checked against the same calls made in this process through
//! `pactum_iree::module::IreeModule`.

use std::path::{Path, PathBuf};
use std::process::Command;

use pactum::{Array, Tensor};
use pactum_iree::module::IreeModule;

use crate::support;

/// Compiles `tests/c/vmfb/<program>.c` against pactum's `libtvm_ffi.so`, runs it on fixture
/// `vmfb` and returns its stdout; `None` when there is no tvm-ffi-config (no headers).
fn run_program(program: &str, vmfb: &Path) -> Option<String> {
    let config = support::tvm_ffi_config()?;
    let include = support::config_value(&config, "--includedir");
    let libdir = support::pactum_libdir();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = manifest.join(format!("tests/c/vmfb/{program}.c"));
    let build = std::env::temp_dir().join(format!("pactum-{program}-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build).unwrap();
    let exe = build.join(program);
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".to_owned());
    let flags: Vec<String> = ["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"]
        .iter()
        .map(|f| f.to_string())
        .chain([format!("-I{include}")])
        .collect();
    support::compile_client(&cc, &flags, &source, &exe, &libdir);
    let output = Command::new(&exe)
        .arg(vmfb)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run the C program");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{program} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let _ = std::fs::remove_dir_all(&build);
    Some(stdout)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pactum-iree/tests/fixtures/vmfb")
        .join(name)
}

/// The words after `label` on the line starting with it.
fn line<'a>(stdout: &'a str, label: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.first() == Some(&label))
        .map(|words| words[1..].to_vec())
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{stdout}"))
}

#[test]
fn c_program_loads_a_vmfb_and_calls_its_exports() {
    let vmfb = fixture("vm_direct.vmfb");
    let Some(stdout) = run_program("load_vmfb", &vmfb) else {
        return;
    };
    let line = |label: &str| line(&stdout, label);
    assert_eq!(line("kind"), ["vmfb"]);
    assert_eq!(line("nope"), ["absent"]);

    // The same calls, in this process, through IreeModule.
    let module = IreeModule::load(&vmfb).unwrap();
    let mixed: Array = module
        .function("mix")
        .unwrap()
        .call_typed((1, 2, 1.5, 0.25))
        .unwrap();
    let mix = line("mix");
    assert_eq!(mix.len(), 3, "{stdout}");
    assert_eq!(
        mix[0].parse::<f64>().unwrap(),
        mixed.get_as::<f64>(0).unwrap()
    );
    assert_eq!(
        mix[1].parse::<i64>().unwrap(),
        mixed.get_as::<i64>(1).unwrap()
    );
    assert_eq!(
        mix[2].parse::<f64>().unwrap(),
        mixed.get_as::<f64>(2).unwrap()
    );
    let frobbed: i64 = module
        .function("frob_or_double")
        .unwrap()
        .call_typed((21,))
        .unwrap();
    assert_eq!(line("frob_or_double"), [frobbed.to_string().as_str()]);
}

#[test]
fn c_program_calls_an_llvm_cpu_vmfb_with_scalars_and_dlpack_tensors() {
    if !cfg!(target_arch = "x86_64") {
        return; // the llvm-cpu fixtures hold x86-64 code
    }
    let vmfb = fixture("multi_export_llvm_cpu.vmfb");
    let Some(stdout) = run_program("call_llvm_cpu", &vmfb) else {
        return;
    };
    let line = |label: &str| line(&stdout, label);
    let floats =
        |words: &[&str]| -> Vec<f64> { words.iter().map(|w| w.parse().unwrap()).collect() };

    // The same calls, in this process, through IreeModule.
    let module = IreeModule::load(&vmfb).unwrap();
    let add: i64 = module.function("add").unwrap().call_typed((7, 35)).unwrap();
    assert_eq!(line("add"), [add.to_string().as_str()]);
    let fused: f64 = module
        .function("mul_add")
        .unwrap()
        .call_typed((1.5, 4.0, 0.25))
        .unwrap();
    assert_eq!(floats(&line("mul_add")), [fused]);
    let twice: i64 = module
        .function("twice_i64")
        .unwrap()
        .call_typed((4_294_967_296i64,))
        .unwrap();
    assert_eq!(line("twice_i64"), [twice.to_string().as_str()]);

    let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let b = Tensor::from_slice(&[10.0f32, 20.0, 30.0, 40.5], &[4]).unwrap();
    let sum: Tensor = module
        .function("add_vec")
        .unwrap()
        .call_typed((&a, &b))
        .unwrap();
    let mut expected = vec![4.0];
    expected.extend(sum.to_vec::<f32>().unwrap().iter().map(|&v| f64::from(v)));
    assert_eq!(floats(&line("add_vec")), expected);

    let c = Tensor::from_slice(&[1.0f32, -2.0, 3.5], &[3]).unwrap();
    let scaled: Array = module
        .function("scale_dyn")
        .unwrap()
        .call_typed((&c, 0.5))
        .unwrap();
    let tensor: Tensor = scaled.get_as(0).unwrap();
    let count: i64 = scaled.get_as(1).unwrap();
    let mut expected = vec![3.0];
    expected.extend(
        tensor
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|&v| f64::from(v)),
    );
    expected.push(count as f64);
    assert_eq!(floats(&line("scale_dyn")), expected);
    assert_eq!(
        floats(&line("scale_dyn")),
        [3.0, 0.5, -1.0, 1.75, 3.0],
        "as iree-run-module computes it"
    );

    // pactum copies tensor arguments into HAL buffers: nothing keeps the program's tensors.
    assert_eq!(line("inputs_deleted"), ["3"]);
    assert_eq!(line("nope"), ["absent"]);
}
