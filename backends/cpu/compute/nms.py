"""Greedy non-maximum suppression shared by the CPU detection ops (DetectionOutput, DetectionPostProcess).

The ops differ in which candidates enter, in order, how overlap is measured and how many may be kept; the greedy
step is the same: walk the candidates best first, keep one unless a kept box overlaps it by more than `iou`, and
suppress what the newly kept box overlaps (one vectorised overlap row per kept box).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Overlap = Callable[[int, np.ndarray], np.ndarray]  # (box index, other indices) -> overlaps with those boxes


def greedy_nms(order: np.ndarray, overlap: Overlap, iou: float, limit: int | None = None) -> list[int]:
    """Box indices kept from `order` (best first), at most `limit` of them."""
    active = np.ones(order.size, bool)
    keep: list[int] = []
    for k in range(order.size):
        if limit is not None and len(keep) >= limit:
            break
        if not active[k]:
            continue
        keep.append(int(order[k]))
        rest = np.flatnonzero(active[k + 1:]) + k + 1
        if rest.size:
            active[rest[overlap(int(order[k]), order[rest]) > iou]] = False
    return keep
