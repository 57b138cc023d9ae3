"""Detection ops of `MNN.expr`: non-maximum suppression from core ops (MNN: `expr.nms`) and TFLite SSD
post-processing (MNN: `expr.detection_post_process`, DetectionPostProcess op)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr import reduce as r
from mnnpy.expr import shape_ops as s
from mnnpy.expr.var import Var, apply, const_of, to_var
from mnnpy.schema import mnn_generated as fb


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


def detection_post_process(encode_boxes: Any, class_predictions: Any, anchors: Any, num_classes: int,
                           max_detections: int, max_class_per_detection: int, detections_per_class: int,
                           nms_threshold: float, iou_threshold: float, use_regular_nms: bool,
                           centersize_encoding: Any) -> list[Var]:
    """TFLite SSD post-processing: [boxes [1, k, 4], classes [1, k], scores [1, k], num_detections [1]]
    (MNN: `expr.detection_post_process`, DetectionPostProcess op).

    `encode_boxes` [1, n, 4], `class_predictions` [1, n, num_classes (+1 background)], `anchors` [n, 4] as
    (ycenter, xcenter, h, w); `nms_threshold` is the score threshold, `centersize_encoding` the (y, x, h, w)
    scales. The settings go into the op's DetectionPostProcessParam table, as MNN's expr writes them.
    """
    enc = m.cast(to_var(encode_boxes), np.float32)
    cls = m.cast(to_var(class_predictions), np.float32)
    anc = m.cast(to_var(anchors), np.float32)
    scales = [float(v) for v in np.asarray(centersize_encoding, np.float32).ravel()]
    if len(scales) != 4:
        raise ValueError(f"mnnpy.expr.detection_post_process: centersize_encoding needs 4 scales, got {scales}")
    if enc.ndim != 3 or enc.shape[0] != 1 or cls.ndim != 3 or anc.ndim != 2:
        raise ValueError(f"mnnpy.expr.detection_post_process: expected encode_boxes [1, n, 4], class_predictions "
                         f"[1, n, classes], anchors [n, 4]; got {enc.shape}, {cls.shape}, {anc.shape}")
    params = fb.DetectionPostProcessParamT()
    params.maxDetections, params.maxClassesPerDetection = int(max_detections), int(max_class_per_detection)
    params.detectionsPerClass, params.numClasses = int(detections_per_class), int(num_classes)
    params.nmsScoreThreshold, params.iouThreshold = float(nms_threshold), float(iou_threshold)
    params.useRegularNms = bool(use_regular_nms)  # flatc's object-API name of useRegularNMS
    params.centerSizeEncoding = np.array(scales, np.float32)
    return apply(fb.OpType.DetectionPostProcess, [enc, cls, anc], fb.OpParameter.DetectionPostProcessParam, params,
                 n_out=4, dtypes=[np.float32] * 4)
