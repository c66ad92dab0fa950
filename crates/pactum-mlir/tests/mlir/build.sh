#!/usr/bin/env bash
# Build the MLIR test modules into shared libraries.
#
# Usage: build.sh OUT_DIR
#
# Every *.mlir file next to this script becomes OUT_DIR/lib<stem>.so:
#
#   mlir-opt        lowers func/arith/memref/scf/affine/linalg to the LLVM dialect
#                   (arith-expand first so bf16 arithmetic needs no libgcc helper;
#                   expand-strided-metadata + lower-affine for subviews;
#                   finalize-memref-to-llvm turns memref.alloc into malloc);
#   mlir-translate  LLVM dialect -> LLVM IR (.ll);
#   llc             LLVM IR -> position-independent object file;
#   $CC -shared     object -> shared library.
#
# Functions carrying `attributes {llvm.emit_c_interface}` also get a
# `_mlir_ciface_<name>` wrapper taking memref descriptors by pointer.
#
# A .mlir file may replace the `--finalize-memref-to-llvm` argument with a line
#   // PIPELINE-FINALIZE: --finalize-memref-to-llvm=use-aligned-alloc=1
#
# Tools: PACTUM_MLIR_BIN (default /usr/lib/llvm-22/bin) holds mlir-opt,
# mlir-translate and llc; MLIR_OPT, MLIR_TRANSLATE, LLC and CC override single
# tools. /usr/bin/llc on Debian bookworm is LLVM 14 and cannot read this IR.
#
# Incremental: a library newer than both its .mlir and this script is kept.
# Intermediates (.llvm.mlir, .ll, .o) are written to OUT_DIR as well.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 1
fi

SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SELF="$SRC_DIR/$(basename "${BASH_SOURCE[0]}")"
OUT_DIR="$1"
mkdir -p "$OUT_DIR"

BIN="${PACTUM_MLIR_BIN:-/usr/lib/llvm-22/bin}"
MLIR_OPT="${MLIR_OPT:-$BIN/mlir-opt}"
MLIR_TRANSLATE="${MLIR_TRANSLATE:-$BIN/mlir-translate}"
LLC="${LLC:-$BIN/llc}"
CC="${CC:-cc}"

for tool in "$MLIR_OPT" "$MLIR_TRANSLATE" "$LLC" "$CC"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: required tool not found: $tool" >&2
        echo "  install with: apt-get install -y --no-install-recommends mlir-22-tools llvm-22" >&2
        echo "  or point PACTUM_MLIR_BIN / MLIR_OPT / MLIR_TRANSLATE / LLC / CC at it" >&2
        exit 2
    fi
done

shopt -s nullglob
for src in "$SRC_DIR"/*.mlir; do
    stem="$(basename "$src" .mlir)"
    lib="$OUT_DIR/lib$stem.so"
    if [[ -f "$lib" && "$lib" -nt "$src" && "$lib" -nt "$SELF" ]]; then
        continue
    fi

    finalize="--finalize-memref-to-llvm"
    override="$(sed -n 's|^// PIPELINE-FINALIZE:[[:space:]]*\([^[:space:]]*\).*$|\1|p' "$src" | head -n 1)"
    if [[ -n "$override" ]]; then
        finalize="$override"
    fi

    base="$OUT_DIR/$stem"
    "$MLIR_OPT" "$src" \
        --arith-expand=include-bf16=true \
        --convert-linalg-to-loops \
        --expand-strided-metadata \
        --lower-affine \
        --convert-scf-to-cf \
        --convert-cf-to-llvm \
        --convert-arith-to-llvm \
        "$finalize" \
        --convert-func-to-llvm \
        --reconcile-unrealized-casts \
        -o "$base.llvm.mlir"
    "$MLIR_TRANSLATE" --mlir-to-llvmir "$base.llvm.mlir" -o "$base.ll"
    "$LLC" -O2 -relocation-model=pic -filetype=obj "$base.ll" -o "$base.o"
    # Link to a temporary name so an interrupted build never leaves a fresh-looking library.
    "$CC" -shared -o "$lib.tmp" "$base.o"
    mv -f "$lib.tmp" "$lib"
    echo "built $lib"
done
