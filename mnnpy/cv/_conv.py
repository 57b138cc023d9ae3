"""Correlation helpers for `filter`: OpenCV border padding, then depthwise expr.conv2d in NCHW."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._util import as_float, hwc, np_dtype, pad_image, restore, saturate
from mnnpy.expr.var import Var

CV_8U, CV_16S, CV_32F, CV_64F = 0, 3, 5, 6  # OpenCV depth codes accepted as ddepth


def _anchor(anchor: Sequence[int] | None, kw: int, kh: int) -> tuple[int, int]:
    ax, ay = (-1, -1) if anchor is None else (int(anchor[0]), int(anchor[1]))
    return (kw // 2 if ax < 0 else ax), (kh // 2 if ay < 0 else ay)


def correlate(src: Var, kernel: np.ndarray, anchor: Sequence[int] | None = None, border: int = cc.BORDER_DEFAULT,
              value: Any = 0) -> tuple[Var, bool]:
    """Float correlation of every channel with a 2-D kernel (OpenCV's filter2D geometry); (HWC result, was 2-D)."""
    v, was_2d = hwc(src)
    c = v.shape[2]
    kh, kw = kernel.shape
    ax, ay = _anchor(anchor, kw, kh)
    padded = pad_image(as_float(v), ay, kh - 1 - ay, ax, kw - 1 - ax, border, value)
    nchw = ex.unsqueeze(ex.transpose(padded, [2, 0, 1]), [0])
    w = np.ascontiguousarray(np.broadcast_to(kernel.astype(np.float32), (c, 1, kh, kw)))
    out = ex.conv2d(nchw, w, np.zeros(c, np.float32), group=c)
    return ex.transpose(ex.squeeze(out, [0]), [1, 2, 0]), was_2d


def sep_correlate(src: Var, kx: np.ndarray, ky: np.ndarray, anchor: Sequence[int] | None = None,
                  border: int = cc.BORDER_DEFAULT, value: Any = 0) -> tuple[Var, bool]:
    """Separable float correlation: rows with kx, then columns with ky (OpenCV's sepFilter2D)."""
    v, was_2d = hwc(src)
    c = v.shape[2]
    kx = np.asarray(kx, np.float64).ravel()
    ky = np.asarray(ky, np.float64).ravel()
    ax, ay = _anchor(anchor, kx.size, ky.size)
    padded = pad_image(as_float(v), ay, ky.size - 1 - ay, ax, kx.size - 1 - ax, border, value)
    x = ex.unsqueeze(ex.transpose(padded, [2, 0, 1]), [0])
    zeros = np.zeros(c, np.float32)
    if kx.size > 1 or kx[0] != 1:
        x = ex.conv2d(x, np.ascontiguousarray(np.broadcast_to(kx.astype(np.float32), (c, 1, 1, kx.size))), zeros,
                      group=c)
    if ky.size > 1 or ky[0] != 1:
        wy = np.broadcast_to(ky.astype(np.float32).reshape(-1, 1), (c, 1, ky.size, 1))
        x = ex.conv2d(x, np.ascontiguousarray(wy), zeros, group=c)
    return ex.transpose(ex.squeeze(x, [0]), [1, 2, 0]), was_2d


def finish(out: Var, was_2d: bool, src_dtype: np.dtype, ddepth: int = -1, half_up: bool = False,
           scale: float = 1.0, delta: float = 0.0) -> Var:
    """Scale, shift and convert a float filter result to the requested depth (ddepth -1: the source's)."""
    if scale != 1.0:
        out = out * float(scale)
    if delta != 0.0:
        out = out + float(delta)
    if ddepth < 0:
        want = np.dtype(src_dtype)
    else:
        want = {CV_8U: np.dtype(np.uint8), CV_16S: np.dtype(np.int16), CV_32F: np.dtype(np.float32),
                CV_64F: np.dtype(np.float32)}.get(int(ddepth), np.dtype(np.float32))
    if want == np.int16:  # no int16 Vars: int32 holding int16-saturated values
        out = ex.cast(ex.minimum(ex.maximum(ex.round(out), -32768.0), 32767.0), ex.int)
    elif want == np.uint8 and half_up:
        out = ex.cast(ex.minimum(ex.maximum(ex.floor(out + 0.5), 0.0), 255.0), ex.uint8)
    elif want != np.float32:
        out = saturate(out, want)
    return restore(out, was_2d)


def src_dtype(v: Var) -> np.dtype:
    """The element type of an image Var."""
    return np_dtype(v)
