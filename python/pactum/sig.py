"""IREE function signatures, from Python: what ``pactum sig`` does on the command line.

Each function takes a signature's text in any format IREE writes and returns Python values::

    import pactum
    pactum.sig.cconv('{"a":["i32",["ndarray","f32",1,4]],"r":["f32"],"v":1}')   # '0ir_f'
    pactum.sig.render("I15!B11!d10d128d64R15!B11!t6d32d8d64")
    # '(Buffer<float32[10x128x64]>) -> (Buffer<sint32[32x8x64]>)'
    pactum.sig.convert("I15!B11!d10d128d64R15!B11!t6d32d8d64", "iree-abi")
    # '{"a":[["ndarray","f32",3,10,128,64]],"r":[["ndarray","i32",3,32,8,64]],"v":1}'
    pactum.sig.explain("0iCiID_I")["cconv_items"]
    # {'arguments': ['i32', {'variadic': ['i32', 'i64']}], 'results': ['i64'], 'variadic': True}

The formats (``from_``, ``to``): ``"iree-abi"`` (V1 ``iree.abi`` reflection JSON),
``"raw"`` (legacy raw signature ``I…R…``), ``"sip"`` (legacy structured index path signature),
``"cconv"`` (VM calling convention ``0rf_rI``) and ``"declaration"``
(``iree.abi.declaration`` text). ``from_=None`` detects the format as the command does.

Every text is the command's output without its last newline: ``pactum sig render X`` prints
``render(X) + "\\n"``, and so on. Bad input raises ``ValueError`` with the command's one-line
message, which names the byte offset of a malformed text (``... at byte 2: ...``).

The work is done by pactum's Rust code (``pactum_iree::sig``), the same the
``pactum`` command runs.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

import tvm_ffi

__all__ = [
    "FORMATS",
    "detect",
    "render",
    "cconv",
    "matches",
    "convert",
    "explain",
    "explain_text",
]

#: The format names ``from_`` and ``to`` accept (``iree_abi`` is read as ``iree-abi`` too).
FORMATS = ("iree-abi", "raw", "sip", "cconv", "declaration")


def _call(name: str, *args: Any) -> Any:
    # pactum raises ValueError (with the command's message) for bad input.
    return tvm_ffi.get_global_func(f"pactum.sig.{name}")(*args)


def detect(signature: str, from_: Optional[str] = None) -> str:
    """The format of ``signature`` (one of :data:`FORMATS`), as the command detects it; raises
    ``ValueError`` when it does not parse (as ``from_``, when given)."""
    return str(_call("detect", signature, from_))


def render(signature: str, from_: Optional[str] = None) -> str:
    """``pactum sig render``: IREE's own rendering of a raw or SIP signature, exactly as IREE
    wrote it. A raw signature's is one line (``(Buffer<float32[?x128]>) -> (sint32)``); a SIP
    signature's is ``"inputs:\\n<structure>results:\\n<structure>"`` without the last newline.
    Other formats raise ``ValueError`` (see :func:`explain`)."""
    return str(_call("render", signature, from_))


def cconv(signature: str, from_: Optional[str] = None, check: Optional[str] = None) -> str:
    """``pactum sig cconv``: the VM calling convention ``signature`` implies (``"0rr_ri"``).

    With ``check``, the line the command prints after checking it
    (``"0rr_ri matches (implied: 0rr_ri)"``); a mismatch raises ``ValueError`` naming the first
    differing argument or result (see :func:`matches` for a ``bool``)."""
    return str(_call("cconv", signature, from_, check))


def matches(signature: str, cconv: str, from_: Optional[str] = None) -> bool:
    """Whether calling convention ``cconv`` is the one ``signature`` implies, however it is
    spelled (``pactum sig cconv SIGNATURE --check CCONV`` succeeding). Malformed input raises
    ``ValueError``."""
    return bool(_call("matches", signature, from_, cconv))


def convert(
    signature: str, to: str, from_: Optional[str] = None, name: str = "main"
) -> str:
    """``pactum sig convert --to TO``: the same signature in format ``to`` (one of
    :data:`FORMATS`); ``name`` is the function name a declaration needs. A signature the target
    cannot express raises ``ValueError`` naming where (``cannot express args[0] as a raw
    signature: ...``)."""
    return str(_call("convert", signature, from_, to, name))


def explain_text(signature: str, from_: Optional[str] = None) -> str:
    """``pactum sig explain``: what a signature says, in the command's words (its format,
    arguments, results and calling convention), one line after another."""
    return str(_call("explain", signature, from_))


def explain(signature: str, from_: Optional[str] = None) -> Dict[str, Any]:
    """What ``pactum sig explain`` says, as a dict. Keys a format does not have are ``None``:

    - ``format``: the format (one of :data:`FORMATS`); ``format_name``: in words
      (``"iree.abi JSON"``);
    - ``version`` (``iree-abi``: ``"v"``, when written), ``rendering`` (``raw``: IREE's
      rendering), ``invocation`` (``declaration``: ``"sync"`` or ``"async"``);
    - ``sip`` (``sip``): ``{"inputs": [{"path": [0, "a"], "raw": 1}, ...], "results": [...]}``,
      each leaf's key path (ints for sequence positions, strs for dict keys) and raw index;
    - ``cconv_items`` (``cconv``): ``{"arguments": [...], "results": [...], "variadic": bool}``,
      an item being ``"i32"``, ``"i64"``, ``"f32"``, ``"f64"``, ``"ref"`` or
      ``{"variadic": [items]}``;
    - ``arguments``: ``[{"index": 0, "keyword": None or "name", "type": "ndarray<f32, [4]>"}]``
      and ``results``: ``[{"index": 0, "type": "i32"}]`` (``None`` for a calling convention,
      which describes no signature);
    - ``inlined_results``: whether the single structured result is returned as its slots;
    - ``calling_convention``: the one implied (``"0rr_ri"``), or ``None`` with the reason in
      ``calling_convention_error``.
    """
    return json.loads(str(_call("explain_json", signature, from_)))
