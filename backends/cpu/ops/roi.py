"""ROIPooling (Caffe / Fast R-CNN max pooling) and ROIAlign (Mask R-CNN bilinear sampling) (MNN: CPUROIPooling,
CPUROIAlign).

ROIs are [n, 5] rows (batch, x1, y1, x2, y2) in input-image coordinates, scaled by `spatialScale`; ROIAlign also
takes the ONNX form: rois [n, 4] plus batch indices [n]. Inputs may be plain or NC4HW4; the output is written in
its own format. With `outputGrad` the op runs backward: its last input is the gradient of the pooled output and it
writes the input's gradient (max pooling: to each bin's arg-max; average ROIAlign: through the bilinear weights;
max ROIAlign has no backward, as in MNN).
"""

from __future__ import annotations

import math
from abc import abstractmethod

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
        if len(self.inputs) - int(bool(self.op.main.outputGrad)) > 2:
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
        if self.op.main.outputGrad:
            diff = np.asarray(logical(self.inputs[-1]), np.float64)
            grad = np.zeros(x.shape, np.float64)
            for k in range(boxes.shape[0]):
                self.backward(x[batch[k]], boxes[k], diff[k], grad[batch[k]])
            store(self.y, grad.astype(np.float32))
            return
        out = np.zeros(self.y.desc.shape, np.float32)
        for k in range(boxes.shape[0]):
            out[k] = self.one(x[batch[k]], boxes[k])
        store(self.y, out)

    @abstractmethod
    def one(self, feat: np.ndarray, box: np.ndarray) -> np.ndarray:
        """The pooled [C, ph, pw] of one roi."""

    @abstractmethod
    def backward(self, feat: np.ndarray, box: np.ndarray, diff: np.ndarray, grad: np.ndarray) -> None:
        """Add one roi's contribution to the input gradient."""


@cpu_kernel(OT.ROIPooling, formats=CF)
class ROIPooling(_ROIBase):
    """Max over each bin of the rounded, scaled roi; empty bins give 0."""

    kind = "ROIPooling"

    def windows(self, feat: np.ndarray, box: np.ndarray) -> list[tuple[int, int, slice, slice]]:
        """(i, j, rows, cols) of every non-empty bin of the rounded, scaled roi."""
        p = self.op.main
        ph, pw, scale = p.pooledHeight, p.pooledWidth, float(np.float32(p.spatialScale))
        _, h, w = feat.shape
        x1, y1, x2, y2 = (round_half_away(float(v) * scale) for v in box)
        bin_h = max(y2 - y1 + 1, 1) / ph
        bin_w = max(x2 - x1 + 1, 1) / pw
        out = []
        for i in range(ph):
            hs = min(max(math.floor(i * bin_h) + y1, 0), h)
            he = min(max(math.ceil((i + 1) * bin_h) + y1, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * bin_w) + x1, 0), w)
                we = min(max(math.ceil((j + 1) * bin_w) + x1, 0), w)
                if he > hs and we > ws:
                    out.append((i, j, slice(hs, he), slice(ws, we)))
        return out

    def one(self, feat: np.ndarray, box: np.ndarray) -> np.ndarray:
        p = self.op.main
        res = np.zeros((feat.shape[0], p.pooledHeight, p.pooledWidth), np.float32)
        for i, j, rows, cols in self.windows(feat, box):
            res[:, i, j] = feat[:, rows, cols].max(axis=(1, 2))
        return res

    def backward(self, feat: np.ndarray, box: np.ndarray, diff: np.ndarray, grad: np.ndarray) -> None:
        channels = np.arange(feat.shape[0])
        for i, j, rows, cols in self.windows(feat, box):
            window = feat[:, rows, cols]
            r, c = np.unravel_index(window.reshape(feat.shape[0], -1).argmax(axis=1), window.shape[1:])
            np.add.at(grad, (channels, r + rows.start, c + cols.start), diff[:, i, j])


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
        p = self.op.main
        if p.outputGrad and p.poolType == fb.PoolType.MAXPOOL:
            raise ModelError(f"op {self.op.name!r} (ROIAlign): max pooling has no backward mode (as in MNN)")

    def sampling(self, feat: np.ndarray, box: np.ndarray) -> tuple[int, int, list[tuple[np.ndarray, ...]]]:
        """Grid size (gh, gw) and the two axes' (low, high, low weight, high weight) of every sample."""
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
        return gh, gw, [_axis_weights(ys, h), _axis_weights(xs, w)]

    def one(self, feat: np.ndarray, box: np.ndarray) -> np.ndarray:
        p = self.op.main
        gh, gw, ((yl, yh, wyl, wyh), (xl, xh, wxl, wxh)) = self.sampling(feat, box)
        f = feat.astype(np.float64)
        samples = (f[:, yl][:, :, xl] * np.outer(wyl, wxl) + f[:, yl][:, :, xh] * np.outer(wyl, wxh)
                   + f[:, yh][:, :, xl] * np.outer(wyh, wxl) + f[:, yh][:, :, xh] * np.outer(wyh, wxh))
        grid = samples.reshape(feat.shape[0], p.pooledHeight, gh, p.pooledWidth, gw)
        pooled = grid.max(axis=(2, 4)) if p.poolType == fb.PoolType.MAXPOOL else grid.mean(axis=(2, 4))
        return pooled.astype(np.float32)

    def backward(self, feat: np.ndarray, box: np.ndarray, diff: np.ndarray, grad: np.ndarray) -> None:
        gh, gw, ((yl, yh, wyl, wyh), (xl, xh, wxl, wxh)) = self.sampling(feat, box)
        c, _, w = feat.shape
        # each sample carries its bin's gradient / samples per bin
        per_sample = np.repeat(np.repeat(diff, gh, axis=1), gw, axis=2) / (gh * gw)
        flat = grad.reshape(c, -1)
        for ys, wy in ((yl, wyl), (yh, wyh)):
            for xs, wx in ((xl, wxl), (xh, wxh)):
                index = (ys[:, None] * w + xs[None, :]).ravel()
                np.add.at(flat, (slice(None), index), (per_sample * np.outer(wy, wx)).reshape(c, -1))
