"""Error backtraces through nested callbacks, as the official runtime records them: the throw
site first, runtime plumbing left out, each crossing of the FFI boundary recorded once. Runs
unchanged on the official library and on pactum's."""

import tvm_ffi
import tvm_ffi.testing  # noqa: F401  (registers testing.apply and testing.test_raise_error)


def test_nested_callback_backtrace_records_each_frame_once():
    apply_python = tvm_ffi.convert(lambda f, *args: f(*args))
    raise_error = tvm_ffi.get_global_func("testing.test_raise_error")
    apply_native = tvm_ffi.get_global_func("testing.apply")
    inner = []

    def reraise():
        try:
            apply_python(raise_error, "ValueError", "error XYZ")
        except ValueError as error:
            inner.append(error.__tvm_ffi_error__)
            raise

    try:
        apply_native(reraise)
    except ValueError as error:
        ffi_error = error.__tvm_ffi_error__
    else:
        raise AssertionError("the error did not propagate")
    assert ffi_error.same_as(inner[0])
    assert ffi_error.kind == "ValueError" and ffi_error.message == "error XYZ"
    backtrace = ffi_error.backtrace
    assert backtrace.count("TestRaiseError") == 1
    assert backtrace.count("TestApply") == 1
    assert backtrace.count("<lambda>") == 1
    assert backtrace.count("in reraise") == 1
    assert backtrace.index("TestRaiseError") < backtrace.index("<lambda>") < backtrace.index("TestApply")
    # The runtime's own frames and the interpreter below the boundary are not recorded.
    assert "libtvm_ffi.so" not in backtrace
    assert "_PyEval" not in backtrace
    assert all(line.startswith('  File "') for line in backtrace.splitlines())


def test_backtrace_limit_from_environment(monkeypatch):
    raise_error = tvm_ffi.get_global_func("testing.test_raise_error")
    apply_python = tvm_ffi.convert(lambda f, *args: f(*args))

    def native_frames():
        try:
            apply_python(raise_error, "RuntimeError", "limited")
        except RuntimeError as error:
            backtrace = error.__tvm_ffi_error__.backtrace
        assert backtrace.splitlines()[0].endswith("TestRaiseError(String, String)")
        # Frames without debug information: those of the Python callback's re-raise.
        return sum(line.startswith('  File "<unknown>"') for line in backtrace.splitlines())

    assert native_frames() == 3
    monkeypatch.setenv("TVM_TRACEBACK_LIMIT", "1")
    assert native_frames() == 1
    monkeypatch.setenv("TVM_TRACEBACK_LIMIT", "0")
    assert native_frames() == 0
