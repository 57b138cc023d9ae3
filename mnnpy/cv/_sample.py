"""Sampling kernels shared by resize, warps, remap and getRectSubPix.

Host numpy computes tap indices and weights (small tables, as MNN's C++ computes its coefficient tables); the
pixel work (gather, weighted sum, saturation) is expr ops evaluated by the core.

warpAffine / warpPerspective / remap follow OpenCV's remap arithmetic: source positions in fixed point with 1/32
pixel steps (INTER_BITS = 5), the integer part kept in int16, and the weights taken from the 32 x 32 table of
sub-pixel phases (float32 products of the 1-D weights; for uint8 the same rounded to Q15, INTER_REMAP_COEF_BITS,
with the bicubic sums nudged back to 1.0 as OpenCV does), uint8 results rounded by (sum + 2^14) >> 15.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._util import as_float, border_map, floats, hwc, ints, np_dtype, saturate, scalar4
from mnnpy.expr.var import Var

INTER_BITS = 5  # OpenCV quantises remap/warp sub-pixel positions to 1/32 pixel
TAB_SIZE = 1 << INTER_BITS
COEF_BITS = 15  # INTER_REMAP_COEF_BITS: Q15 uint8 interpolation weights
_A = -0.75  # OpenCV's bicubic coefficient


def cubic_weights(t: np.ndarray) -> np.ndarray:
    """OpenCV's 4 bicubic weights for fractional positions `t` (shape [..., 4])."""
    w0 = ((_A * (t + 1) - 5 * _A) * (t + 1) + 8 * _A) * (t + 1) - 4 * _A
    w1 = ((_A + 2) * t - (_A + 3)) * t * t + 1
    w2 = ((_A + 2) * (1 - t) - (_A + 3)) * (1 - t) * (1 - t) + 1
    return np.stack([w0, w1, w2, 1.0 - w0 - w1 - w2], -1)


def cubic_weights_f32(t: np.ndarray) -> np.ndarray:
    """`cubic_weights` evaluated in float32 step by step, as OpenCV's interpolateCubic (shape [..., 4])."""
    with np.errstate(over="ignore"):
        t = np.asarray(t, np.float32)
        return cubic_weights(t).astype(np.float32)


def _adjust_q15(itab: np.ndarray) -> None:
    """Make each bicubic Q15 kernel sum to 2^15 as OpenCV does: the error goes to the largest (sum too small) or
    smallest (too big) weight among the taps (2, 2), (2, 3), (3, 2), (3, 3), scanned in that order."""
    for kern in itab:
        diff = int(kern.sum()) - (1 << COEF_BITS)
        if diff == 0:
            continue
        lo = hi = (2, 2)
        for pos in ((2, 2), (2, 3), (3, 2), (3, 3)):
            if kern[pos] < kern[lo]:
                lo = pos
            elif kern[pos] > kern[hi]:
                hi = pos
        kern[hi if diff < 0 else lo] -= diff


