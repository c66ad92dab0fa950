#!/usr/bin/env python3
"""Prints the figures of docs/ARCHITECTURE.md's crate table, measured on the tree as it is.

    python3 scripts/architecture_figures.py

For every workspace crate: the lines of Rust under src/ (blank and comment-only lines not
counted), its `unsafe` blocks and `unsafe fn`/`unsafe impl` items, its integration-test
binaries (what `cargo test` builds from tests/), its Cargo features and the crates it depends
on (normal dependencies; optional ones marked `?`). Reads `cargo metadata`; builds nothing.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNSAFE_BLOCK = re.compile(r"\bunsafe\s*\{")
UNSAFE_ITEM = re.compile(r"\bunsafe\s+(?:extern\s+\"C\"\s+)?(?:fn|impl|trait)\b")


def strip_comments(text):
    """Removes // and /* */ comments and string literals, keeping line structure."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            end = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def source_figures(src):
    lines = unsafe_blocks = unsafe_items = 0
    for path in sorted(src.rglob("*.rs")):
        code = strip_comments(path.read_text(encoding="utf-8"))
        lines += sum(1 for line in code.splitlines() if line.strip())
        unsafe_blocks += len(UNSAFE_BLOCK.findall(code))
        unsafe_items += len(UNSAFE_ITEM.findall(code))
    return lines, unsafe_blocks, unsafe_items


def main():
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    rows = []
    totals = [0, 0, 0, 0]
    for package in metadata["packages"]:
        manifest = Path(package["manifest_path"]).parent
        lines, blocks, items = source_figures(manifest / "src")
        tests = [t["name"] for t in package["targets"] if t["kind"] == ["test"]]
        features = sorted(f for f in package["features"] if f != "default")
        default = package["features"].get("default", [])
        deps = sorted(
            d["name"] + ("?" if d["optional"] else "")
            for d in package["dependencies"]
            if d["kind"] is None
        )
        feature_text = ", ".join(f"**{f}**" if f in default else f for f in features) or "–"
        rows.append(
            f"| `{manifest.relative_to(ROOT)}` | {lines:,} | {blocks} / {items} | "
            f"{len(tests)} | {feature_text} | {', '.join(deps) or '–'} |"
        )
        for k, v in enumerate((lines, blocks, items, len(tests))):
            totals[k] += v
    print("| crate | lines | unsafe blocks / items | test binaries | features (**default**) | depends on (`?` optional) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(
        f"| all | {totals[0]:,} | {totals[1]} / {totals[2]} | {totals[3]} | | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
