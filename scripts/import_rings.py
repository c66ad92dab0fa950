#!/usr/bin/env python3
"""Finds import rings among the files of a Rust crate.

    scripts/import_rings.py crates/pactum-core/src [--allow any.rs:object/mod.rs] [--graph]

Every `crate::`, `super::` and `self::` path a file names (in `use` items, grouped or not, and
inline in code) is resolved to the file that *defines* the item it names, following `pub use`
re-exports, so a module that only re-exports its children does not tie them together. A `mod`
declaration is ownership, not an import, and is not an edge. Edges form a directed graph over
files; its strongly connected components of more than one file are the rings. Exit status 1
when a ring exists other than the allowed pairs (a pair `a:b` allows a component of exactly
those two files).

The parser is lexical: comments and string literals are stripped first, and only paths that
start with `crate`, `super` or `self` are resolved. Good enough for a layering check of our own
code, which is all it is for.
"""

import argparse
import re
import sys
from pathlib import Path

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+|const\s+|async\s+|extern\s+\"C\"\s+)*"
    r"(fn|struct|enum|trait|type|const|static|union|macro_rules!|mod)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
PUB_USE = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", re.M)
USE = re.compile(r"\buse\s+([^;]+);", re.S)
INLINE = re.compile(r"\b((?:crate|super|self)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")
RELATIVE = re.compile(r"(?<![A-Za-z0-9_:])([a-z_][a-z0-9_]*(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def strip(text):
    """Removes comments, string and char literals (keeps line structure)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"' or text.startswith('r"', i) or text.startswith("r#", i):
            if c == "r":
                hashes = len(text[i + 1 :]) - len(text[i + 1 :].lstrip("#"))
                end = '"' + "#" * hashes
                j = text.find(end, i + 2 + hashes)
                i = n if j < 0 else j + len(end)
            else:
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i : i + 4] if i + 4 <= n else text[i:]):
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            i += len(m.group(0)) if m else 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [[a, b], [a, c, d], [a, c, e]]."""
    tree = re.sub(r"\s+", "", tree)
    paths = []

    def walk(prefix, text):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in parts:
            if not part:
                continue
            if "{" in part:
                head, _, rest = part.partition("{")
                walk(prefix + [s for s in head.split("::") if s], rest[: rest.rfind("}")])
            else:
                part = part.split("as")[0] if re.search(r"\bas\b", part) else part
                part = re.split(r"\bas\b", part)[0]
                paths.append(prefix + [s for s in part.split("::") if s])

    walk([], tree)
    return paths


def without_tests(text):
    """Drops `#[cfg(test)] mod x { ... }` blocks: tests may reach anywhere."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
        if not m:
            return text
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]


class Crate:
    def __init__(self, root):
        self.root = Path(root)
        self.files = sorted(p for p in self.root.rglob("*.rs"))
        # `pub(in path)` names a visibility scope, not an import.
        self.text = {
            p: re.sub(r"pub\(in [^)]*\)", "pub", without_tests(strip(p.read_text())))
            for p in self.files
        }
        self.items = {p: {m.group(2) for m in ITEM.finditer(self.text[p])} for p in self.files}

    def module_path(self, file):
        rel = file.relative_to(self.root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts.pop()
        return parts

    def file_of(self, mod_parts):
        base = self.root.joinpath(*mod_parts) if mod_parts else self.root
        for candidate in (
            [base.with_suffix(".rs"), base / "mod.rs"] if mod_parts else [self.root / "lib.rs"]
        ):
            if candidate in self.text:
                return candidate
        return None

    def absolute(self, file, path):
        """A path as module parts from the crate root."""
        here = self.module_path(file)
        if path[0] == "crate":
            return path[1:]
        out = list(here)
        while path and path[0] in ("super", "self"):
            if path[0] == "super":
                out = out[:-1]
            path = path[1:]
        return out + path

    def resolve(self, parts, seen=None):
        """The file defining the item at module path `parts`, following re-exports."""
        seen = seen or set()
        key = tuple(parts)
        if key in seen:
            return None
        seen.add(key)
        # Longest module prefix that is a file.
        for cut in range(len(parts), -1, -1):
            file = self.file_of(parts[:cut])
            if file is None:
                continue
            rest = parts[cut:]
            if not rest:
                return file
            name = rest[0]
            if name in self.items[file]:
                return file
            for m in PUB_USE.finditer(self.text[file]):
                for use in expand_use(m.group(1)):
                    target = self.absolute(file, use) if use[0] in ("crate", "super", "self") else None
                    if target is None:
                        # `pub use child::X;` relative to this module.
                        target = self.module_path(file) + use
                    if use[-1] == name or use[-1] == "*":
                        full = target[:-1] + [name] + rest[1:] if use[-1] == "*" else target + rest[1:]
                        found = self.resolve(full, seen)
                        if found is not None:
                            return found
            return file
        return None

    def edges(self):
        graph = {p: set() for p in self.files}
        for file, text in self.text.items():
            children = set(MOD_DECL.findall(text))
            refs = []
            # `use crate::a::b;` of a module makes `b::Item` name an item of `a/b`: an import of
            # that item, not of the module's own file.
            aliases = {}
            for m in USE.finditer(text):
                # `pub use child::X` in a module is its facade over what it owns, not an import.
                public = re.search(r"\bpub(?:\([^)]*\))?\s+$", text[max(0, m.start() - 16) : m.start()])
                for path in expand_use(m.group(1)):
                    if public and (path[0] in children or (path[0] == "self" and len(path) > 1 and path[1] in children)):
                        continue
                    if path and path[0] in children:
                        path = ["self"] + path
                    if not path or path[0] not in ("crate", "super", "self"):
                        continue
                    if len(path) > 1 and path[-1] == "self":
                        path = path[:-1]
                    target = self.absolute(file, path)
                    if target and self.file_of(target) is not None:
                        aliases[target[-1]] = target
                        continue
                    refs.append(path)
            for m in INLINE.finditer(USE.sub("", text)):
                refs.append([s.strip() for s in m.group(1).split("::")])
            without_uses = USE.sub("", text)
            for m in RELATIVE.finditer(without_uses):
                path = [s.strip() for s in m.group(1).split("::")]
                if path[0] in aliases:
                    refs.append(["crate"] + aliases[path[0]] + path[1:])
                elif path[0] in children:
                    refs.append(["self"] + path)
            for path in refs:
                target = self.resolve(self.absolute(file, path))
                if target is not None and target != file:
                    graph[file].add(target)
        return graph


def rings(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", help="the crate's src directory")
    parser.add_argument("--allow", action="append", default=[], help="a:b, a ring allowed")
    parser.add_argument("--graph", action="store_true", help="print every edge")
    args = parser.parse_args()
    crate = Crate(args.src)
    graph = crate.edges()
    rel = lambda p: str(p.relative_to(crate.root))
    if args.graph:
        for file in crate.files:
            for target in sorted(graph[file]):
                print(f"{rel(file)} -> {rel(target)}")
    allowed = [sorted(pair.split(":")) for pair in args.allow]
    bad = 0
    for comp in rings(graph):
        names = [rel(p) for p in comp]
        if sorted(names) in allowed:
            print(f"allowed ring: {' <-> '.join(names)}")
            continue
        bad += 1
        print(f"RING of {len(names)} files: {', '.join(names)}")
        members = set(comp)
        for file in comp:
            inside = sorted(rel(t) for t in graph[file] if t in members)
            print(f"  {rel(file)} -> {', '.join(inside)}")
    print(f"{len(crate.files)} files, {sum(len(v) for v in graph.values())} imports, {bad} rings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