@functools.lru_cache(maxsize=4)
def interp_tables(cubic: bool) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's 2-D interpolation tables for the 32 x 32 sub-pixel phases (index ty * 32 + tx): float32 and Q15
    int32 weights, each [1024, k * k] (row tap major, k = 4 for bicubic, 2 for bilinear)."""
    t = np.arange(TAB_SIZE, dtype=np.float32) * np.float32(1.0 / TAB_SIZE)
    one = cubic_weights_f32(t) if cubic else np.stack([np.float32(1) - t, t], -1)
    k = one.shape[1]
    ftab = (one[:, None, :, None] * one[None, :, None, :]).astype(np.float32)  # [ty, tx, ky, kx]
    itab = np.rint(ftab * np.float32(1 << COEF_BITS)).astype(np.int64).reshape(TAB_SIZE * TAB_SIZE, k, k)
    if cubic:
        _adjust_q15(itab)
    return ftab.reshape(-1, k * k), itab.reshape(-1, k * k).astype(np.int32)


def _weighted_taps(v: Var, taps: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]], border: int, value: Any,
                   integer: bool) -> Var:
    """Sum over taps of gather(v at (x, y) through `border`) * weight, as [N, c]; int32 when `integer`."""
    h, w, c = v.shape
    fill = scalar4(value, c)
    if integer:
        flat = ex.cast(ex.reshape(v, [h * w, c]), ex.int)
        pad = ints(np.clip(np.rint(fill), 0, 255).reshape(1, c))  # saturate_cast<uchar>(borderValue)
    else:
        flat = ex.reshape(as_float(v), [h * w, c])
        pad = floats(fill.reshape(1, c))
    table = ex.concat([flat, pad], 0)  # row h*w holds the constant border value
    acc = None
    for x, y, wt in taps:
        bx, by = border_map(x, w, border), border_map(y, h, border)
        term = ex.gather(table, ints(np.where((bx < 0) | (by < 0), h * w, by * w + bx).ravel()), 0)
        if wt is not None:
            term = term * (ints(wt.reshape(-1, 1)) if integer else floats(wt.reshape(-1, 1)))
        acc = term if acc is None else acc + term
    assert acc is not None
    return acc


def _finish(acc: Var, v: Var, shape: tuple[int, int], was_2d: bool) -> Var:
    out = ex.reshape(acc, [shape[0], shape[1], v.shape[2]])
    dt = np_dtype(v)
    if dt == np.uint8:
        out = ex.cast(out, ex.uint8) if np_dtype(out) != np.float32 else saturate(out, dt)
    elif dt != np.float32:
        out = saturate(out, dt)
    return ex.squeeze(out, [2]) if was_2d else out


def sample_fixed(src: Var, fx: np.ndarray, fy: np.ndarray, interpolation: int = cc.INTER_LINEAR,
                 border: int = cc.BORDER_CONSTANT, value: Any = 0) -> Var:
    """dst = src at OpenCV's fixed-point positions: whole pixels for INTER_NEAREST, else 1/32-pixel integers
    (`fx >> 5` the pixel, `fx & 31` the phase), interpolated with OpenCV's remap tables."""
    v, was_2d = hwc(src)
    fx, fy = np.asarray(fx, np.int64), np.asarray(fy, np.int64)
    if interpolation not in (cc.INTER_NEAREST, cc.INTER_CUBIC):
        interpolation = cc.INTER_LINEAR
    if interpolation == cc.INTER_NEAREST:
        ix, iy = np.clip(fx, -32768, 32767), np.clip(fy, -32768, 32767)
        acc = _weighted_taps(v, [(ix, iy, None)], border, value, False)
        return _finish(acc, v, fx.shape, was_2d)
    u8 = np_dtype(v) == np.uint8
    cubic = interpolation == cc.INTER_CUBIC
    ftab, itab = interp_tables(cubic)
    wts = (itab if u8 else ftab)[((fy & (TAB_SIZE - 1)) * TAB_SIZE + (fx & (TAB_SIZE - 1))).ravel()]
    ix = np.clip(fx >> INTER_BITS, -32768, 32767)  # OpenCV keeps the integer part as int16
    iy = np.clip(fy >> INTER_BITS, -32768, 32767)
    offs = range(-1, 3) if cubic else range(2)
    taps = [(ix + dx, iy + dy, wts[:, i * len(offs) + j]) for i, dy in enumerate(offs) for j, dx in enumerate(offs)]
    acc = _weighted_taps(v, taps, border, value, u8)
    if u8:
        half = 1 << (COEF_BITS - 1)
        acc = ex.minimum(ex.maximum(ex.floordiv(acc + ints(half), ints(1 << COEF_BITS)), ints(0)), ints(255))
    return _finish(acc, v, fx.shape, was_2d)


def _float_taps(mx: np.ndarray, my: np.ndarray, interpolation: int) -> list:
    """Taps (x, y, float64 weight) at exact, unquantised positions."""
    if interpolation == cc.INTER_NEAREST:
        return [(np.round(mx).astype(np.int64), np.round(my).astype(np.int64), None)]
    x0, y0 = np.floor(mx), np.floor(my)
    tx, ty = mx - x0, my - y0
    if interpolation == cc.INTER_CUBIC:
        wx, wy, offs = cubic_weights(tx), cubic_weights(ty), range(-1, 3)
    else:
        wx, wy, offs = np.stack([1 - tx, tx], -1), np.stack([1 - ty, ty], -1), range(2)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    return [(x0 + dx, y0 + dy, wy[..., j] * wx[..., i]) for j, dy in enumerate(offs) for i, dx in enumerate(offs)]


