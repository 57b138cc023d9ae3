"""Interp (nearest floor / round, bilinear, cubic; align-corners, half-pixel, pytorch half-pixel, asymmetric) on
NC4HW4 maps: per-axis index and weight tables made in on_resize, one separable gather kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, int4

NEAREST, BILINEAR, CUBIC, NEAREST_ROUND = 1, 2, 3, 4
ALIGN_CORNERS, HALF_PIXEL, PYTORCH_HALF_PIXEL, ASYMMETRIC, TF_HALF_PIXEL = 1, 2, 3, 4, 5


def source_coords(out: int, size: int, scale: float, mode: int) -> np.ndarray:
    """Source coordinate of each output index for a coordinate transformation mode."""
    i = np.arange(out, dtype=np.float64)
    if mode == ALIGN_CORNERS:
        return i * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    if mode in (HALF_PIXEL, TF_HALF_PIXEL):
        return (i + 0.5) / scale - 0.5
    if mode == PYTORCH_HALF_PIXEL:
        return (i + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    return i / scale


def axis_table(out: int, size: int, scale: float, mode: int, kind: int, cubic_a: float) -> tuple[np.ndarray,
                                                                                                 np.ndarray]:
    """(indices [out, taps] int32, weights [out, taps] float32) along one axis, indices clamped to the input."""
    x = source_coords(out, size, scale, mode)
    if kind in (NEAREST, NEAREST_ROUND):
        floor_or_round = np.round(x) if mode == ALIGN_CORNERS else np.floor(x)
        idx = np.ceil(x - 0.5) if kind == NEAREST_ROUND else floor_or_round
        taps, weights = idx[:, None], np.ones((out, 1))
    elif kind == BILINEAR:
        if mode in (HALF_PIXEL, TF_HALF_PIXEL):
            x = np.maximum(x, 0)
        lo = np.floor(x)
        frac = x - lo
        taps, weights = np.stack([lo, lo + 1], axis=1), np.stack([1 - frac, frac], axis=1)
    else:
        lo = np.floor(x)
        t = x - lo
        dist = np.abs(np.stack([t + 1, t, 1 - t, 2 - t], axis=1))
        a = cubic_a
        near = (a + 2) * dist**3 - (a + 3) * dist**2 + 1
        far = a * dist**3 - 5 * a * dist**2 + 8 * a * dist - 4 * a
        weights = np.where(dist <= 1, near, np.where(dist < 2, far, 0))
        taps = np.stack([lo - 1, lo, lo + 1, lo + 2], axis=1)
    return np.clip(taps, 0, size - 1).astype(np.int32), weights.astype(np.float32)


@opencl_kernel(fb.OpType.Interp, formats=("NC4HW4",))
class InterpExecution(CLExecution):
    """2-D resize (MNN: Interp)."""

    value_inputs = (1, 2, 3)

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        p = op.main
        if p is None or p.resizeType not in (NEAREST, BILINEAR, CUBIC, NEAREST_ROUND) or len(outputs) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if not (x.fmt == y.fmt == NC4HW4 and len(x.shape) == len(y.shape) == 4 and x.shape[:2] == y.shape[:2]):
            return False
        return all(t.const for t in inputs[1:])

    def encode(self) -> None:
        p = self.op.main
        x, y = self.inputs[0], self.outputs[0]
        n, c, h, w = x.desc.shape
        oh, ow = y.desc.shape[2:]
        mode = int(p.ctm)
        if mode == 0:
            mode = ALIGN_CORNERS if p.alignCorners else HALF_PIXEL if p.halfPixelCenters else ASYMMETRIC
        sh, sw = oh / h, ow / w
        if len(self.inputs) > 1 and np.asarray(self.inputs[1].array).dtype.kind == "f":
            scales = np.asarray(self.inputs[1].array).ravel()
            sh, sw = float(scales[-2]), float(scales[-1])
        a = float(p.cubicCoeffA) if p.resizeType == CUBIC else -0.75
        hidx, hw = axis_table(oh, h, sh, mode, int(p.resizeType), a)
        widx, ww = axis_table(ow, w, sw, mode, int(p.resizeType), a)
        self.algorithm = {NEAREST: "nearest", BILINEAR: "bilinear", CUBIC: "cubic"}.get(p.resizeType, "nearest-round")
        c4 = -(-c // 4)
        args = [self.buf(x), self.buf(y), self.constant(hidx), self.constant(hw), self.constant(widx),
                self.constant(ww), int4(n, h, w, c4), int4(oh, ow, hidx.shape[1], widx.shape[1])]
        self.launch("resize", "resize2d", args, (ow, oh, c4 * n))
