"""The pactum example kernels, loaded by the OFFICIAL apache-tvm-ffi Python runtime.

`libpactum_example_kernels.so` is a pure-Rust library built with pactum. Loaded here with
`tvm_ffi.load_module`, its copy of pactum binds to the official `libtvm_ffi.so` that
`import tvm_ffi` loaded, so every error it raises lands in the slot the official runtime reads.

The library path comes from PACTUM_KERNELS_LIB. Run through `cargo test -p
pactum-example-kernels` (tests/all/python_host.rs), which sets it to the freshly built library.
"""

import gc
import math
import os
import pathlib

import numpy as np
import pytest
import tvm_ffi
from tvm_ffi.core import TypeSchema


@pytest.fixture(scope="module")
def mod():
    path = os.environ.get("PACTUM_KERNELS_LIB")
    if not path:
        pytest.fail("PACTUM_KERNELS_LIB must name libpactum_example_kernels.so")
    return tvm_ffi.load_module(path)


def ffi_kind(error):
    """The kind of the FFI error behind a Python exception raised by a call."""
    return error.__tvm_ffi_error__.kind


def mapped_libraries(basename):
    with open("/proc/self/maps") as maps:
        return {
            line.split()[-1]
            for line in maps
            if line.rstrip().endswith("/" + basename)
        }


# ---------------------------------------------------------------------------- runtime


def test_the_official_runtime_serves_the_process(mod):
    official = pathlib.Path(tvm_ffi.__file__).parent / "lib" / "libtvm_ffi.so"
    assert mapped_libraries("libtvm_ffi.so") == {str(official.resolve())}
    kernels = pathlib.Path(os.environ["PACTUM_KERNELS_LIB"]).resolve()
    assert mapped_libraries("libpactum_example_kernels.so") == {str(kernels)}
    # the library's own copy of pactum bound to that library, not to a runtime of its own
    binding = mod.runtime_binding()
    assert binding.startswith("host:")
    assert os.path.realpath(binding[len("host:"):]) == str(official.resolve())
    assert mod.kind == "library"
    assert mod.implements_function("add_one")
    assert not mod.implements_function("not_exported")


# ---------------------------------------------------------------------------- tensors


