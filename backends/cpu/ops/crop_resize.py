"""CropAndResize: TensorFlow's crop_and_resize of an NHWC image, bilinear or nearest, with an extrapolation value
for samples outside the image (MNN: CPUCropAndResize).

Sample coordinates, the inside test and the blend are float32 operations in MNN's order (its C++ is float32 and
does not fuse multiply-adds on x86-64), so samples on the image border or half way between pixels fall on the same
side as in MNN; a single-sample axis takes the centre in double precision, as MNN's `0.5 * (...)` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.backends.cpu.layout import logical, store
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.ir import NCHW
from mnnpy.core.registry import cpu_kernel


def crop_params(op: Any) -> tuple[bool, float]:
    """(nearest, extrapolation value) from the op's CropAndResize table; MNN's defaults (bilinear, 0) without one."""
    if op.mainType == fb.OpParameter.NONE:
        return False, 0.0
    if op.mainType != fb.OpParameter.CropAndResize or op.main is None:
        raise ModelError(f"op {op.name!r} (CropAndResize): parameter must be a CropAndResize table, got union "
                         f"member {op.mainType}")
    method = int(op.main.method)
    if method not in (fb.CropAndResizeMethod.BILINEAR, fb.CropAndResizeMethod.NEAREST):
        raise ModelError(f"op {op.name!r} (CropAndResize): unknown method {method} (0 BILINEAR, 1 NEAREST)")
    return method == fb.CropAndResizeMethod.NEAREST, float(op.main.extrapolationValue)


F32 = np.float32


def _coords(lo: np.float32, hi: np.float32, out: int, size: int) -> np.ndarray:
    """float32 source coordinates of the `out` samples between normalised corners lo and hi."""
    if out > 1:
        scale = (hi - lo) * F32(size - 1) / F32(out - 1)
        return lo * F32(size - 1) + np.arange(out, dtype=F32) * scale
    return np.array([0.5 * float(lo + hi) * (size - 1)], F32)


@cpu_kernel(fb.OpType.CropAndResize, formats=(NCHW,))
class CropAndResize(CPUExecution):
    """One box at a time: gather the 2x2 neighbours of every sample (or the nearest pixel), blend in float32."""

    def on_resize(self) -> None:
        self.nearest, self.extrapolation = crop_params(self.op)

    def on_execute(self) -> None:
        image = np.asarray(logical(self.x), F32)  # [N, H, W, C] (MNN's contract for this op)
        boxes = np.asarray(logical(self.inputs[1]), F32)
        index = np.asarray(logical(self.inputs[2])).reshape(-1).astype(np.int64)
        n, h, w, _ = image.shape
        _, ch, cw, _ = self.y.desc.shape
        fill = F32(self.extrapolation)
        out = np.full(self.y.desc.shape, fill, F32)
        for k, (y1, x1, y2, x2) in enumerate(boxes):
            if not 0 <= index[k] < n:
                raise ModelError(f"op {self.op.name!r} (CropAndResize): box_ind {int(index[k])} outside [0, {n})")
            ys, xs = _coords(y1, y2, ch, h), _coords(x1, x2, cw, w)
            inside = ((ys >= 0) & (ys <= h - 1))[:, None] & ((xs >= 0) & (xs <= w - 1))[None, :]
            img = image[index[k]]
            if self.nearest:  # roundf: half away from zero
                iy = np.clip(np.floor(np.abs(ys) + F32(0.5)) * np.sign(ys), 0, h - 1).astype(np.int64)
                ix = np.clip(np.floor(np.abs(xs) + F32(0.5)) * np.sign(xs), 0, w - 1).astype(np.int64)
                crop = img[iy][:, ix]
            else:
                top = np.clip(np.floor(ys), 0, h - 1).astype(np.int64)
                bottom = np.clip(np.ceil(ys), 0, h - 1).astype(np.int64)
                left = np.clip(np.floor(xs), 0, w - 1).astype(np.int64)
                right = np.clip(np.ceil(xs), 0, w - 1).astype(np.int64)
                fy = (ys - np.floor(ys))[:, None, None]
                fx = (xs - np.floor(xs))[None, :, None]
                upper = img[top][:, left] + (img[top][:, right] - img[top][:, left]) * fx
                lower = img[bottom][:, left] + (img[bottom][:, right] - img[bottom][:, left]) * fx
                crop = upper + (lower - upper) * fy
            out[k] = np.where(inside[..., None], crop, fill)
        store(self.y, out)
