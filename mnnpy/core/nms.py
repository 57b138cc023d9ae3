"""Greedy non-maximum suppression shared by the detection ops (DetectionOutput, DetectionPostProcess,
NonMaxSuppressionV2). It lives in the core because NonMaxSuppressionV2's output shape is its selection count.

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


def iou_row(boxes: np.ndarray, i: int, others: np.ndarray) -> np.ndarray:
    """IoU of box i with boxes[others], boxes as two opposite corners in either order (0 where a box is empty)."""
    def area(b: np.ndarray) -> np.ndarray:
        return (np.maximum(b[..., 2], b[..., 0]) - np.minimum(b[..., 2], b[..., 0])) * \
            (np.maximum(b[..., 3], b[..., 1]) - np.minimum(b[..., 3], b[..., 1]))

    a, b = boxes[i], boxes[others]
    lo = np.maximum(np.minimum(a[[0, 1]], a[[2, 3]]), np.minimum(b[:, [0, 1]], b[:, [2, 3]]))
    hi = np.minimum(np.maximum(a[[0, 1]], a[[2, 3]]), np.maximum(b[:, [0, 1]], b[:, [2, 3]]))
    inter = np.prod(np.maximum(hi - lo, 0.0), axis=1)
    area_a, area_b = area(a), area(b)
    union = area_a + area_b - inter
    ok = (area_a > 0) & (area_b > 0)
    return np.where(ok, inter / np.where(ok, union, 1.0), 0.0)


def select_boxes(boxes: np.ndarray, scores: np.ndarray, limit: int, iou: float,
                 score_threshold: float | None = None) -> np.ndarray:
    """TF's NonMaxSuppressionV2/V3 (MNN: NonMaxSuppressionV2; ONNX NonMaxSuppression per batch and class): int32
    indices of the kept boxes, best first. Candidates score above ``score_threshold`` (strictly), equal scores
    keep their index order, a box goes when its IoU with a kept one is above ``iou``, at most ``limit`` stay."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    scores = np.asarray(scores, np.float64).reshape(-1)
    if boxes.shape[0] != scores.shape[0]:
        raise ValueError(f"{boxes.shape[0]} boxes but {scores.shape[0]} scores")
    cand = np.arange(scores.size) if score_threshold is None else np.flatnonzero(scores > score_threshold)
    cand = cand[np.argsort(-scores[cand], kind="stable")]
    keep = greedy_nms(cand, lambda i, others: iou_row(boxes, i, others), iou, max(int(limit), 0))
    return np.asarray(keep, np.int32)