def test_add_one_writes_into_the_numpy_output_without_copying(mod):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.zeros((2, 3), dtype=np.float32)
    assert mod.add_one(x, y) is None
    np.testing.assert_array_equal(y, x + 1)
    np.testing.assert_array_equal(x, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_add_one_writes_only_into_the_viewed_slice(mod):
    buffer = np.full(10, -7.0, dtype=np.float32)
    window = buffer[3:7]  # a view: data pointer offset into the buffer
    mod.add_one(np.array([1, 2, 3, 4], dtype=np.float32), window)
    np.testing.assert_array_equal(buffer, [-7, -7, -7, 2, 3, 4, 5, -7, -7, -7])


def test_disjoint_halves_of_one_buffer_are_not_aliases(mod):
    buffer = np.arange(8, dtype=np.float32)
    mod.add_one(buffer[:4], buffer[4:])
    np.testing.assert_array_equal(buffer, [0, 1, 2, 3, 1, 2, 3, 4])


def test_saxpy_updates_y_in_place(mod):
    x = np.array([1, 2, 3], dtype=np.float32)
    y = np.array([10, 20, 30], dtype=np.float32)
    before = y.ctypes.data
    mod.saxpy(2.0, x, y)
    np.testing.assert_array_equal(y, [12, 24, 36])
    assert y.ctypes.data == before


def test_tvm_ffi_tensors_made_from_numpy_share_its_memory(mod):
    y = np.zeros(3, dtype=np.float32)
    y_tensor = tvm_ffi.from_dlpack(y)
    assert y_tensor.data_ptr() == y.ctypes.data
    mod.add_one(tvm_ffi.from_dlpack(np.array([1, 2, 3], dtype=np.float32)), y_tensor)
    np.testing.assert_array_equal(y, [2, 3, 4])


def test_a_numpy_array_passed_through_any_comes_back_over_the_same_memory(mod):
    x = np.arange(5, dtype=np.float32)
    echoed = mod.echo_any(x)
    assert isinstance(echoed, tvm_ffi.Tensor)
    assert echoed.shape == (5,)
    assert echoed.data_ptr() == x.ctypes.data


def test_sum_reads_numpy_arrays_of_any_rank(mod):
    assert mod.sum(np.arange(10, dtype=np.float32)) == 45.0
    assert isinstance(mod.sum(np.ones(3, dtype=np.float32)), float)
    assert mod.sum(np.full((2, 3, 4), 0.5, dtype=np.float32)) == 12.0
    assert mod.sum(np.array(3.5, dtype=np.float32)) == 3.5  # 0-d
    assert mod.sum(np.zeros(0, dtype=np.float32)) == 0.0


def test_matmul_returns_a_rust_tensor_numpy_reads(mod):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    product = mod.matmul(a, b)
    assert isinstance(product, tvm_ffi.Tensor)
    assert product.shape == (2, 4)
    assert product.dtype == tvm_ffi.dtype("float32")
    assert product.device.type == "cpu"
    as_numpy = np.from_dlpack(product)
    assert as_numpy.shape == (2, 4)
    assert as_numpy.dtype == np.float32
    np.testing.assert_array_equal(as_numpy, a @ b)


def test_linspace_returns_a_rust_tensor_numpy_reads(mod):
    values = np.from_dlpack(mod.linspace(-1.0, 1.0, 9))
    assert values.dtype == np.float32
    assert values.shape == (9,)
    np.testing.assert_allclose(values, np.linspace(-1, 1, 9, dtype=np.float32), rtol=0, atol=1e-7)


def test_numpy_views_of_rust_tensors_are_zero_copy_and_keep_them_alive(mod):
    tensor = mod.linspace(0.0, 4.0, 5)
    view = np.from_dlpack(tensor)
    assert view.ctypes.data == tensor.data_ptr()
    view[0] = 100.0  # written through numpy, read back by Rust
    assert mod.sum(tensor) == 110.0
    del tensor
    gc.collect()
    np.testing.assert_array_equal(view, [100, 1, 2, 3, 4])  # the array holds the Rust buffer


# ---------------------------------------------------------------------------- scalars


@pytest.mark.parametrize(
    "value", [0, 1, -1, 42, -(2**31), 2**31, 2**53 + 1, 2**63 - 1, -(2**63)]
)
def test_ints_round_trip(mod, value):
    echoed = mod.echo_int(value)
    assert type(echoed) is int
    assert echoed == value


def test_numpy_integer_scalars_are_ints(mod):
    assert mod.echo_int(np.int64(-9)) == -9


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1])
def test_ints_outside_int64_are_type_errors_naming_the_parameter(mod, value):
    with pytest.raises(TypeError, match=r"argument #0 \(value\) when calling: `echo_int"):
        mod.echo_int(value)


@pytest.mark.parametrize(
    "value", [0.0, 1.5, -2.25, 1e308, 5e-324, math.pi, math.inf, -math.inf]
)
def test_floats_round_trip(mod, value):
    echoed = mod.echo_float(value)
    assert type(echoed) is float
    assert echoed == value


def test_nan_and_negative_zero_survive(mod):
    assert math.isnan(mod.echo_float(math.nan))
    negative_zero = mod.echo_float(-0.0)
    assert negative_zero == 0.0 and math.copysign(1.0, negative_zero) == -1.0


def test_ints_convert_to_float_parameters_but_floats_not_to_int(mod):
    assert mod.echo_float(3) == 3.0
    assert type(mod.echo_float(3)) is float
    with pytest.raises(TypeError, match=r"#0 \(value\).*expected int, got float"):
        mod.echo_int(1.5)


@pytest.mark.parametrize("value", [True, False])
def test_bools_round_trip(mod, value):
    echoed = mod.echo_bool(value)
    assert type(echoed) is bool
    assert echoed is value


STRINGS = [
    "",
    "a",
    "seven77",  # 7 bytes: the longest string stored inside the 16-byte Any
    "eight888",  # 8 bytes: the shortest heap string
    "héllo wörld ✓ 日本語 🦀",
    "x" * 100_000,
    "ü" * 5000 + "€",
    "a\0b",  # an embedded NUL is data, not a terminator
]


