"""CropAndResize: TensorFlow's crop_and_resize of an NHWC image, bilinear or nearest, with an extrapolation value
for samples outside the image (MNN: CPUCropAndResize).
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
from mnnpy.core.shape.raster_op import extra_attrs


def crop_params(op: Any) -> tuple[bool, float]:
    """(nearest, extrapolation value): MNN's defaults from the (field-less) CropAndResize table, else from the
    Extra attributes mnnpy writes for non-default settings.
    """
    attrs = extra_attrs(op)
    method = attrs["method"].s if "method" in attrs else "BILINEAR"
    method = method.decode() if isinstance(method, bytes) else str(method)
    if method not in ("BILINEAR", "NEAREST"):
        raise ModelError(f"op {op.name!r} (CropAndResize): unknown method {method!r}")
    extrapolation = float(attrs["extrapolation_value"].f) if "extrapolation_value" in attrs else 0.0
    return method == "NEAREST", extrapolation


def _coords(lo: float, hi: float, out: int, size: int) -> np.ndarray:
    """Source coordinates of the `out` samples between normalised corners lo and hi (TF's formula)."""
    if out > 1:
        return lo * (size - 1) + np.arange(out) * ((hi - lo) * (size - 1) / (out - 1))
    return np.array([0.5 * (lo + hi) * (size - 1)])


@cpu_kernel(fb.OpType.CropAndResize, formats=(NCHW,))
class CropAndResize(CPUExecution):
    """One box at a time: gather the 2x2 neighbours of every sample (or the nearest pixel), blend in float64."""

    def on_resize(self) -> None:
        self.nearest, self.extrapolation = crop_params(self.op)

    def on_execute(self) -> None:
        image = np.asarray(logical(self.x), np.float64)  # [N, H, W, C] (MNN's contract for this op)
        boxes = np.asarray(logical(self.inputs[1]), np.float64)
        index = np.asarray(logical(self.inputs[2])).reshape(-1).astype(np.int64)
        n, h, w, _ = image.shape
        _, ch, cw, _ = self.y.desc.shape
        out = np.full(self.y.desc.shape, self.extrapolation, np.float64)
        for k, (y1, x1, y2, x2) in enumerate(boxes):
            if not 0 <= index[k] < n:
                raise ModelError(f"op {self.op.name!r} (CropAndResize): box_ind {int(index[k])} outside [0, {n})")
            ys, xs = _coords(y1, y2, ch, h), _coords(x1, x2, cw, w)
            vy = (ys >= 0) & (ys <= h - 1)
            vx = (xs >= 0) & (xs <= w - 1)
            img = image[index[k]]
            if self.nearest:
                iy = np.clip(np.floor(np.abs(ys) + 0.5) * np.sign(ys), 0, h - 1).astype(np.int64)
                ix = np.clip(np.floor(np.abs(xs) + 0.5) * np.sign(xs), 0, w - 1).astype(np.int64)
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
            out[k] = np.where((vy[:, None] & vx[None, :])[..., None], crop, self.extrapolation)
        store(self.y, out.astype(np.float32))
