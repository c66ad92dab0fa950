#!/usr/bin/env python3
"""Runs the test functions of .vmfb modules with IREE's Python runtime (`iree.runtime`) and a
`check` module written here, as `iree-check-module` runs IREE's e2e tests: the peer that
crates/pactum-iree/tests/all/check_vs_iree.rs compares `pactum_iree::check` with.

The pip `iree-base-runtime` ships no `iree-check-module` and no `check` module, so this script
provides one through `iree.runtime.PyModuleInterface`, written from the facts in
`shared/research/iree_check_module_facts.md` (IREE's `runtime/src/iree/modules/check/module.cc`)
with NumPy and ml_dtypes, independently of pactum's Rust implementation:

  check.expect_true(i32)            0i_v      fails when the operand is 0
  check.expect_false(i32)           0i_v      fails when the operand is not 0
  check.expect_all_true(dev, view)  0rr_v     fails at the first zero element; 8-64 bit
                                              integers, f32, f64 only (else an error)
  check.expect_eq(dev, a, b)        0rrr_v    fails unless element types, shapes and bytes
                                              are all equal
  check.expect_almost_eq(dev, a, b, atol, rtol)
                                    0rrrff_v  NumPy's isclose in double precision, rtol
                                              scaling the rhs, NaN equal to NaN; floats only
                                              (else an error) when types and shapes match

Failures are non-fatal (recorded; the function goes on), unsupported element types raise.

Usage: iree_check_runner.py --device local-sync|local-task|vulkan MODULE.vmfb...

Prints one JSON list, an object per module:

    {"module": "<path>", "error": null | "<why the module is not a test module>",
     "tests": [{"name": "f", "outcome": "pass" | "fail" | "error",
                "error": null | "<message>",
                "failures": [{"check": "expect_eq", "index": 3 | null,
                              "headline": "<the message's first line>"}]}]}

Test functions are the exports, in order, except names starting with `__` or holding `$`;
each must take no arguments and return nothing, or the module is refused (IREE's rule). Each
runs in a fresh VM context with a fresh device, a fresh `hal` module and the `check` module.
"""

import argparse
import json
import math
import os
import re
import sys

import ml_dtypes
import numpy as np
import iree.runtime as ireert

# HAL element types (numerical type << 24 | bit count) and their NumPy dtypes.
FLOATS = {
    0x21000010: np.dtype(np.float16),
    0x21000020: np.dtype(np.float32),
    0x21000040: np.dtype(np.float64),
    0x22000010: np.dtype(ml_dtypes.bfloat16),
    0x24000008: np.dtype(ml_dtypes.float8_e5m2),
    0x25000008: np.dtype(ml_dtypes.float8_e4m3fn),
    0x26000008: np.dtype(ml_dtypes.float8_e5m2fnuz),
    0x27000008: np.dtype(ml_dtypes.float8_e4m3fnuz),
    0x28000008: np.dtype(ml_dtypes.float8_e8m0fnu),
}
F8_NAMES = {
    0x24000008: "f8E5M2",
    0x25000008: "f8E4M3FN",
    0x26000008: "f8E5M2FNUZ",
    0x27000008: "f8E4M3FNUZ",
    0x28000008: "f8E8M0FNU",
}


def integer_dtype(element_type):
    """The NumPy dtype of an 8/16/32/64-bit integer or boolean type, else None."""
    numerical, bits = element_type >> 24, element_type & 0xFF
    if bits not in (8, 16, 32, 64):
        return None
    if numerical in (0x10, 0x11):
        return np.dtype(f"i{bits // 8}")
    if numerical in (0x12, 0x13):
        return np.dtype(f"u{bits // 8}")
    return None


def type_name(element_type):
    """An element type as IREE's iree_hal_format_element_type writes it."""
    if element_type in F8_NAMES:
        return F8_NAMES[element_type]
    numerical, bits = element_type >> 24, element_type & 0xFF
    prefix = {0x10: "i", 0x11: "si", 0x12: "ui", 0x13: "i", 0x21: "f", 0x22: "bf", 0x23: "cf"}
    if numerical == 0x13:
        bits = 1
    return f"{prefix.get(numerical, '*')}{bits}"


