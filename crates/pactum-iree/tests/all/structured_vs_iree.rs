//! Structured calls compared with IREE's own Python runtime (`iree.runtime`) on the same
//! modules and inputs, the calls it refuses included.
//!
//! Every case runs twice: once through `tests/python/iree_runtime_calls.py` (IREE 3.13's
//! `iree.runtime`, with the workspace's `.venv` python) and once through
//! [`IreeModule::function`], keyword arguments passed with TVM FFI's KWARGS protocol. IREE's
//! outcome is the oracle: no expected value is typed here. The test asserts the same
//! success or refusal for every case, equal results on success (same structure, bit-exact
//! tensors), and that pactum's refusals name the argument (path) they are about.
//!
//! Where pactum intentionally does not follow IREE, the case says so ([`Diff`]): IREE's
//! Python runtime converts whatever it is given with `numpy.asarray(value, dtype=declared)`
//! and `int(value)`, so it silently casts an int64 or float64 array to float32, takes a
//! Python list as a tensor and the string "3" as an i32. pactum refuses those (a cast
//! changes values; see `StructuredFunction::allow_casts`); with `allow_casts` the cast
//! cases give IREE's results.
//!
//! Without the python or `iree.runtime` the test fails, unless `PACTUM_SKIP_PEER=1`, when
//! it is skipped with a message.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use pactum::{Any, AnyView, Array, DataType, Function, List, Map, Tensor};
use pactum_iree::module::IreeModule;
use pactum_iree::structured::StructuredFunction;
use pactum_sys::tvm_ffi::TVMFFITypeIndex;
use serde_json::{Value, json};

const ABI: &str = "abi_structs_vmvx.vmfb";
const TENSORS: &str = "vmvx_tensors.vmfb";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    manifest_dir().join("tests/fixtures/vmfb").join(name)
}

/// How pactum's outcome relates to IREE's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Diff {
    /// The same: both succeed with equal results, or both refuse.
    Same,
    /// IREE casts the tensor to the declared element type; pactum refuses without
    /// `allow_casts` and, with it, matches IREE's result.
    Cast,
    /// IREE converts a value pactum refuses (the reason is the case's note).
    Refuses(&'static str),
}