@pytest.mark.parametrize("value", STRINGS, ids=range(len(STRINGS)))
def test_strings_round_trip(mod, value):
    echoed = mod.echo_str(value)
    assert isinstance(echoed, str)  # str, or its subclass tvm_ffi.core.String past 7 bytes
    assert echoed == value


def test_greet_formats_a_non_ascii_name(mod):
    assert mod.greet("wörld") == "Hello, wörld!"
    assert mod.greet("") == "Hello, !"


BYTES = [b"", b"\0", b"a\0b\0", bytes(range(256)), b"\xff" * 7, b"z" * 100_000]


@pytest.mark.parametrize("value", BYTES, ids=range(len(BYTES)))
def test_bytes_round_trip(mod, value):
    echoed = mod.echo_bytes(value)
    assert isinstance(echoed, bytes)  # bytes, or its subclass tvm_ffi.core.Bytes past 7 bytes
    assert echoed == value


def test_optional_ints_accept_none(mod):
    assert mod.or_default(None, 7) == 7
    assert mod.or_default(0, 7) == 0
    assert mod.or_default(-5, 7) == -5
    with pytest.raises(TypeError, match=r"#0 \(value\).*expected int, got"):
        mod.or_default("3", 7)


@pytest.mark.parametrize(
    "value", [0, -(2**63), 2.5, True, False, None, "", "text ✓", b"\0raw"]
)
def test_echo_any_returns_plain_python_values_unchanged(mod, value):
    echoed = mod.echo_any(value)
    if isinstance(value, (str, bytes)):
        assert isinstance(echoed, type(value))  # heap strings come back as subclasses
    else:
        assert type(echoed) is type(value)
    assert echoed == value


def test_echo_any_returns_containers_devices_dtypes_and_functions(mod):
    assert list(mod.echo_any([1, "two", 3.0])) == [1, "two", 3.0]
    assert dict(mod.echo_any({"a": 1, "b": None})) == {"a": 1, "b": None}
    nested = mod.echo_any({"outer": [1, {"inner": b"x"}]})
    assert nested["outer"][1]["inner"] == b"x"
    device = mod.echo_any(tvm_ffi.device("cpu", 0))
    assert (device.type, device.index) == ("cpu", 0)
    assert mod.echo_any(tvm_ffi.dtype("float16")) == tvm_ffi.dtype("float16")
    func = mod.echo_any(lambda a, b: a * b)
    assert isinstance(func, tvm_ffi.Function)
    assert func(6, 7) == 42


# ---------------------------------------------------------------------------- callbacks


def test_python_callables_are_called_back(mod):
    seen = []

    def callback(value):
        seen.append(value)
        return value + 1

    assert mod.apply_twice(callback, 20) == 42
    assert seen == [20]


def test_map_values_calls_back_per_element_with_python_values(mod):
    assert list(mod.map_values(lambda v: v * 10, [1, 2, 3])) == [10, 20, 30]
    kinds = mod.map_values(
        lambda v: type(v).__name__, [1, "s", 2.5, None, True, b"b", [1], {"a": 1}]
    )
    assert list(kinds) == ["int", "str", "float", "NoneType", "bool", "bytes", "Array", "Map"]
    assert len(mod.map_values(lambda v: v, list(range(1000)))) == 1000


def test_callbacks_may_call_back_into_the_module(mod):
    # 2 * (2 * (1 + 1)): three levels of Python -> Rust -> Python
    assert mod.apply_twice(lambda v: mod.apply_twice(lambda w: w + 1, v), 1) == 8


def test_a_callback_result_of_the_wrong_type_is_a_type_error(mod):
    with pytest.raises(TypeError, match="expected int"):
        mod.apply_twice(lambda v: "not an int", 1)


REGISTERED = [ValueError, KeyError, TypeError, IndexError, AttributeError]


@pytest.mark.parametrize("cls", REGISTERED, ids=lambda c: c.__name__)
def test_exceptions_raised_in_callbacks_propagate_with_their_type(mod, cls):
    def callback(value):
        raise cls(f"callback failed on {value}")

    with pytest.raises(cls) as caught:
        mod.apply_twice(callback, 3)
    if cls is KeyError:
        # tvm_ffi sends str(KeyError(m)), which is repr(m), and rebuilds KeyError from it
        assert caught.value.args[0] == "'callback failed on 3'"
    else:
        assert str(caught.value) == "callback failed on 3"
    assert ffi_kind(caught.value) == cls.__name__