def c_g(x):
    """C++'s `ostream << double` (printf's %g), glibc's sign on NaN included."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x


def c_e3(x):
    """`std::scientific << setprecision(3)` (printf's %.3e)."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%.3e" % x


def host_bytes(view, length):
    """The first `length` bytes of a buffer view's contents. A buffer the host may map (every
    local-sync/local-task buffer) is mapped; one it may not (device-local buffers of the vulkan
    device) is first copied by the running test's device (the VM's device reference cannot be
    turned back into a Python HalDevice) into a host-visible buffer, as iree.runtime's
    DeviceArray.to_host does."""
    buffer = view.get_buffer()
    visible = int(ireert.MemoryType.HOST_VISIBLE)
    scoped = int(ireert.BufferUsage.MAPPING_SCOPED)
    if buffer.memory_type() & visible == visible and buffer.allowed_usage() & scoped == scoped:
        return bytes(view.map().asarray([length], np.dtype(np.uint8)))
    device = DEVICE[-1]
    staging = device.allocator.allocate_buffer(
        memory_type=int(ireert.MemoryType.HOST_LOCAL | ireert.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(ireert.BufferUsage.TRANSFER_TARGET | ireert.BufferUsage.MAPPING_SCOPED),
        allocation_size=buffer.byte_length(),
    )
    semaphore = device.create_semaphore(0)
    device.queue_copy(
        buffer,
        staging,
        wait_semaphores=ireert.HalFence.create_at(semaphore, 0),
        signal_semaphores=ireert.HalFence.create_at(semaphore, 1),
    )
    ireert.HalFence.create_at(semaphore, 1).wait()
    return bytes(staging.map().asarray([length], np.dtype(np.uint8)))


def values(view, dtype):
    """The elements of a buffer view as a flat NumPy array of `dtype`."""
    count = int(np.prod(view.shape, dtype=np.int64)) if view.shape else 1
    return np.frombuffer(host_bytes(view, count * dtype.itemsize), dtype=dtype)


def raw_bytes(view):
    bits = view.element_type & 0xFF
    count = int(np.prod(view.shape, dtype=np.int64)) if view.shape else 1
    length = count * ((bits + 7) // 8)
    return host_bytes(view, length)


def element_text(element_type, bytes_of_element):
    """One element for a message: integers in decimal, floats as %g, others as hex."""
    if element_type in FLOATS:
        value = np.frombuffer(bytes_of_element, dtype=FLOATS[element_type])[0]
        return c_g(float(value))
    dtype = integer_dtype(element_type)
    if dtype is not None:
        return str(int(np.frombuffer(bytes_of_element, dtype=dtype)[0]))
    return bits_text(bytes_of_element)


def bits_text(bytes_of_element):
    """An element's bits as one little-endian hex number (`0x7FC00001`)."""
    return "0x" + bytes_of_element[::-1].hex().upper()


class CheckState:
    """One context's `check` module: the failures its expectations recorded."""

    def __init__(self, _interface):
        self.failures = []
        CREATED.append(self)

    def fail(self, check, index, headline):
        self.failures.append({"check": check, "index": index, "headline": headline})

    def expect_true(self, operand):
        if operand == 0:
            self.fail("expect_true", None, f"Expected {operand} to be nonzero.")

    def expect_false(self, operand):
        if operand != 0:
            self.fail("expect_false", None, f"Expected {operand} to be zero.")

    def expect_all_true(self, _device, operand):
        view = operand.deref(ireert.HalBufferView)
        element_type = view.element_type
        dtype = integer_dtype(element_type)
        if dtype is None or (element_type >> 24) == 0x13:
            dtype = {0x21000020: np.dtype(np.float32), 0x21000040: np.dtype(np.float64)}.get(
                element_type
            )
        if dtype is None:
            raise ValueError(f"unsupported element type {type_name(element_type)}")
        elements = values(view, dtype)
        zeros = np.flatnonzero(elements == 0)
        if zeros.size:
            index = int(zeros[0])
            size = dtype.itemsize
            text = element_text(element_type, elements.tobytes()[index * size:(index + 1) * size])
            self.fail(
                "expect_all_true",
                index,
                f"Expected all elements to be nonzero. The first zero is at index {index} "
                f"({text}).",
            )

    def expect_eq(self, _device, lhs_ref, rhs_ref):
        lhs = lhs_ref.deref(ireert.HalBufferView)
        rhs = rhs_ref.deref(ireert.HalBufferView)
        types_equal = lhs.element_type == rhs.element_type
        shapes_equal = list(lhs.shape) == list(rhs.shape)
        lhs_bytes, rhs_bytes = raw_bytes(lhs), raw_bytes(rhs)
        contents_equal = lhs_bytes == rhs_bytes
        if types_equal and shapes_equal and contents_equal:
            return
        headline = "Expected equality of these values."
        if not types_equal:
            headline += " Element types do not match."
        if not shapes_equal:
            headline += " Shapes do not match."
        index = None
        if not contents_equal:
            headline += " Contents does not match."
            size = ((lhs.element_type & 0xFF) + 7) // 8
            if types_equal and shapes_equal and size > 0:
                index = next(
                    i
                    for i in range(len(lhs_bytes) // size)
                    if lhs_bytes[i * size:(i + 1) * size] != rhs_bytes[i * size:(i + 1) * size]
                )
                at = slice(index * size, (index + 1) * size)
                lhs_text = element_text(lhs.element_type, lhs_bytes[at])
                rhs_text = element_text(rhs.element_type, rhs_bytes[at])
                if lhs_text == rhs_text:
                    # Different bits that print alike (NaN payloads, close floats).
                    lhs_text += f" ({bits_text(lhs_bytes[at])})"
                    rhs_text += f" ({bits_text(rhs_bytes[at])})"
                headline += (
                    f" The first difference occurs at index {index}, where the lhs value is "
                    f"{lhs_text} and the rhs value is {rhs_text}."
                )
        self.fail("expect_eq", index, headline)

    def expect_almost_eq(self, _device, lhs_ref, rhs_ref, atol, rtol):
        lhs = lhs_ref.deref(ireert.HalBufferView)
        rhs = rhs_ref.deref(ireert.HalBufferView)
        types_equal = lhs.element_type == rhs.element_type
        shapes_equal = list(lhs.shape) == list(rhs.shape)
        failure = None
        if types_equal and shapes_equal:
            dtype = FLOATS.get(lhs.element_type)
            if dtype is None:
                raise ValueError(f"unsupported element type {type_name(lhs.element_type)}")
            actual = values(lhs, dtype).astype(np.float64)
            expected = values(rhs, dtype).astype(np.float64)
            for i, (a, e) in enumerate(zip(actual.tolist(), expected.tolist())):
                close = (
                    a == e
                    or (math.isnan(a) and math.isnan(e))
                    or (math.isfinite(e) and abs(a - e) <= atol + rtol * abs(e))
                )
                if not close:
                    failure = (i, a, e)
                    break
        if types_equal and shapes_equal and failure is None:
            return
        headline = "Expected near equality of these values."
        if not types_equal:
            headline += " Element types do not match."
        if not shapes_equal:
            headline += " Shapes do not match."
        index = None
        if failure is not None:
            index, a, e = failure
            headline += (
                f" Contents does not match to tolerance parameters atol={c_g(atol)}, "
                f"rtol={c_g(rtol)}. The first failure occurs at index {index} as the lhs value "
                f"{c_g(a)} differs from the rhs value {c_g(e)} by {c_e3(e - a)}."
            )
        self.fail("expect_almost_eq", index, headline)


CREATED = []
# The device the running test function was given (host_bytes copies through it).
DEVICE = []


def check_module():
    interface = ireert.PyModuleInterface("check", CheckState)
    interface.export("expect_true", "0i_v", CheckState.expect_true)
    interface.export("expect_false", "0i_v", CheckState.expect_false)
    interface.export("expect_all_true", "0rr_v", CheckState.expect_all_true)
    interface.export("expect_eq", "0rrr_v", CheckState.expect_eq)
    interface.export("expect_almost_eq", "0rrrff_v", CheckState.expect_almost_eq)
    return interface.create()


def calling_convention(function):
    """The VM calling convention `iree.runtime` shows in a function's repr (`0v_v`)."""
    match = re.match(r"<VmFunction .*?\(([^()]*)\)", repr(function))
    if not match:
        raise RuntimeError(f"no calling convention in {function!r}")
    return match.group(1)


def is_nullary(cconv):
    args, _, results = cconv[1:].partition("_")
    return args in ("", "v") and results in ("", "v")


def run_module(instance, check, path, driver):
    # Loaded into a writable copy, as iree-check-module reads a file: iree-compile 3.13 may
    # update a constant in place (an insert into a `util.unfoldable_constant`), which
    # segfaults on VmModule.mmap's read-only mapping.
    with open(path, "rb") as file:
        module = ireert.VmModule.copy_buffer(instance, file.read())
    tests = []
    for name in module.function_names:
        if name.startswith("__") or "$" in name:
            continue
        cconv = calling_convention(module.lookup_function(name))
        if not is_nullary(cconv):
            return {
                "module": path,
                "error": f"expected function with no inputs or outputs, but export "
                f"'{name}' has signature '{cconv}'",
                "tests": [],
            }
        tests.append(name)
    results = []
    for name in tests:
        outcome = {"name": name, "outcome": "pass", "error": None, "failures": []}
        CREATED.clear()
        try:
            device = ireert.get_driver(driver).create_default_device()
            DEVICE[:] = [device]
            hal = ireert.create_hal_module(instance, device)
            context = ireert.VmContext(instance, modules=[check, hal, module])
            function = module.lookup_function(name)
            context.invoke(function, ireert.VmVariantList(0), ireert.VmVariantList(0))
        except Exception as error:  # the invocation's status, as IREE reports it
            outcome["outcome"] = "error"
            outcome["error"] = str(error)
        state = CREATED[-1] if CREATED else None
        if state is not None and state.failures:
            outcome["failures"] = state.failures
            if outcome["outcome"] == "pass":
                outcome["outcome"] = "fail"
        results.append(outcome)
    return {"module": path, "error": None, "tests": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["local-sync", "local-task", "vulkan"], default="local-sync")
    parser.add_argument("modules", nargs="+")
    args = parser.parse_args()
    instance = ireert.VmInstance()
    check = check_module()
    report = [run_module(instance, check, path, args.device) for path in args.modules]
    sys.stdout.write(json.dumps(report, indent=1) + "\n")
    sys.stdout.flush()
    # nanobind reports the runtime's module-level objects as leaks at interpreter exit; the
    # report is complete, so leave without the interpreter's teardown.
    os._exit(0)


if __name__ == "__main__":
    main()
