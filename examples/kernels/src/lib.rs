//! Example kernels: ordinary Rust functions exported with `#[pactum::export]`.
//!
//! The same `libpactum_example_kernels.so` loads, without rebuilding, in Python with the
//! official `apache-tvm-ffi` runtime (`tvm_ffi.load_module`), in a C program linked against
//! pactum's `libtvm_ffi.so`, and in a Rust program through `pactum::Module::load`.

use pactum::{Any, Array, Error, Function, Map, Result, Tensor, TensorView, TensorViewMut, bail};

/// Writes `x + 1` into `y`, elementwise (float32 tensors of the same shape).
#[pactum::export]
pub fn add_one(x: TensorView<'_, f32>, mut y: TensorViewMut<'_, f32>) -> Result<()> {
    if x.shape() != y.shape() {
        bail!(
            ValueError,
            "shape mismatch: x is {:?} but y is {:?}",
            x.shape(),
            y.shape()
        );
    }
    let input = x.as_slice()?;
    for (out, value) in y.as_mut_slice()?.iter_mut().zip(input) {
        *out = value + 1.0;
    }
    Ok(())
}

/// `y = a * x + y`, in place (float32 vectors of the same length).
#[pactum::export]
pub fn saxpy(a: f64, x: TensorView<'_, f32, 1>, mut y: TensorViewMut<'_, f32, 1>) -> Result<()> {
    if x.shape() != y.shape() {
        bail!(
            ValueError,
            "length mismatch: x has {} elements but y has {}",
            x.numel(),
            y.numel()
        );
    }
    let a = a as f32;
    let input = x.as_slice()?;
    for (out, value) in y.as_mut_slice()?.iter_mut().zip(input) {
        *out += a * value;
    }
    Ok(())
}

/// The matrix product `a @ b` of two float32 matrices, as a new tensor.
#[pactum::export]
pub fn matmul(a: TensorView<'_, f32, 2>, b: TensorView<'_, f32, 2>) -> Result<Tensor> {
    let (m, k) = (a.shape()[0] as usize, a.shape()[1] as usize);
    let (k2, n) = (b.shape()[0] as usize, b.shape()[1] as usize);
    if k != k2 {
        bail!(ValueError, "cannot multiply {m}x{k} by {k2}x{n}");
    }
    let (lhs, rhs) = (a.as_slice()?, b.as_slice()?);
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for p in 0..k {
            let scale = lhs[i * k + p];
            for j in 0..n {
                out[i * n + j] += scale * rhs[p * n + j];
            }
        }
    }
    Tensor::from_slice(&out, &[m as i64, n as i64])
}

/// The sum of all elements of a float32 tensor (accumulated in float64).
#[pactum::export]
pub fn sum(x: TensorView<'_, f32>) -> Result<f64> {
    // A fold from +0.0: `Sum` for floats starts at -0.0, which an empty input would return.
    Ok(x.as_slice()?.iter().fold(0.0, |acc, &v| acc + f64::from(v)))
}

/// `n` evenly spaced float32 values from `start` to `stop` inclusive, as a new tensor.
#[pactum::export]
pub fn linspace(start: f64, stop: f64, n: i64) -> Result<Tensor> {
    if n < 2 {
        bail!(ValueError, "linspace needs at least 2 points, got {n}");
    }
    let step = (stop - start) / (n - 1) as f64;
    let values: Vec<f32> = (0..n).map(|i| (start + step * i as f64) as f32).collect();
    Tensor::from_slice(&values, &[n])
}

/// A greeting for `name`.
#[pactum::export]
pub fn greet(name: &str) -> String {
    format!("Hello, {name}!")
}

/// Calls `callback(x)` and returns twice its integer result.
#[pactum::export]
pub fn apply_twice(callback: Function, x: i64) -> Result<i64> {
    let once: i64 = callback.call_typed((x,))?;
    Ok(2 * once)
}

/// Calls `callback` on each element of `values` and collects the results.
#[pactum::export]
pub fn map_values(callback: Function, values: Array) -> Result<Array> {
    let results = values
        .iter()
        .map(|value| callback.call(&[value.view()]))
        .collect::<Result<Vec<Any>>>()?;
    Ok(Array::new(results))
}

/// The sum of the integer values of a map, and the number of its keys: `[sum, count]`.
#[pactum::export]
pub fn summarize(mapping: Map) -> Result<Array> {
    let mut total = 0i64;
    for (_, value) in mapping.iter() {
        total += value.get::<i64>()?;
    }
    Ok(Array::new([
        Any::from(total),
        Any::from(mapping.len() as i64),
    ]))
}

