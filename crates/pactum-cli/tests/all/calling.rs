//! `pactum call` fills an export's arguments as iree-run-module does: in order, whatever
//! names `iree.abi.name` or `iree.abi` give them; `--named NAME=VALUE` passes an `iree.abi`
//! named argument by name. Results are compared with iree-run-module's on the same module and
//! inputs (live), not with values typed here.

use std::path::Path;

use pactum_testing::iree::{IreeTensor, IreeValue, ManifestRun, manifest_runs, tool_or_skip};

use crate::cli::{pactum, scratch, stderr, stdout, vmfb_fixture};

fn manifest_run(file: &str, function: &str) -> ManifestRun {
    manifest_runs()
        .unwrap()
        .into_iter()
        .find(|run| run.file == file && run.function == function && run.fails.is_none())
        .unwrap_or_else(|| panic!("no run of {file} @{function}"))
}

/// `pactum call` of `run`'s export with `args` (after the function name) and `--out OUT`.
fn call(run: &ManifestRun, args: &[&str], dir: &Path, out: &str) -> std::process::Output {
    let module = vmfb_fixture(&run.file);
    let mut words = vec!["call", &module, &run.function];
    words.extend(args);
    words.extend(["--out", out]);
    pactum(&words, dir)
}

fn printed_npy(file: &Path) -> IreeTensor {
    let tensor = pactum_npy::read_file(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let view = pactum_iree::module::tensor_to_buffer_view(&tensor).unwrap();
    IreeTensor::parse(&view.format(1024)).unwrap()
}

/// The live results of iree-run-module for `run`.
fn iree_results(run: &ManifestRun) -> Vec<IreeValue> {
    run.run()
        .unwrap_or_else(|e| panic!("{run}: {e}"))
        .expect_results()
        .to_vec()
}

#[test]
fn arguments_named_by_iree_abi_name_only_are_passed_by_position() {
    let test = "arguments_named_by_iree_abi_name_only_are_passed_by_position";
    if tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let dir = scratch("calling-declaration");
    let run = manifest_run("calling_vmvx.vmfb", "scale");
    let inputs: Vec<&str> = run.inputs.iter().map(String::as_str).collect();
    let output = call(&run, &inputs, &dir, "out");
    assert!(output.status.success(), "{run}: {}", stderr(&output));
    let results = iree_results(&run);
    let [IreeValue::Tensor(expected)] = results.as_slice() else {
        panic!("{run}: one tensor expected");
    };
    assert_eq!(
        &printed_npy(&dir.join("out/result_0.npy")),
        expected,
        "{run}"
    );
    // The names document the arguments; they are not iree.abi named arguments.
    let output = call(&run, &[inputs[0], "--named", "factor=0.5"], &dir, "out2");
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("has no iree.abi named argument `factor`"),
        "{}",
        stderr(&output)
    );
}

/// `dict_summary(x, *, repeat)` (an `iree.abi` named record) and `pair_out(*, x, k)`: filled
/// in order as iree-run-module fills them, or by `--named`, with the same results.
#[test]
fn iree_abi_named_arguments_are_filled_in_order_or_by_name() {
    let test = "iree_abi_named_arguments_are_filled_in_order_or_by_name";
    if tool_or_skip("iree-run-module", test).is_none() {
        return;
    }
    let dir = scratch("calling-named");

    let run = manifest_run("vmvx_tensors.vmfb", "dict_summary");
    let [x, repeat] = [run.inputs[0].as_str(), run.inputs[1].as_str()];
    let expected = iree_results(&run);
    let [
        IreeValue::Tensor(total),
        IreeValue::Scalar { text: count, .. },
        IreeValue::List(items),
    ] = expected.as_slice()
    else {
        panic!("{run}: {expected:?}");
    };
    let repeated: Vec<String> = items
        .iter()
        .map(|item| match item {
            IreeValue::Scalar { text, .. } => text.clone(),
            other => panic!("{run}: {other:?}"),
        })
        .collect();
    let want = format!(
        "\"count\": {count}, \"repeated\": [{}]}}",
        repeated.join(", ")
    );
    let repeat_named = format!("repeat={repeat}");
    let x_named = format!("x={x}");
    let forms: [(&str, Vec<&str>); 5] = [
        ("in order", vec![x, repeat]),
        ("by name", vec![x, "--named", &repeat_named]),
        ("by name first", vec!["--named", &repeat_named, x]),
        ("bare NAME=VALUE", vec![x, &repeat_named]),
        ("bare NAME=VALUE first", vec![&repeat_named, x]),
    ];
    for (k, (form, args)) in forms.iter().enumerate() {
        let out = format!("dict{k}");
        let output = call(&run, args, &dir, &out);
        assert!(output.status.success(), "{run} {form}: {}", stderr(&output));
        let printed = stdout(&output);
        assert!(
            printed.lines().next().unwrap().ends_with(&want),
            "{run} {form}: {printed}"
        );
        assert_eq!(
            &printed_npy(&dir.join(&out).join("result_0.npy")),
            total,
            "{run} {form}"
        );
    }
    let output = call(&run, &[x, repeat, "--named", &repeat_named], &dir, "twice");
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("multiple values for argument `repeat`"),
        "{}",
        stderr(&output)
    );
    let output = call(&run, &["--named", &x_named], &dir, "unnamed");
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no iree.abi named argument `x` (its named arguments: repeat)"),
        "{}",
        stderr(&output)
    );

    // Every argument of pair_out is named.
    let run = manifest_run("abi_structs_vmvx.vmfb", "pair_out");
    let [x, k] = [run.inputs[0].as_str(), run.inputs[1].as_str()];
    let expected = iree_results(&run);
    let [IreeValue::Tensor(y), IreeValue::Scalar { text: k2, .. }] = expected.as_slice() else {
        panic!("{run}: {expected:?}");
    };
    let (x_named, k_named) = (format!("x={x}"), format!("k={k}"));
    let forms: [(&str, Vec<&str>); 4] = [
        ("in order", vec![x, k]),
        ("by name", vec!["--named", &k_named, "--named", &x_named]),
        ("mixed", vec![x, "--named", &k_named]),
        ("bare NAME=VALUE", vec![&k_named, &x_named]),
    ];
    for (n, (form, args)) in forms.iter().enumerate() {
        let out = format!("pair{n}");
        let output = call(&run, args, &dir, &out);
        assert!(output.status.success(), "{run} {form}: {}", stderr(&output));
        let printed = stdout(&output);
        let first = printed.lines().next().unwrap();
        assert!(
            first.ends_with(&format!(", {k2}]")),
            "{run} {form}: {printed}"
        );
        assert_eq!(
            &printed_npy(&dir.join(&out).join("result_0.npy")),
            y,
            "{run} {form}"
        );
    }
}

#[test]
fn named_arguments_are_refused_where_nothing_has_names() {
    let dir = scratch("calling-refusals");
    let module = vmfb_fixture("vm_direct.vmfb");
    let output = pactum(
        &["call", &module, "frob_or_double", "21", "--named", "x=1"],
        &dir,
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("records no iree.abi signature"),
        "{}",
        stderr(&output)
    );
    let output = pactum(&["call", &module, "frob_or_double", "--named", "x"], &dir);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("expected NAME=VALUE"),
        "{}",
        stderr(&output)
    );
}
