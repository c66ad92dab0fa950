"""Memory stays flat over 100k calls (resident set size from /proc/self/statm)."""

from __future__ import annotations

import os

import numpy as np

import pactum
from conftest import vmfb


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_rss_flat_over_100k_calls():
    m = pactum.iree.load(vmfb("vmvx_tensors.vmfb"))
    x = np.array([1, 2, 4], np.float32)
    scalar = pactum.iree.load(vmfb("multi_export_llvm_cpu.vmfb")).add
    for _ in range(2000):  # warm up caches and pools
        m.dict_summary(x, repeat=2)
        scalar(1, 2)
    before = _rss_bytes()
    for _ in range(50_000):
        m.dict_summary(x, repeat=2)
        scalar(1, 2)
    growth = _rss_bytes() - before
    assert growth < 8 << 20, f"RSS grew by {growth / 2**20:.1f} MiB over 100k calls"
