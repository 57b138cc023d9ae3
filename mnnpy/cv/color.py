"""Colour conversion (MNN: `cv.cvtColor`, `cv.cvtColorTwoPlane`), built on expr ops.

uint8 conversions use OpenCV's fixed-point coefficients (int32 ops in the core) so that results match OpenCV
bit for bit where OpenCV is fixed-point (gray, YUV 4:2:0 -> RGB, RGB -> HSV); float images use the float formulas.
Gray results are [H, W, 1] as in MNN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._util import as_float, floats, ints, np_dtype, saturate, to_var
from mnnpy.expr.var import Var

_R2Y, _G2Y, _B2Y = 4899, 9617, 1868  # 0.299, 0.587, 0.114 in Q14 (OpenCV yuv_shift = 14), for YUV
_RY15, _GY15, _BY15 = 9798, 19235, 3735  # the same in Q15 summing to 1 << 15 (OpenCV's uint8 RGB -> gray)
# ITU-R BT.601 YUV 4:2:0 -> RGB, Q20 (OpenCV's ITUR_BT_601_* constants)
_CY, _CUB, _CUG, _CVG, _CVR, _SHIFT = 1220542, 2116026, -409993, -852492, 1673527, 20


def _ch(v: Var, idx: int) -> Var:
    return ex.gather(v, ints([idx]), 2)


def _pick(v: Var, order: list[int]) -> Var:
    return ex.gather(v, ints(order), 2)


def _alpha_like(v: Var) -> Var:
    full = 255.0 if np_dtype(v) == np.uint8 else 1.0
    alpha = as_float(_ch(v, 0)) * 0.0 + full
    return alpha if np_dtype(v) == np.float32 else ex.cast(alpha, v.dtype)


def _shr(x: Var, bits: int) -> Var:
    """Arithmetic right shift of an int32 Var (floor division by 2**bits)."""
    return ex.floordiv(x, ints(1 << bits))


def _to_gray(v: Var, bgr: bool) -> Var:
    b, g, r = (_ch(v, 0), _ch(v, 1), _ch(v, 2)) if bgr else (_ch(v, 2), _ch(v, 1), _ch(v, 0))
    if np_dtype(v) == np.uint8:
        acc = ex.cast(b, ex.int) * _BY15 + ex.cast(g, ex.int) * _GY15 + ex.cast(r, ex.int) * _RY15 + (1 << 14)
        return ex.cast(_shr(acc, 15), ex.uint8)
    return as_float(b) * 0.114 + as_float(g) * 0.587 + as_float(r) * 0.299


def _from_gray(v: Var, alpha: bool) -> Var:
    g = v if v.ndim == 3 else ex.unsqueeze(v, [2])
    parts = [g, g, g] + ([_alpha_like(g)] if alpha else [])
    return ex.concat(parts, 2)


def _hsv_tables(full: bool) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(256, dtype=np.float64)
    i[0] = 1.0
    sdiv = np.round((255 << 12) / i).astype(np.int32)
    hdiv = np.round(((256 if full else 180) << 12) / (6.0 * i)).astype(np.int32)
    sdiv[0] = hdiv[0] = 0
    return sdiv, hdiv


def _to_hsv(v: Var, bgr: bool, full: bool) -> Var:
    b, g, r = (_ch(v, 0), _ch(v, 1), _ch(v, 2)) if bgr else (_ch(v, 2), _ch(v, 1), _ch(v, 0))
    if np_dtype(v) == np.uint8:
        b, g, r = ex.cast(b, ex.int), ex.cast(g, ex.int), ex.cast(r, ex.int)
        vmax = ex.maximum(ex.maximum(r, g), b)
        diff = vmax - ex.minimum(ex.minimum(r, g), b)
        sdiv, hdiv = _hsv_tables(full)
        s = _shr(diff * ex.gather(ints(sdiv), vmax, 0) + (1 << 11), 12)
        h = ex.select(ex.equal(vmax, r), g - b, ex.select(ex.equal(vmax, g), b - r + diff * 2, r - g + diff * 4))
        h = _shr(h * ex.gather(ints(hdiv), diff, 0) + (1 << 11), 12)
        h = ex.select(ex.less(h, ints(0)), h + (256 if full else 180), h)
        out = ex.concat([h, s, vmax], 2)
        return ex.cast(ex.minimum(ex.maximum(out, ints(0)), ints(255)), ex.uint8)
    b, g, r = as_float(b), as_float(g), as_float(r)
    vmax = ex.maximum(ex.maximum(r, g), b)
    diff = vmax - ex.minimum(ex.minimum(r, g), b)
    s = diff / (ex.abs(vmax) + 1.1920929e-07)
    k = 60.0 / (diff + 1.1920929e-07)
    h_rest = ex.select(ex.equal(vmax, g), (b - r) * k + 120.0, (r - g) * k + 240.0)
    h = ex.select(ex.equal(vmax, r), (g - b) * k, h_rest)
    h = ex.select(ex.less(h, floats(0.0)), h + 360.0, h)
    return ex.concat([h, s, vmax], 2)


def _from_hsv(v: Var, bgr: bool, full: bool) -> Var:
    is_u8 = np_dtype(v) == np.uint8
    h, s, val = as_float(_ch(v, 0)), as_float(_ch(v, 1)), as_float(_ch(v, 2))
    if is_u8:
        h = h * (6.0 / (255.0 if full else 180.0))
        s, val = s * (1.0 / 255.0), val * (1.0 / 255.0)
    else:
        h = h * (1.0 / 60.0)
    h = h - ex.floor(h * (1.0 / 6.0)) * 6.0
    sector = ex.floor(h)
    frac = h - sector
    tab = [val, val * (1.0 - s), val * (1.0 - s * frac), val * (1.0 - s * (1.0 - frac))]
    table = [(1, 3, 0), (1, 0, 2), (3, 0, 1), (0, 2, 1), (0, 1, 3), (2, 1, 0)]  # (b, g, r) per sector
    chans = []
    for c in range(3):
        out = tab[table[5][c]]
        for k in range(4, -1, -1):
            out = ex.select(ex.equal(sector, floats(float(k))), tab[table[k][c]], out)
        chans.append(out)
    b, g, r = chans
    out = ex.concat([b, g, r] if bgr else [r, g, b], 2)
    return saturate(out * 255.0, np.uint8) if is_u8 else out


def _to_yuv444(v: Var, bgr: bool) -> Var:
    b, g, r = (_ch(v, 0), _ch(v, 1), _ch(v, 2)) if bgr else (_ch(v, 2), _ch(v, 1), _ch(v, 0))
    if np_dtype(v) == np.uint8:
        b, g, r = ex.cast(b, ex.int), ex.cast(g, ex.int), ex.cast(r, ex.int)
        y = _shr(b * _B2Y + g * _G2Y + r * _R2Y + (1 << 13), 14)
        u = _shr((b - y) * 8061 + (128 << 14) + (1 << 13), 14)
        w = _shr((r - y) * 14369 + (128 << 14) + (1 << 13), 14)
        return ex.cast(ex.minimum(ex.maximum(ex.concat([y, u, w], 2), ints(0)), ints(255)), ex.uint8)
    b, g, r = as_float(b), as_float(g), as_float(r)
    y = b * 0.114 + g * 0.587 + r * 0.299
    return ex.concat([y, (b - y) * 0.492 + 0.5, (r - y) * 0.877 + 0.5], 2)


def _from_yuv444(v: Var, bgr: bool) -> Var:
    if np_dtype(v) == np.uint8:
        y, u, w = ex.cast(_ch(v, 0), ex.int), ex.cast(_ch(v, 1), ex.int) - 128, ex.cast(_ch(v, 2), ex.int) - 128
        b = y + _shr(u * 33292 + (1 << 13), 14)
        g = y + _shr(w * -9519 + u * -6472 + (1 << 13), 14)
        r = y + _shr(w * 18678 + (1 << 13), 14)
        out = ex.concat([b, g, r] if bgr else [r, g, b], 2)
        return ex.cast(ex.minimum(ex.maximum(out, ints(0)), ints(255)), ex.uint8)
    y, u, w = as_float(_ch(v, 0)), as_float(_ch(v, 1)) - 0.5, as_float(_ch(v, 2)) - 0.5
    b, g, r = y + u * 2.032, y - u * 0.395 - w * 0.581, y + w * 1.140
    return ex.concat([b, g, r] if bgr else [r, g, b], 2)


# code -> (layout, bgr output, alpha output); layouts: nv12, nv21, i420 (IYUV), yv12
_YUV420 = {
    cc.COLOR_YUV2RGB_NV12: ("nv12", False, False), cc.COLOR_YUV2BGR_NV12: ("nv12", True, False),
    cc.COLOR_YUV2RGB_NV21: ("nv21", False, False), cc.COLOR_YUV2BGR_NV21: ("nv21", True, False),
    cc.COLOR_YUV2RGBA_NV12: ("nv12", False, True), cc.COLOR_YUV2BGRA_NV12: ("nv12", True, True),
    cc.COLOR_YUV2RGBA_NV21: ("nv21", False, True), cc.COLOR_YUV2BGRA_NV21: ("nv21", True, True),
    cc.COLOR_YUV2RGB_YV12: ("yv12", False, False), cc.COLOR_YUV2BGR_YV12: ("yv12", True, False),
    cc.COLOR_YUV2RGB_IYUV: ("i420", False, False), cc.COLOR_YUV2BGR_IYUV: ("i420", True, False),
    cc.COLOR_YUV2RGBA_YV12: ("yv12", False, True), cc.COLOR_YUV2BGRA_YV12: ("yv12", True, True),
    cc.COLOR_YUV2RGBA_IYUV: ("i420", False, True), cc.COLOR_YUV2BGRA_IYUV: ("i420", True, True),
}


def _yuv420_planes(v: Var, layout: str) -> tuple[Var, Var, Var, int, int]:
    rows, w = v.shape[0], v.shape[1]
    h = rows * 2 // 3
    flat = ex.reshape(v, [rows * w])
    y = ex.reshape(ex.slice(flat, [0], [h * w]), [h, w])
    q = (h // 2) * (w // 2)
    if layout in ("nv12", "nv21"):
        uv = ex.reshape(ex.slice(flat, [h * w], [2 * q]), [h // 2, w // 2, 2])
        first = ex.reshape(ex.slice(uv, [0, 0, 0], [h // 2, w // 2, 1]), [h // 2, w // 2])
        second = ex.reshape(ex.slice(uv, [0, 0, 1], [h // 2, w // 2, 1]), [h // 2, w // 2])
        u, w_ = (first, second) if layout == "nv12" else (second, first)
    else:
        p1 = ex.reshape(ex.slice(flat, [h * w], [q]), [h // 2, w // 2])
        p2 = ex.reshape(ex.slice(flat, [h * w + q], [q]), [h // 2, w // 2])
        u, w_ = (p1, p2) if layout == "i420" else (p2, p1)
    return y, _up2(u, h, w), _up2(w_, h, w), h, w


def _up2(p: Var, h: int, w: int) -> Var:
    """Nearest 2x upsampling of a chroma plane (reshape + broadcast: one raster region per axis)."""
    return ex.reshape(ex.broadcast_to(ex.reshape(p, [h // 2, 1, w // 2, 1]), [h // 2, 2, w // 2, 2]), [h, w])


def _from_yuv420(v: Var, layout: str, bgr: bool, alpha: bool) -> Var:
    if v.ndim == 3:
        v = ex.squeeze(v, [2])
    y, u, w, _, _ = _yuv420_planes(v, layout)
    yi = ex.maximum(ex.cast(y, ex.int) - 16, ints(0)) * _CY
    ui, wi = ex.cast(u, ex.int) - 128, ex.cast(w, ex.int) - 128
    half = 1 << (_SHIFT - 1)
    r = _shr(yi + wi * _CVR + half, _SHIFT)
    g = _shr(yi + wi * _CVG + ui * _CUG + half, _SHIFT)
    b = _shr(yi + ui * _CUB + half, _SHIFT)
    chans = [b, g, r] if bgr else [r, g, b]
    out = ex.cast(ex.minimum(ex.maximum(ex.stack(chans, 2), ints(0)), ints(255)), ex.uint8)
    if alpha:
        out = ex.concat([out, _alpha_like(out)], 2)
    return out


_CRY, _CGY, _CBY, _CRU, _CGU, _CBU, _CGV, _CBV = 269484, 528482, 102760, -155188, -305135, 460324, -385875, -74448


def _to_yuv420(v: Var, bgr: bool, yv12: bool) -> Var:
    """RGB(A) -> planar YUV 4:2:0 (I420 / YV12) with OpenCV's Q20 coefficients; chroma from each 2x2 block's
    top-left pixel, as OpenCV does."""
    b, g, r = (_ch(v, 0), _ch(v, 1), _ch(v, 2)) if bgr else (_ch(v, 2), _ch(v, 1), _ch(v, 0))
    b, g, r = ex.cast(b, ex.int), ex.cast(g, ex.int), ex.cast(r, ex.int)
    h, w = v.shape[0], v.shape[1]
    half = 1 << (_SHIFT - 1)
    y = _shr(r * _CRY + g * _CGY + b * _CBY + (half + (16 << _SHIFT)), _SHIFT)
    rows, cols = ints(np.arange(0, h, 2)), ints(np.arange(0, w, 2))
    r2, g2, b2 = (ex.gather(ex.gather(c, rows, 0), cols, 1) for c in (r, g, b))
    u = _shr(r2 * _CRU + g2 * _CGU + b2 * _CBU + (half + (128 << _SHIFT)), _SHIFT)
    w_ = _shr(r2 * _CBU + g2 * _CGV + b2 * _CBV + (half + (128 << _SHIFT)), _SHIFT)
    planes = [y, w_, u] if yv12 else [y, u, w_]
    flat = ex.concat([ex.reshape(p, [-1]) for p in planes], 0)
    out = ex.cast(ex.minimum(ex.maximum(flat, ints(0)), ints(255)), ex.uint8)
    return ex.reshape(out, [h * 3 // 2, w])


_TO_YUV420 = {
    cc.COLOR_RGB2YUV_I420: (False, False), cc.COLOR_BGR2YUV_I420: (True, False),
    cc.COLOR_RGBA2YUV_I420: (False, False), cc.COLOR_BGRA2YUV_I420: (True, False),
    cc.COLOR_RGB2YUV_YV12: (False, True), cc.COLOR_BGR2YUV_YV12: (True, True),
    cc.COLOR_RGBA2YUV_YV12: (False, True), cc.COLOR_BGRA2YUV_YV12: (True, True),
}


def _gray_from_yuv420(v: Var) -> Var:
    if v.ndim == 3:
        v = ex.squeeze(v, [2])
    h = v.shape[0] * 2 // 3
    return ex.unsqueeze(ex.slice(v, [0, 0], [h, v.shape[1]]), [2])


_SIMPLE = {
    cc.COLOR_BGR2BGRA: ([0, 1, 2], True), cc.COLOR_BGRA2BGR: ([0, 1, 2], False),
    cc.COLOR_BGR2RGBA: ([2, 1, 0], True), cc.COLOR_RGBA2BGR: ([2, 1, 0], False),
    cc.COLOR_BGR2RGB: ([2, 1, 0], False), cc.COLOR_BGRA2RGBA: ([2, 1, 0, 3], False),
}
_GRAY = {cc.COLOR_BGR2GRAY: True, cc.COLOR_RGB2GRAY: False, cc.COLOR_BGRA2GRAY: True, cc.COLOR_RGBA2GRAY: False}
_HSV = {cc.COLOR_BGR2HSV: (True, False), cc.COLOR_RGB2HSV: (False, False), cc.COLOR_BGR2HSV_FULL: (True, True),
        cc.COLOR_RGB2HSV_FULL: (False, True)}
_HSV_BACK = {cc.COLOR_HSV2BGR: (True, False), cc.COLOR_HSV2RGB: (False, False), cc.COLOR_HSV2BGR_FULL: (True, True),
             cc.COLOR_HSV2RGB_FULL: (False, True)}
_YUV = {cc.COLOR_BGR2YUV: True, cc.COLOR_RGB2YUV: False}
_YUV_BACK = {cc.COLOR_YUV2BGR: True, cc.COLOR_YUV2RGB: False}
_YUV420_GRAY = {cc.COLOR_YUV2GRAY_420, cc.COLOR_YUV2GRAY_NV21, cc.COLOR_YUV2GRAY_NV12, cc.COLOR_YUV2GRAY_IYUV,
                cc.COLOR_YUV2GRAY_YV12, cc.COLOR_YUV2GRAY_I420}


def cvtColor(src: Any, code: int, dstCn: int = 0) -> Var:  # noqa: N803 - cv2 names
    """Convert an image between colour spaces (MNN: `cv.cvtColor`, OpenCV's `COLOR_*` codes).

    Args:
        src: HWC image Var or array (uint8 or float32); YUV 4:2:0 input is [H*3/2, W] (or [H*3/2, W, 1]).
        code: a `COLOR_*` constant.
        dstCn: ignored (the code fixes the channel count), kept for cv2's signature.

    Returns:
        The converted HWC Var (gray as [H, W, 1]).
    """
    v = to_var(src)
    if code in _SIMPLE:
        order, alpha = _SIMPLE[code]
        out = _pick(v, order)
        return ex.concat([out, _alpha_like(v)], 2) if alpha else out
    if code in _GRAY:
        return _to_gray(v, _GRAY[code])
    if code in (cc.COLOR_GRAY2BGR, cc.COLOR_GRAY2BGRA):
        return _from_gray(v, code == cc.COLOR_GRAY2BGRA)
    if code in _HSV:
        return _to_hsv(v, *_HSV[code])
    if code in _HSV_BACK:
        return _from_hsv(v, *_HSV_BACK[code])
    if code in _YUV:
        return _to_yuv444(v, _YUV[code])
    if code in _YUV_BACK:
        return _from_yuv444(v, _YUV_BACK[code])
    if code in _YUV420:
        return _from_yuv420(v, *_YUV420[code])
    if code in _YUV420_GRAY:
        return _gray_from_yuv420(v)
    if code in _TO_YUV420:
        return _to_yuv420(v, *_TO_YUV420[code])
    raise NotImplementedError(f"cvtColor: conversion code {code} is not supported by mnnpy.cv")


def cvtColorTwoPlane(src1: Any, src2: Any, code: int) -> Var:
    """YUV 4:2:0 semi-planar (NV12 / NV21) from a Y plane and an interleaved UV plane (MNN: `cv.cvtColorTwoPlane`)."""
    y, uv = to_var(src1), to_var(src2)
    h, w = y.shape[0], y.shape[1]
    both = ex.concat([ex.reshape(y, [h * w]), ex.reshape(uv, [h * w // 2])], 0)
    return cvtColor(ex.reshape(both, [h * 3 // 2, w]), code)
