"""Caffe SSD ops on the CPU: PriorBox, Normalize and DetectionOutput, with the semantics of SSD Caffe's layers
(prior_box_layer, normalize_layer, detection_output_layer) as MNN runs them.

DetectionOutput writes [1, 1, rows, 6] rows of (label, score, xmin, ymin, xmax, ymax), grouped by ascending label
and by descending score within a label (Caffe's order; OpenCV adds an image-id column). MNN shrinks the row count
to the detections found at run time: mnnpy plans keepTopK rows (rows past the detections hold -1, as Caffe marks
"no detection") and sets the output's run-time extent to the rows found, which the tensor API and Modules read.
"""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import ANY, CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.nms import greedy_nms
from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape.ssd import aspect_ratios, spatial

OT = fb.OpType
CORNER, CENTER_SIZE, CORNER_SIZE = 1, 2, 3  # Caffe's PriorBoxParameter.CodeType


def _floats(values: object) -> np.ndarray:
    return np.zeros(0) if values is None else np.asarray(values, np.float64).ravel()


def prior_boxes(p: object, layer_hw: tuple[int, int], image_hw: tuple[int, int]) -> np.ndarray:
    """[2, H*W*priors*4]: normalised corner boxes (cell-major, then prior), then their variances."""
    (lh, lw), (ih, iw) = layer_hw, image_hw
    img_h, img_w = float(p.imageHeight or ih), float(p.imageWidth or iw)
    step_h = float(p.stepHeight) if p.stepHeight else img_h / lh
    step_w = float(p.stepWidth) if p.stepWidth else img_w / lw
    sizes = []  # (box width, box height) of each prior, in Caffe's order
    max_sizes = _floats(p.maxSizes)
    for s, min_size in enumerate(_floats(p.minSizes)):
        sizes.append((min_size, min_size))
        if s < max_sizes.size:
            side = np.sqrt(min_size * max_sizes[s])
            sizes.append((side, side))
        sizes += [(min_size * np.sqrt(ar), min_size / np.sqrt(ar)) for ar in aspect_ratios(p) if abs(ar - 1) >= 1e-6]
    half = np.asarray(sizes) / 2.0  # [priors, 2]
    cx = (np.arange(lw) + p.offset) * step_w
    cy = (np.arange(lh) + p.offset) * step_h
    cx, cy = np.broadcast_to(cx[None, :, None], (lh, lw, len(sizes))), np.broadcast_to(cy[:, None, None],
                                                                                         (lh, lw, len(sizes)))
    boxes = np.stack([(cx - half[:, 0]) / img_w, (cy - half[:, 1]) / img_h, (cx + half[:, 0]) / img_w,
                      (cy + half[:, 1]) / img_h], axis=-1).reshape(-1)
    if p.clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    variances = _floats(p.variances)
    if variances.size not in (1, 4):
        raise ModelError(f"PriorBox needs 1 or 4 variances, got {variances.size}")
    return np.stack([boxes, np.resize(variances, boxes.size)])


@cpu_kernel(OT.PriorBox, formats=ANY)
class PriorBox(CPUExecution):
    """Reads only its inputs' shapes: the boxes are computed once per shape in on_resize."""

    def on_resize(self) -> None:
        p = self.op.main
        image = spatial(self.inputs[1].desc) if len(self.inputs) > 1 else (0, 0)
        if 0 in image and not (p.imageWidth and p.imageHeight):
            raise ModelError(f"op {self.op.name!r} (PriorBox): no image input and no image size")
        try:
            self.boxes = prior_boxes(p, spatial(self.x.desc), image).astype(np.float32)
        except ModelError as exc:
            raise ModelError(f"op {self.op.name!r}: {exc}") from None
        self.algorithm = "prior-box"

    def on_execute(self) -> None:
        self.y.array.reshape(self.boxes.shape)[...] = self.boxes


@cpu_kernel(OT.Normalize)
class Normalize(CPUExecution):
    """y = x / sqrt(sum of squares + eps) * scale, the sum over channels per position or over C*H*W per sample."""

    def on_resize(self) -> None:
        p = self.op.main
        shape = self.x.desc.shape
        self.axes = tuple(range(1, len(shape))) if p.acrossSpatial else (1,)
        scale = _floats(p.scale).astype(np.float32)
        if scale.size not in (1, shape[1]):
            raise ModelError(f"op {self.op.name!r} (Normalize): {scale.size} scales for {shape[1]} channels")
        self.scale = (scale[:1] if p.channelShared else scale).reshape((1, -1) + (1,) * (len(shape) - 2))
        self.eps = np.float32(p.eps)
        self.algorithm = "l2-normalize"

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        norm = np.sqrt(np.sum(np.square(x), axis=self.axes, keepdims=True) + self.eps)
        np.divide(x, norm, out=y)
        y *= self.scale


