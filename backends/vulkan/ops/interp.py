"""Interp (nearest, nearest-round, bilinear, cubic) on NC4HW4 tensors (MNN: `VulkanResize`).

Per-axis tap tables (source index, weight) are computed once per shape in `on_resize` and uploaded; the shader
is a separable weighted gather. Coordinate modes follow MNN's CoordinateTransformationMode (`ctm`), with the
legacy `alignCorners` / `halfPixelCenters` flags when `ctm` is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

ALIGN_CORNERS, HALF_PIXEL, PYTORCH_HALF_PIXEL, ASYMMETRIC, TF_HALF_PIXEL = 1, 2, 3, 4, 5
NEAREST, BILINEAR, CUBIC, NEAREST_ROUND = 1, 2, 3, 4
NAMES = {NEAREST: "nearest", BILINEAR: "bilinear", CUBIC: "cubic", NEAREST_ROUND: "nearest-round"}


def source_coords(out: int, size: int, scale: float, mode: int) -> np.ndarray:
    """Source coordinate of every output index along one axis."""
    i = np.arange(out, dtype=np.float64)
    if mode == ALIGN_CORNERS:
        return i * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    if mode in (HALF_PIXEL, TF_HALF_PIXEL) or (mode == PYTORCH_HALF_PIXEL and out > 1):
        return (i + 0.5) / scale - 0.5
    if mode == PYTORCH_HALF_PIXEL:
        return np.zeros(out)
    return i / scale


def taps(out: int, size: int, scale: float, mode: int, kind: int, cubic_a: float) -> tuple[np.ndarray, np.ndarray]:
    """(indices [out, taps] int32, weights [out, taps] float32) along one axis, indices clamped to the input."""
    x = source_coords(out, size, scale, mode)
    if kind in (NEAREST, NEAREST_ROUND):
        rounding = np.round if mode == ALIGN_CORNERS else np.floor
        idx = np.ceil(x - 0.5) if kind == NEAREST_ROUND else rounding(x)
        return np.clip(idx, 0, size - 1).astype(np.int32)[:, None], np.ones((out, 1), np.float32)
    if kind == BILINEAR:
        x = np.maximum(x, 0) if mode in (HALF_PIXEL, TF_HALF_PIXEL) else x
        lo = np.floor(x)
        frac = x - lo
        idx, wgt = np.stack([lo, lo + 1], axis=1), np.stack([1 - frac, frac], axis=1)
        return np.clip(idx, 0, size - 1).astype(np.int32), wgt.astype(np.float32)
    lo = np.floor(x)
    t = x - lo
    dist = np.abs(np.stack([t + 1, t, 1 - t, 2 - t], axis=1))
    a = cubic_a
    wgt = np.where(dist <= 1, (a + 2) * dist**3 - (a + 3) * dist**2 + 1,
                   np.where(dist < 2, a * dist**3 - 5 * a * dist**2 + 8 * a * dist - 4 * a, 0))
    idx = np.stack([lo - 1, lo, lo + 1, lo + 2], axis=1)
    return np.clip(idx, 0, size - 1).astype(np.int32), wgt.astype(np.float32)


@vulkan_kernel(fb.OpType.Interp, formats=("NC4HW4",))
class VulkanInterp(VulkanExecution):
    """One invocation per output texel: th x tw weighted taps."""

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if not inputs or len(outputs) != 1 or p is None or int(p.resizeType) not in (1, 2, 3, 4):
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NC4HW4 or y.fmt != NC4HW4 or len(x.shape) != 4 or len(y.shape) != 4 or x.shape[:2] != y.shape[:2]:
            return False
        return all(t.const for t in inputs[1:])

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        p = op_param(self.op)
        n, c, h, w = x.desc.shape
        oh, ow = y.desc.shape[2:]
        kind, mode = int(p.resizeType), int(p.ctm)
        if mode == 0:
            mode = ALIGN_CORNERS if p.alignCorners else HALF_PIXEL if p.halfPixelCenters else ASYMMETRIC
        sh, sw = oh / h, ow / w
        if len(self.inputs) > 1 and np.asarray(self.inputs[1].array).dtype.kind == "f":
            scales = np.asarray(self.inputs[1].array).ravel()
            sh, sw = float(scales[-2]), float(scales[-1])
        a = float(p.cubicCoeffA) if kind == CUBIC else -0.75
        hi, hw = taps(oh, h, sh, mode, kind, a)
        wi, ww = taps(ow, w, sw, mode, kind, a)
        self.algorithm = NAMES[kind]
        index = self.upload(np.concatenate([hi.ravel(), wi.ravel()]).astype(np.int32))
        weight = self.upload(np.concatenate([hw.ravel(), ww.ravel()]).astype(np.float32))
        planes = n * -(-c // 4)
        total = planes * oh * ow
        values = (w, h, planes, total, ow, oh, hi.shape[1], wi.shape[1])
        self.dispatch("resample", [self.bind(x), index, weight], [self.bind(y)], "8i", values, total)