struct Case {
    label: String,
    module: &'static str,
    function: &'static str,
    args: Vec<Value>,
    kwargs: Vec<(&'static str, Value)>,
    /// For refusals: what pactum's error message must contain (the argument's path).
    names: &'static str,
    diff: Diff,
}

fn tensor(dtype: &str, shape: &[i64], data: Value) -> Value {
    json!({"tensor": {"dtype": dtype, "shape": shape, "data": data}})
}

fn f32s(shape: &[i64], data: &[f64]) -> Value {
    tensor("float32", shape, json!(data))
}

fn dict(pairs: &[(&str, Value)]) -> Value {
    let pairs: Vec<Value> = pairs.iter().map(|(k, v)| json!([k, v])).collect();
    json!({ "dict": pairs })
}

fn float(x: f64) -> Value {
    json!({ "float": x })
}

struct Cases(Vec<Case>);

impl Cases {
    fn add(
        &mut self,
        label: &str,
        module: &'static str,
        function: &'static str,
        args: Vec<Value>,
        kwargs: Vec<(&'static str, Value)>,
    ) -> &mut Case {
        self.0.push(Case {
            label: label.to_string(),
            module,
            function,
            args,
            kwargs,
            names: "",
            diff: Diff::Same,
        });
        self.0.last_mut().unwrap()
    }
}

impl Case {
    fn names(&mut self, path: &'static str) -> &mut Case {
        self.names = path;
        self
    }
    fn diff(&mut self, diff: Diff) -> &mut Case {
        self.diff = diff;
        self
    }
}

fn cases() -> Vec<Case> {
    let mut c = Cases(Vec::new());
    let bias = || f32s(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let scale = || f32s(&[4], &[0.5, -2.0, 1e-3, 3.25]);

    // dict_in(%params: {bias: tensor<4xf32>, n: i32}, *, scale: tensor<4xf32>)
    //   -> {out: tensor<4xf32>, n_squared: i32}
    let d = "dict_in";
    c.add(
        "record order",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(3))])],
        vec![("scale", scale())],
    );
    c.add(
        "reversed order",
        ABI,
        d,
        vec![dict(&[("n", json!(-7)), ("bias", bias())])],
        vec![("scale", scale())],
    );
    c.add(
        "special floats",
        ABI,
        d,
        vec![dict(&[
            ("bias", f32s(&[4], &[-0.0, 1e-40, 3.4e38, -1.5])),
            ("n", json!(46340)),
        ])],
        vec![("scale", f32s(&[4], &[1.0, 1.0, 10.0, 0.0]))],
    );
    c.add(
        "i32 wraps",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(-2147483648i64))])],
        vec![("scale", scale())],
    );
    c.add(
        "bool as i32",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(true))])],
        vec![("scale", scale())],
    );
    c.add(
        "missing key",
        ABI,
        d,
        vec![dict(&[("bias", bias())])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]: missing key "n""#);
    c.add(
        "extra key",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(3)), ("z", json!(1))])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]: unexpected key "z""#);
    c.add(
        "list for a dict",
        ABI,
        d,
        vec![json!([bias(), 3])],
        vec![("scale", scale())],
    )
    .names("args[0]");
    c.add(
        "wrong length",
        ABI,
        d,
        vec![dict(&[
            ("bias", f32s(&[3], &[1.0, 2.0, 3.0])),
            ("n", json!(3)),
        ])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["bias"]"#);
    c.add(
        "wrong rank",
        ABI,
        d,
        vec![dict(&[
            ("bias", f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0])),
            ("n", json!(3)),
        ])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["bias"]"#);
    c.add(
        "None for a tensor",
        ABI,
        d,
        vec![dict(&[("bias", Value::Null), ("n", json!(3))])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["bias"]"#);
    c.add(
        "float for i32",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", float(3.5))])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["n"]"#);
    c.add(
        "i32 overflow",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(1i64 << 40))])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["n"]"#);
    c.add(
        "None for i32",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", Value::Null)])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["n"]"#);
    c.add(
        "wrong keyword",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(3))])],
        vec![("scal", scale())],
    )
    .names("`scal`");
    c.add(
        "missing keyword",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(3))])],
        vec![],
    )
    .names("`scale`");
    c.add(
        "keyword passed positionally",
        ABI,
        d,
        vec![dict(&[("bias", bias()), ("n", json!(3))]), scale()],
        vec![],
    )
    .names("positional");
    c.add(
        "int64 tensor",
        ABI,
        d,
        vec![dict(&[
            ("bias", tensor("int64", &[4], json!([1, -2, 3, 1 << 30]))),
            ("n", json!(3)),
        ])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["bias"]"#)
    .diff(Diff::Cast);
    c.add(
        "float64 tensor",
        ABI,
        d,
        vec![dict(&[
            (
                "bias",
                tensor("float64", &[4], json!([0.1, 1e300, -2.5, 1e-300])),
            ),
            ("n", json!(3)),
        ])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["bias"]"#)
    .diff(Diff::Cast);
    c.add(
        "list for a tensor",
        ABI,
        d,
        vec![dict(&[
            ("bias", json!([1.0, 2.0, 3.0, 4.0])),
            ("n", json!(3)),
        ])],
        vec![("scale", scale())],
    )
    .names(r#"args[0]["bias"]"#)
    .diff(Diff::Refuses(
        "IREE takes any array-like through numpy.asarray; pactum wants a tensor",
    ));

    // range_list(i32) -> [i32...]
    for n in [3, 0, 17] {
        c.add(&format!("n={n}"), ABI, "range_list", vec![json!(n)], vec![]);
    }
    c.add("no argument", ABI, "range_list", vec![], vec![])
        .names("argument 0");
    c.add("float", ABI, "range_list", vec![float(3.0)], vec![])
        .names("args[0]");
    c.add("string", ABI, "range_list", vec![json!("3")], vec![])
        .names("args[0]")
        .diff(Diff::Refuses(
            "IREE converts with int(value), so \"3\" is 3; pactum wants an int",
        ));

    // pair_out(*, x: tensor<4xf32>, k: i32) -> [tensor<4xf32>, i32]
    let p = "pair_out";
    c.add(
        "keywords",
        ABI,
        p,
        vec![],
        vec![("x", bias()), ("k", json!(5))],
    );
    c.add(
        "keywords reversed",
        ABI,
        p,
        vec![],
        vec![("k", json!(-9)), ("x", scale())],
    );
    c.add("positional", ABI, p, vec![bias(), json!(5)], vec![])
        .names("positional");
    c.add("missing k", ABI, p, vec![], vec![("x", bias())])
        .names("`k`");
    c.add(
        "x wrong shape",
        ABI,
        p,
        vec![],
        vec![("x", f32s(&[5], &[1.0; 5])), ("k", json!(5))],
    )
    .names(r#"kwargs["x"]"#);

    // split_rows(tensor<2x3xf32>) -> [tensor<3xf32>...]
    let s = "split_rows";
    c.add(
        "2x3",
        TENSORS,
        s,
        vec![f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])],
        vec![],
    );
    c.add("3x2", TENSORS, s, vec![f32s(&[3, 2], &[1.0; 6])], vec![])
        .names("args[0]");
    c.add("rank 1", TENSORS, s, vec![f32s(&[6], &[1.0; 6])], vec![])
        .names("args[0]");
    c.add(
        "int32 tensor",
        TENSORS,
        s,
        vec![tensor("int32", &[2, 3], json!([1, 2, 3, -4, 5, 16777217]))],
        vec![],
    )
    .names("args[0]")
    .diff(Diff::Cast);
    c.add(
        "a tuple",
        TENSORS,
        s,
        vec![json!({"tuple": [f32s(&[2, 3], &[1.0; 6])]})],
        vec![],
    )
    .names("args[0]");

    // dict_summary(x: tensor<?xf32>, *, repeat: i32)
    //   -> {total: tensor<f32>, count: i32, repeated: [i32...]}
    let ds = "dict_summary";
    c.add(
        "3 elements",
        TENSORS,
        ds,
        vec![f32s(&[3], &[1.0, 2.0, 4.0])],
        vec![("repeat", json!(3))],
    );
    c.add(
        "empty",
        TENSORS,
        ds,
        vec![f32s(&[0], &[])],
        vec![("repeat", json!(0))],
    );
    c.add(
        "long",
        TENSORS,
        ds,
        vec![f32s(&[7], &[0.1, 0.2, 0.3, -1e7, 1e7, 3.0, 1e-3])],
        vec![("repeat", json!(1))],
    );
    c.add(
        "repeat positionally",
        TENSORS,
        ds,
        vec![f32s(&[3], &[1.0; 3]), json!(3)],
        vec![],
    )
    .names("positional");
    c.add(
        "wrong keyword",
        TENSORS,
        ds,
        vec![f32s(&[3], &[1.0; 3])],
        vec![("rep", json!(3))],
    )
    .names("`rep`");
    c.add(
        "rank 2",
        TENSORS,
        ds,
        vec![f32s(&[1, 2], &[1.0; 2])],
        vec![("repeat", json!(1))],
    )
    .names("args[0]");
    c.add(
        "int32 tensor",
        TENSORS,
        ds,
        vec![tensor("int32", &[3], json!([1, 2, 4]))],
        vec![("repeat", json!(2))],
    )
    .names("args[0]")
    .diff(Diff::Cast);

    c.0
}

// --- IREE's side -------------------------------------------------------------------------

/// Runs every case through `iree.runtime`; `None` when the peer is missing and
/// `PACTUM_SKIP_PEER=1`.
fn run_iree(cases: &[Case]) -> Option<Vec<Value>> {
    let python =
        pactum_testing::iree::python_or_skip(&["iree.runtime", "numpy"], "structured_vs_iree")?;
    let input: Vec<Value> = cases
        .iter()
        .map(|case| {
            json!({
                "module": fixture(case.module),
                "function": case.function,
                "driver": "local-sync",
                "args": case.args,
                "kwargs": case.kwargs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            })
        })
        .collect();
    let mut child = Command::new(&python)
        .arg(manifest_dir().join("tests/python/iree_runtime_calls.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the python peer");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&input).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "iree_runtime_calls.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let outcomes: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outcomes.len(), cases.len());
    Some(outcomes)
}

// --- pactum's side -----------------------------------------------------------------------

fn dtype_of(name: &str) -> DataType {
    DataType::parse(name).unwrap_or_else(|e| panic!("dtype {name}: {e}"))
}

/// A JSON-encoded value (see the script) as the equivalent pactum value.
fn decode(value: &Value) -> Any {
    match value {
        Value::Null => Any::none(),
        Value::Bool(b) => Any::from(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Any::from(i),
            None => Any::from(n.as_f64().unwrap()),
        },
        Value::String(s) => Any::from(s.as_str()),
        Value::Array(items) => Array::new(items.iter().map(decode)).into(),
        Value::Object(object) => {
            if let Some(t) = object.get("tensor") {
                let shape: Vec<i64> = serde_json::from_value(t["shape"].clone()).unwrap();
                let data = t["data"].as_array().unwrap();
                let dtype = dtype_of(t["dtype"].as_str().unwrap());
                let tensor = match dtype {
                    d if d == DataType::F32 => {
                        let v: Vec<f32> = data.iter().map(|x| x.as_f64().unwrap() as f32).collect();
                        Tensor::from_slice(&v, &shape)
                    }
                    d if d == DataType::F64 => {
                        let v: Vec<f64> = data.iter().map(|x| x.as_f64().unwrap()).collect();
                        Tensor::from_slice(&v, &shape)
                    }
                    d if d == DataType::I32 => {
                        let v: Vec<i32> = data.iter().map(|x| x.as_i64().unwrap() as i32).collect();
                        Tensor::from_slice(&v, &shape)
                    }
                    d if d == DataType::I64 => {
                        let v: Vec<i64> = data.iter().map(|x| x.as_i64().unwrap()).collect();
                        Tensor::from_slice(&v, &shape)
                    }
                    other => panic!("no test input of dtype {other}"),
                };
                return tensor.unwrap().into();
            }
            if let Some(pairs) = object.get("dict") {
                return Map::from_pairs(
                    pairs
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|pair| (Any::from(pair[0].as_str().unwrap()), decode(&pair[1]))),
                )
                .into();
            }
            if let Some(items) = object.get("tuple") {
                // pactum has no tuple: a tuple is a sequence, an array.
                return Array::new(items.as_array().unwrap().iter().map(decode)).into();
            }
            if let Some(x) = object.get("float") {
                return Any::from(x.as_f64().unwrap());
            }
            panic!("unknown value {value}")
        }
    }
}

fn tensor_bits(tensor: &Tensor) -> Vec<u64> {
    let t = tensor.to_contiguous().unwrap();
    let d = t.dtype();
    if d == DataType::F32 {
        t.to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| u64::from(x.to_bits()))
            .collect()
    } else if d == DataType::F64 {
        t.to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    } else if d == DataType::I32 {
        t.to_vec::<i32>()
            .unwrap()
            .iter()
            .map(|x| u64::from(*x as u32))
            .collect()
    } else if d == DataType::I64 {
        t.to_vec::<i64>()
            .unwrap()
            .iter()
            .map(|x| *x as u64)
            .collect()
    } else {
        panic!("no test result of dtype {d}")
    }
}

/// A pactum result in the script's encoding (tensors as dtype, shape and bits).
fn encode(value: &Any) -> Value {
    let index = TVMFFITypeIndex(value.type_index());
    match index {
        TVMFFITypeIndex::NONE => Value::Null,
        TVMFFITypeIndex::BOOL => json!(value.clone().cast::<bool>().unwrap()),
        TVMFFITypeIndex::INT => json!(value.clone().cast::<i64>().unwrap()),
        TVMFFITypeIndex::FLOAT => json!({"float": value.clone().cast::<f64>().unwrap()}),
        TVMFFITypeIndex::STR | TVMFFITypeIndex::SMALL_STR => {
            json!(value.clone().cast::<String>().unwrap())
        }
        TVMFFITypeIndex::TENSOR => {
            let tensor: Tensor = value.clone().cast().unwrap();
            json!({"tensor": {
                "dtype": tensor.dtype().to_string(),
                "shape": tensor.shape(),
                "bits": tensor_bits(&tensor),
            }})
        }
        TVMFFITypeIndex::ARRAY => {
            let array: Array = value.clone().cast().unwrap();
            Value::Array(array.iter().map(encode).collect())
        }
        TVMFFITypeIndex::LIST => {
            let list: List = value.clone().cast().unwrap();
            Value::Array(list.to_vec().iter().map(encode).collect())
        }
        TVMFFITypeIndex::MAP => {
            let map: Map = value.clone().cast().unwrap();
            let pairs: Vec<Value> = map
                .iter()
                .map(|(k, v)| json!([k.clone().cast::<String>().unwrap(), encode(v)]))
                .collect();
            json!({ "dict": pairs })
        }
        other => panic!("unexpected result type index {other:?}"),
    }
}

/// IREE's encoded result without the fields pactum's encoding leaves out ("data").
fn comparable(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        Value::Object(object) => {
            if let Some(t) = object.get("tensor") {
                return json!({"tensor": {"dtype": t["dtype"], "shape": t["shape"], "bits": t["bits"]}});
            }
            Value::Object(
                object
                    .iter()
                    .map(|(k, v)| (k.clone(), comparable(v)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

fn kwargs_sentinel() -> Any {
    Function::get_global("ffi.GetKwargsObject")
        .expect("ffi.GetKwargsObject")
        .call(&[])
        .unwrap()
}

/// Calls the case through `IreeModule::function`, keywords after the KWARGS sentinel.
fn call_pactum(function: &Function, case: &Case) -> pactum::Result<Any> {
    let mut values: Vec<Any> = case.args.iter().map(decode).collect();
    if !case.kwargs.is_empty() {
        values.push(kwargs_sentinel());
        for (name, value) in &case.kwargs {
            values.push(Any::from(*name));
            values.push(decode(value));
        }
    }
    let views: Vec<AnyView<'_>> = values.iter().map(Any::view).collect();
    function.call(&views)
}

/// The case through a `StructuredFunction` that casts tensors to the declared element type.
fn call_casting(module: &IreeModule, case: &Case) -> pactum::Result<Any> {
    let signature = module.signature(case.function).unwrap().unwrap().clone();
    let structured =
        StructuredFunction::from_iree_abi(module.flat_function(case.function)?, &signature)?
            .allow_casts(true);
    let positional: Vec<Any> = case.args.iter().map(decode).collect();
    let keywords: Vec<(&str, Any)> = case.kwargs.iter().map(|(k, v)| (*k, decode(v))).collect();
    let positional: Vec<AnyView<'_>> = positional.iter().map(Any::view).collect();
    let keywords: Vec<(&str, AnyView<'_>)> = keywords.iter().map(|(k, v)| (*k, v.view())).collect();
    structured.call(&positional, &keywords)
}

#[test]
fn structured_calls_match_iree_runtime() {
    let cases = cases();
    let Some(outcomes) = run_iree(&cases) else {
        return;
    };
    let modules: Vec<(&str, IreeModule)> = [ABI, TENSORS]
        .into_iter()
        .map(|name| (name, IreeModule::load(fixture(name)).unwrap()))
        .collect();
    let module = |name: &str| &modules.iter().find(|(n, _)| *n == name).unwrap().1;

    let mut failures = Vec::new();
    let (mut same_ok, mut same_refused, mut documented) = (0, 0, 0);
    for (case, outcome) in cases.iter().zip(&outcomes) {
        let label = format!("{}.{} [{}]", case.module, case.function, case.label);
        let function = module(case.module).function(case.function).unwrap();
        let ours = call_pactum(&function, case);
        let refused_path_ok =
            |error: &pactum::Error| case.names.is_empty() || error.message().contains(case.names);
        match (case.diff, outcome.get("ok"), &ours) {
            (Diff::Same, Some(theirs), Ok(ours)) => {
                let (theirs, ours) = (comparable(theirs), encode(ours));
                if theirs == ours {
                    same_ok += 1;
                } else {
                    failures.push(format!(
                        "{label}: results differ\n  iree:   {theirs}\n  pactum: {ours}"
                    ));
                }
            }
            (Diff::Same, None, Err(error)) => {
                if case.names.is_empty() {
                    failures.push(format!(
                        "{label}: refusal case without the path to check ({error})"
                    ));
                } else if refused_path_ok(error) {
                    same_refused += 1;
                } else {
                    failures.push(format!(
                        "{label}: pactum's error does not name {:?}: {error}",
                        case.names
                    ));
                }
            }
            (Diff::Cast | Diff::Refuses(_), Some(theirs), Err(error)) => {
                if !refused_path_ok(error) {
                    failures.push(format!(
                        "{label}: pactum's error does not name {:?}: {error}",
                        case.names
                    ));
                    continue;
                }
                if case.diff == Diff::Cast {
                    if !error.message().contains("allow_casts") {
                        failures.push(format!("{label}: expected a cast refusal, got {error}"));
                        continue;
                    }
                    match call_casting(module(case.module), case) {
                        Ok(cast) if encode(&cast) == comparable(theirs) => {}
                        Ok(cast) => failures.push(format!(
                            "{label}: with allow_casts, results differ\n  iree:   {}\n  pactum: {}",
                            comparable(theirs),
                            encode(&cast)
                        )),
                        Err(e) => failures.push(format!("{label}: with allow_casts: {e}")),
                    }
                }
                documented += 1;
            }
            (diff, _, ours) => failures.push(format!(
                "{label}: outcomes differ ({diff:?})\n  iree:   {outcome}\n  pactum: {}",
                match ours {
                    Ok(value) => encode(value).to_string(),
                    Err(e) => format!("{}: {}", e.kind(), e.message()),
                }
            )),
        }
    }
    eprintln!(
        "{} cases: {same_ok} equal results, {same_refused} refused by both, {documented} documented differences",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
