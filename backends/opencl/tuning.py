"""Local work size candidates per MNN tuning level, and their timing with profiling events.

MNN: `localWS3DDefault` / `localWS2DDefault` with gpuMode levels HEAVY, WIDE, NORMAL, FAST, NONE. Every
candidate is enqueued once (after one warm-up) and timed from its event; the driver's choice (None) is timed
too and wins when fastest. Kernels bound-check, so the global size is rounded up to a multiple of the local size.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

LEVELS = ("none", "fast", "normal", "wide", "heavy")
MAX_CANDIDATES = {"fast": 8, "normal": 24, "wide": 48, "heavy": 512}


def _powers(limit: int, cap: int) -> list[int]:
    out, v = [], 1
    while v <= min(limit, cap):
        out.append(v)
        v *= 2
    return out


def round_up(gws: Sequence[int], lws: Sequence[int] | None) -> tuple[int, ...]:
    """The global size rounded up to a multiple of the local size."""
    if lws is None:
        return tuple(int(g) for g in gws)
    return tuple(-(-int(g) // int(lv)) * int(lv) for g, lv in zip(gws, lws, strict=True))


def candidates(gws: Sequence[int], level: str, max_group: int, max_items: Sequence[int]) -> list[tuple[int, ...]]:
    """Local sizes to try for a level (without None, which `measure` always adds).

    Args:
        gws: the global size.
        level: "fast", "normal", "wide" or "heavy".
        max_group: the kernel's maximum work-group size on the device.
        max_items: the device's maximum work-item sizes per dimension.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown tuning level {level!r}; expected one of {LEVELS}")
    caps = {"fast": (16, 16, 8), "normal": (64, 64, 8), "wide": (256, 256, 64), "heavy": (4096, 4096, 4096)}[level]
    axes = []
    for i, g in enumerate(gws):
        top = 1 << max(int(g) - 1, 0).bit_length() if level == "heavy" else int(g)
        axes.append(_powers(max(top, 1), min(caps[i], int(max_items[i]))))
    total = math.prod(int(g) for g in gws)
    out = []
    for combo in itertools.product(*axes):
        size = math.prod(combo)
        if size > max_group:
            continue
        if (level == "fast" and size < min(16, total)) or (level == "normal" and size < min(16, total // 100 + 1)):
            continue
        if level == "fast" and total > 256 * 256 and size < 64:
            continue
        out.append(combo)
    out.sort(key=lambda c: (-math.prod(c), c))  # larger groups first: cheaper launches on CPU devices
    return out[: MAX_CANDIDATES[level]]


def measure(queue: Any, kernel: Any, gws: Sequence[int], local_sizes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """Time each candidate (and the driver's choice) once; return the fastest (None = driver's choice)."""
    import pyopencl as cl

    best: tuple[int, ...] | None = None
    best_time = math.inf
    cl.enqueue_nd_range_kernel(queue, kernel, tuple(int(g) for g in gws), None).wait()  # warm-up
    for lws in [None, *local_sizes]:
        event = cl.enqueue_nd_range_kernel(queue, kernel, round_up(gws, lws), lws)
        event.wait()
        elapsed = event.profile.end - event.profile.start
        if elapsed < best_time:
            best, best_time = lws, elapsed
    return best
