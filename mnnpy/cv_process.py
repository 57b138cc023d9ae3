"""`CVMatrix` and `CVImageProcess`: MNN's image preprocessing API (MNN: `MNN.CVMatrix`, `MNN.CVImageProcess`).

CVMatrix is a 3x3 float32 transform with Skia's conventions (MNN's `CV::Matrix`): `pre*` multiplies on the right,
`post*` on the left, rotations in degrees about an optional pivot. CVImageProcess converts a uint8 image into a
tensor: colour conversion (`mnnpy.cv.cvtColor`), sampling where destination pixel (x, y) reads the source at
`matrix * (x, y)` (no half-pixel offset, nearest rounds half up, as MNN), then `(value - mean) * normal`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

# MNN's top-level constants (ImageFormat, Filter, Wrap)
CV_ImageFormat_RGBA, CV_ImageFormat_RGB, CV_ImageFormat_BGR, CV_ImageFormat_GRAY, CV_ImageFormat_BGRA = 0, 1, 2, 3, 4
CV_ImageFormat_YUV_NV21, CV_ImageFormat_YUV_NV12, CV_ImageFormat_YUV_I420 = 11, 12, 13
CV_Filter_NEAREST, CV_Filter_BILINEAL, CV_Filter_BICUBIC = 0, 1, 2
CV_Wrap_CLAMP_TO_EDGE, CV_Wrap_ZERO, CV_Wrap_REPEAT = 0, 1, 2

_CHANNELS = {0: 4, 1: 3, 2: 3, 3: 1, 4: 4}
_YUV = {11: "NV21", 12: "NV12", 13: "I420"}


class CVMatrix:
    """A 3x3 transform (MNN: `MNN.CVMatrix`, Skia's SkMatrix semantics)."""

    def __init__(self) -> None:
        self._m = np.eye(3, dtype=np.float64)

    # *** set ***
    def setScale(self, sx: float, sy: float, px: float = 0.0, py: float = 0.0) -> None:
        """Scale about the pivot (px, py) (MNN: `CVMatrix.setScale`)."""
        self._m = _scale(sx, sy, px, py)

    def setRotate(self, degrees: float, px: float = 0.0, py: float = 0.0) -> None:
        """Rotate by degrees about the pivot (MNN: `CVMatrix.setRotate`)."""
        self._m = _rotate(degrees, px, py)

    def setTranslate(self, dx: float, dy: float) -> None:
        """Translate by (dx, dy) (MNN: `CVMatrix.setTranslate`)."""
        self._m = _translate(dx, dy)

    def setPolyToPoly(self, src: Sequence[float], dst: Sequence[float]) -> bool:
        """Map 1-4 source points (flat x, y list) to destination points (MNN: `CVMatrix.setPolyToPoly`)."""
        s = np.asarray(src, np.float64).reshape(-1, 2)
        d = np.asarray(dst, np.float64).reshape(-1, 2)
        n = min(len(s), len(d))
        if n == 0:
            self._m = np.eye(3)
            return True
        if n == 1:
            self._m = _translate(d[0, 0] - s[0, 0], d[0, 1] - s[0, 1])
            return True
        if n == 2:  # similarity: rotation + uniform scale + translation
            sv, dv = s[1] - s[0], d[1] - d[0]
            den = sv @ sv
            if den == 0:
                return False
            a = (sv @ dv) / den
            b = (sv[0] * dv[1] - sv[1] * dv[0]) / den
            m = np.array([[a, -b, 0.0], [b, a, 0.0], [0.0, 0.0, 1.0]])
            m[:2, 2] = d[0] - m[:2, :2] @ s[0]
            self._m = m
            return True
        if n == 3:
            a = np.hstack([s[:3], np.ones((3, 1))])
            try:
                sol = np.linalg.solve(a, d[:3])
            except np.linalg.LinAlgError:
                return False
            self._m = np.vstack([sol.T, [0.0, 0.0, 1.0]])
            return True
        from mnnpy.cv.geometric import getPerspectiveTransform

        try:
            self._m = getPerspectiveTransform(s[:4], d[:4])
        except np.linalg.LinAlgError:
            return False
        return True

    def invert(self) -> None:
        """Replace the matrix by its inverse, in place (MNN: `CVMatrix.invert`)."""
        self._m = np.linalg.inv(self._m)

    # *** concatenation ***
    def preScale(self, sx: float, sy: float, px: float = 0.0, py: float = 0.0) -> None:
        """M = M * Scale (MNN: `CVMatrix.preScale`)."""
        self._m = self._m @ _scale(sx, sy, px, py)

    def postScale(self, sx: float, sy: float, px: float = 0.0, py: float = 0.0) -> None:
        """M = Scale * M (MNN: `CVMatrix.postScale`)."""
        self._m = _scale(sx, sy, px, py) @ self._m

    def preRotate(self, degrees: float, px: float = 0.0, py: float = 0.0) -> None:
        """M = M * Rotate (MNN: `CVMatrix.preRotate`)."""
        self._m = self._m @ _rotate(degrees, px, py)

    def postRotate(self, degrees: float, px: float = 0.0, py: float = 0.0) -> None:
        """M = Rotate * M (MNN: `CVMatrix.postRotate`)."""
        self._m = _rotate(degrees, px, py) @ self._m

    def preTranslate(self, dx: float, dy: float) -> None:
        """M = M * Translate (MNN: `CVMatrix.preTranslate`)."""
        self._m = self._m @ _translate(dx, dy)

    def postTranslate(self, dx: float, dy: float) -> None:
        """M = Translate * M (MNN: `CVMatrix.postTranslate`)."""
        self._m = _translate(dx, dy) @ self._m

    def preConcat(self, other: CVMatrix) -> None:
        """M = M * other (MNN C++: `Matrix::preConcat`)."""
        self._m = self._m @ other._m

    def postConcat(self, other: CVMatrix) -> None:
        """M = other * M (MNN C++: `Matrix::postConcat`)."""
        self._m = other._m @ self._m

    # *** io ***
    def read(self) -> list[float]:
        """The 9 values, row major, as float32 numbers (MNN: `CVMatrix.read`)."""
        return [float(x) for x in self._m.astype(np.float32).ravel()]

    def write(self, values: Sequence[float]) -> None:
        """Set the 9 values, row major (MNN: `CVMatrix.write`)."""
        arr = np.asarray(values, np.float64).ravel()
        if arr.size != 9:
            raise TypeError("write require args: ([float]) with 9 values")
        self._m = arr.reshape(3, 3).copy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._m.astype(dtype or np.float64)

    def __repr__(self) -> str:
        rows = ["[" + "\t".join(f"{v:.6f}" for v in row) + "]" for row in self._m.astype(np.float32)]
        return "[" + "\n ".join(rows) + "]"


def _scale(sx: float, sy: float, px: float, py: float) -> np.ndarray:
    return np.array([[sx, 0.0, px - sx * px], [0.0, sy, py - sy * py], [0.0, 0.0, 1.0]])


def _rotate(degrees: float, px: float, py: float) -> np.ndarray:
    r = math.radians(degrees)
    c, s = math.cos(r), math.sin(r)
    return np.array([[c, -s, s * py + (1 - c) * px], [s, c, -s * px + (1 - c) * py], [0.0, 0.0, 1.0]])


def _translate(dx: float, dy: float) -> np.ndarray:
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy], [0.0, 0.0, 1.0]])