def sample(src: Var, mx: np.ndarray, my: np.ndarray, interpolation: int = cc.INTER_LINEAR,
           border: int = cc.BORDER_CONSTANT, value: Any = 0, quantize: bool = True) -> Var:
    """dst[y, x] = src(mx[y, x], my[y, x]) with float maps. With `quantize` (OpenCV's remap) nearest rounds the
    float32 map half to even and linear / cubic round map * 32 to the 1/32 grid (`sample_fixed`); without it the
    taps are weighted at the exact positions in float (getRectSubPix, CVImageProcess)."""
    if interpolation not in (cc.INTER_NEAREST, cc.INTER_CUBIC):
        interpolation = cc.INTER_LINEAR
    if not quantize:
        v, was_2d = hwc(src)
        mx, my = np.asarray(mx, np.float64), np.asarray(my, np.float64)
        return _finish(_weighted_taps(v, _float_taps(mx, my, interpolation), border, value, False), v, mx.shape,
                       was_2d)
    mx, my = np.asarray(mx, np.float32), np.asarray(my, np.float32)
    scale = 1 if interpolation == cc.INTER_NEAREST else TAB_SIZE
    with np.errstate(invalid="ignore"):
        fx = np.rint(np.clip(np.nan_to_num(mx * np.float32(scale)), -2.0**31, 2.0**31 - 1))
        fy = np.rint(np.clip(np.nan_to_num(my * np.float32(scale)), -2.0**31, 2.0**31 - 1))
    return sample_fixed(src, fx.astype(np.int64), fy.astype(np.int64), interpolation, border, value)


def rect_sub_pix(src: Var, pw: int, ph: int, cx: float, cy: float) -> Var:
    """OpenCV's getRectSubPix: one bilinear phase for the whole patch (float32; Q16 weights for uint8, rounded by
    (sum + 2^15) >> 16); where a tap pair leaves the image, the pair collapses onto the clamped row / column with
    the 1-D weights (1 - b, b) across rows, as OpenCV's adjusted-rectangle loop does."""
    v, was_2d = hwc(src)
    h, w, _ = v.shape
    u8 = np_dtype(v) == np.uint8
    one = np.float32(1)
    fx = np.float32(cx) - np.float32((pw - 1) * 0.5)
    fy = np.float32(cy) - np.float32((ph - 1) * 0.5)
    ix, iy = int(np.floor(fx)), int(np.floor(fy))
    a, b = np.float32(fx - np.float32(ix)), np.float32(fy - np.float32(iy))
    quad = np.array([(one - a) * (one - b), a * (one - b), (one - a) * b, a * b, one - b, b], np.float32)
    wt = np.rint(quad * np.float32(1 << 16)).astype(np.int64) if u8 else quad
    xs = ix + np.arange(pw)[None, :].repeat(ph, 0)
    ys = iy + np.arange(ph)[:, None].repeat(pw, 1)
    xok, yok = (xs >= 0) & (xs < w - 1), (ys >= 0) & (ys < h - 1)
    c0, r0 = np.clip(xs, 0, w - 1), np.clip(ys, 0, h - 1)
    c1, r1 = np.where(xok, c0 + 1, c0), np.where(yok, r0 + 1, r0)
    zero = np.zeros_like(wt[0])
    w00, w01, w10, w11 = (np.where(xok, wt[k], alt) for k, alt in ((0, wt[4]), (1, zero), (2, wt[5]), (3, zero)))
    taps = [(c0, r0, w00), (c1, r0, w01), (c0, r1, w10), (c1, r1, w11)]
    acc = _weighted_taps(v, taps, cc.BORDER_REPLICATE, 0, u8)
    if u8:
        acc = ex.floordiv(acc + ints(1 << 15), ints(1 << 16))
    return _finish(acc, v, (ph, pw), was_2d)