/// A map from `"k0"`, `"k1"`, ... to 0, 1, ... (`n` entries).
#[pactum::export]
pub fn make_map(n: i64) -> Map {
    Map::from_pairs((0..n).map(|i| (Any::from(format!("k{i}")), Any::from(i))))
}

/// An array of `n` integers, then a string, then a nested array.
#[pactum::export]
pub fn make_array(n: i64) -> Array {
    let mut values: Vec<Any> = (0..n).map(Any::from).collect();
    values.push(Any::from("end"));
    values.push(Array::new([Any::from(1.5), Any::from(true)]).into());
    Array::new(values)
}

/// Returns its argument (an integer).
#[pactum::export]
pub fn echo_int(value: i64) -> i64 {
    value
}

/// Returns its argument (a float).
#[pactum::export]
pub fn echo_float(value: f64) -> f64 {
    value
}

/// Returns its argument (a bool).
#[pactum::export]
pub fn echo_bool(value: bool) -> bool {
    value
}

/// Returns its argument (a string).
#[pactum::export]
pub fn echo_str(value: String) -> String {
    value
}

/// Returns its argument (bytes).
#[pactum::export]
pub fn echo_bytes(value: &[u8]) -> Vec<u8> {
    value.to_vec()
}

/// Returns its argument unchanged, whatever it is.
#[pactum::export]
pub fn echo_any(value: Any) -> Any {
    value
}

/// Returns `value`, or `default` when `value` is None.
#[pactum::export]
pub fn or_default(value: Option<i64>, default: i64) -> i64 {
    value.unwrap_or(default)
}

/// Fails with an error of `kind` carrying `message`.
#[pactum::export]
pub fn raise_error(kind: &str, message: &str) -> Result<()> {
    Err(Error::new(
        pactum::ErrorKind::custom(kind),
        message.to_owned(),
    ))
}

/// Panics (the panic is caught at the boundary and reported as an error).
#[pactum::export]
pub fn panic_now(message: String) -> i64 {
    panic!("{message}")
}

/// Does nothing (for call-overhead benchmarks).
#[pactum::export]
pub fn nop() {}

/// Takes three integers and does nothing (for call-overhead benchmarks).
#[pactum::export]
pub fn nop_i3(_a: i64, _b: i64, _c: i64) {}

/// Takes a tensor and does nothing (for call-overhead benchmarks).
#[pactum::export]
pub fn nop_tensor(_x: TensorView<'_>) {}

/// Calls `callback()`, which must fail, and returns what reached Rust: `[kind, message]`.
#[pactum::export]
pub fn error_of(callback: Function) -> Result<Array> {
    match callback.call(&[]) {
        Ok(_) => bail!(
            ValueError,
            "the callback returned instead of raising an error"
        ),
        Err(error) => Ok(Array::new([
            Any::from(error.kind().as_ref()),
            Any::from(error.message().as_ref()),
        ])),
    }
}

/// The runtime this library's copy of pactum uses: `builtin`, or `host:` followed by the path of
/// the loaded `libtvm_ffi.so` it binds to.
#[pactum::export]
pub fn runtime_binding() -> String {
    match pactum::runtime::kind() {
        pactum::runtime::RuntimeKind::Builtin => "builtin".to_owned(),
        pactum::runtime::RuntimeKind::Host { path } => format!("host:{path}"),
    }
}

/// Wraps `flat`, a function taking the flat arguments of an IREE signature, into one taking
/// nested values (dicts, lists, keyword arguments), following the ABI attributes in
/// `attributes` (`iree.abi`, `sip` with `f`, `f` alone; none means dynamic). `allocator` is
/// the result allocator of a raw signature that names one (`fbr`); `allow_casts` lets
/// tensors of another element type be cast.
#[pactum::export]
pub fn iree_bind(
    attributes: Map,
    flat: Function,
    allocator: Option<Function>,
    allow_casts: bool,
) -> Result<Function> {
    let abi = pactum_iree::function_abi::FunctionAbi::from_map(&attributes)?;
    Ok(abi
        .bind(flat, allocator)?
        .allow_casts(allow_casts)
        .into_function())
}

/// A view of `x`'s memory as `dtype`, an element type of the same size (e.g. a NumPy `uint16`
/// array as `bfloat16`, which NumPy lacks).
#[pactum::export]
pub fn bitcast(x: Tensor, dtype: pactum::DataType) -> Result<Tensor> {
    x.view_as(dtype)
}
