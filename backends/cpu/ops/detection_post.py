"""DetectionPostProcess: TFLite's SSD post-processing (MNN: CPUDetectionPostProcess); NonMaxSuppressionV2.

Box encodings are decoded against [ycenter, xcenter, h, w] anchors (center-size encoding, scaled by
centerSizeEncoding), then greedy non-maximum suppression picks the detections: fast NMS runs once over each box's
best class scores, regular NMS once per class and keeps the best over all classes. Class ids leave out the
background column when there is one. Unused output rows are zero.
"""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.layout import logical, store
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import NCHW
from mnnpy.core.nms import greedy_nms, iou_row
from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape.detection_post import params_of
from mnnpy.core.shape.roi import nms_selection


def decode(enc: np.ndarray, anchors: np.ndarray, scales: tuple[float, ...]) -> np.ndarray:
    """[n, 4] corner boxes (ymin, xmin, ymax, xmax) from center-size encodings."""
    sy, sx, sh, sw = scales
    ya, xa, ha, wa = anchors.T
    yc = enc[:, 0] / sy * ha + ya
    xc = enc[:, 1] / sx * wa + xa
    half_h = 0.5 * np.exp(enc[:, 2] / sh) * ha
    half_w = 0.5 * np.exp(enc[:, 3] / sw) * wa
    return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], 1)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float, iou: float, limit: int) -> list[int]:
    """Greedy single-class NMS: indices by descending score (scores >= threshold), at most `limit`."""
    cand = np.flatnonzero(scores >= threshold)
    cand = cand[np.argsort(-scores[cand], kind="stable")]
    return greedy_nms(cand, lambda i, others: iou_row(boxes, i, others), iou, limit)


@cpu_kernel(fb.OpType.DetectionPostProcess, formats=(NCHW,))
class DetectionPostProcess(CPUExecution):
    """Decode, NMS (fast or regular), write boxes / classes / scores / count."""

    def on_resize(self) -> None:
        self.p = params_of(self.op)

    def on_execute(self) -> None:
        p = self.p
        enc = np.asarray(logical(self.inputs[0]), np.float64)[0]
        cls = np.asarray(logical(self.inputs[1]), np.float64)[0]
        anchors = np.asarray(logical(self.inputs[2]), np.float64)
        boxes = decode(enc, anchors, p.center_size_encoding)
        scores = cls[:, cls.shape[1] - p.num_classes:]  # drop the background column
        rows = self.fast(boxes, scores) if not p.use_regular_nms else self.regular(boxes, scores)
        out_boxes, out_cls, out_scores, count = (o.array for o in self.outputs)
        out_boxes.fill(0)
        out_cls.fill(0)
        out_scores.fill(0)
        for r, (box, c, s) in enumerate(rows):
            out_boxes[0, r] = boxes[box]
            out_cls[0, r] = c
            out_scores[0, r] = s
        count[0] = len(rows)

    def fast(self, boxes: np.ndarray, scores: np.ndarray) -> list[tuple[int, int, float]]:
        """NMS over each box's best class score; every kept box reports its top classes."""
        p = self.p
        per_box = min(p.max_classes_per_detection, p.num_classes)
        top = np.argsort(-scores, axis=1, kind="stable")[:, :per_box]
        best = scores[np.arange(scores.shape[0]), top[:, 0]]
        keep = nms(boxes, best, p.nms_score_threshold, p.iou_threshold, p.max_detections)
        return [(b, int(c), float(scores[b, c])) for b in keep for c in top[b]]

    def regular(self, boxes: np.ndarray, scores: np.ndarray) -> list[tuple[int, int, float]]:
        """NMS per class (detectionsPerClass each), then the best maxDetections over all classes."""
        p = self.p
        found = [(b, c, float(scores[b, c])) for c in range(p.num_classes)
                 for b in nms(boxes, scores[:, c], p.nms_score_threshold, p.iou_threshold, p.detections_per_class)]
        found.sort(key=lambda t: -t[2])  # stable: ties keep class order
        return found[: p.max_detections]


@cpu_kernel(fb.OpType.NonMaxSuppressionV2, formats=(NCHW,))
class NonMaxSuppressionV2(CPUExecution):
    """TF's greedy NMS of one class (MNN: CPUNonMaxSuppressionV2): the kept box indices, best first. Its output
    shape is the selection's count, so it runs where its inputs are known while shapes are computed (constant
    folding, or between a Module's segments: `mnnpy.nn._segments`)."""

    algorithm = "greedy-nms"

    def on_execute(self) -> None:
        store(self.y, nms_selection([logical(r) for r in self.inputs]))
