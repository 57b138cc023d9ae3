"""Thresholds, arithmetic, channel and array helpers (MNN: `cv.threshold`, `adaptiveThreshold`, `addWeighted`,
`blendLinear`, `hconcat`, `vconcat`, `split`, `merge`, `normalize`, `mean`, `bitwise_*`, `copyTo`, `calcHist`).

All pixel work is expr ops; only the Otsu / triangle threshold search reads the histogram on the host.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._conv import CV_8U
from mnnpy.cv._util import as_float, floats, hwc, np_dtype, restore, saturate, to_np, to_var
from mnnpy.expr.var import Var


def _otsu(hist: np.ndarray) -> float:
    """OpenCV's Otsu search over a 256-bin histogram (between-class variance, FLT_EPSILON guards)."""
    eps = 1.1920929e-07
    p = hist / hist.sum()
    mu = float((np.arange(hist.size) * p).sum())
    q1 = mu1 = best = 0.0
    best_t = 0
    for i in range(hist.size):
        mu1 *= q1
        q1 += p[i]
        q2 = 1.0 - q1
        if min(q1, q2) < eps or max(q1, q2) > 1.0 - eps:
            continue
        mu1 = (mu1 + i * p[i]) / q1
        mu2 = (mu - q1 * mu1) / q2
        sigma = q1 * q2 * (mu1 - mu2) ** 2
        if sigma > best:
            best, best_t = sigma, i
    return float(best_t)


def threshold(src: Any, thresh: float, maxval: float, type: int) -> Var:
    """Fixed-level threshold (MNN: `cv.threshold`; as MNN, returns only the image, not (retval, image)).

    THRESH_OTSU picks the level from the uint8 histogram (computed on the host, as OpenCV does).
    """
    v = to_var(src)
    kind = type & cc.THRESH_MASK
    if type & cc.THRESH_OTSU:
        hist = np.bincount(to_np(v).astype(np.uint8).ravel(), minlength=256).astype(np.float64)
        thresh = _otsu(hist)
    is_u8 = np_dtype(v) == np.uint8
    t = float(math.floor(thresh)) if is_u8 else float(thresh)
    mv = float(round(maxval)) if is_u8 else float(maxval)
    x = as_float(v)
    above = ex.greater(x, floats(t))
    zero = x * 0.0
    if kind == cc.THRESH_BINARY:
        out = ex.select(above, zero + mv, zero)
    elif kind == cc.THRESH_BINARY_INV:
        out = ex.select(above, zero, zero + mv)
    elif kind == cc.THRESH_TRUNC:
        out = ex.select(above, zero + t, x)
    elif kind == cc.THRESH_TOZERO:
        out = ex.select(above, x, zero)
    elif kind == cc.THRESH_TOZERO_INV:
        out = ex.select(above, zero, x)
    else:
        raise ValueError(f"threshold: unknown type {type}")
    return saturate(out, np_dtype(v)) if np_dtype(v) != np.float32 else out


def adaptiveThreshold(src: Any, maxValue: float, adaptiveMethod: int, thresholdType: int,  # noqa: N803
                      blockSize: int, C: float) -> Var:  # noqa: N803 - cv2 names
    """Threshold against the local (box or Gaussian) mean minus C, uint8 (MNN: `cv.adaptiveThreshold`)."""
    from mnnpy.cv.filter import GaussianBlur, boxFilter

    v = to_var(src)
    border = cc.BORDER_REPLICATE | cc.BORDER_ISOLATED
    if adaptiveMethod == cc.ADAPTIVE_THRESH_MEAN_C:
        mean_img = boxFilter(v, -1, (blockSize, blockSize), None, True, border)
    else:
        # OpenCV blurs a float copy and rounds half to even (not its fixed-point uint8 Gaussian): ties differ
        mean_img = saturate(GaussianBlur(as_float(v), (blockSize, blockSize), 0, 0, border), np_dtype(v))
    diff = as_float(v) - as_float(mean_img)
    mv = float(round(maxValue))
    zero = diff * 0.0
    if thresholdType == cc.THRESH_BINARY:
        out = ex.select(ex.greater(diff, floats(-float(math.ceil(C)))), zero + mv, zero)
    else:
        out = ex.select(ex.less_equal(diff, floats(-float(math.floor(C)))), zero + mv, zero)
    return saturate(out, np.uint8)


def _fma32(x: Var, y: float, z: Var) -> Var:
    """float32 fused multiply-add x * y + z (one rounding), computed exactly in double then rounded once."""
    d = ex.const(np.array([y], np.float64), [1], ex.NCHW, ex.double)
    return ex.cast(ex.cast(x, ex.double) * d + ex.cast(z, ex.double), ex.float)