def decode_boxes(loc: np.ndarray, priors: np.ndarray, variances: np.ndarray, code: int, encoded: bool) -> np.ndarray:
    """SSD's DecodeBBox on [..., P, 4] offsets against [P, 4] corner priors (float64)."""
    var = np.ones_like(variances) if encoded else variances
    d = loc * var
    pw, ph = priors[:, 2] - priors[:, 0], priors[:, 3] - priors[:, 1]
    if code == CORNER:
        return priors + d
    if code == CORNER_SIZE:
        return priors + d * np.stack([pw, ph, pw, ph], axis=-1)
    if code != CENTER_SIZE:
        raise ModelError(f"DetectionOutput: unknown code type {code}")
    cx = d[..., 0] * pw + (priors[:, 0] + priors[:, 2]) / 2
    cy = d[..., 1] * ph + (priors[:, 1] + priors[:, 3]) / 2
    w, h = np.exp(d[..., 2]) * pw, np.exp(d[..., 3]) * ph
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=-1)


def _area(b: np.ndarray) -> np.ndarray:
    valid = (b[..., 2] >= b[..., 0]) & (b[..., 3] >= b[..., 1])
    return np.where(valid, (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]), 0.0)


def _jaccard(boxes: np.ndarray, i: int, others: np.ndarray) -> np.ndarray:
    """SSD's normalised Jaccard overlap of box i with boxes[others]; 0 without a positive intersection."""
    k, b = boxes[others], boxes[i]
    wh = np.minimum(k[:, 2:], b[2:]) - np.maximum(k[:, :2], b[:2])
    hit = np.all(wh > 0, axis=1)
    inter = np.where(hit, np.prod(np.maximum(wh, 0), axis=1), 0.0)
    return np.where(hit, inter / np.where(hit, _area(k) + _area(b) - inter, 1.0), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float, iou: float, top_k: int) -> list[int]:
    """SSD's ApplyNMSFast (eta 1): candidates over `threshold`, best first (stable), at most `top_k`; a candidate
    is kept while its Jaccard overlap with every kept box is <= `iou`."""
    order = np.flatnonzero(scores > threshold)
    order = order[np.argsort(-scores[order], kind="stable")]
    if top_k > -1:
        order = order[:top_k]
    return greedy_nms(order, lambda i, others: _jaccard(boxes, i, others), iou)


@cpu_kernel(OT.DetectionOutput)
class DetectionOutput(CPUExecution):
    """Decode loc against the priors, per-class NMS, keep the best keepTopK over all classes."""

    def on_resize(self) -> None:
        p = self.op.main
        self.classes = int(p.classCount)
        self.count = self.inputs[2].desc.size // 8
        self.algorithm = "ssd-detection-output"

    def on_execute(self) -> None:
        p = self.op.main
        loc_classes = 1 if p.shareLocation else self.classes
        loc = self.inputs[0].array.astype(np.float64).reshape(self.count, loc_classes, 4).transpose(1, 0, 2)
        conf = self.inputs[1].array.astype(np.float64).reshape(self.count, self.classes)
        prior = self.inputs[2].array.astype(np.float64).reshape(2, self.count, 4)
        boxes = decode_boxes(loc, prior[0], prior[1], int(p.codeType), bool(p.varianceEncodedTarget))
        found: list[tuple[float, int, int]] = []  # (score, label, prior index) in label order, NMS order within
        for label in range(self.classes):
            if label == p.backgroundLable:
                continue
            label_boxes = boxes[0 if p.shareLocation else label]
            for idx in nms(label_boxes, conf[:, label], p.confidenceThreshold, p.nmsThresholdold, p.nmsTopK):
                found.append((conf[idx, label], label, idx))
        if p.keepTopK > -1 and len(found) > p.keepTopK:
            best = sorted(range(len(found)), key=lambda i: -found[i][0])[:p.keepTopK]
            found = [found[i] for i in sorted(best, key=lambda i: (found[i][1], -found[i][0], i))]
        out = self.y.array.reshape(-1, 6)
        out[...] = -1.0
        found = found[:out.shape[0]]
        for row, (score, label, idx) in enumerate(found):
            out[row] = (label, score, *boxes[0 if p.shareLocation else label][idx])
        self.y.extent = (*self.y.desc.shape[:-2], len(found), 6)
