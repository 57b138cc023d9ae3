"""numThread > 1 paths (issue 5, 2-thread target): the persistent lane threads behind ``run_lanes`` and the kernel
paths that only run with lanes, against references (numpy, float64 direct convolution)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from mnnpy.backends.cpu.compute import blas

sys.path.insert(0, str(Path(__file__).parent / "compute"))


def _record(log: list, key: int) -> None:
    log.append((key, threading.get_ident()))


def test_run_lanes_runs_every_task_first_on_caller_others_on_persistent_lanes() -> None:
    seen: list[tuple[int, int]] = []
    blas.run_lanes([lambda k=k: _record(seen, k) for k in range(3)], 3)
    first = dict(seen)
    assert sorted(first) == [0, 1, 2]
    assert first[0] == threading.get_ident() and len({first[1], first[2], first[0]}) == 3
    seen.clear()
    blas.run_lanes([lambda k=k: _record(seen, k) for k in range(3)], 3)
    assert dict(seen) == first  # the same lane threads again (nothing started per call)


def test_run_lanes_reraises_lane_errors_and_stays_usable() -> None:
    done: list[int] = []

    def boom() -> None:
        raise ValueError("lane failed")

    with pytest.raises(ValueError, match="lane failed"):
        blas.run_lanes([lambda: done.append(0), boom], 2)
    assert done == [0]  # the caller's own task ran; the failing lane's error came back
    blas.run_lanes([lambda: done.append(1), lambda: done.append(2)], 2)
    assert sorted(done) == [0, 1, 2]


def test_run_lanes_nested_and_concurrent_callers_run_inline() -> None:
    """A lane task that itself calls run_lanes, and two Python threads calling at once, both complete."""
    out = np.zeros(8)

    def inner(i: int) -> None:
        blas.run_lanes([lambda: out.__setitem__(i, 1.0), lambda: out.__setitem__(i + 4, 1.0)], 2)

    blas.run_lanes([lambda: inner(0), lambda: inner(1)], 2)
    errors: list[BaseException] = []
    results = np.zeros((4, 64))

    def caller(row: int) -> None:
        try:
            for _ in range(50):
                blas.run_lanes([lambda: results.__setitem__((row, slice(0, 32)), row + 1.0),
                                lambda: results.__setitem__((row, slice(32, 64)), row + 1.0)], 2)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(r,)) for r in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(out[[0, 1, 4, 5]], 1.0)
    np.testing.assert_array_equal(results, np.arange(1, 5)[:, None] * np.ones((4, 64)))
