"""Geometric transforms (MNN: `cv.resize`, `warpAffine`, `warpPerspective`, `remap`, `getRectSubPix`, `flip`,
`rotate`, `convertMaps` and the matrix helpers).

resize is separable: host numpy builds one weight matrix per axis with OpenCV's coordinate rules (half-pixel
centres, bicubic a = -0.75, area coverage) and the core computes `Ry @ img @ Rx^T` with expr matmuls; the warps
and remap gather taps with host-computed indices/weights (`_sample`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._resize_u8 import (
    area_fast_factors,
    resize_area_fast_u8,
    resize_area_u8,
    resize_cubic_u8,
    resize_linear_u8,
)
from mnnpy.cv._sample import cubic_weights, rect_sub_pix, sample, sample_fixed
from mnnpy.cv._util import as_float, floats, hwc, ints, np_dtype, restore, saturate, to_np, to_var
from mnnpy.expr.var import Var


def _axis_matrix(n: int, dn: int, scale: float, interpolation: int, decimate: bool) -> np.ndarray:
    """[dn, n] weights mapping a source axis of n samples to dn samples (OpenCV's resize rules; INTER_AREA
    averages cells only when both axes shrink, otherwise it is linear with area-style phases on both)."""
    m = np.zeros((dn, n), np.float64)
    d = np.arange(dn)
    if interpolation == cc.INTER_AREA and decimate:
        for i in range(dn):
            f1 = i * scale
            f2 = f1 + scale
            cell = min(scale, n - f1)
            s1 = min(math.ceil(f1), n)
            s2 = min(math.floor(f2), n - 1)
            s1 = min(s1, s2)
            if s1 - f1 > 1e-3:
                m[i, s1 - 1] += (s1 - f1) / cell
            m[i, s1:s2] += 1.0 / cell
            if f2 - s2 > 1e-3:
                m[i, s2] += min(min(f2 - s2, 1.0), cell) / cell
        return m
    if interpolation == cc.INTER_AREA:  # upscaling with INTER_AREA: linear with OpenCV's area-style phase
        s = np.floor(d * scale)
        f = (d + 1) - (s + 1) / scale
        f = np.where(f <= 0, 0.0, f - np.floor(f))
    else:
        pos = (d + 0.5) * scale - 0.5
        s = np.floor(pos)
        f = pos - s
    s = s.astype(np.int64)
    if interpolation == cc.INTER_CUBIC:
        w = cubic_weights(f)
        for k in range(4):
            np.add.at(m, (d, np.clip(s - 1 + k, 0, n - 1)), w[:, k])
        return m
    low = s < 0
    f = np.where(low, 0.0, f)
    s = np.where(low, 0, s)
    high = s >= n - 1
    f = np.where(high, 0.0, f)
    s = np.where(high, n - 1, s)
    np.add.at(m, (d, s), 1.0 - f)
    np.add.at(m, (d, np.minimum(s + 1, n - 1)), f)
    return m


def _resize_nearest(v: Var, dh: int, dw: int, sy: float, sx: float) -> Var:
    h, w = v.shape[0], v.shape[1]
    rows = np.minimum(np.floor(np.arange(dh) * sy).astype(np.int64), h - 1)
    cols = np.minimum(np.floor(np.arange(dw) * sx).astype(np.int64), w - 1)
    return ex.gather(ex.gather(v, ints(rows), 0), ints(cols), 1)


def resize(src: Any, dsize: Sequence[int] | None = None, fx: float | None = None, fy: float | None = None,
           interpolation: int = cc.INTER_LINEAR, code: int | None = None, mean: Sequence[float] = (),
           norm: Sequence[float] = ()) -> Var:
    """Resize an HWC image (MNN: `cv.resize`, OpenCV semantics for NEAREST / LINEAR / CUBIC / AREA).

    Args:
        src: image Var or array.
        dsize: (width, height); when empty or zero, the size is round(w * fx), round(h * fy).
        fx, fy: scale factors, used only without dsize (as OpenCV: a given dsize sets the scales).
        interpolation: an `INTER_*` constant.
        code: optional `COLOR_*` code applied first (MNN's extension).
        mean, norm: optional per-channel (x - mean) * norm applied after resizing (MNN's extension; float result).
    """
    v = to_var(src)
    if code is not None:
        from mnnpy.cv.color import cvtColor

        v = cvtColor(v, code)
    v, was_2d = hwc(v)
    h, w, c = v.shape
    if dsize is not None and len(dsize) == 2 and dsize[0] > 0 and dsize[1] > 0:
        dw, dh = int(dsize[0]), int(dsize[1])
        ix, iy = dw / w, dh / h  # OpenCV: a given dsize wins over fx, fy
    else:
        ix, iy = float(fx or 1.0), float(fy or 1.0)
        dw, dh = max(1, round(w * ix)), max(1, round(h * iy))
    sx, sy = 1.0 / ix, 1.0 / iy
    u8 = np_dtype(v) == np.uint8
    fast = area_fast_factors(h, w, sy, sx)
    if u8 and fast is not None and (interpolation == cc.INTER_AREA or (interpolation == cc.INTER_LINEAR
                                                                         and fast == (2, 2))):
        out = resize_area_fast_u8(v, dh, dw, *fast)  # OpenCV also takes this path for an exact 2x linear
    elif u8 and interpolation == cc.INTER_AREA and sx >= 1 and sy >= 1:
        out = resize_area_u8(v, dh, dw, sy, sx)
    elif u8 and interpolation in (cc.INTER_LINEAR, cc.INTER_AREA):
        out = resize_linear_u8(v, dh, dw, (sy, sx, iy, ix), area=interpolation == cc.INTER_AREA)
    elif u8 and interpolation == cc.INTER_CUBIC:
        out = resize_cubic_u8(v, dh, dw, sy, sx)
    elif interpolation in (cc.INTER_NEAREST, cc.INTER_NEAREST_EXACT):
        out = _resize_nearest(v, dh, dw, sy, sx)
    else:
        if interpolation not in (cc.INTER_CUBIC, cc.INTER_AREA):
            interpolation = cc.INTER_LINEAR
        ry = _axis_matrix(h, dh, sy, interpolation, sx >= 1 and sy >= 1)
        rx = _axis_matrix(w, dw, sx, interpolation, sx >= 1 and sy >= 1)
        chw = ex.transpose(as_float(v), [2, 0, 1])
        out = ex.matmul(ex.matmul(floats(ry), chw), floats(rx.T))
        out = ex.transpose(out, [1, 2, 0])
        if np_dtype(v) != np.float32:
            out = saturate(out, np_dtype(v))
    if len(mean) or len(norm):
        mu = np.zeros(c, np.float32)
        nm = np.ones(c, np.float32)
        mu[: len(mean)] = np.asarray(mean, np.float32)[:c]
        nm[: len(norm)] = np.asarray(norm, np.float32)[:c]
        out = (as_float(out) - floats(mu)) * floats(nm)
    return restore(out, was_2d)


def _matrix(m: Any, rows: int) -> np.ndarray:
    arr = np.asarray(m.read() if hasattr(m, "read") and not isinstance(m, Var) else to_np(m), np.float64)
    arr = arr.reshape(-1)
    if arr.size == 9 and rows == 2:
        return arr.reshape(3, 3)[:2]
    return arr.reshape(rows, 3)


def _grid(dh: int, dw: int) -> tuple[np.ndarray, np.ndarray]:
    ys, xs = np.meshgrid(np.arange(dh, dtype=np.float64), np.arange(dw, dtype=np.float64), indexing="ij")
    return xs, ys


def _affine_coords(m: np.ndarray, dh: int, dw: int, nearest: bool) -> tuple[np.ndarray, np.ndarray]:
    """warpAffine's source positions in OpenCV's fixed point: saturate_cast<int> of M * 2^10 (per-column
    increments plus a per-row offset with the rounding delta), then whole pixels or 1/32-pixel integers."""
    ab = 1 << 10
    x = np.arange(dw, dtype=np.float64)
    y = np.arange(dh, dtype=np.float64)[:, None]
    rd = ab // 2 if nearest else ab // 64

    def fixed(v: np.ndarray) -> np.ndarray:
        return np.rint(np.clip(v * ab, -2.0**31, 2.0**31 - 1)).astype(np.int64)

    fx = fixed(m[0, 0] * x)[None, :] + fixed(m[0, 1] * y + m[0, 2]) + rd
    fy = fixed(m[1, 0] * x)[None, :] + fixed(m[1, 1] * y + m[1, 2]) + rd
    shift = 10 if nearest else 5
    return fx >> shift, fy >> shift


def warpAffine(src: Any, M: Any, dsize: Sequence[int], flags: int = cc.INTER_LINEAR,  # noqa: N803 - cv2 names
               borderMode: int = cc.BORDER_CONSTANT, borderValue: Any = 0, code: int | None = None,  # noqa: N803
               mean: Sequence[float] = (), norm: Sequence[float] = (), flag: int | None = None) -> Var:
    """Affine warp: dst(x, y) = src(M^-1 (x, y)) (MNN: `cv.warpAffine`; WARP_INVERSE_MAP in flags uses M directly).

    `flag` is MNN's keyword for cv2's `flags`; `code`, `mean` and `norm` are MNN's colour / normalisation extras.
    """
    flags = flags if flag is None else int(flag)
    m = _matrix(M, 2)
    if not flags & cc.WARP_INVERSE_MAP:
        m = invertAffineTransform(m)
    dw, dh = int(dsize[0]), int(dsize[1])
    mx, my = _affine_coords(m, dh, dw, flags & 7 == cc.INTER_NEAREST)
    v = to_var(src)
    if code is not None:
        from mnnpy.cv.color import cvtColor

        v = cvtColor(v, code)
    out = sample_fixed(v, mx, my, flags & 7, borderMode, borderValue)
    if len(mean) or len(norm):
        c = 1 if out.ndim == 2 else out.shape[2]
        mu, nm = np.zeros(c, np.float32), np.ones(c, np.float32)
        mu[: len(mean)], nm[: len(norm)] = np.asarray(mean)[:c], np.asarray(norm)[:c]
        out = (as_float(out) - floats(mu)) * floats(nm)
    return out


def warpPerspective(src: Any, M: Any, dsize: Sequence[int], flags: int = cc.INTER_LINEAR,  # noqa: N803
                    borderMode: int = cc.BORDER_CONSTANT, borderValue: Any = 0) -> Var:  # noqa: N803 - cv2 names
    """Perspective warp with a 3x3 homography (MNN: `cv.warpPerspective`)."""
    m = _matrix(M, 3)
    if not flags & cc.WARP_INVERSE_MAP:
        m = np.linalg.inv(m)
    dw, dh = int(dsize[0]), int(dsize[1])
    xs, ys = _grid(dh, dw)
    scale = 1.0 if flags & 7 == cc.INTER_NEAREST else 32.0  # OpenCV: W = W ? scale / W : 0, in double
    den = m[2, 2] + m[2, 1] * ys + m[2, 0] * xs
    den = np.where(den != 0, scale / np.where(den == 0, 1, den), 0.0)

    def fixed(v: np.ndarray) -> np.ndarray:
        return np.rint(np.clip(v * den, -2.0**31, 2.0**31 - 1)).astype(np.int64)

    fx = fixed(m[0, 2] + m[0, 1] * ys + m[0, 0] * xs)
    fy = fixed(m[1, 2] + m[1, 1] * ys + m[1, 0] * xs)
    return sample_fixed(to_var(src), fx, fy, flags & 7, borderMode, borderValue)


def remap(src: Any, map1: Any, map2: Any, interpolation: int,
          borderMode: int = cc.BORDER_CONSTANT, borderValue: Any = 0) -> Var:  # noqa: N803 - cv2 names
    """dst(x, y) = src(map1(x, y), map2(x, y)) with float maps (MNN: `cv.remap`)."""
    m1 = to_np(map1).astype(np.float32)
    if m1.ndim == 3 and m1.shape[2] == 2:
        mx, my = m1[..., 0], m1[..., 1]
    else:
        mx, my = m1, to_np(map2).astype(np.float32)
    return sample(to_var(src), mx, my, interpolation, borderMode, borderValue)


def convertMaps(map1: Any, map2: Any, dstmap1type: int, nninterpolation: bool = False) -> tuple[Any, Any]:
    """Maps are kept as float pairs (MNN: `cv.convertMaps`); returns them unchanged as float32 arrays."""
    return np.asarray(to_np(map1), np.float32), np.asarray(to_np(map2), np.float32)


def getRectSubPix(image: Any, patchSize: Sequence[int], center: Sequence[float]) -> Var:  # noqa: N803
    """A patch around a sub-pixel centre, bilinear with replicated border (MNN: `cv.getRectSubPix`)."""
    return rect_sub_pix(to_var(image), int(patchSize[0]), int(patchSize[1]), float(center[0]), float(center[1]))


def flip(src: Any, flipCode: int) -> Var:  # noqa: N803 - cv2 name
    """Flip around the x axis (0), y axis (> 0) or both (< 0) (MNN: `cv.flip`)."""
    v = to_var(src)
    h, w = v.shape[0], v.shape[1]
    if flipCode <= 0:
        v = ex.gather(v, ints(np.arange(h - 1, -1, -1)), 0)
    if flipCode != 0:
        v = ex.gather(v, ints(np.arange(w - 1, -1, -1)), 1)
    return v


def rotate(src: Any, rotateCode: int) -> Var:  # noqa: N803 - cv2 name
    """Rotate by 90/180/270 degrees (MNN: `cv.rotate`)."""
    v = to_var(src)
    if rotateCode == cc.ROTATE_180:
        return flip(v, -1)
    perm = [1, 0] + ([2] if v.ndim == 3 else [])
    t = ex.transpose(v, perm)
    return flip(t, 1 if rotateCode == cc.ROTATE_90_CLOCKWISE else 0)


def getRotationMatrix2D(center: Sequence[float], angle: float, scale: float) -> np.ndarray:
    """2x3 rotation (degrees, counter-clockwise) + scale about `center` (MNN: `cv.getRotationMatrix2D`)."""
    a = math.radians(angle)
    alpha, beta = scale * math.cos(a), scale * math.sin(a)
    cx, cy = float(center[0]), float(center[1])
    return np.array([[alpha, beta, (1 - alpha) * cx - beta * cy], [-beta, alpha, beta * cx + (1 - alpha) * cy]])


def getAffineTransform(src: Any, dst: Any) -> np.ndarray:
    """The 2x3 affine map taking 3 points to 3 points (MNN: `cv.getAffineTransform`)."""
    s = np.asarray(to_np(src), np.float64).reshape(3, 2)
    d = np.asarray(to_np(dst), np.float64).reshape(3, 2)
    a = np.hstack([s, np.ones((3, 1))])
    return np.linalg.solve(a, d).T


def getPerspectiveTransform(src: Any, dst: Any, solveMethod: int = cc.DECOMP_LU) -> np.ndarray:  # noqa: N803
    """The 3x3 homography taking 4 points to 4 points (MNN: `cv.getPerspectiveTransform`)."""
    s = np.asarray(to_np(src), np.float64).reshape(4, 2)
    d = np.asarray(to_np(dst), np.float64).reshape(4, 2)
    a = np.zeros((8, 8))
    b = np.zeros(8)
    for i in range(4):
        x, y = s[i]
        u, w = d[i]
        a[i] = [x, y, 1, 0, 0, 0, -x * u, -y * u]
        a[i + 4] = [0, 0, 0, x, y, 1, -x * w, -y * w]
        b[i], b[i + 4] = u, w
    return np.append(np.linalg.solve(a, b), 1.0).reshape(3, 3)


def invertAffineTransform(M: Any) -> np.ndarray:  # noqa: N803 - cv2 names
    """Inverse of a 2x3 affine matrix (MNN: `cv.invertAffineTransform`)."""
    m = _matrix(M, 2)
    a = m[:, :2]
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    inv = np.array([[a[1, 1], -a[0, 1]], [-a[1, 0], a[0, 0]]]) / det if det != 0 else np.zeros((2, 2))
    return np.hstack([inv, -inv @ m[:, 2:]])
