"""ROIPooling (Caffe / Fast R-CNN max pooling) and ROIAlign (Mask R-CNN bilinear sampling), forward only
(MNN: CPUROIPooling, CPUROIAlign).

ROIs are [n, 5] rows (batch, x1, y1, x2, y2) in input-image coordinates, scaled by `spatialScale`; ROIAlign also
takes the ONNX form: rois [n, 4] plus batch indices [n]. Inputs may be plain or NC4HW4; the output is written in
its own format.
"""

from __future__ import annotations

import math

import numpy as np
from mnnpy.backends.cpu.layout import logical, store
from mnnpy.backends.cpu.ops._common import CF, CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


def round_half_away(v: float) -> int:
    """C's round(): halves go away from zero (Caffe's ROI corners)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


class _ROIBase(CPUExecution):
    """Shared ROI bookkeeping: the roi table and each roi's batch index, checked against the input batch."""

    kind = "ROI"

    def rois(self) -> tuple[np.ndarray, np.ndarray]:
        roi = np.asarray(logical(self.inputs[1]), np.float64)
        if len(self.inputs) > 2:
            batch = np.asarray(logical(self.inputs[2])).reshape(-1).astype(np.int64)
            boxes = roi
        else:
            batch = roi[:, 0].astype(np.int64)
            boxes = roi[:, 1:5]
        n = self.x.desc.shape[0]
        bad = (batch < 0) | (batch >= n)
        if bad.any():
            raise ModelError(f"op {self.op.name!r} ({self.kind}): roi batch index {int(batch[bad][0])} outside "
                             f"[0, {n})")
        return boxes, batch

    def on_execute(self) -> None:
        x = np.asarray(logical(self.x), np.float32)
        boxes, batch = self.rois()
        out = np.zeros(self.y.desc.shape, np.float32)
        for k in range(boxes.shape[0]):
            out[k] = self.one(x[batch[k]], boxes[k])
        store(self.y, out)

    def one(self, feat: np.ndarray, box: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@cpu_kernel(OT.ROIPooling, formats=CF)
class ROIPooling(_ROIBase):
    """Max over each bin of the rounded, scaled roi; empty bins give 0."""

    kind = "ROIPooling"

    def one(self, feat: np.ndarray, box: np.ndarray) -> np.ndarray:
        p = self.op.main
        ph, pw, scale = p.pooledHeight, p.pooledWidth, float(np.float32(p.spatialScale))
        c, h, w = feat.shape
        x1, y1, x2, y2 = (round_half_away(float(v) * scale) for v in box)
        bin_h = max(y2 - y1 + 1, 1) / ph
        bin_w = max(x2 - x1 + 1, 1) / pw
        res = np.zeros((c, ph, pw), np.float32)
        for i in range(ph):
            hs = min(max(math.floor(i * bin_h) + y1, 0), h)
            he = min(max(math.ceil((i + 1) * bin_h) + y1, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * bin_w) + x1, 0), w)
                we = min(max(math.ceil((j + 1) * bin_w) + x1, 0), w)
                if he > hs and we > ws:
                    res[:, i, j] = feat[:, hs:he, ws:we].max(axis=(1, 2))
        return res


def _axis_weights(coords: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Low/high indices and weights of bilinear sampling along one axis (outside [-1, size] weighs 0)."""
    valid = (coords >= -1.0) & (coords <= size)
    c = np.maximum(coords, 0.0)
    low = np.floor(c).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    c = np.where(edge, low, c)
    frac = c - low
    return low, high, np.where(valid, 1.0 - frac, 0.0), np.where(valid, frac, 0.0)


@cpu_kernel(OT.ROIAlign, formats=CF)
class ROIAlign(_ROIBase):
    """Average or max of a regular grid of bilinear samples per bin (sampling_ratio 0: adaptive grid)."""

    kind = "ROIAlign"

    def on_resize(self) -> None:
        if self.op.main.outputGrad:
            raise ModelError(f"op {self.op.name!r} (ROIAlign): backward mode (outputGrad) is not supported")

    def one(self, feat: np.ndarray, box: np.ndarray) -> np.ndarray:
        p = self.op.main
        ph, pw, scale = p.pooledHeight, p.pooledWidth, float(np.float32(p.spatialScale))
        _, h, w = feat.shape
        offset = 0.5 if p.aligned else 0.0
        x1, y1, x2, y2 = (float(v) * scale - offset for v in box)
        rh, rw = y2 - y1, x2 - x1
        if not p.aligned:
            rh, rw = max(rh, 1.0), max(rw, 1.0)
        bin_h, bin_w = rh / ph, rw / pw
        gh = p.samplingRatio if p.samplingRatio > 0 else max(math.ceil(rh / ph), 1)
        gw = p.samplingRatio if p.samplingRatio > 0 else max(math.ceil(rw / pw), 1)
        ys = y1 + (np.arange(ph)[:, None] * bin_h + (np.arange(gh)[None, :] + 0.5) * bin_h / gh).ravel()
        xs = x1 + (np.arange(pw)[:, None] * bin_w + (np.arange(gw)[None, :] + 0.5) * bin_w / gw).ravel()
        yl, yh, wyl, wyh = _axis_weights(ys, h)
        xl, xh, wxl, wxh = _axis_weights(xs, w)
        f = feat.astype(np.float64)
        samples = (f[:, yl][:, :, xl] * np.outer(wyl, wxl) + f[:, yl][:, :, xh] * np.outer(wyl, wxh)
                   + f[:, yh][:, :, xl] * np.outer(wyh, wxl) + f[:, yh][:, :, xh] * np.outer(wyh, wxh))
        grid = samples.reshape(feat.shape[0], ph, gh, pw, gw)
        pooled = grid.max(axis=(2, 4)) if p.poolType == fb.PoolType.MAXPOOL else grid.mean(axis=(2, 4))
        return pooled.astype(np.float32)
