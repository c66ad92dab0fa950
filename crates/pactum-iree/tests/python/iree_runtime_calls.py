#!/usr/bin/env python3
"""Calls exports of .vmfb modules with IREE's Python runtime (`iree.runtime`), the peer
that crates/pactum-iree/tests/all/structured_vs_iree.rs compares pactum's structured calls with.

Reads a JSON list of cases on stdin:

    {"module": "<path to .vmfb>", "function": "<export>", "driver": "local-sync",
     "args": [<value>...], "kwargs": [["name", <value>]...]}

and prints a JSON list with one outcome per case, in order:

    {"ok": <value>}                                  the call's result
    {"error": {"type": "ValueError", "message": "..."}}   IREE refused the call

Values (arguments and results) are JSON with these markers:

    {"tensor": {"dtype": "float32", "shape": [2, 3], "data": [...], "bits": [...]}}
        a numpy array (results: also IREE DeviceArrays, copied to the host); "data" is
        row-major, non-finite floats as the strings "nan", "inf", "-inf"; "bits" (results
        only) is each element's bit pattern as an unsigned int, for exact comparison
    {"dict": [["key", <value>], ...]}    a dict, in its order
    {"tuple": [<value>, ...]}            a tuple
    [<value>, ...]                       a list
    {"float": 2.5}                       a Python float (so 2.0 stays a float)
    ints, bools, strings and null        as themselves

Each module is loaded once per run with `iree.runtime.load_vm_flatbuffer_file`.
"""

import json
import sys

import numpy as np
import iree.runtime as ireert


def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "tensor" in value:
            t = value["tensor"]
            data = [float(x) if isinstance(x, str) else x for x in t["data"]]
            return np.array(data, dtype=np.dtype(t["dtype"])).reshape(t["shape"])
        if "dict" in value:
            return {k: decode(v) for k, v in value["dict"]}
        if "tuple" in value:
            return tuple(decode(v) for v in value["tuple"])
        if "float" in value:
            return float(value["float"])
        raise ValueError(f"unknown value marker: {sorted(value)}")
    return value


def _finite(x):
    if isinstance(x, float) and not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def encode(value):
    if isinstance(value, ireert.DeviceArray):
        value = value.to_host()
    if isinstance(value, np.ndarray):
        array = value.copy(order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
        if array.dtype == np.bool_:
            bits = array.astype(np.uint8).reshape(-1).tolist()
        else:
            unsigned = np.dtype(f"u{array.dtype.itemsize}")
            bits = array.view(unsigned).reshape(-1).tolist()
        return {
            "tensor": {
                "dtype": array.dtype.name,
                "shape": list(array.shape),
                "data": [_finite(x) for x in array.reshape(-1).tolist()],
                "bits": bits,
            }
        }
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, dict):
        return {"dict": [[str(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, float):
        return {"float": _finite(value)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return {"unknown": type(value).__name__, "repr": repr(value)}


def main():
    cases = json.load(sys.stdin)
    modules = {}
    outcomes = []
    for case in cases:
        key = (case["module"], case.get("driver", "local-sync"))
        if key not in modules:
            modules[key] = ireert.load_vm_flatbuffer_file(key[0], driver=key[1])
        function = getattr(modules[key], case["function"])
        args = [decode(a) for a in case.get("args", [])]
        kwargs = {k: decode(v) for k, v in case.get("kwargs", [])}
        try:
            result = function(*args, **kwargs)
        except Exception as e:  # the refusal is the outcome
            outcomes.append({"error": {"type": type(e).__name__, "message": str(e)}})
            continue
        outcomes.append({"ok": encode(result)})
    json.dump(outcomes, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
