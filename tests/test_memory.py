"""Freed heap pages go back to the OS after a batch (glibc's malloc_trim)."""

from __future__ import annotations

import pytest

from tinyjudge._memory import release_free_memory, trimming


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_release_free_memory_returns_fragmented_pages() -> None:
    if not release_free_memory():
        pytest.skip("not glibc: nothing to trim")
    # 200 MiB of 4 KiB heap blocks; keeping every 16th alive leaves holes that
    # malloc cannot give back by itself.
    blocks = [bytearray(4096) for _ in range(50_000)]
    keep = blocks[::16]
    del blocks
    before = _rss_mib()
    assert release_free_memory()
    after = _rss_mib()
    assert before - after > 100, (before, after)
    assert len(keep) == 3125


def test_trimming_passes_results_and_errors_through() -> None:
    calls = []

    @trimming
    def score(items: list[int]) -> list[int]:
        calls.append(items)
        if not items:
            raise ValueError("nothing to score")
        return [2 * i for i in items]

    assert score([1, 2]) == [2, 4]
    with pytest.raises(ValueError, match="nothing to score"):
        score([])
    assert calls == [[1, 2], []]
    assert score.__name__ == "score"