def _add_weighted_u8(a: Var, alpha: float, b: Var, beta: float, gamma: float) -> Var:
    """OpenCV's uint8 addWeighted: float32 weights; its SIMD loop (16 values per step over the whole image)
    computes fma(a, alpha, fma(b, beta, gamma)), the scalar tail fma(a, alpha, b * beta) + gamma; then rounds
    half to even and saturates."""
    al, be, ga = (float(np.float32(v)) for v in (alpha, beta, gamma))
    fa, fb = as_float(a), as_float(b)
    vec = _fma32(fa, al, _fma32(fb, be, floats(np.float32(ga))))
    tail = _fma32(fa, al, fb * floats(np.float32(be))) + floats(np.float32(ga))
    n = int(np.prod(a.shape))
    in_vec = (np.arange(n) < n // 16 * 16).astype(np.float32).reshape(a.shape)
    return saturate(ex.select(ex.equal(floats(in_vec), floats(1.0)), vec, tail), np.uint8)


def addWeighted(src1: Any, alpha: float, src2: Any, beta: float, gamma: float,
                dst: Any = None, dtype: int = -1) -> Var:
    """src1 * alpha + src2 * beta + gamma, saturated (MNN: `cv.addWeighted`; uint8 bit exact with OpenCV)."""
    a, b = to_var(src1), to_var(src2)
    if np_dtype(a) == np.uint8 and np_dtype(b) == np.uint8 and dtype in (-1, CV_8U):
        return _add_weighted_u8(a, alpha, b, beta, gamma)
    out = as_float(a) * float(alpha) + as_float(b) * float(beta) + float(gamma)
    return saturate(out, np_dtype(a)) if np_dtype(a) != np.float32 else out


def blendLinear(src1: Any, src2: Any, weights1: Any, weights2: Any) -> Var:
    """(w1 * src1 + w2 * src2) / (w1 + w2 + 1e-5) with per-pixel weights (MNN: `cv.blendLinear`)."""
    a, was_2d = hwc(to_var(src1))
    b, _ = hwc(to_var(src2))
    w1, _ = hwc(as_float(to_var(weights1)))
    w2, _ = hwc(as_float(to_var(weights2)))
    out = (as_float(a) * w1 + as_float(b) * w2) / (w1 + w2 + 1e-5)
    out = saturate(out, np_dtype(a)) if np_dtype(a) != np.float32 else out
    return restore(out, was_2d)


def hconcat(src: Sequence[Any]) -> Var:
    """Join images side by side (MNN: `cv.hconcat`)."""
    return ex.concat([to_var(s) for s in src], 1)


def vconcat(src: Sequence[Any]) -> Var:
    """Stack images vertically (MNN: `cv.vconcat`)."""
    return ex.concat([to_var(s) for s in src], 0)


def split(m: Any) -> list[Var]:
    """Channels of an HWC image as [H, W] Vars (MNN: `cv.split`)."""
    v, _ = hwc(to_var(m))
    c = v.shape[2]
    return [ex.squeeze(part, [2]) for part in ex.split(v, [1] * c, 2)] if c > 1 else [ex.squeeze(v, [2])]


def merge(mv: Sequence[Any]) -> Var:
    """Stack [H, W] (or [H, W, k]) planes into one HWC image (MNN: `cv.merge`)."""
    parts = [hwc(to_var(p))[0] for p in mv]
    return ex.concat(parts, 2)


def mean(src: Any, mask: Any = None) -> np.ndarray:
    """Per-channel mean padded to 4 values, float32 as MNN returns it (MNN: `cv.mean`)."""
    v, _ = hwc(as_float(to_var(src)))
    c = v.shape[2]
    if mask is None:
        m = ex.reduce_mean(v, [0, 1])
    else:
        w, _ = hwc(as_float(ex.not_equal(as_float(to_var(mask)), floats(0.0))))
        m = ex.reduce_sum(v * w, [0, 1]) / ex.maximum(ex.reduce_sum(w, [0, 1]), floats(1e-30))
    out = np.zeros(4, np.float32)
    out[:c] = m.read().ravel()[:4]
    return out


def _masked(result: Var, mask: Any, dst: Any) -> Var:
    if mask is None:
        return result
    res, was_2d = hwc(result)
    m, _ = hwc(to_var(mask))
    keep = ex.not_equal(as_float(m), floats(0.0))
    base = hwc(to_var(dst))[0] if dst is not None else res * 0
    base = base if np_dtype(base) == np_dtype(res) else ex.cast(base, res.dtype)
    return restore(ex.select(keep, res, base), was_2d)


def bitwise_and(src1: Any, src2: Any, dst: Any = None, mask: Any = None) -> Var:
    """Per-element AND, optionally only where mask != 0 (MNN: `cv.bitwise_and`)."""
    return _masked(ex.bitwise_and(to_var(src1), to_var(src2)), mask, dst)


def bitwise_or(src1: Any, src2: Any, dst: Any = None, mask: Any = None) -> Var:
    """Per-element OR (MNN: `cv.bitwise_or`)."""
    return _masked(ex.bitwise_or(to_var(src1), to_var(src2)), mask, dst)


def bitwise_xor(src1: Any, src2: Any, dst: Any = None, mask: Any = None) -> Var:
    """Per-element XOR (MNN: `cv.bitwise_xor`)."""
    return _masked(ex.bitwise_xor(to_var(src1), to_var(src2)), mask, dst)


def copyTo(src: Any, mask: Any = None, dst: Any = None) -> Var:
    """src where mask != 0, else dst (or zeros) (MNN: `cv.copyTo`)."""
    return _masked(to_var(src), mask, dst)


def normalize(src: Any, dst: Any = None, alpha: float | None = None, beta: float | None = None,
              norm_type: int | None = None, dtype: int | None = None, mask: Any = None) -> Var:
    """Scale to a norm (INF / L1 / L2) or to the range [alpha, beta] (NORM_MINMAX) (MNN: `cv.normalize`)."""
    a = 1.0 if alpha is None else float(alpha)
    b = 0.0 if beta is None else float(beta)
    kind = cc.NORM_L2 if norm_type is None else int(norm_type)
    v = to_var(src)
    x = as_float(v)
    axes = list(range(x.ndim))
    if kind == cc.NORM_MINMAX:
        lo, hi = ex.reduce_min(x, axes), ex.reduce_max(x, axes)
        dmin, dmax = min(a, b), max(a, b)
        span = hi - lo
        scale = ex.select(ex.greater(span, floats(1.1920929e-07)), (dmax - dmin) / ex.maximum(span, floats(1e-30)),
                          span * 0.0)
        out = x * scale + (dmin - lo * scale)
    else:
        if kind == cc.NORM_INF:
            n = ex.reduce_max(ex.abs(x), axes)
        elif kind == cc.NORM_L1:
            n = ex.reduce_sum(ex.abs(x), axes)
        else:
            n = ex.sqrt(ex.reduce_sum(x * x, axes))
        out = x * (a / ex.maximum(n, floats(1e-30)))
    want = np_dtype(v) if dtype is None or dtype < 0 else {0: np.dtype(np.uint8)}.get(int(dtype), np.dtype(np.float32))
    return saturate(out, want) if want != np.float32 else out


def calcHist(images: Sequence[Any], channels: Sequence[int], mask: Any, histSize: Sequence[int],  # noqa: N803
             ranges: Sequence[float], accumulate: bool = False) -> Var:
    """1-D histogram of one channel over uniform bins [lo, hi), float32 [histSize, 1] (MNN: `cv.calcHist`)."""
    v, _ = hwc(to_var(images[0]))
    ch = int(channels[0]) if len(channels) else 0
    x = ex.squeeze(ex.slice(v, [0, 0, ch], [v.shape[0], v.shape[1], 1]), [2])
    lo, hi = float(ranges[0]), float(ranges[1])
    n = int(histSize[0])
    if np_dtype(v) == np.uint8:  # OpenCV's 8-bit lookup: bin = floor(i * a + b) in double, then count bins
        a = n / (hi - lo)
        idx = np.floor(np.arange(256) * a - lo * a)
        lut = np.where((idx >= 0) & (idx < n), idx + 0.5, -1.0)
        x = ex.gather(floats(lut), ex.cast(x, ex.int), 0)
        lo, hi = 0.0, float(n)
    else:
        x = as_float(x)
        x = ex.select(ex.less(x, floats(hi)), x, x * 0.0 + (lo - 1.0))  # OpenCV's upper bound is exclusive
    if mask is not None:
        m, _ = hwc(to_var(mask))
        x = ex.select(ex.not_equal(as_float(ex.squeeze(m, [2])), floats(0.0)), x, x * 0.0 + (lo - 1.0))
    return ex.reshape(ex.histogram(x, n, lo, hi), [n, 1])
