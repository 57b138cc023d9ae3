"""Shared helpers of `mnnpy.cv`: images in and out as Vars, saturation, border index tables.

Images are HWC (or HW) Vars as in MNN.cv; functions also accept numpy arrays. Element-wise work is done by
`mnnpy.expr` ops (evaluated by the core); host numpy only computes small index tables and matrices.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.expr.var import Var

_DTYPE_OF_NP = {
    np.dtype(np.float32): ex.float,
    np.dtype(np.float64): ex.double,
    np.dtype(np.int32): ex.int,
    np.dtype(np.int64): ex.int64,
    np.dtype(np.uint8): ex.uint8,
    np.dtype(np.int8): ex.int8,
}


def to_var(img: Any) -> Var:
    """A Var for an image given as Var or array-like (float64 arrays become float32, as MNN stores them)."""
    if isinstance(img, Var):
        return img
    arr = np.asarray(img)
    if arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    elif arr.dtype == np.int64:
        arr = arr.astype(np.int32)
    elif arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    elif arr.dtype not in _DTYPE_OF_NP:
        arr = arr.astype(np.float32)
    arr = np.ascontiguousarray(arr)
    return ex.const(arr, list(arr.shape), ex.NHWC, _DTYPE_OF_NP[arr.dtype])


def to_np(img: Any) -> np.ndarray:
    """The value of a Var or array-like as a numpy array."""
    if isinstance(img, Var):
        return img.read()
    return np.asarray(img)


def ints(values: Any) -> Var:
    """An int32 constant Var."""
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.int32))
    return ex.const(arr, list(arr.shape), ex.NCHW, ex.int)


def floats(values: Any) -> Var:
    """A float32 constant Var."""
    arr = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    return ex.const(arr, list(arr.shape), ex.NCHW, ex.float)


def np_dtype(v: Var) -> np.dtype:
    """The numpy element type of a Var."""
    return np.dtype(v.np_dtype)


def as_float(v: Var) -> Var:
    """`v` as float32 (no op when it already is)."""
    return v if np_dtype(v) == np.float32 else ex.cast(v, ex.float)


def saturate(v: Var, dtype: Any) -> Var:
    """Float Var -> `dtype` like OpenCV's saturate_cast: round half to even and clip for integer types."""
    dt = np.dtype(dtype)
    if dt == np.float32:
        return as_float(v)
    if dt == np.float64:
        return ex.cast(v, ex.double)
    info = np.iinfo(dt)
    v = ex.minimum(ex.maximum(ex.round(as_float(v)), float(info.min)), float(info.max))
    return ex.cast(v, _DTYPE_OF_NP[dt])


def hwc(v: Var) -> tuple[Var, bool]:
    """`v` as a 3-D HWC Var, and whether the input was 2-D (HW)."""
    if v.ndim == 2:
        return ex.unsqueeze(v, [2]), True
    return v, False


def restore(v: Var, was_2d: bool) -> Var:
    """Undo `hwc` for a 2-D input."""
    return ex.squeeze(v, [2]) if was_2d else v


def border_map(pos: np.ndarray, n: int, mode: int) -> np.ndarray:
    """Map integer positions into [0, n) by an OpenCV border mode (borderInterpolate); -1 marks the constant (and
    transparent) border."""
    mode = mode & ~cc.BORDER_ISOLATED
    if mode == cc.BORDER_REPLICATE:
        return np.clip(pos, 0, n - 1)
    if mode in (cc.BORDER_CONSTANT, cc.BORDER_TRANSPARENT):
        return np.where((pos >= 0) & (pos < n), pos, -1)
    if mode == cc.BORDER_WRAP:
        return np.mod(pos, n)
    if n == 1:
        return np.zeros_like(pos)
    if mode == cc.BORDER_REFLECT:
        p = np.mod(pos, 2 * n)
        return np.where(p < n, p, 2 * n - 1 - p)
    if mode in (cc.BORDER_REFLECT_101, cc.BORDER_DEFAULT):
        p = np.mod(pos, 2 * n - 2)
        return np.where(p < n, p, 2 * n - 2 - p)
    raise ValueError(f"unsupported border mode {mode}")


def border_index(n: int, before: int, after: int, mode: int) -> np.ndarray:
    """Source indices for a row/column padded by `before`/`after`; -1 = constant."""
    return border_map(np.arange(-before, n + after), n, mode)


def pad_image(v: Var, top: int, bottom: int, left: int, right: int, mode: int, value: Any = 0) -> Var:
    """Pad an HWC Var with an OpenCV border mode (copyMakeBorder) by gathering rows and columns."""
    h, w = v.shape[0], v.shape[1]
    if top == bottom == left == right == 0:
        return v
    if (mode & ~cc.BORDER_ISOLATED) == cc.BORDER_CONSTANT:
        if np.size(value) > 1:
            return _pad_constant_per_channel(v, top, bottom, left, right, value)
        return ex.pad(v, [[top, bottom], [left, right], [0, 0]], ex.CONSTANT, float(np.asarray(value).ravel()[0]))
    rows = border_index(h, top, bottom, mode)
    cols = border_index(w, left, right, mode)
    out = ex.gather(v, ints(rows), 0) if top or bottom else v
    return ex.gather(out, ints(cols), 1) if left or right else out


def _pad_constant_per_channel(v: Var, top: int, bottom: int, left: int, right: int, value: Any) -> Var:
    h, w, c = v.shape
    vals = np.zeros(c, np.float64)
    given = np.asarray(value, np.float64).ravel()[:c]
    vals[: given.size] = given
    inside = np.zeros((h + top + bottom, w + left + right, 1), np.float32)
    inside[top:top + h, left:left + w] = 1
    padded = ex.pad(as_float(v), [[top, bottom], [left, right], [0, 0]], ex.CONSTANT, 0.0)
    filled = padded + (1.0 - floats(inside)) * floats(vals.astype(np.float32))
    return saturate(filled, np_dtype(v))


def channels_of(v: Var) -> int:
    """Number of channels of an HWC (3-D) or HW (2-D, one channel) Var."""
    return 1 if v.ndim == 2 else v.shape[2]


def scalar4(value: Any, c: int) -> np.ndarray:
    """A cv2 Scalar as `c` float32 values; a single number is (v, 0, 0, 0), as cv2's Python binding makes it."""
    arr = np.zeros(max(c, 1), np.float32)
    given = np.asarray(value, np.float64).ravel()[:c]
    arr[: given.size] = given
    return arr
