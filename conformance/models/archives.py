"""The same parameters in the three archive formats IREE reads.

`iree-import-onnx --externalize-params` writes an `.irpa`; these functions write its entries
again as `.safetensors` and `.gguf` (byte-for-byte the same values, under the same keys), so
that a compiled model runs from each format through both runtimes. IREE indexes both formats
as raw bytes by tensor name, so the element type written here only has to be self-consistent.
"""

from __future__ import annotations

import json
import pathlib
import struct


def irpa_entries(path: pathlib.Path) -> list:
    """(key, bytes) of every data entry of an `.irpa`, as IREE's own index reads it."""
    import iree.runtime as rt

    index = rt.ParameterIndex()
    index.load(str(path))
    entries = []
    for key, entry in index.items():
        if not entry.is_file:
            raise ValueError(f"{path}: entry {key!r} is not file data (splat)")
        entries.append((key, bytes(entry.file_view)))
    return entries


def write_safetensors(path: pathlib.Path, entries: list) -> None:
    """Every entry as a 1-D F32 tensor (all our parameters are f32)."""
    header, offset = {}, 0
    for key, data in entries:
        if len(data) % 4:
            raise ValueError(f"{key}: {len(data)} bytes is not a whole number of f32")
        header[key] = {"dtype": "F32", "shape": [len(data) // 4],
                       "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as writers do
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, data in entries:
            f.write(data)


GGUF_ALIGNMENT = 32
GGUF_TYPE_F32 = 0
GGUF_VALUE_UINT32 = 4


def gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: pathlib.Path, entries: list) -> None:
    """A GGUF v3 file: one metadata key (`general.alignment`), every entry a 1-D F32 tensor
    at an aligned offset of the data section."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(entries), 1)
    head += gguf_string("general.alignment") + struct.pack("<II", GGUF_VALUE_UINT32,
                                                           GGUF_ALIGNMENT)
    data, offsets = b"", []
    for _, value in entries:
        data += b"\0" * (-len(data) % GGUF_ALIGNMENT)
        offsets.append(len(data))
        data += value
    for (key, value), offset in zip(entries, offsets):
        head += gguf_string(key) + struct.pack("<IQIQ", 1, len(value) // 4, GGUF_TYPE_F32,
                                               offset)
    head += b"\0" * (-len(head) % GGUF_ALIGNMENT)
    path.write_bytes(head + data)
