#!/usr/bin/env bash
# Rebuilds the IREE VM bytecode module (.vmfb) test fixtures in
# crates/pactum-iree/tests/fixtures/vmfb/ from our own MLIR programs in its src/ folder, with
# the real IREE compiler, pinned in scripts/requirements-iree.txt and installed into a
# separate venv, .venv-iree (created here when missing).
#
# The fixtures are checked in: the tests never run this script, it only rebuilds them.
#
# What each fixture is built from lives in its source's header comments, one JSON object
# per line:
#   // pactum-fixture: {"file": "x.vmfb", "flags": ["--iree-...", ...], "covers": [tag, ...]}
#   // pactum-run: {"file": "x.vmfb", "device": "local-task"|"local-sync"|null,
#   //              "function": "f", "inputs": ["7", "4xf32=1 2 3 4"]
#   //              [, "fails": "INVALID_ARGUMENT"]}
# One source may declare several fixtures. Each fixture is compiled from inside src/ as
#   iree-compile <flags> <name>.mlir -o ../<file>
# (so debug locations hold the bare file name, not a machine path), its "covers" tags are
# checked against `iree-dump-module --output=flatbuffer-json` and the container bytes, each
# run is executed with iree-run-module (device null = no --device flag) and its exact stdout
# recorded, and manifest.json is rewritten. A run with "fails" must fail: iree-run-module
# must exit with status 1 and print that IREE status code on stderr ("<where>: CODE; ..."),
# and its exact stderr is recorded too (expected_error).
#
# iree-compile is byte-deterministic: running this script again produces byte-identical
# .vmfb files and manifest.json. `--check` rebuilds into a temporary folder and fails if
# anything differs from the checked-in files (nothing is written).
#
# Usage: scripts/build_vmfb_fixtures.sh [--check]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VENV=.venv-iree
if [ ! -x "$VENV/bin/python" ]; then
  echo "==> creating $VENV"
  python3 -m venv "$VENV"
fi
echo "==> installing scripts/requirements-iree.txt into $VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r scripts/requirements-iree.txt

exec "$VENV/bin/python" - "$@" <<'PY'
import hashlib
import importlib.metadata
import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path.cwd()
BIN = ROOT / ".venv-iree" / "bin"
FIX = ROOT / "crates" / "pactum-iree" / "tests" / "fixtures" / "vmfb"
SRC = FIX / "src"
CHECK = sys.argv[1:] == ["--check"]
if sys.argv[1:] not in ([], ["--check"]):
    sys.exit("usage: scripts/build_vmfb_fixtures.sh [--check]")

STRUCTS = ("sdict", "slist", "stuple", "py_homogeneous_list")


def die(msg):
    sys.exit(f"build_vmfb_fixtures: error: {msg}")


def tool(name):
    """The pinned package's console script, or the binary the runtime wheel ships in
    iree/_runtime_libs when the venv has no script for it."""
    script = BIN / name
    if script.exists():
        return str(script)
    for libs in sorted(ROOT.glob(".venv-iree/lib/python3*/site-packages/iree/_runtime_libs")):
        if (libs / name).exists():
            return str(libs / name)
    return str(script)


# ---------------------------------------------------------------- sources
fixtures, runs = [], []
for src in sorted(SRC.glob("*.mlir")):
    for n, line in enumerate(src.read_text().splitlines(), 1):
        m = re.match(r"\s*//\s*pactum-(fixture|run):\s*(.*)$", line)
        if not m:
            continue
        try:
            obj = json.loads(m.group(2))
        except json.JSONDecodeError as e:
            die(f"{src.name}:{n}: bad JSON: {e}")
        obj["_source"] = src.name
        (fixtures if m.group(1) == "fixture" else runs).append(obj)

by_file = {}
for f in fixtures:
    if set(f) - {"file", "flags", "covers", "_source"} or not f["file"].endswith(".vmfb"):
        die(f"bad pactum-fixture in {f['_source']}: {f}")
    if f["file"] in by_file:
        die(f"{f['file']} declared twice")
    f["runs"] = []
    by_file[f["file"]] = f
