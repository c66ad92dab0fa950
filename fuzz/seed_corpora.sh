#!/usr/bin/env bash
# Writes seed inputs for the fuzz targets into fuzz/corpus/<target>/ (not committed), taken
# from the shared test vectors, which are read in place (see ../shared/vectors/README.md).
#
# Usage: fuzz/seed_corpora.sh [VECTORS_DIR]   (default: <repo>/../shared/vectors)
# Safe to rerun: each seed is named by the hash of its contents, so reruns add nothing twice
# and never touch what the fuzzer has added to the corpus.
set -euo pipefail

fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
vectors_dir="${1:-$fuzz_dir/../../shared/vectors}"

python3 - "$vectors_dir" "$fuzz_dir/corpus" <<'PY'
import hashlib
import json
import pathlib
import sys

vectors = pathlib.Path(sys.argv[1])
corpus = pathlib.Path(sys.argv[2])
legacy = json.loads((vectors / "iree_legacy_signatures.json").read_text(encoding="utf-8"))
abi = json.loads((vectors / "iree_abi_json.json").read_text(encoding="utf-8"))

seeds = {target: set() for target in (
    "iree_abi_json", "raw_signature", "sip_signature", "calling_convention", "declaration",
    "lexer", "structured_call",
)}

def cases(document, section):
    # Keys not listed in the README may appear later: take only what is there.
    return [case for case in document.get(section, []) if isinstance(case, dict)]

def span(tag, contents):
    # The legacy span encoding: tag, length of contents plus the '!', '!', contents.
    return f"{tag}{len(contents.encode()) + 1}!{contents}"

for case in cases(legacy, "lexical"):
    seeds["lexer"].add(case["input"])
for case in cases(legacy, "raw_items"):
    # One item, as the only input of an otherwise empty signature.
    seeds["raw_signature"].add(span("I", case["expected"]) + span("R", ""))
    seeds["lexer"].add(case["expected"])
for case in cases(legacy, "raw_functions"):
    seeds["raw_signature"].add(case["input"])
    seeds["lexer"].add(case["input"])
for case in cases(legacy, "sip"):
    seeds["sip_signature"].add(case["input"])
    seeds["lexer"].add(case["input"])

for case in cases(abi, "vectors"):
    seeds["iree_abi_json"].add(case["iree_abi"])
    for key in ("implied_cconv", "observed_cconv"):
        if isinstance(case.get(key), str):
            seeds["calling_convention"].add(case[key])
    if isinstance(case.get("iree_abi_declaration"), str):
        seeds["declaration"].add(case["iree_abi_declaration"])

# structured_call reads a mode byte (0 iree.abi, 1 raw, 2 SIP, 3 SIP + "\n" + raw,
# 4 no signature), a two-byte big-endian length, the signature text, then bytes that pick
# the flat function's result and the arguments (here a few values to start from).
def call_seed(mode, signature):
    data = signature.encode("utf-8")
    arguments = bytes([0, 7, 3, 4, 0, 1, 2, 6, 2, 1, 1, 8, 1, 0, 4])
    return bytes([mode]) + len(data).to_bytes(2, "big") + data + arguments

call_seeds = set()
for case in cases(abi, "vectors"):
    call_seeds.add(call_seed(0, case["iree_abi"]))
raw_inputs = [case["input"] for case in cases(legacy, "raw_functions") if "decoded" in case]
for text in raw_inputs:
    call_seeds.add(call_seed(1, text))
for case in cases(legacy, "sip"):
    call_seeds.add(call_seed(2, case["input"]))
    for raw in raw_inputs:
        call_seeds.add(call_seed(3, case["input"] + "\n" + raw))
call_seeds.add(call_seed(4, ""))

seeds["structured_call"] = call_seeds

written = 0
for target, inputs in seeds.items():
    directory = corpus / target
    directory.mkdir(parents=True, exist_ok=True)
    for text in inputs:
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        path = directory / hashlib.sha1(data).hexdigest()
        if not path.exists():
            path.write_bytes(data)
            written += 1
    print(f"{target}: {len(inputs)} seeds")
print(f"wrote {written} new files under {corpus}")
PY
