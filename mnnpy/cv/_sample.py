"""Sampling kernels shared by resize, warps, remap and getRectSubPix.

Host numpy computes tap indices and weights (small tables, as MNN's C++ computes its coefficient tables); the
pixel work (gather, weighted sum, saturation) is expr ops evaluated by the core.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._util import as_float, floats, hwc, ints, np_dtype, saturate, scalar4
from mnnpy.expr.var import Var

INTER_BITS = 5  # OpenCV quantises remap/warp sub-pixel positions to 1/32 pixel
_A = -0.75  # OpenCV's bicubic coefficient


def cubic_weights(t: np.ndarray) -> np.ndarray:
    """OpenCV's 4 bicubic weights for fractional positions `t` (shape [..., 4])."""
    w0 = ((_A * (t + 1) - 5 * _A) * (t + 1) + 8 * _A) * (t + 1) - 4 * _A
    w1 = ((_A + 2) * t - (_A + 3)) * t * t + 1
    w2 = ((_A + 2) * (1 - t) - (_A + 3)) * (1 - t) * (1 - t) + 1
    return np.stack([w0, w1, w2, 1.0 - w0 - w1 - w2], -1)


def _border_map(pos: np.ndarray, n: int, mode: int) -> np.ndarray:
    """Map integer positions into [0, n) by an OpenCV border mode; -1 marks the constant border."""
    if mode == cc.BORDER_REPLICATE:
        return np.clip(pos, 0, n - 1)
    if mode == cc.BORDER_CONSTANT or mode == cc.BORDER_TRANSPARENT:
        return np.where((pos >= 0) & (pos < n), pos, -1)
    if mode == cc.BORDER_WRAP:
        return np.mod(pos, n)
    if n == 1:
        return np.zeros_like(pos)
    if mode == cc.BORDER_REFLECT:
        p = np.mod(pos, 2 * n)
        return np.where(p < n, p, 2 * n - 1 - p)
    p = np.mod(pos, 2 * n - 2)
    return np.where(p < n, p, 2 * n - 2 - p)


def _taps(mx: np.ndarray, my: np.ndarray, interpolation: int, quantize: bool) -> tuple[list, list, list]:
    """Per-tap integer x, y positions and weights for sampling at (mx, my)."""
    if interpolation == cc.INTER_NEAREST:
        return [np.round(mx).astype(np.int64)], [np.round(my).astype(np.int64)], [np.ones_like(mx)]
    if quantize:
        mx = np.round(mx * (1 << INTER_BITS)) / (1 << INTER_BITS)
        my = np.round(my * (1 << INTER_BITS)) / (1 << INTER_BITS)
    x0, y0 = np.floor(mx), np.floor(my)
    tx, ty = mx - x0, my - y0
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    if interpolation == cc.INTER_CUBIC:
        wx, wy = cubic_weights(tx), cubic_weights(ty)
        offs = range(-1, 3)
    else:
        wx, wy = np.stack([1 - tx, tx], -1), np.stack([1 - ty, ty], -1)
        offs = range(2)
    xs, ys, ws = [], [], []
    for j, dy in enumerate(offs):
        for i, dx in enumerate(offs):
            xs.append(x0 + dx)
            ys.append(y0 + dy)
            ws.append(wy[..., j] * wx[..., i])
    return xs, ys, ws


def sample(src: Var, mx: np.ndarray, my: np.ndarray, interpolation: int = cc.INTER_LINEAR,
           border: int = cc.BORDER_CONSTANT, value: Any = 0, quantize: bool = True) -> Var:
    """dst[y, x] = src(mx[y, x], my[y, x]) with OpenCV's interpolation and border semantics (the core of remap)."""
    v, was_2d = hwc(src)
    h, w, c = v.shape
    dh, dw = mx.shape
    if interpolation not in (cc.INTER_NEAREST, cc.INTER_LINEAR, cc.INTER_CUBIC):
        interpolation = cc.INTER_LINEAR
    xs, ys, ws = _taps(mx.astype(np.float64), my.astype(np.float64), interpolation, quantize)
    flat = ex.reshape(as_float(v), [h * w, c])
    pad_row = ex.reshape(floats(scalar4(value, c)), [1, c])
    table = ex.concat([flat, pad_row], 0)  # row h*w holds the constant border value
    acc = None
    for x, y, wt in zip(xs, ys, ws, strict=True):
        bx, by = _border_map(x, w, border), _border_map(y, h, border)
        idx = np.where((bx < 0) | (by < 0), h * w, by * w + bx).ravel()
        term = ex.gather(table, ints(idx), 0)
        if interpolation != cc.INTER_NEAREST:
            term = term * floats(wt.reshape(-1, 1))
        acc = term if acc is None else acc + term
    assert acc is not None
    out = ex.reshape(acc, [dh, dw, c])
    out = saturate(out, np_dtype(v)) if np_dtype(v) != np.float32 else out
    return ex.squeeze(out, [2]) if was_2d else out