for r in runs:
    if set(r) - {"fails"} != {"file", "device", "function", "inputs", "_source"}:
        die(f"bad pactum-run in {r['_source']}: {r}")
    if "fails" in r and not re.fullmatch(r"[A-Z_]+", str(r["fails"])):
        die(f"bad \"fails\" status in {r['_source']}: {r}")
    f = by_file.get(r["file"])
    if f is None or f["_source"] != r["_source"]:
        die(f"pactum-run for undeclared fixture {r['file']} in {r['_source']}")
    f["runs"].append(r)
if not fixtures:
    die(f"no pactum-fixture lines in {SRC}/*.mlir")


# ---------------------------------------------------------------- checks of "covers"
def read_container(data):
    """Returns (container, flatbuffer_start, size_prefix) following the runtime's rules."""
    if data[:4] == b"PK\x03\x04":
        name_len, extra_len = struct.unpack_from("<HH", data, 26)
        start = 30 + name_len + extra_len
        kind = "zip"
    else:
        start = 0
        kind = "flatbuffer"
    (prefix,) = struct.unpack_from("<I", data, start)
    if data[start + 8:start + 12] != b"IREE":
        die("file identifier IREE not found after the size prefix")
    if start + 4 + prefix > len(data):
        die("size prefix runs past the end of the file")
    return kind, start + 4, prefix


def zip_payloads(path, data):
    """(offset, length) of every stored member's payload, and the member names."""
    with zipfile.ZipFile(path) as z:
        if z.testzip() is not None:
            die(f"{path.name}: bad CRC in ZIP member")
        out = {}
        for info in z.infolist():
            h = info.header_offset
            name_len, extra_len = struct.unpack_from("<HH", data, h + 26)
            out[(h + 30 + name_len + extra_len, info.file_size)] = info.filename
        return out, z.namelist()


def abi_records(attrs):
    text = attrs.get("iree.abi")
    if text is None:
        return None
    abi = json.loads(text)
    if not isinstance(abi.get("a"), list) or not isinstance(abi.get("r"), list):
        die(f"iree.abi without list-valued a/r: {text}")
    return abi


def is_struct(rec):
    if isinstance(rec, list) and rec and rec[0] == "named":
        rec = rec[2]
    return isinstance(rec, list) and bool(rec) and rec[0] in STRUCTS


