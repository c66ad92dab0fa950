//! Element types through `pactum call`, against the pinned `iree-run-module` on the same
//! fixtures and inputs (`element_types.mlir`, `float16_types.mlir`): integers of another
//! signedness, NumPy bools, packed sub-byte integers and every float type IREE 3.13 has, given
//! inline or as `.npy` files, with results written by `--out` as `.npy` (under `ml_dtypes`'
//! names for the types NumPy lacks) and compared, element for element as iree-run-module
//! prints them, with what iree-run-module prints or writes. No expected value is typed here.

use std::path::Path;

use pactum::{DataType, Tensor};
use pactum_testing::iree::{IreeTensor, IreeValue, ManifestRun, manifest_runs, tool_or_skip};

use crate::cli::{pactum, scratch, stderr, stdout, vmfb_fixture};

/// A `.npy` result of `pactum call --out` printed as iree-run-module prints tensors.
fn printed_npy(file: &Path) -> IreeTensor {
    let tensor = pactum_npy::read_file(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let view = pactum_iree::module::tensor_to_buffer_view(&tensor).unwrap();
    IreeTensor::parse(&view.format(1024)).unwrap()
}

fn element_type_runs() -> Vec<ManifestRun> {
    manifest_runs()
        .unwrap()
        .into_iter()
        .filter(|run| run.file.starts_with("element_types") || run.file.starts_with("float16"))
        .filter(|run| run.backend != "llvm-cpu" || cfg!(target_arch = "x86_64"))
        .collect()
}

/// `pactum call MODULE FUNCTION INPUTS... [--device D] --out OUT` in `dir`.
fn call(run: &ManifestRun, inputs: &[String], dir: &Path, out: &Path) -> std::process::Output {
    let module = vmfb_fixture(&run.file);
    let out = out.to_string_lossy().into_owned();
    let mut args = vec!["call", &module, &run.function];
    args.extend(inputs.iter().map(String::as_str));
    if let Some(device) = &run.device {
        args.extend(["--device", device]);
    }
    args.extend(["--out", &out]);
    pactum(&args, dir)
}

#[test]
fn every_element_type_run_through_pactum_call_matches_iree_run_module() {
    let test = "every_element_type_run_through_pactum_call_matches_iree_run_module";
    if tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let dir = scratch("element-types");
    let runs = element_type_runs();
    assert!(runs.len() >= 20, "{} runs", runs.len());
    for (k, run) in runs.iter().enumerate() {
        let iree = run.run().unwrap_or_else(|e| panic!("{run}: {e}"));
        let out = dir.join(format!("run{k}"));
        let output = call(run, &run.inputs, &dir, &out);
        match &iree.results {
            Err(failure) => assert!(
                !output.status.success(),
                "{run}: iree-run-module fails ({}), pactum printed {}",
                failure.status,
                stdout(&output)
            ),
            Ok(results) => {
                assert!(output.status.success(), "{run}: {}", stderr(&output));
                let [IreeValue::Tensor(expected)] = results.as_slice() else {
                    panic!("{run}: one tensor result expected, iree-run-module gave {results:?}");
                };
                let ours = printed_npy(&out.join("result_0.npy"));
                assert_eq!(
                    &ours, expected,
                    "{run}: pactum (left), iree-run-module (right)"
                );
            }
        }
    }
}

/// `.npy` inputs: `uint16` and `int16` files for `i16` arguments, a NumPy `bool` file for an
/// `i1` argument; both runtimes read the same files.
#[test]
fn npy_inputs_of_other_signedness_and_numpy_bools_are_taken_as_iree_takes_them() {
    let test = "npy_inputs_of_other_signedness_and_numpy_bools_are_taken_as_iree_takes_them";
    if tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let dir = scratch("element-types-npy");
    let files: [(&str, Tensor); 3] = [
        (
            "u16.npy",
            Tensor::from_slice(&[1u16, 2, 65535, 32768], &[4]).unwrap(),
        ),
        (
            "i16.npy",
            Tensor::from_slice(&[1i16, -1, 1, -1], &[4]).unwrap(),
        ),
        (
            "bools.npy",
            Tensor::from_slice(&[1u8, 0, 0, 1], &[4])
                .unwrap()
                .view_as(DataType::BOOL)
                .unwrap(),
        ),
    ];
    for (name, tensor) in &files {
        pactum_npy::write_file(dir.join(name), tensor).unwrap();
    }
    let cases = [
        ("add_i16", vec!["@u16.npy", "@i16.npy"]),
        ("add_i16", vec!["@i16.npy", "@u16.npy"]),
        ("not_i1", vec!["@bools.npy"]),
    ];
    for (function, inputs) in cases {
        let template = element_type_runs()
            .into_iter()
            .find(|run| run.function == function && run.backend == "vmvx")
            .unwrap();
        let run = ManifestRun {
            inputs: inputs.iter().map(|i| i.to_string()).collect(),
            ..template
        };
        let absolute: Vec<String> = inputs
            .iter()
            .map(|i| format!("@{}", dir.join(&i[1..]).display()))
            .collect();
        let iree = pactum_testing::iree::run_module(
            &run.path,
            function,
            &absolute.iter().map(String::as_str).collect::<Vec<_>>(),
            run.device.as_deref(),
        )
        .unwrap();
        let out = dir.join(format!(
            "out-{function}-{}",
            inputs.join("-").replace('@', "")
        ));
        let output = call(&run, &run.inputs, &dir, &out);
        assert!(output.status.success(), "{run}: {}", stderr(&output));
        let [IreeValue::Tensor(expected)] = iree.expect_results() else {
            panic!("{run}: {iree:?}");
        };
        assert_eq!(&printed_npy(&out.join("result_0.npy")), expected, "{run}");
    }
}

/// An `i4` result: iree-run-module cannot print one, and writes its packed bytes to `--output`
/// (under a `|i1` descr); pactum writes an `int4` `.npy`, one element a byte as `ml_dtypes`
/// stores them, whose elements are those bytes unpacked (low nibble first).
#[test]
fn an_i4_result_holds_the_elements_iree_run_module_writes_packed() {
    let test = "an_i4_result_holds_the_elements_iree_run_module_writes_packed";
    if tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let dir = scratch("element-types-i4");
    let template = element_type_runs()
        .into_iter()
        .find(|run| run.function == "widen_i4" && run.backend == "vmvx")
        .unwrap();
    let run = ManifestRun {
        function: "negate_i4".to_owned(),
        inputs: vec!["4xi4=21 C3".to_owned()],
        ..template
    };
    let written = dir.join("iree.npy");
    let status = pactum_testing::iree::run_command(
        &run.path,
        &run.function,
        &["4xi4=21 C3"],
        run.device.as_deref(),
    )
    .unwrap()
    .arg(format!("--output=@{}", written.display()))
    .output()
    .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let file = std::fs::read(&written).unwrap();
    let header = usize::from(u16::from_le_bytes([file[8], file[9]]));
    let packed = &file[10 + header..];
    assert_eq!(
        packed.len(),
        2,
        "iree-run-module writes 4 i4 elements as 2 bytes"
    );
    let unpacked: Vec<u8> = (0..4)
        .map(|k| (packed[k / 2] >> (4 * (k % 2))) & 0xF)
        .collect();

    let out = dir.join("out");
    let output = call(&run, &run.inputs, &dir, &out);
    assert!(output.status.success(), "{}", stderr(&output));
    let ours = pactum_npy::read_file(out.join("result_0.npy")).unwrap();
    assert_eq!(ours.dtype(), DataType::parse("int4").unwrap());
    assert_eq!(ours.shape(), &[4]);
    let file = std::fs::read(out.join("result_0.npy")).unwrap();
    let header = usize::from(u16::from_le_bytes([file[8], file[9]]));
    assert_eq!(&file[10 + header..], unpacked.as_slice());
}
