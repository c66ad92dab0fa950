#!/usr/bin/env python3
"""Runs .vmfb modules that import `io_parameters` with IREE's Python runtime (`iree.runtime`),
the peer crates/pactum-iree/tests/all/io_parameters.rs compares pactum's io_parameters module
with.

Reads one JSON object on stdin:

    {"module": "<path to .vmfb>", "driver": "local-sync", "function": "<export>",
     "scopes": [["model", [<entry>...]], ...],
     "inputs": [{"shape": [4], "bits": [<u32>...]}, ...]}

where an entry is {"key": "w", "data": "<hex bytes>"} (an in-memory buffer, IREE's
`ParameterIndex.add_buffer`) or {"key": "b", "splat": "<hex pattern>", "length": 16}
(`add_splat`), or {"archive": "<path>"} (a file IREE reads, `ParameterIndex.load`), and inputs are float32 tensors given by their bit patterns. Every scope gets
its own provider (`ParameterIndex.create_provider(scope=...)`); with no scope at all the
io_parameters module is registered with no provider, as iree-run-module does without
`--parameters`.

With {"dump": "<path of an archive>"} instead, prints the archive's entries as IREE reads
them: {"entries": [{"key": "w", "data": "<hex>"} or {"key": "b", "splat": "<hex>", "length": N}]}.

Otherwise prints one JSON object: {"ok": [{"shape": [...], "bits": [<u32>...]}, ...]} (float32 results
by bit pattern) or {"error": "<IREE's message>"}.
"""

import json
import sys

import numpy as np
import iree.runtime as ireert


def main():
    spec = json.load(sys.stdin)
    if "dump" in spec:
        index = ireert.ParameterIndex()
        index.load(spec["dump"])
        entries = []
        for key, entry in index.items():
            if entry.is_splat:
                entries.append(
                    {"key": key, "splat": bytes(entry.splat_pattern).hex(), "length": entry.length}
                )
            else:
                entries.append({"key": key, "data": bytes(memoryview(entry.file_view)).hex()})
        print(json.dumps({"entries": entries}))
        return
    config = ireert.Config(spec["driver"])
    instance = config.vm_instance
    providers = []
    for scope, entries in spec["scopes"]:
        index = ireert.ParameterIndex()
        for entry in entries:
            if "archive" in entry:
                index.load(entry["archive"])
            elif "data" in entry:
                index.add_buffer(entry["key"], bytes.fromhex(entry["data"]))
            else:
                index.add_splat(entry["key"], bytes.fromhex(entry["splat"]), entry["length"])
        providers.append(index.create_provider(scope=scope))
    try:
        modules = ireert.load_vm_modules(
            ireert.create_io_parameters_module(instance, *providers),
            ireert.create_hal_module(instance, config.device),
            ireert.VmModule.mmap(instance, spec["module"]),
            config=config,
        )
        function = getattr(modules[-1], spec["function"])
        inputs = [
            np.array(i["bits"], dtype=np.uint32).view(np.float32).reshape(i["shape"])
            for i in spec["inputs"]
        ]
        results = function(*inputs)
        if not isinstance(results, (list, tuple)):
            results = [results]
        out = []
        for r in results:
            array = np.asarray(r.to_host() if hasattr(r, "to_host") else r, dtype=np.float32)
            out.append(
                {"shape": list(array.shape), "bits": array.view(np.uint32).ravel().tolist()}
            )
        print(json.dumps({"ok": out}))
    except Exception as e:  # IREE's failures are what the test compares
        print(json.dumps({"error": str(e)}))


if __name__ == "__main__":
    main()
