"""uint8 resize bit-exact with OpenCV 4.14's own (non-IPP) code: its coefficient tables on the host, the pixel
arithmetic as expr ops in the same integer / float32 steps.

- INTER_LINEAR (and INTER_AREA upscaling, which is linear with area-style phases): float32 tap positions, Q11
  weights rounded one by one, an integer row pass, then the SIMD column rounding
  ((r0 >> 4) * b0 >> 16) + ((r1 >> 4) * b1 >> 16) + 2 >> 2.
- INTER_CUBIC: float32 positions, Q11 weights of the float32 bicubic polynomial, an integer row pass (clamped
  taps); the column pass runs in float32 (rows * (beta * 2^-22), summed from the last tap to the first, rounded
  half to even) on the first multiple of 8 values of each output row, and in integers ((sum + 2^21) >> 22) on the
  rest, as OpenCV's vector loop and its scalar tail do.
- INTER_AREA downscaling: integer factors take the block mean (sum * float32(1 / area), rounded half to even;
  2 x 2 blocks (sum + 2) >> 2; blocks cut by the border sum / count); other factors the float32 area weights,
  accumulated tap by tap along x, then along y, then rounded.
"""

from __future__ import annotations

import math

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv._sample import cubic_weights_f32
from mnnpy.cv._util import as_float, floats, ints
from mnnpy.expr.var import Var

_DBL_EPS = 2.220446049250313e-16


def _to_u8(chw: Var) -> Var:
    out = ex.minimum(ex.maximum(chw, ints(0)), ints(255))
    return ex.cast(ex.transpose(out, [1, 2, 0]), ex.uint8)


def _rows(v: Var, rx: np.ndarray) -> Var:
    """Integer row pass: [c, h, dw] = image @ rx, exact in float32 (all partial sums are integers < 2^24)."""
    return ex.matmul(ex.transpose(as_float(v), [2, 0, 1]), floats(rx))


def _row_matrix(n: int, idx: list[np.ndarray], wts: list[np.ndarray]) -> np.ndarray:
    m = np.zeros((n, idx[0].size), np.float32)
    for i, wt in zip(idx, wts, strict=True):
        np.add.at(m, (i, np.arange(i.size)), wt)
    return m


