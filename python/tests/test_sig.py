"""pactum.sig against the `pactum sig` command: for the signature vectors of
/work/shared/vectors (iree.abi JSON, raw and SIP signatures) and the command's own test cases,
each function returns what the command prints (its stdout without the last newline) or raises
ValueError with the command's one-line error.

The command is `PACTUM_CLI` when set, otherwise the `pactum` binary `cargo build -p pactum-cli`
builds (a no-op after `cargo test --workspace`)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
from typing import Any, Callable, Dict, List

import pytest

import pactum
from pactum import sig

REPO = pathlib.Path(__file__).resolve().parents[2]
VECTORS = REPO.parent / "shared" / "vectors"


@pytest.fixture(scope="session")
def cli() -> str:
    given = os.environ.get("PACTUM_CLI")
    if given:
        return given
    if shutil.which("cargo") is None:
        pytest.skip("cargo is missing and PACTUM_CLI is not set: no pactum command to compare with")
    build = subprocess.run(
        ["cargo", "build", "-q", "-p", "pactum-cli", "--bin", "pactum", "--message-format=json"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    for line in build.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "pactum":
            if message.get("executable"):
                return message["executable"]
    raise AssertionError("cargo built no pactum executable")


def vectors(name: str) -> Any:
    path = VECTORS / name
    if not path.is_file():
        pytest.skip(f"missing signature vectors {path}")
    return json.loads(path.read_text())


def signatures() -> List[str]:
    """Every signature text of the vectors, then the CLI tests' cases (good and bad)."""
    out: List[str] = []
    if VECTORS.is_dir():
        abi = json.loads((VECTORS / "iree_abi_json.json").read_text())
        legacy = json.loads((VECTORS / "iree_legacy_signatures.json").read_text())
        out += [case["iree_abi"] for case in abi["vectors"]]
        out += [case["input"] for case in legacy["raw_functions"]]
        out += [case["input"] for case in legacy["sip"]]
    out += [
        "I23!O1!B11!d-1d128d64S3!t6R17!B13!t11d32d-1d64",
        "I12!S9!k0_0k1_1R3!_0",
        "I5!_0_1R1!",  # SIP with two roots: no signature
        '{"a":[["slist","i32",["sdict",["a","f32"]]],"i32"],"r":[["sdict",["x","i32"],["y","i32"]]],"v":1}',
        '{"a":[["sdict",["bias",["ndarray","f32",1,4]],["n","i32"]],["named","scale",["ndarray","f32",1,4]]],"r":[["sdict",["out",["ndarray","f32",1,4]],["n_squared","i32"]]],"v":1}',
        '{"a":["i32",["ndarray","f32",2,null,3]],"r":["f32"],"v":1}',
        '{"a":[],"r":[]}',
        '{"a":[["ndarray","f32",2,4]],"r":[]}',
        "0iCiID_I",
        "0rZ_r",
        "0ii_i",
        "sync func @f(%x: tensor<?x3xf32>) -> (%y: i32)",
        "async func @g(%a: tensor<4xf32>, %b: i32) -> (%c: tensor<4xf32>)",
        "sync func @f(%x: tensor<4xf32) -> ()",
        "I9!B6!t99R1!",
        "hello",
        "",
    ]
    return out


SIGNATURES = signatures()


def same(cli: str, args: List[str], call: Callable[[], str]) -> bool:
    """`pactum sig ARGS` prints `call()` and a newline, or fails with the message `call()`
    raises as ValueError. Returns whether the command succeeded."""
    out = subprocess.run([cli, "sig", *args], capture_output=True, text=True)
    if out.returncode == 0:
        assert call() + "\n" == out.stdout, args
        return True
    assert out.returncode == 1, (args, out.stderr)
    with pytest.raises(ValueError) as error:
        call()
    assert out.stderr == f"error: {error.value}\n", args
    return False


def from_args(from_: Any) -> List[str]:
    return [] if from_ is None else ["--from", from_]