def verify(path, fx):
    data = path.read_bytes()
    kind, fb_start, prefix = read_container(data)
    j = json.loads(subprocess.run([tool("iree-dump-module"), "--output=flatbuffer-json", str(path)],
                                  check=True, capture_output=True, text=True).stdout)
    sigs = j.get("function_signatures", [])
    exports = j.get("exported_functions", [])
    user = [e for e in exports if e["local_name"] != "__init"]

    def attrs(e):
        sig = sigs[e.get("internal_ordinal", 0)]
        return {a["key"]: a["value"] for a in sig.get("attrs", [])}

    decls = [attrs(e).get("iree.abi.declaration", "") for e in user]
    abis = [a for a in (abi_records(attrs(e)) for e in user) if a]
    segs = j.get("rodata_segments", [])
    ext = [s for s in segs if s.get("external_data_length", 0) > 0]
    emb = [bytes(s["embedded_data"]) for s in segs if "embedded_data" in s]
    imports = j.get("imported_functions", [])
    ordinals = [e.get("internal_ordinal", 0) for e in exports]

    # External segments: base = align64(end of FlatBuffer) from the start of the file;
    # in a ZIP each one must be exactly the payload of one stored member.
    base = (fb_start + prefix + 63) // 64 * 64
    payloads, names = zip_payloads(path, data) if kind == "zip" else ({}, [])
    if kind == "zip" and names[:1] != ["module.fb"]:
        die(f"{path.name}: first ZIP member is not module.fb: {names}")
    ext_bytes = []
    for s in ext:
        off, length = base + s.get("external_data_offset", 0), s["external_data_length"]
        if off + length > len(data):
            die(f"{path.name}: external rodata past the end of the file")
        if kind == "zip" and (off, length) not in payloads:
            die(f"{path.name}: external rodata at {off}+{length} is no ZIP member's payload")
        ext_bytes.append(data[off:off + length])

    checks = {
        "multiple_exports": len(user) >= 2,
        "scalars": any(re.search(r"[iIfF]", sigs[e.get("internal_ordinal", 0)]
                                 .get("calling_convention", "")[1:]) for e in user),
        "tensors": any("tensor<" in d for d in decls),
        "dynamic_shape": any(re.search(r"tensor<(\d+x)*\?", d) for d in decls),
        "iree.abi": bool(abis),
        "iree.abi.declaration": any(decls),
        "abi_struct_args": any(is_struct(r) for a in abis for r in a["a"]),
        "abi_struct_results": any(is_struct(r) for a in abis for r in a["r"]),
        "named_args": any(isinstance(r, list) and r[:1] == ["named"] for a in abis for r in a["a"]),
        "user_reflection": any(not k.startswith("iree.abi") for e in user for k in attrs(e)),
        "module_attrs": bool(j.get("attrs")),
        "module_version": j.get("version", 0) > 0,
        "globals": j.get("module_state", {}).get("global_bytes_capacity", 0) > 0,
        "external_rodata": bool(ext),
        "large_constant": any(s["external_data_length"] >= 4096 and not b.startswith(b"\x7fELF")
                              for s, b in zip(ext, ext_bytes)),
        "embedded_rodata": bool(emb),
        "debug_database": "debug_database" in j,
        "no_debug_database": "debug_database" not in j,
        "async": any(attrs(e).get("iree.abi.model") == "coarse-fences" for e in user),
        "queue_barrier": any(i["full_name"] == "hal.device.queue.barrier" for i in imports),
        "optional_import": any(i.get("flags") == "OPTIONAL" for i in imports),
        # Test programs of the `check` dialect: their expectations are (optional) imports of
        # IREE's `check` module, so their functions are run by `pactum test` and compared
        # with IREE's runtime by crates/pactum-iree/tests/all/check_vs_iree.rs, not by runs
        # of iree-run-module (which has no `check` module and would skip every expectation).
        "check_imports": any(i["full_name"].startswith("check.") for i in imports),
        "f64": "EXT_F64" in str(j.get("requirements", "")),
        "export_alias": len(set(ordinals)) < len(ordinals),
        "vm_only": not any(i["full_name"].startswith("hal.") for i in imports)
                   and not any(t.get("full_name", "").startswith("!hal.") for t in j.get("types", [])),
        "initializer": any(e["local_name"] == "__init" for e in exports),
        "ref_globals": j.get("module_state", {}).get("global_ref_count", 0) > 0,
        "llvm-cpu": b"embedded-elf-x86_64" in emb
                    and any(b.startswith(b"\x7fELF") for b in ext_bytes),
        "llvm-cpu-system": b"system-elf-x86_64" in emb
                           and any(b.startswith(b"\x7fELF") for b in ext_bytes),
        "vmvx": b"vmvx-bytecode-fb" in emb,
        "vmvx_microkernels": b"vmvx-bytecode-fb" in emb
                             and any(re.search(rb"vmvx\.[a-z]", b) for b in ext_bytes),
        "zip_container": kind == "zip",
        "bare_container": kind == "flatbuffer",
    }
    for tag in fx["covers"]:
        if tag not in checks:
            die(f"{path.name}: unknown covers tag {tag!r} (known: {', '.join(checks)})")
        if not checks[tag]:
            die(f"{path.name}: covers {tag!r} but the compiled module does not show it")
    return kind


# ---------------------------------------------------------------- build
version = subprocess.run([tool("iree-compile"), "--version"], check=True,
                         capture_output=True, text=True).stdout
version_lines = [l.strip() for l in version.splitlines() if "version" in l]
print("==> " + " | ".join(version_lines))