def linear_taps(n: int, dn: int, scale: float, inv: float, clamp: bool,
                area: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """OpenCV's uint8 bilinear taps: float32 positions (half-pixel centres, or INTER_AREA's upscaling phases), Q11
    weights rounded one by one (their sum may miss 2048). Columns clamp the position at the borders; rows keep
    the weights and clamp only the row indices."""
    d = np.arange(dn)
    if area:
        s = np.floor(d * scale).astype(np.int64)
        f = ((d + 1) - (s + 1) * inv).astype(np.float32)
        f = np.where(f <= 0, np.float32(0), f - np.floor(f)).astype(np.float32)
    else:
        f = ((d + 0.5) * scale - 0.5).astype(np.float32)
        s = np.floor(f).astype(np.int64)
        f = (f - s.astype(np.float32)).astype(np.float32)
    if clamp:
        f[(s < 0) | (s >= n - 1)] = 0
        s = np.clip(s, 0, n - 1)
    w0 = np.round((np.float32(1) - f) * np.float32(2048)).astype(np.int32)
    w1 = np.round(f * np.float32(2048)).astype(np.int32)
    return np.clip(s, 0, n - 1), np.clip(s + 1, 0, n - 1), w0, w1


def resize_linear_u8(v: Var, dh: int, dw: int, scales: tuple[float, float, float, float], area: bool = False) -> Var:
    """uint8 bilinear resize; `scales` = (scale_y, scale_x, inv_scale_y, inv_scale_x)."""
    h, w, _ = v.shape
    sy, sx, iy, ix = scales
    x0, x1, a0, a1 = linear_taps(w, dw, sx, ix, True, area)
    y0, y1, b0, b1 = linear_taps(h, dh, sy, iy, False, area)
    rows = _rows(v, _row_matrix(w, [x0, x1], [a0, a1]))

    def tap(idx: np.ndarray, wt: np.ndarray) -> Var:
        r = ex.floordiv(ex.cast(ex.gather(rows, ints(idx), 1), ex.int), ints(16))
        return ex.floordiv(r * ints(wt.reshape(-1, 1)), ints(1 << 16))

    return _to_u8(ex.floordiv(tap(y0, b0) + tap(y1, b1) + ints(2), ints(4)))


def _cubic_taps(n: int, dn: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    f = ((np.arange(dn) + 0.5) * scale - 0.5).astype(np.float32)
    s = np.floor(f).astype(np.int64)
    f = (f - s.astype(np.float32)).astype(np.float32)
    wts = np.rint(cubic_weights_f32(f) * np.float32(2048)).astype(np.int32)  # saturate_cast<short>
    return np.clip(s[:, None] + np.arange(-1, 3)[None, :], 0, n - 1), wts


def resize_cubic_u8(v: Var, dh: int, dw: int, sy: float, sx: float) -> Var:
    """uint8 bicubic resize (see the module notes for the two column-pass roundings)."""
    h, w, c = v.shape
    xi, xw = _cubic_taps(w, dw, sx)
    yi, yw = _cubic_taps(h, dh, sy)
    rows = _rows(v, _row_matrix(w, list(xi.T), list(xw.T)))  # [c, h, dw]
    taps = [ex.gather(rows, ints(yi[:, k]), 1) for k in range(4)]  # [c, dh, dw] each
    scale = np.float32(1.0 / (1 << 22))
    acc = None
    for k in (3, 2, 1, 0):
        term = taps[k] * floats((yw[:, k].astype(np.float32) * scale).reshape(-1, 1))
        acc = term if acc is None else term + acc
    assert acc is not None
    vec = ex.cast(ex.round(acc), ex.int)
    isum = None
    for k in range(4):
        term = ex.cast(taps[k], ex.int) * ints(yw[:, k].reshape(-1, 1))
        isum = term if isum is None else isum + term
    scalar = ex.floordiv(isum + ints(1 << 21), ints(1 << 22))
    pos = np.arange(dw)[None, :] * c + np.arange(c)[:, None]  # index of each value in its interleaved row
    in_vec = (pos < (dw * c) // 8 * 8).astype(np.int32).reshape(c, 1, dw)
    return _to_u8(ex.select(ex.equal(ints(in_vec), ints(1)), vec, scalar))


def area_fast_factors(h: int, w: int, sy: float, sx: float) -> tuple[int, int] | None:
    """OpenCV's is_area_fast: both scales within DBL_EPSILON of integers; returns (ky, kx) or None."""
    ky, kx = round(sy), round(sx)
    return (ky, kx) if abs(sy - ky) < _DBL_EPS and abs(sx - kx) < _DBL_EPS else None


def resize_area_fast_u8(v: Var, dh: int, dw: int, ky: int, kx: int) -> Var:
    """Integer-factor block mean; blocks cut by the border average the pixels they have."""
    h, w, _ = v.shape

    def pick(n: int, dn: int, k: int) -> np.ndarray:
        m = np.zeros((dn, n), np.float32)
        src = np.arange(min(n, k * dn))
        m[src // k, src] = 1.0
        return m

    ry, rx = pick(h, dh, ky), pick(w, dw, kx)
    total = ex.matmul(ex.matmul(floats(ry), ex.transpose(as_float(v), [2, 0, 1])), floats(rx.T))  # exact sums
    count = np.outer(ry.sum(1), rx.sum(1)).astype(np.float32)
    if (ky, kx) == (2, 2):
        full = ex.floor((total + 2.0) * 0.25)
    else:
        full = ex.round(total * floats(np.float32(1.0) / np.float32(ky * kx)))
    part = ex.round(total / floats(np.maximum(count, 1.0)))
    out = ex.select(ex.equal(floats(count), floats(float(ky * kx))), full, part)
    return _to_u8(ex.cast(out, ex.int))


def area_taps(n: int, dn: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's area-decimation table as [dn, K] source indices and float32 weights (zero-padded, in order)."""
    taps = []
    for i in range(dn):
        f1 = i * scale
        f2 = f1 + scale
        cell = min(scale, n - f1)
        s2 = min(math.floor(f2), n - 1)
        s1 = min(math.ceil(f1), s2)
        t = [(s1 - 1, (s1 - f1) / cell)] if s1 - f1 > 1e-3 else []
        t += [(s, 1.0 / cell) for s in range(s1, s2)]
        if f2 - s2 > 1e-3:
            t.append((s2, min(min(f2 - s2, 1.0), cell) / cell))
        taps.append(t)
    idx = np.zeros((dn, max(len(t) for t in taps)), np.int64)
    wts = np.zeros(idx.shape, np.float32)
    for i, t in enumerate(taps):
        for k, (s, a) in enumerate(t):
            idx[i, k], wts[i, k] = s, a
    return idx, wts


def resize_area_u8(v: Var, dh: int, dw: int, sy: float, sx: float) -> Var:
    """Non-integer area downscale: float32 sums tap by tap (x first, then y), rounded half to even."""
    h, w, _ = v.shape
    xi, xw = area_taps(w, dw, sx)
    yi, yw = area_taps(h, dh, sy)
    src = ex.transpose(as_float(v), [2, 0, 1])  # [c, h, w]
    buf = None
    for k in range(xi.shape[1]):
        term = ex.gather(src, ints(xi[:, k]), 2) * floats(xw[:, k])
        buf = term if buf is None else buf + term
    acc = None
    for k in range(yi.shape[1]):
        term = ex.gather(buf, ints(yi[:, k]), 1) * floats(yw[:, k].reshape(-1, 1))
        acc = term if acc is None else acc + term
    assert acc is not None
    return _to_u8(ex.cast(ex.round(acc), ex.int))