@pytest.mark.parametrize("text", SIGNATURES)
def test_render_cconv_and_explain_text_match_the_command(cli: str, text: str) -> None:
    for from_ in [None, *sig.FORMATS]:
        flag = from_args(from_)
        same(cli, ["render", text, *flag], lambda: sig.render(text, from_))
        same(cli, ["explain", text, *flag], lambda: sig.explain_text(text, from_))
        if same(cli, ["cconv", text, *flag], lambda: sig.cconv(text, from_)):
            implied = sig.cconv(text, from_)
            same(cli, ["cconv", text, "--check", implied, *flag], lambda: sig.cconv(text, from_, implied))
            assert sig.matches(text, implied, from_) is True
            other = "0" + ("i" if "r" in implied.split("_")[0] else "r") + "_" + implied.split("_", 1)[1]
            if not same(cli, ["cconv", text, "--check", other, *flag], lambda: sig.cconv(text, from_, other)):
                assert sig.matches(text, other, from_) is False
        # A malformed --check text is an error from both, naming its offset.
        same(cli, ["cconv", text, "--check", "0Q", *flag], lambda: sig.cconv(text, from_, "0Q"))


@pytest.mark.parametrize("text", SIGNATURES)
def test_convert_matches_the_command(cli: str, text: str) -> None:
    for to in sig.FORMATS:
        same(cli, ["convert", "--to", to, text], lambda: sig.convert(text, to))
    same(cli, ["convert", "--to", "declaration", "--name", "f", text], lambda: sig.convert(text, "declaration", name="f"))


def render_explanation(data: Dict[str, Any]) -> str:
    """The command's `explain` text, written from pactum.sig.explain's dict."""

    def item(value: Any) -> str:
        if isinstance(value, dict):
            return f"variadic ({items(value['variadic'])})..."
        return value

    def items(values: List[Any]) -> str:
        return ", ".join(item(v) for v in values) if values else "(none)"

    lines = [f"format: {data['format_name']}"]
    if data["format"] == "cconv":
        cconv = data["cconv_items"]
        lines += [f"arguments: {items(cconv['arguments'])}", f"results: {items(cconv['results'])}"]
        if cconv["variadic"]:
            lines.append("variadic: yes (C...D spans; only imports may be variadic)")
    elif data["format"] == "raw":
        lines.append(f"rendering: {data['rendering']}")
    elif data["format"] == "sip":
        for side in ("inputs", "results"):
            lines.append(f"{side}:")
            leaves = data["sip"][side]
            if not leaves:
                lines.append("  (none)")
            for leaf in leaves:
                path = "".join(f"[{k}]" if isinstance(k, int) else f"[{json.dumps(k)}]" for k in leaf["path"])
                lines.append(f"  {path or '(root)'} = raw {leaf['raw']}")
    elif data["format"] == "iree-abi":
        if data["version"] is not None:
            lines.append(f"version: {data['version']}")
    elif data["format"] == "declaration":
        lines.append(f"invocation: {data['invocation']}")
    if data["arguments"] is not None:
        lines.append("arguments:")
        if not data["arguments"]:
            lines.append("  (none)")
        for arg in data["arguments"]:
            if arg["keyword"] is None:
                lines.append(f"  {arg['index']}: {arg['type']}")
            else:
                lines.append(f"  {arg['keyword']} (keyword): {arg['type']}")
        lines.append("results:")
        if not data["results"]:
            lines.append("  (none)")
        lines += [f"  {r['index']}: {r['type']}" for r in data["results"]]
        if data["inlined_results"]:
            lines.append("the single structured result is returned as its slots, one VM result each")
        if data["calling_convention"] is not None:
            lines.append(f"calling convention: {data['calling_convention']}")
        else:
            lines.append(f"calling convention: none ({data['calling_convention_error']})")
    return "\n".join(lines)


@pytest.mark.parametrize("text", SIGNATURES)
def test_explain_dict_says_what_the_command_says(cli: str, text: str) -> None:
    out = subprocess.run([cli, "sig", "explain", text], capture_output=True, text=True)
    if out.returncode != 0:
        with pytest.raises(ValueError) as error:
            sig.explain(text)
        assert out.stderr == f"error: {error.value}\n"
        return
    data = sig.explain(text)
    assert render_explanation(data) + "\n" == out.stdout
    assert data["format"] == sig.detect(text)
    json.dumps(data)  # plain JSON values


