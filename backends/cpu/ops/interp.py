"""Interp (nearest, bilinear, cubic; align-corners, half-pixel, asymmetric) on NC4HW4 arrays.

Per-axis index and weight tables are computed in on_resize; a run is gathers along H and W of `[N, C4, H, W, 4]`.
"""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel


def _coords(out: int, size: int, scale: float, mode: int) -> np.ndarray:
    """Source coordinate of each output index (CoordinateTransformationMode)."""
    i = np.arange(out, dtype=np.float64)
    if mode == 1:  # align corners over the integer output length, as onnxruntime and MNN compute it
        return i * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    if mode in (2, 5):  # half pixel
        return (i + 0.5) / scale - 0.5
    if mode == 3:  # pytorch half pixel
        return (i + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    return i / scale


def _table(out: int, size: int, scale: float, mode: int, kind: int, cubic_a: float) -> tuple[np.ndarray, np.ndarray]:
    """(indices [out, taps], weights [out, taps]) for one axis."""
    x = _coords(out, size, scale, mode)
    if kind in (1, 4):  # nearest: floor (1) or round, halves down (4, ONNX round_prefer_floor)
        idx = np.ceil(x - 0.5) if kind == 4 else np.floor(x)
        return np.clip(idx, 0, size - 1).astype(np.intp)[:, None], np.ones((out, 1), dtype=np.float32)
    if kind == 2:
        x = np.maximum(x, 0) if mode in (2, 5) else x
        lo = np.floor(x)
        f = x - lo
        idx = np.stack([lo, lo + 1], axis=1)
        w = np.stack([1 - f, f], axis=1)
        return np.clip(idx, 0, size - 1).astype(np.intp), w.astype(np.float32)
    lo = np.floor(x)
    t = x - lo
    taps = np.stack([t + 1, t, 1 - t, 2 - t], axis=1)
    a = cubic_a
    at = np.abs(taps)
    w = np.where(at <= 1, (a + 2) * at**3 - (a + 3) * at**2 + 1,
                 np.where(at < 2, a * at**3 - 5 * a * at**2 + 8 * a * at - 4 * a, 0))
    idx = np.stack([lo - 1, lo, lo + 1, lo + 2], axis=1)
    return np.clip(idx, 0, size - 1).astype(np.intp), w.astype(np.float32)


@cpu_kernel(fb.OpType.Interp, formats=("NC4HW4",))
class Interp(CPUExecution):
    """Separable resize: weighted gathers along H then W."""

    def on_resize(self) -> None:
        p = self.op.main
        _, _, h, w = self.x.desc.shape
        oh, ow = self.y.desc.shape[2:]
        kind = p.resizeType
        mode = p.ctm
        if mode == 0:
            mode = 1 if p.alignCorners else 2 if p.halfPixelCenters else 4
        sh = oh / h
        sw = ow / w
        if len(self.inputs) > 1 and np.asarray(self.inputs[1].array).dtype.kind == "f":
            scales = np.asarray(self.inputs[1].array).ravel()
            sh, sw = float(scales[-2]), float(scales[-1])
        a = float(p.cubicCoeffA) if kind == 3 else -0.75
        self.hi, self.hw = _table(oh, h, sh, mode, kind, a)
        self.wi, self.ww = _table(ow, w, sw, mode, kind, a)
        self.algorithm = {1: "nearest", 2: "bilinear", 3: "cubic", 4: "nearest-round"}.get(kind, "nearest")

    def on_execute(self) -> None:
        x = self.x.array
        rows = np.einsum("nchtwk,ht->nchwk", x[:, :, self.hi], self.hw) if self.hi.shape[1] > 1 else \
            x[:, :, self.hi[:, 0]]
        if self.wi.shape[1] > 1:
            np.einsum("nchwtk,wt->nchwk", rows[:, :, :, self.wi], self.ww, out=self.y.array)
        else:
            np.copyto(self.y.array, rows[:, :, :, self.wi[:, 0]])