with tempfile.TemporaryDirectory(prefix="vmfb-fixtures-") as tmp:
    out_dir = pathlib.Path(tmp)
    entries = []
    for f in fixtures:
        out = out_dir / f["file"]
        cmd = [tool("iree-compile"), *f["flags"], f["_source"], "-o", str(out)]
        proc = subprocess.run(cmd, cwd=SRC, capture_output=True, text=True)
        if proc.returncode != 0:
            die(f"iree-compile failed for {f['file']}:\n{proc.stderr}")
        container = verify(out, f)
        flags_kind = "flatbuffer" if "--iree-vm-emit-polyglot-zip=false" in f["flags"] else "zip"
        if container != flags_kind:
            die(f"{f['file']}: container {container}, flags say {flags_kind}")
        backends = [fl.split("=", 1)[1] for fl in f["flags"]
                    if fl.startswith(("--iree-hal-target-backends=",
                                      "--iree-hal-local-target-device-backends="))]
        run_entries = []
        for r in f["runs"]:
            cmd = [tool("iree-run-module")]
            if r["device"] is not None:
                cmd.append(f"--device={r['device']}")
            cmd += [f"--module={out}", f"--function={r['function']}"]
            cmd += [f"--input={i}" for i in r["inputs"]]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            entry = {"function": r["function"], "inputs": r["inputs"],
                     "device": r["device"], "expected_output": proc.stdout}
            if "fails" not in r:
                if proc.returncode != 0:
                    die(f"iree-run-module failed for {f['file']} @{r['function']}:\n{proc.stderr}")
            else:
                m = re.match(r"[^\n]*?:\d+: ([A-Z_]+); ", proc.stderr)
                if proc.returncode != 1 or not m or m.group(1) != r["fails"]:
                    die(f"{f['file']} @{r['function']} {r['inputs']}: expected a {r['fails']} "
                        f"failure, got exit status {proc.returncode}:\n{proc.stderr}")
                entry["fails"] = r["fails"]
                entry["expected_error"] = proc.stderr
            run_entries.append(entry)
        data = out.read_bytes()
        entries.append({
            "file": f["file"],
            "source": f"src/{f['_source']}",
            "flags": f["flags"],
            "container": container,
            "backend": backends[0] if backends else "none",
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "covers": f["covers"],
            "runs": run_entries,
        })
        print(f"    {f['file']:34} {len(data):7} bytes  {container:10}  {entries[-1]['backend']:8}"
              f"  {len(run_entries)} run(s)")

    manifest = {
        "about": "IREE .vmfb fixtures: compiler output of src/*.mlir, rebuilt by "
                 "scripts/build_vmfb_fixtures.sh (never hand-edited). Paths are relative to "
                 "this folder.",
        "compile_command": "cd src && iree-compile <flags...> <source file name> -o ../<file>",
        "run_command": "iree-run-module [--device=<device>] --module=<file> "
                       "--function=<function> [--input=<input>]...   "
                       "(device null: no --device flag); expected_output is its exact stdout; "
                       "a run with fails (an IREE status code) exits with status 1 and "
                       "expected_error is its exact stderr",
        "tools": {
            "iree-compile --version": version_lines,
            "iree-base-compiler": importlib.metadata.version("iree-base-compiler"),
            "iree-base-runtime": importlib.metadata.version("iree-base-runtime"),
        },
        "fixtures": entries,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")

    new = sorted(p.name for p in out_dir.iterdir())
    old = sorted(p.name for p in FIX.glob("*.vmfb")) + (["manifest.json"] if (FIX / "manifest.json").exists() else [])
    if CHECK:
        diffs = [n for n in sorted(set(new) | set(old))
                 if n not in new or n not in old or (FIX / n).read_bytes() != (out_dir / n).read_bytes()]
        if diffs:
            die("rebuilt fixtures differ from the checked-in ones: " + ", ".join(diffs))
        print(f"==> --check: all {len(new)} files are byte-identical to the checked-in ones")
    else:
        for n in old:
            if n not in new:
                (FIX / n).unlink()
        for n in new:
            shutil.copyfile(out_dir / n, FIX / n)
        print(f"==> wrote {len(new) - 1} .vmfb files and manifest.json to {FIX.relative_to(ROOT)}")
        print("    (iree-compile is byte-deterministic: a second run gives identical files; "
              "verify with --check)")
PY