def _convert_code(src: int, dst: int) -> int | None:
    from mnnpy.cv import constants as cc

    if src == dst:
        return None
    names = {0: "RGBA", 1: "RGB", 2: "BGR", 3: "GRAY", 4: "BGRA"}
    if src in _YUV:
        return getattr(cc, f"COLOR_YUV2{names[dst] if dst != 3 else 'GRAY'}_{_YUV[src]}")
    name = f"COLOR_{names[src]}2{names[dst]}"
    if not hasattr(cc, name):
        raise ValueError(f"CVImageProcess: no conversion from format {src} to {dst}")
    return int(getattr(cc, name))


def _mnn_gray(img: Any, fmt: int) -> Any:
    """MNN's gray: (19 R + 38 G + 7 B) >> 6 (not OpenCV's Q15 weights)."""
    from mnnpy import expr as ex
    from mnnpy.cv._util import ints

    if fmt == CV_ImageFormat_GRAY:
        return img
    order = (2, 1, 0) if fmt in (CV_ImageFormat_BGR, CV_ImageFormat_BGRA) else (0, 1, 2)
    r, g, b = (ex.cast(ex.gather(img, ints([i]), 2), ex.int) for i in order)
    return ex.cast(ex.floordiv(r * 19 + g * 38 + b * 7, ints(64)), ex.uint8)


