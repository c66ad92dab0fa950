//! `--device vulkan` in `pactum run`, `call`, `test` and `bench`, on programs compiled now by
//! the pinned `iree-compile --iree-hal-target-device=vulkan`: `pactum run` prints what the
//! native `iree-run-module --device=vulkan` prints. These tests need a Vulkan driver
//! (lavapipe: `apt-get install libvulkan1 mesa-vulkan-drivers`, as scripts/test.sh does);
//! without one they fail, saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

use pactum_testing::iree::compile_for_vulkan;

use crate::cli::{pactum, scratch, stderr, stdout};

const PROGRAM: &str = r#"
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @matvec(%m: tensor<3x4xf32>, %v: tensor<4xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<3xf32>) -> tensor<3xf32>
  %0 = linalg.matvec ins(%m, %v : tensor<3x4xf32>, tensor<4xf32>) outs(%init : tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"#;

const CHECKS: &str = r#"
func.func @sums_match() {
  %a = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = util.unfoldable_constant dense<[0.5, 0.5, 0.5, 0.5]> : tensor<4xf32>
  %0 = arith.addf %a, %b : tensor<4xf32>
  check.expect_almost_eq_const(%0, dense<[1.5, 2.5, 3.5, 4.5]> : tensor<4xf32>) : tensor<4xf32>
  return
}

func.func @sums_differ() {
  %a = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = arith.addf %a, %a : tensor<4xf32>
  check.expect_eq_const(%0, dense<[2.0, 4.0, 6.0, 9.0]> : tensor<4xf32>) : tensor<4xf32>
  return
}
"#;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned compiler and native `iree-run-module` (the tests' setup: missing ones fail).
fn tools() -> (PathBuf, PathBuf) {
    let compiler = repo_root().join(".venv/bin/iree-compile");
    assert!(
        compiler.exists(),
        "{} missing: run scripts/test.sh",
        compiler.display()
    );
    let run_module = match std::env::var_os("PACTUM_IREE_BIN") {
        Some(dir) => PathBuf::from(dir).join("iree-run-module"),
        None => std::fs::read_dir(repo_root().join(".venv/lib"))
            .unwrap()
            .flatten()
            .map(|python| {
                python
                    .path()
                    .join("site-packages/iree/_runtime_libs/iree-run-module")
            })
            .find(|path| path.exists())
            .expect("the native iree-run-module of the pinned wheel: run scripts/test.sh"),
    };
    (compiler, run_module)
}

/// A module the device is opened for (a VM-only fixture).
fn any_module() -> String {
    repo_root()
        .join("crates/pactum-iree/tests/fixtures/vmfb/vm_direct.vmfb")
        .display()
        .to_string()
}

/// Fails the test, saying what to install, when no Vulkan driver is there.
fn require_vulkan(dir: &Path) {
    let output = pactum(&["call", "--device", "vulkan", &any_module(), "f"], dir);
    let text = stderr(&output);
    assert!(
        !text.contains("vulkan: cannot load the Vulkan loader")
            && !text.contains("found no device")
            && !text.contains("vkCreateInstance"),
        "no Vulkan driver: {text}\nThese tests need one: install libvulkan1 and \
         mesa-vulkan-drivers (lavapipe), as scripts/test.sh does."
    );
}

#[test]
fn run_on_vulkan_prints_what_iree_run_module_prints() {
    let dir = scratch("vulkan-run");
    require_vulkan(&dir);
    let (compiler, run_module) = tools();
    let module = compile_for_vulkan(&compiler, &dir, "program", PROGRAM);
    let module_flag = format!("--module={}", module.display());
    for args in [
        vec![
            module_flag.as_str(),
            "--function=add",
            "--input=4xf32=1 2 3 4",
            "--input=4xf32=0.5 0.25 -8 1e3",
        ],
        vec![
            module_flag.as_str(),
            "--function=matvec",
            "--input=3x4xf32=1 2 3 4 5 6 7 8 9 10 11 12",
            "--input=4xf32=1 -1 0.5 2",
        ],
    ] {
        let theirs = Command::new(&run_module)
            .arg("--device=vulkan")
            .args(&args)
            .output()
            .unwrap();
        assert!(
            theirs.status.success(),
            "{}",
            String::from_utf8_lossy(&theirs.stderr)
        );
        // `vulkan://0` is pactum's name of the loader's first device (IREE's paths name a
        // device by its UUID instead).
        for device in ["--device=vulkan", "--device=vulkan://0"] {
            let mut ours = vec!["run", device];
            ours.extend(&args);
            let output = pactum(&ours, &dir);
            assert!(output.status.success(), "{ours:?}: {}", stderr(&output));
            assert_eq!(
                stdout(&output),
                String::from_utf8_lossy(&theirs.stdout),
                "{ours:?}"
            );
        }
    }

    // `call` prints the result tensor; a device number past the loader's is an error naming
    // the devices there are.
    let module = module.display().to_string();
    let out = dir.join("call-out");
    let out_dir = out.display().to_string();
    let output = pactum(
        &[
            "call",
            "--device",
            "vulkan",
            &module,
            "add",
            "4xf32=1 2 3 4",
            "4xf32=1 1 1 1",
            "--out",
            &out_dir,
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Tensor[float32, 4]"),
        "{}",
        stdout(&output)
    );
    let npy = std::fs::read(out.join("result_0.npy")).unwrap();
    let values: Vec<f32> = npy[npy.len() - 16..]
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(values, [2.0, 3.0, 4.0, 5.0]);
    let output = pactum(
        &[
            "call",
            "--device=vulkan://99",
            &module,
            "add",
            "4xf32=1",
            "4xf32=1",
        ],
        &dir,
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("vulkan://99: the Vulkan loader found"),
        "{}",
        stderr(&output)
    );

    // `bench` reports the device.
    let output = pactum(
        &[
            "bench",
            "--device=vulkan",
            &module_flag,
            "--function=add",
            "--input=4xf32=1",
            "--input=4xf32=2",
            "--benchmark_min_time=3x",
            "--benchmark_format=json",
        ],
        &dir,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["context"]["device"], "vulkan", "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn test_on_vulkan_passes_and_fails_the_checks() {
    let dir = scratch("vulkan-test");
    require_vulkan(&dir);
    let (compiler, _) = tools();
    let module = compile_for_vulkan(&compiler, &dir, "checks", CHECKS);
    let module = module.display().to_string();
    let output = pactum(&["test", &module, "--device", "vulkan"], &dir);
    let text = stdout(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("PASS  sums_match"),
        "{text}{}",
        stderr(&output)
    );
    assert!(
        text.contains("FAIL  sums_differ"),
        "{text}{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_vulkan_driver_the_device_says_what_to_install() {
    let dir = scratch("vulkan-no-driver");
    // The loader reads its drivers from these files only: none exists.
    let output = Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(["call", "--device", "vulkan", &any_module(), "f"])
        .env("VK_DRIVER_FILES", dir.join("none.json"))
        .env("VK_ICD_FILENAMES", dir.join("none.json"))
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(
        text.contains("UNAVAILABLE") && text.contains("mesa-vulkan-drivers"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_vulkan_memory_mode_is_refused_naming_the_variable_and_the_modes() {
    let dir = scratch("vulkan-memory-mode");
    let output = Command::new(env!("CARGO_BIN_EXE_pactum"))
        .args(["call", "--device", "vulkan", &any_module(), "f"])
        .env("PACTUM_VULKAN_MEMORY", "device-local")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let text = stderr(&output);
    assert!(
        text.contains(
            "PACTUM_VULKAN_MEMORY: vulkan memory mode 'device-local': expected one of \
                       default, device-local-only, non-coherent"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