def test_vectors_give_the_recorded_results() -> None:
    abi = vectors("iree_abi_json.json")
    for case in abi["vectors"]:
        text = case["iree_abi"]
        assert sig.detect(text) == "iree-abi"
        assert sig.cconv(text) == case["implied_cconv"]
        assert sig.explain(text)["inlined_results"] == case["inlined_results"]
    legacy = vectors("iree_legacy_signatures.json")
    for case in legacy["raw_functions"]:
        if case.get("to_string") is not None:
            assert sig.render(case["input"], from_="raw") == case["to_string"]
        else:
            with pytest.raises(ValueError, match=r"at byte \d+"):
                sig.render(case["input"], from_="raw")
    for case in legacy["sip"]:
        inputs, results = case["inputs"].get("to_string"), case["results"].get("to_string")
        if inputs is not None and results is not None:
            assert sig.render(case["input"], from_="sip") + "\n" == f"inputs:\n{inputs}results:\n{results}"


def test_examples() -> None:
    raw = "I15!B11!d10d128d64R15!B11!t6d32d8d64"
    json_text = sig.convert(raw, "iree-abi")
    assert json_text == '{"a":[["ndarray","f32",3,10,128,64]],"r":[["ndarray","i32",3,32,8,64]],"v":1}'
    assert sig.convert(json_text, "raw") == raw
    assert sig.convert(json_text, "declaration", name="f") == (
        "sync func @f(%input0: tensor<10x128x64xf32>) -> (%output0: tensor<32x8x64xi32>)"
    )
    assert sig.cconv(raw) == "0r_r"
    assert sig.cconv(raw, check="0r_r") == "0r_r matches (implied: 0r_r)"
    assert sig.matches(raw, "0r_r") and not sig.matches(raw, "0i_r")
    assert sig.render("I12!S9!k0_0k1_1R3!_0") == "inputs:\n:[\n  0=raw(0),\n  1=raw(1),\n],\nresults:\n=raw(0),"
    explained = sig.explain("0iCiID_I")
    assert explained["cconv_items"] == {
        "arguments": ["i32", {"variadic": ["i32", "i64"]}],
        "results": ["i64"],
        "variadic": True,
    }
    assert explained["arguments"] is None and explained["calling_convention"] is None
    explained = sig.explain("sync func @f(%x: tensor<?x3xf32>) -> (%y: i32)")
    assert explained["invocation"] == "sync"
    assert explained["arguments"] == [{"index": 0, "keyword": "x", "type": "ndarray<f32, [?, 3]>"}]
    assert explained["sip"] is None
    assert sig.explain("I12!S9!k0_0k1_1R3!_0")["sip"]["inputs"] == [
        {"path": [0], "raw": 0},
        {"path": [1], "raw": 1},
    ]
    assert pactum.sig is sig


@pytest.mark.parametrize(
    "call, offset",
    [
        (lambda: sig.explain("0rZ_r"), 2),
        (lambda: sig.cconv("0rZ_r", from_="cconv"), 2),
        (lambda: sig.render("I9!B6!t99R1!", from_="raw"), None),
        (lambda: sig.explain('{"a":[["ndarray","f32",2,4]],"r":[]}'), None),
        (lambda: sig.convert("sync func @f(%x: tensor<4xf32) -> ()", "raw"), None),
        (lambda: sig.cconv('{"a":[],"r":[]}', check="0_Z"), 2),
        (lambda: sig.matches('{"a":[],"r":[]}', "0_Z"), 2),
    ],
)
def test_bad_input_raises_value_error_naming_the_offset(call: Callable[[], Any], offset: Any) -> None:
    with pytest.raises(ValueError, match=r"at byte \d+") as error:
        call()
    if offset is not None:
        assert f"at byte {offset}:" in str(error.value)


def test_other_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="cannot tell the format"):
        sig.render("hello")
    with pytest.raises(ValueError, match="unknown signature format"):
        sig.render("0r_r", from_="json")
    with pytest.raises(ValueError, match="render prints IREE's rendering of raw and SIP signatures"):
        sig.render('{"a":[],"r":[]}')
    with pytest.raises(ValueError, match="a calling convention has only VM-level types"):
        sig.cconv("0ii_i")
    with pytest.raises(ValueError, match=re.escape("cannot express args[0] as a raw signature")):
        sig.convert('{"a":[["slist","i32",["sdict",["a","f32"]]],"i32"],"r":[],"v":1}', "raw")
    with pytest.raises(ValueError, match="calling convention mismatch"):
        sig.cconv('{"a":["i32"],"r":[],"v":1}', check="0r_v")
