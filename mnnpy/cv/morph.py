"""Morphology (MNN: `cv.erode`, `cv.dilate`, `cv.getStructuringElement`).

The structuring element is a host table; erosion/dilation are running minima/maxima of shifted slices of the
padded image (expr minimum/maximum), separable for rectangular elements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._util import hwc, np_dtype, pad_image, restore, to_np, to_var
from mnnpy.expr.var import Var

MORPH_RECT, MORPH_CROSS, MORPH_ELLIPSE = 0, 1, 2  # OpenCV's MorphShapes (not exported by MNN.cv)


def getStructuringElement(shape: int, ksize: Sequence[int],
                          anchor: Sequence[int] = (-1, -1)) -> np.ndarray:
    """A uint8 rect / cross / ellipse element of size ksize = (w, h) (MNN: `cv.getStructuringElement`)."""
    w, h = int(ksize[0]), int(ksize[1])
    ax = w // 2 if anchor[0] < 0 else int(anchor[0])
    ay = h // 2 if anchor[1] < 0 else int(anchor[1])
    k = np.zeros((h, w), np.uint8)
    if shape == MORPH_RECT or (w == 1 and h == 1):
        k[:] = 1
    elif shape == MORPH_CROSS:
        k[ay, :] = 1
        k[:, ax] = 1
    else:
        r, c = h // 2, w // 2
        inv_r2 = 1.0 / (r * r) if r else 0.0
        for i in range(h):
            dy = i - r
            if abs(dy) <= r:
                dx = round(c * math.sqrt((r * r - dy * dy) * inv_r2))
                k[i, max(c - dx, 0):min(c + dx + 1, w)] = 1
    return k


def _extreme(v: Var, kernel: np.ndarray, anchor: Sequence[int], border: int, value: Any, is_max: bool) -> Var:
    h, w, c = v.shape
    kh, kw = kernel.shape
    ax = kw // 2 if anchor[0] < 0 else int(anchor[0])
    ay = kh // 2 if anchor[1] < 0 else int(anchor[1])
    if value is None:  # morphologyDefaultBorderValue: the border never wins
        big = 255 if np_dtype(v) == np.uint8 else 3.0e38
        low = 0 if np_dtype(v) == np.uint8 else -3.0e38
        value = low if is_max else big
    op = ex.maximum if is_max else ex.minimum
    padded = pad_image(v, ay, kh - 1 - ay, ax, kw - 1 - ax, border, value)
    if kernel.all():  # rectangle: rows then columns
        rows = None
        for i in range(kh):
            piece = ex.slice(padded, [i, 0, 0], [h, w + kw - 1, c])
            rows = piece if rows is None else op(rows, piece)
        assert rows is not None
        out = None
        for j in range(kw):
            piece = ex.slice(rows, [0, j, 0], [h, w, c])
            out = piece if out is None else op(out, piece)
        assert out is not None
        return out
    out = None
    for i, j in zip(*np.nonzero(kernel), strict=True):
        piece = ex.slice(padded, [int(i), int(j), 0], [h, w, c])
        out = piece if out is None else op(out, piece)
    return v if out is None else out


def _morph(src: Any, kernel: Any, anchor: Sequence[int] | None, iterations: int, border: int, value: Any,
           is_max: bool) -> Var:
    v, was_2d = hwc(to_var(src))
    k = np.ones((3, 3), np.uint8) if kernel is None else np.asarray(to_np(kernel)) != 0
    k = k.reshape(k.shape[0], -1)
    anchor = (-1, -1) if anchor is None else anchor
    for _ in range(max(int(iterations), 1)):
        v = _extreme(v, k, anchor, border, value, is_max)
    return restore(v, was_2d)


def erode(src: Any, kernel: Any, anchor: Sequence[int] | None = None, iterations: int = 1,
          borderType: int = cc.BORDER_CONSTANT, borderValue: Any = None) -> Var:  # noqa: N803 - cv2 names
    """Minimum over the structuring element (MNN: `cv.erode`)."""
    return _morph(src, kernel, anchor, iterations, borderType, borderValue, False)


def dilate(src: Any, kernel: Any, anchor: Sequence[int] | None = None, iterations: int = 1,
           borderType: int = cc.BORDER_CONSTANT, borderValue: Any = None) -> Var:  # noqa: N803 - cv2 names
    """Maximum over the structuring element (MNN: `cv.dilate`)."""
    return _morph(src, kernel, anchor, iterations, borderType, borderValue, True)
