#!/usr/bin/env bash
# Writes seed inputs for the fuzz targets into fuzz/corpus/<target>/ (not committed): the
# signature targets' from the shared test vectors, which are read in place (see
# ../shared/vectors/README.md; skipped with a note when they are absent), vmfb_module's,
# elf_executable's and mlir_signature's from the test fixtures, npy_reader's written by NumPy
# (.venv's, else python3's; skipped with a note when there is none), and call_arguments' and
# capi_sequence's generated here.
#
# Usage: fuzz/seed_corpora.sh [VECTORS_DIR]   (default: <repo>/../shared/vectors)
# Safe to rerun: each seed is named by the hash of its contents, so reruns add nothing twice
# and never touch what the fuzzer has added to the corpus.
set -euo pipefail

fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(cd "$fuzz_dir/.." && pwd)"
vectors_dir="${1:-$fuzz_dir/../../shared/vectors}"

python3 - "$vectors_dir" "$fuzz_dir/corpus" "$repo_dir" <<'PY'
import hashlib
import json
import pathlib
import random
import sys

vectors = pathlib.Path(sys.argv[1])
corpus = pathlib.Path(sys.argv[2])
repo = pathlib.Path(sys.argv[3])
if (vectors / "iree_abi_json.json").is_file():
    legacy = json.loads((vectors / "iree_legacy_signatures.json").read_text(encoding="utf-8"))
    abi = json.loads((vectors / "iree_abi_json.json").read_text(encoding="utf-8"))
else:
    print(f"note: no test vectors in {vectors}: the signature targets get no seeds from them")
    legacy, abi = {}, {}

seeds = {target: set() for target in (
    "iree_abi_json", "raw_signature", "sip_signature", "calling_convention", "declaration",
    "lexer", "structured_call", "vmfb_module", "mlir_signature", "call_arguments",
    "capi_sequence", "vm_load", "vm_run", "elf_executable",
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

# vmfb_module and vm_load: the test modules as they are; vm_run: the VM-only ones, with
# argument bytes after them (the first two bytes say how many).
for path in sorted((repo / "crates/pactum-iree/tests/fixtures/vmfb").glob("*.vmfb")):
    seeds["vmfb_module"].add(path.read_bytes())
    seeds["vm_load"].add(path.read_bytes())
    if path.name.startswith("vm_"):
        args = bytes(range(1, 65))
        seeds["vm_run"].add(len(args).to_bytes(2, "little") + path.read_bytes() + args)

# elf_executable: the ELFs inside the llvm-cpu test modules (embedded and system), from the magic
# to the end of the section header table.
for path in sorted((repo / "crates/pactum-iree/tests/fixtures/vmfb").glob("*llvm_cpu*.vmfb")):
    data = path.read_bytes()
    start = data.find(b"\x7fELF")
    while start >= 0:
        elf = data[start:]
        if len(elf) >= 64:
            shoff = int.from_bytes(elf[0x28:0x30], "little")
            shentsize = int.from_bytes(elf[0x3a:0x3c], "little")
            shnum = int.from_bytes(elf[0x3c:0x3e], "little")
            end = shoff + shentsize * shnum
            if 64 <= end <= len(elf):
                seeds["elf_executable"].add(elf[:end])
        start = data.find(b"\x7fELF", start + 4)

# mlir_signature: the func.func headers of the MLIR test modules.
for path in sorted((repo / "crates/pactum-mlir/tests/mlir").glob("*.mlir")):
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("func.func"):
            seeds["mlir_signature"].add(line.removesuffix("{").rstrip())

# call_arguments: an argument-index byte, then the argument text (never '@file', which the
# target skips).
arguments = [
    "7", "-12", "+3", "0x1f", "-0X7F", "1_000", "2.5", "-1e-3", "1E300", ".5", "inf", "-inf",
    "nan", "NaN", "\"hello world\"", "'7'", "\"\"", "none", "None", "true", "False",
    "7:i32", "255:u8", "300:u8", "-1:u32", "-129:i8", "18446744073709551615:u64", "3:f32",
    "0.1:f32", "1e39:f32", "2.5:f64", "1:bool", "0:bool", "2:bool", "7:x9", "1.5:i32",
    "9223372036854775807", "-9223372036854775808", "99999999999999999999",
    "-0x8000000000000000", "hello", "", ":", "\"", "1:2:i32",
]
for index, text in enumerate(arguments):
    seeds["call_arguments"].add(bytes([index % 4]) + text.encode("utf-8"))

# capi_sequence reads operations with `arbitrary`'s Unstructured (one byte picks each of the
# 32 operations, the following bytes its parameters): each operation first, then a stream of
# pseudo-random bytes (the same on every run) to continue from, and some random sequences.
rng = random.Random(20261122)
for op in range(32):
    for length in (24, 160):
        seeds["capi_sequence"].add(bytes([op]) + rng.randbytes(length))
for length in (16, 64, 256, 1024) * 4:
    seeds["capi_sequence"].add(rng.randbytes(length))

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

# npy_reader: arrays of several dtypes, shapes (0-d and empty included), byte orders, memory
# orders and format versions, written by NumPy.
python_bin=python3
[ -x "$repo_dir/.venv/bin/python" ] && python_bin="$repo_dir/.venv/bin/python"
if ! "$python_bin" -c 'import numpy' 2>/dev/null; then
  echo "note: no NumPy for $python_bin: npy_reader gets no seeds"
  exit 0
fi
"$python_bin" - "$fuzz_dir/corpus/npy_reader" <<'PY'
import hashlib
import io
import pathlib
import sys

import numpy as np

directory = pathlib.Path(sys.argv[1])
directory.mkdir(parents=True, exist_ok=True)
arrays = [
    np.arange(6, dtype="<f4").reshape(2, 3),
    np.asfortranarray(np.arange(6, dtype="<i8").reshape(2, 3)),
    np.asfortranarray(np.arange(24, dtype="<i4").reshape(2, 3, 4)),
    np.array(3.5),
    np.array(True),
    np.zeros((0,), dtype="|i1"),
    np.zeros((2, 0, 3), dtype="<f4"),
    np.array([True, False, True]),
    np.arange(4, dtype=">u2"),
    np.arange(5, dtype=">f8").reshape(5, 1),
    np.array([1 + 2j, 3 - 4j], dtype="<c8"),
    np.array([[1 + 2j], [3 - 4j]], dtype=">c16"),
    np.arange(3, dtype="<f2"),
    np.array([0, 2**64 - 1, 7], dtype="<u8"),
    np.arange(-4, 4, dtype="<i2").reshape(2, 2, 2),
    np.arange(256, dtype="|u1"),
]
written = set()
for array in arrays:
    buffer = io.BytesIO()
    np.save(buffer, array)
    written.add(buffer.getvalue())
# Format versions 2.0 and 3.0 of a few of them.
for array in arrays[:3]:
    for version in ((2, 0), (3, 0)):
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, array, version=version)
        written.add(buffer.getvalue())
new = 0
for data in written:
    path = directory / hashlib.sha1(data).hexdigest()
    if not path.exists():
        path.write_bytes(data)
        new += 1
print(f"npy_reader: {len(written)} seeds (numpy {np.__version__}), {new} new files")
PY
