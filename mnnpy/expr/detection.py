"""Detection helpers of `MNN.expr` built from core ops: non-maximum suppression (MNN: `expr.nms`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr import reduce as r
from mnnpy.expr import shape_ops as s
from mnnpy.expr.var import Var, const_of, to_var


def _pairwise_iou(boxes: Var) -> Var:
    """IoU of every pair of [y1, x1, y2, x2] boxes (corners in any order), as core ops."""
    y1, x1, y2, x2 = s.unstack(boxes, 1)
    ymin, ymax = m.minimum(y1, y2), m.maximum(y1, y2)
    xmin, xmax = m.minimum(x1, x2), m.maximum(x1, x2)
    area = m.multiply(m.subtract(ymax, ymin), m.subtract(xmax, xmin))

    def cross(fn: Any, v: Var) -> Var:
        return fn(s.unsqueeze(v, [1]), s.unsqueeze(v, [0]))

    ih = m.maximum(m.subtract(cross(m.minimum, ymax), cross(m.maximum, ymin)), 0.0)
    iw = m.maximum(m.subtract(cross(m.minimum, xmax), cross(m.maximum, xmin)), 0.0)
    inter = m.multiply(ih, iw)
    union = m.subtract(m.add(s.unsqueeze(area, [1]), s.unsqueeze(area, [0])), inter)
    return m.divide(inter, m.maximum(union, 1e-12))


def nms(boxes: Any, scores: Any, max_detections: int, iou_threshold: float = -1.0,
        score_threshold: float = -1.0) -> Var:
    """Greedy non-maximum suppression; int32 indices of the kept boxes by descending score (MNN: `expr.nms`).

    Boxes are [n, 4] as (y1, x1, y2, x2). A negative iou_threshold acts as 0 and a negative score_threshold keeps
    every score, as in MNN. The IoU matrix and every selection step (ArgMax over the live scores, suppression
    mask) run in the core; the kept indices are collected step by step, since their count is data-dependent.
    """
    b = m.cast(to_var(boxes), np.float32)
    sc = m.cast(to_var(scores), np.float32)
    thr = max(float(iou_threshold), 0.0)
    iou = const_of(np.array(_pairwise_iou(b).read()))
    n = sc.shape[0]
    alive = m.cast(m.greater(sc, float(score_threshold)), np.float32) if score_threshold >= 0 else \
        const_of(np.ones(n, np.float32))
    keep: list[int] = []
    for _ in range(min(int(max_detections), n)):
        live = s.select(alive, sc, float("-inf"))
        k = int(r.argmax(live, 0).read())
        if float(alive[k].read()) == 0.0:
            break
        keep.append(k)
        others = const_of((np.arange(n) != k).astype(np.float32))
        alive = m.multiply(m.multiply(alive, m.cast(m.less_equal(iou[k], thr), np.float32)), others)
        alive = const_of(np.array(alive.read()))
    return const_of(np.array(keep, np.int32))