class CVImageProcess:
    """Convert a uint8 image into a (float) tensor (MNN: `MNN.CVImageProcess`).

    Config keys: filterType (CV_Filter_*), sourceFormat / destFormat (CV_ImageFormat_*), wrap (CV_Wrap_*),
    mean and normal (up to 4 values each).
    """

    def __init__(self, config: dict | None = None) -> None:
        cfg = dict(config or {})
        self.filter_type = int(cfg.get("filterType", CV_Filter_NEAREST))
        self.source_format = int(cfg.get("sourceFormat", CV_ImageFormat_RGBA))
        self.dest_format = int(cfg.get("destFormat", CV_ImageFormat_RGBA))
        self.wrap = int(cfg.get("wrap", CV_Wrap_CLAMP_TO_EDGE))
        self.mean = [float(x) for x in cfg.get("mean", (0.0, 0.0, 0.0, 0.0))]
        self.normal = [float(x) for x in cfg.get("normal", (1.0, 1.0, 1.0, 1.0))]
        self.matrix = CVMatrix()
        self.padding = 0.0

    def setMatrix(self, matrix: CVMatrix) -> None:
        """Set the destination -> source transform (MNN: `CVImageProcess.setMatrix`)."""
        self.matrix = matrix

    def setPadding(self, value: float) -> None:
        """Value used outside the source with CV_Wrap_ZERO (MNN: `CVImageProcess.setPadding`)."""
        self.padding = float(value)

    @staticmethod
    def createImageTensor(dtype: Any, width: int, height: int, bpp: int, data: Any = None) -> Any:
        """A [1, height, width, bpp] host Tensor (Tensorflow layout) (MNN: `CVImageProcess.createImageTensor`)."""
        from mnnpy.tensor import Tensor, Tensor_DimensionType_Tensorflow

        shape = [1, int(height), int(width), int(bpp)]
        if data is not None:
            data = np.asarray(data.read() if hasattr(data, "read") else data).reshape(shape)
        return Tensor(shape, dtype, data, Tensor_DimensionType_Tensorflow)

    def _source(self, src: Any, iw: int, ih: int, stride: int) -> Any:
        from mnnpy.cv._util import to_np, to_var

        raw = np.asarray(to_np(src.getNumpyData() if hasattr(src, "getNumpyData") else src))
        raw = raw.astype(np.uint8, copy=False).ravel()
        if self.source_format in _YUV:
            return to_var(raw[: iw * ih * 3 // 2].reshape(ih * 3 // 2, iw))
        bpp = _CHANNELS[self.source_format]
        row = stride if stride > 0 else iw * bpp
        rows = np.lib.stride_tricks.as_strided(raw, (ih, iw * bpp), (row * raw.itemsize, raw.itemsize))
        return to_var(np.ascontiguousarray(rows).reshape(ih, iw, bpp))

    def _coords(self, oh: int, ow: int) -> tuple[np.ndarray, np.ndarray]:
        m = self.matrix._m
        ys, xs = np.meshgrid(np.arange(oh, dtype=np.float64), np.arange(ow, dtype=np.float64), indexing="ij")
        w = m[2, 0] * xs + m[2, 1] * ys + m[2, 2]
        w = np.where(w == 0, 1.0, w)
        return (m[0, 0] * xs + m[0, 1] * ys + m[0, 2]) / w, (m[1, 0] * xs + m[1, 1] * ys + m[1, 2]) / w

    def convert(self, src: Any, iw: int, ih: int, stride: int, dest: Any) -> None:
        """Colour-convert, sample, normalise and write into `dest` (MNN: `CVImageProcess.convert`)."""
        from mnnpy import expr as ex
        from mnnpy.cv import constants as cc
        from mnnpy.cv._sample import sample
        from mnnpy.cv._util import as_float, floats
        from mnnpy.cv.color import cvtColor
        from mnnpy.tensor import Tensor_DimensionType_Tensorflow

        img = self._source(src, int(iw), int(ih), int(stride))
        if self.dest_format == CV_ImageFormat_GRAY and self.source_format in _CHANNELS:
            img = _mnn_gray(img, self.source_format)
        else:
            code = _convert_code(self.source_format, self.dest_format)
            img = img if code is None else cvtColor(img, code)
        h, w, c = img.shape
        shape = list(dest.getShape())
        nhwc = dest.getDimensionType() == Tensor_DimensionType_Tensorflow
        oh, ow = (shape[1], shape[2]) if nhwc else (shape[2], shape[3])
        mx, my = self._coords(oh, ow)
        outside = (mx < 0) | (mx > w - 1) | (my < 0) | (my > h - 1)
        if self.filter_type == CV_Filter_NEAREST:
            mx, my = np.floor(mx + 0.5), np.floor(my + 0.5)
            inter = cc.INTER_NEAREST
        else:
            inter = cc.INTER_CUBIC if self.filter_type == CV_Filter_BICUBIC else cc.INTER_LINEAR
        if self.wrap == CV_Wrap_ZERO:
            mx, my = np.where(outside, -4.0, mx), np.where(outside, -4.0, my)
            out = sample(as_float(img), mx, my, inter, cc.BORDER_CONSTANT, [self.padding] * c, quantize=False)
        else:
            out = sample(as_float(img), mx, my, inter, cc.BORDER_REPLICATE, 0, quantize=False)
        out = ex.minimum(ex.maximum(ex.floor(out + 0.5), 0.0), 255.0)  # the sampled uint8 pixel (half up)
        mean = np.zeros(c, np.float32)
        normal = np.ones(c, np.float32)
        mean[: min(c, len(self.mean))] = self.mean[:c]
        normal[: min(c, len(self.normal))] = self.normal[:c]
        out = (out - floats(mean)) * floats(normal)
        value = out.read()
        if not nhwc:
            value = value.transpose(2, 0, 1)
        dest.copyFrom(value.reshape(shape).astype(np.dtype(dest.getHost().dtype), copy=False))
