"""IREE's reading and writing of parameter archives, for pactum's tests (tests/all/parameters.rs).

    iree_parameters.py dump ARCHIVE
        prints, as JSON, the entries `iree.runtime.ParameterIndex.load(ARCHIVE)` finds, in
        its order: key, length, metadata (hex), and for a splat its pattern (hex), for data
        its byte offset in the file and its bytes (hex).
    iree_parameters.py create OUT SPEC
        builds OUT with `iree.runtime.ParameterIndex.create_archive_file` from SPEC, a JSON
        list of {"key", "data": hex} or {"key", "splat": hex, "length"}, each with an
        optional "metadata" string.
"""

import json
import sys

import iree.runtime as rt


def dump(path):
    index = rt.ParameterIndex()
    index.load(path)
    entries = []
    for key, entry in index.items():
        item = {
            "key": key,
            "length": entry.length,
            "metadata": bytes(entry.metadata).hex(),
        }
        if entry.is_splat:
            item["splat"] = bytes(entry.splat_pattern).hex()
        else:
            _, offset = entry.file_storage
            item["offset"] = offset
            item["data"] = bytes(entry.file_view).hex()
        entries.append(item)
    json.dump(entries, sys.stdout)


def create(out, spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    index = rt.ParameterIndex()
    for item in spec:
        metadata = item.get("metadata")
        if "splat" in item:
            index.add_splat(
                item["key"], bytes.fromhex(item["splat"]), item["length"], metadata=metadata
            )
        else:
            index.add_buffer(item["key"], bytes.fromhex(item["data"]), metadata=metadata)
    index.create_archive_file(out)


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif sys.argv[1] == "create":
        create(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {sys.argv[1]!r}")