@pytest.mark.parametrize("cls", REGISTERED, ids=lambda c: c.__name__)
def test_rust_sees_the_kind_and_message_of_a_callback_exception(mod, cls):
    def callback():
        raise cls("seen by Rust")

    expected = "'seen by Rust'" if cls is KeyError else "seen by Rust"
    assert list(mod.error_of(callback)) == [cls.__name__, expected]


def test_an_exception_in_map_values_stops_the_iteration(mod):
    seen = []

    def callback(value):
        seen.append(value)
        if value == 2:
            raise IndexError("stop at 2")
        return value

    with pytest.raises(IndexError, match="stop at 2"):
        mod.map_values(callback, [1, 2, 3, 4])
    assert seen == [1, 2]


def test_an_unregistered_exception_class_becomes_runtime_error(mod):
    # tvm_ffi maps only registered classes: ZeroDivisionError leaves Python as kind
    # "RuntimeError" (with str(exc) as message) and comes back as a plain RuntimeError.
    def callback(value):
        raise ZeroDivisionError("division by zero in a callback")

    with pytest.raises(RuntimeError) as caught:
        mod.apply_twice(callback, 1)
    assert type(caught.value) is RuntimeError
    assert not isinstance(caught.value, ZeroDivisionError)
    assert str(caught.value) == "division by zero in a callback"
    assert list(mod.error_of(lambda: 1 // 0)) == ["RuntimeError", "integer division or modulo by zero"]


def test_an_error_raised_by_a_nested_module_call_propagates_outward(mod):
    def inner(value):
        mod.raise_error("IndexError", f"deep failure at {value}")

    with pytest.raises(IndexError, match="^deep failure at 1$"):
        mod.apply_twice(lambda v: mod.apply_twice(inner, v), 1)


def test_registered_custom_exception_classes_round_trip(mod):
    @tvm_ffi.register_error
    class PactumKernelTestError(Exception):
        pass

    with pytest.raises(PactumKernelTestError, match="^custom kind$"):
        mod.raise_error("PactumKernelTestError", "custom kind")

    def callback():
        raise PactumKernelTestError("from Python")

    assert list(mod.error_of(callback)) == ["PactumKernelTestError", "from Python"]


# ---------------------------------------------------------------------------- containers


def test_python_dicts_are_read_as_maps(mod):
    assert list(mod.summarize({"a": 1, "b": 2, "c": 39})) == [42, 3]
    assert list(mod.summarize({})) == [0, 0]
    # 100 entries: the official runtime builds a dense-form map, iterated by Rust
    assert list(mod.summarize({f"k{i}": i for i in range(100)})) == [4950, 100]
    assert list(mod.summarize(tvm_ffi.Map({"x": -1}))) == [-1, 1]


def test_map_values_that_are_not_ints_are_type_errors(mod):
    with pytest.raises(TypeError, match="expected int, got"):
        mod.summarize({"a": "x"})


@pytest.mark.parametrize("n", [0, 1, 3, 100])
def test_rust_maps_read_as_dicts(mod, n):
    made = mod.make_map(n)
    assert isinstance(made, tvm_ffi.Map)
    assert len(made) == n
    assert dict(made) == {f"k{i}": i for i in range(n)}
    assert list(made.keys()) == [f"k{i}" for i in range(n)]  # insertion order
    if n:
        assert made[f"k{n - 1}"] == n - 1
        assert f"k{n - 1}" in made
    assert "missing" not in made
    assert made.get("missing") is None
    with pytest.raises(KeyError):
        made["missing"]


def test_rust_arrays_read_as_nested_sequences(mod):
    made = mod.make_array(3)
    assert isinstance(made, tvm_ffi.Array)
    assert len(made) == 5
    assert list(made[:3]) == [0, 1, 2]
    assert made[3] == "end"
    inner = made[4]
    assert isinstance(inner, tvm_ffi.Array)
    assert inner[0] == 1.5
    assert inner[1] is True
    assert list(mod.make_array(0))[0] == "end"


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kind, cls",
    [
        ("ValueError", ValueError),
        ("TypeError", TypeError),
        ("KeyError", KeyError),
        ("IndexError", IndexError),
        ("AttributeError", AttributeError),
        ("RuntimeError", RuntimeError),
        ("AssertionError", AssertionError),
        ("MyKernelError", RuntimeError),  # an unregistered kind
    ],
)
def test_error_kinds_raise_the_matching_python_exception(mod, kind, cls):
    message = f"{kind} from Rust: ✓"
    with pytest.raises(cls) as caught:
        mod.raise_error(kind, message)
    assert type(caught.value) is cls
    assert caught.value.args[0] == message
    assert ffi_kind(caught.value) == kind  # the kind survives even where the class falls back


def test_wrong_argument_counts_are_type_errors(mod):
    x = np.zeros(2, dtype=np.float32)
    with pytest.raises(
        TypeError,
        match=r"^Mismatched number of arguments when calling: "
        r"`add_one\(x: ffi.Tensor\[float32\], y: ffi.Tensor\[float32\]\) -> None`\. "
        r"Expected 2 but got 1 arguments$",
    ):
        mod.add_one(x)
    with pytest.raises(TypeError, match="Expected 1 but got 0 arguments"):
        mod.greet()
    with pytest.raises(TypeError, match="Expected 0 but got 1 arguments"):
        mod.nop(1)


@pytest.mark.parametrize(
    "name, args, parameter, detail",
    [
        ("add_one", (1, "ARRAY"), "#0 (x)", "expected ffi.Tensor[float32], got int"),
        ("greet", (5,), "#0 (name)", "expected str, got int"),
        ("apply_twice", (5, 1), "#0 (callback)", "expected ffi.Function, got int"),
        ("apply_twice", (abs, "1"), "#1 (x)", "expected int, got"),
        ("summarize", ([1, 2],), "#0 (mapping)", "expected ffi.Map, got ffi.Array"),
        ("map_values", (abs, {"a": 1}), "#1 (values)", "expected ffi.Array, got ffi.Map"),
        ("linspace", (0.0, 1.0, "5"), "#2 (n)", "expected int, got"),
    ],
)
def test_wrong_argument_types_are_type_errors_naming_the_parameter(mod, name, args, parameter, detail):
    args = tuple(np.zeros(2, dtype=np.float32) if a == "ARRAY" else a for a in args)
    with pytest.raises(TypeError) as caught:
        getattr(mod, name)(*args)
    message = str(caught.value)
    assert message.startswith(f"Mismatched type on argument {parameter} when calling: `{name}(")
    assert detail in message


def test_aliased_tensor_arguments_are_value_errors(mod):
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(ValueError, match=r"#1 \(y\).*overlaps argument #0 \(x\)"):
        mod.add_one(x, x)
    buffer = np.arange(6, dtype=np.float32)
    with pytest.raises(ValueError, match="overlaps"):
        mod.add_one(buffer[0:4], buffer[2:6])  # partial overlap
    np.testing.assert_array_equal(x, [0, 1, 2, 3])  # nothing was written
    np.testing.assert_array_equal(buffer, [0, 1, 2, 3, 4, 5])


def test_a_panic_is_a_runtime_error_with_the_panic_message(mod):
    with pytest.raises(RuntimeError) as caught:
        mod.panic_now("kaboom: ✗")
    assert type(caught.value) is RuntimeError
    assert str(caught.value) == "kaboom: ✗"
    assert ffi_kind(caught.value) == "RustPanic"
    assert mod.echo_int(5) == 5  # the library keeps working


def test_dtype_mismatches_are_type_errors(mod):
    y = np.zeros(3, dtype=np.float32)
    with pytest.raises(TypeError, match=r"#0 \(x\).*expected a float32 tensor, got float64"):
        mod.add_one(np.zeros(3, dtype=np.float64), y)
    with pytest.raises(TypeError, match=r"#1 \(y\).*expected a float32 tensor, got int32"):
        mod.add_one(np.zeros(3, dtype=np.float32), np.zeros(3, dtype=np.int32))
    np.testing.assert_array_equal(y, [0, 0, 0])


def test_ndim_mismatches_are_value_errors(mod):
    two_d = np.ones((2, 2), dtype=np.float32)
    with pytest.raises(ValueError, match=r"#1 \(x\).*expected a 1-d tensor, got 2 dimension"):
        mod.saxpy(1.0, two_d, two_d.copy())
    with pytest.raises(ValueError, match=r"#0 \(a\).*expected a 2-d tensor, got 1 dimension"):
        mod.matmul(np.ones(3, dtype=np.float32), two_d)


def test_shape_and_layout_errors_from_the_kernel_body(mod):
    with pytest.raises(ValueError, match=r"^shape mismatch: x is \[4\] but y is \[5\]$"):
        mod.add_one(np.ones(4, dtype=np.float32), np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="^length mismatch: x has 4 elements but y has 5$"):
        mod.saxpy(1.0, np.ones(4, dtype=np.float32), np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match=r"^cannot multiply 2x3 by 2x3$"):
        mod.matmul(np.ones((2, 3), dtype=np.float32), np.ones((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="^argument `y`: expected a contiguous tensor$"):
        mod.add_one(np.ones(4, dtype=np.float32), np.zeros(8, dtype=np.float32)[::2])
    with pytest.raises(ValueError, match="^linspace needs at least 2 points, got 1$"):
        mod.linspace(0.0, 1.0, 1)


def test_a_missing_function_is_an_attribute_error(mod):
    with pytest.raises(AttributeError, match="not_exported"):
        mod.not_exported


# ---------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    "name, arg_names, signature",
    [
        ("add_one", ["x", "y"], "Callable[[Tensor, Tensor], None]"),
        ("saxpy", ["a", "x", "y"], "Callable[[float, Tensor, Tensor], None]"),
        ("matmul", ["a", "b"], "Callable[[Tensor, Tensor], Tensor]"),
        ("sum", ["x"], "Callable[[Tensor], float]"),
        ("linspace", ["start", "stop", "n"], "Callable[[float, float, int], Tensor]"),
        ("greet", ["name"], "Callable[[str], str]"),
        ("apply_twice", ["callback", "x"], "Callable[[Callable[..., Any], int], int]"),
        ("summarize", ["mapping"], "Callable[[Map[Any, Any]], Array[Any]]"),
        ("echo_bytes", ["value"], "Callable[[bytes], bytes]"),
        ("echo_bool", ["value"], "Callable[[bool], bool]"),
        ("echo_any", ["value"], "Callable[[Any], Any]"),
        ("or_default", ["value", "default"], "Callable[[int | None, int], int]"),
        ("nop", [], "Callable[[], None]"),
    ],
)
def test_metadata_is_read_by_tvm_ffi(mod, name, arg_names, signature):
    metadata = mod.get_function_metadata(name)
    assert metadata["arg_names"] == arg_names
    schema = TypeSchema.from_json_str(metadata["type_schema"])
    assert schema.origin == "Callable"
    assert repr(schema) == signature
    assert len(schema.named_args["params"]) == len(arg_names)


def test_metadata_carries_element_types_beyond_the_type_schema(mod):
    # `type_schema` only says "ffi.Tensor"; pactum's `arg_types` add what the kernel checks.
    assert mod.get_function_metadata("add_one")["arg_types"] == [
        "ffi.Tensor[float32]",
        "ffi.Tensor[float32]",
    ]
    matmul = mod.get_function_metadata("matmul")
    assert matmul["arg_types"] == ["ffi.Tensor[float32, 2d]", "ffi.Tensor[float32, 2d]"]
    assert matmul["return_type"] == "ffi.Tensor"
    assert mod.get_function_metadata("greet")["return_type"] == "str"


def test_docs_are_read_by_tvm_ffi(mod):
    assert mod.get_function_doc("add_one") == (
        "Writes `x + 1` into `y`, elementwise (float32 tensors of the same shape)."
    )
    assert mod.get_function_doc("greet") == "A greeting for `name`."
    assert mod.get_function_doc("summarize") == (
        "The sum of the integer values of a map, and the number of its keys: `[sum, count]`."
    )


def test_unknown_functions_have_no_metadata_or_doc(mod):
    assert mod.get_function_metadata("not_exported") is None
    assert mod.get_function_doc("not_exported") is None
