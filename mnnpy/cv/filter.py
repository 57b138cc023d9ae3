"""Image filtering (MNN: `cv.blur`, `boxFilter`, `sqrBoxFilter`, `GaussianBlur`, `bilateralFilter`, `filter2D`,
`sepFilter2D`, `Sobel`, `Scharr`, `Laplacian`, `spatialGradient`, `pyrDown`, `pyrUp` and the kernel builders).

Kernels are built on the host (numpy, as OpenCV builds its coefficient tables); correlation runs as depthwise
`expr.conv2d` over an image padded with OpenCV's border modes. Morphology lives in `morph`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy import expr as ex
from mnnpy.cv import constants as cc
from mnnpy.cv._conv import CV_16S, CV_32F, correlate, finish, sep_correlate
from mnnpy.cv._util import as_float, hwc, ints, np_dtype, pad_image, restore, saturate, to_var
from mnnpy.expr.var import Var

_SMALL_GAUSS = {1: [1.0], 3: [0.25, 0.5, 0.25], 5: [0.0625, 0.25, 0.375, 0.25, 0.0625],
                7: [0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125]}


def getGaussianKernel(ksize: int, sigma: float, ktype: int = 6) -> np.ndarray:
    """Gaussian coefficients as a (ksize, 1) float64 column, OpenCV's fixed tables for sigma <= 0 and ksize <= 7
    (MNN: `cv.getGaussianKernel`)."""
    if sigma <= 0 and ksize in _SMALL_GAUSS:
        return np.asarray(_SMALL_GAUSS[ksize], np.float64).reshape(-1, 1)
    s = sigma if sigma > 0 else ((ksize - 1) * 0.5 - 1) * 0.3 + 0.8
    x = np.arange(ksize) - (ksize - 1) * 0.5
    k = np.exp(-(x * x) / (2 * s * s))
    return (k / k.sum()).reshape(-1, 1)


def _deriv_kernel(order: int, ksize: int) -> np.ndarray:
    if ksize == 1 and order > 0:
        ksize = 3
    if ksize == 1:
        return np.ones(1)
    k = np.ones(1)
    for _ in range(ksize - order - 1):
        k = np.convolve(k, [1.0, 1.0])
    for _ in range(order):
        k = np.convolve(k, [-1.0, 1.0])
    return k


def getDerivKernels(dx: int, dy: int, ksize: int, normalize: bool = False,
                    ktype: int = CV_32F) -> tuple[np.ndarray, np.ndarray]:
    """Separable Sobel/Scharr derivative kernels (kx, ky) as columns (MNN: `cv.getDerivKernels`)."""
    if ksize in (-1, 0):  # FILTER_SCHARR
        kx = np.array([-1.0, 0, 1]) if dx else np.array([3.0, 10, 3])
        ky = np.array([-1.0, 0, 1]) if dy else np.array([3.0, 10, 3])
        if normalize:
            kx, ky = kx / (1.0 if dx else 32.0), ky / (1.0 if dy else 32.0)
    else:
        kx, ky = _deriv_kernel(dx, ksize), _deriv_kernel(dy, ksize)
        if normalize:
            kx = kx / 2.0 ** (kx.size - dx - 1)
            ky = ky / 2.0 ** (ky.size - dy - 1)
    dt = np.float32 if ktype == CV_32F else np.float64
    return kx.reshape(-1, 1).astype(dt), ky.reshape(-1, 1).astype(dt)


def getGaborKernel(ksize: Sequence[int], sigma: float, theta: float, lambd: float, gamma: float,
                   psi: float = math.pi * 0.5, ktype: int = 6) -> np.ndarray:
    """Gabor filter coefficients (MNN: `cv.getGaborKernel`)."""
    sx, sy = sigma, sigma / gamma
    c, s = math.cos(theta), math.sin(theta)
    xmax = ksize[0] // 2 if ksize[0] > 0 else round(max(abs(3 * sx * c), abs(3 * sy * s)))
    ymax = ksize[1] // 2 if ksize[1] > 0 else round(max(abs(3 * sx * s), abs(3 * sy * c)))
    y, x = np.meshgrid(np.arange(ymax, -ymax - 1, -1), np.arange(xmax, -xmax - 1, -1), indexing="ij")
    xr = x * c + y * s
    yr = -x * s + y * c
    k = np.exp(-0.5 * (xr * xr / (sx * sx) + yr * yr / (sy * sy))) * np.cos(2 * math.pi / lambd * xr + psi)
    return k.astype(np.float32 if ktype == CV_32F else np.float64)


def filter2D(src: Any, ddepth: int, kernel: Any, anchor: Sequence[int] | None = None,
             delta: float = 0.0, borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Correlate with a 2-D kernel (MNN: `cv.filter2D`)."""
    v = to_var(src)
    k = np.asarray(kernel.read() if isinstance(kernel, Var) else kernel, np.float64)
    out, was_2d = correlate(v, k.reshape(k.shape[0], -1), anchor, borderType)
    return finish(out, was_2d, np_dtype(v), ddepth, delta=delta)


def sepFilter2D(src: Any, ddepth: int, kernelX: Any, kernelY: Any,  # noqa: N803 - cv2 names
                anchor: Sequence[int] | None = None, delta: float = 0.0,
                borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Separable correlation: rows with kernelX, columns with kernelY (MNN: `cv.sepFilter2D`)."""
    v = to_var(src)
    out, was_2d = sep_correlate(v, np.asarray(kernelX), np.asarray(kernelY), anchor, borderType)
    return finish(out, was_2d, np_dtype(v), ddepth, delta=delta)


def boxFilter(src: Any, ddepth: int, ksize: Sequence[int], anchor: Sequence[int] | None = None,
              normalize: bool = True, borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Box sum or mean over ksize = (w, h) (MNN: `cv.boxFilter`)."""
    v = to_var(src)
    kw, kh = int(ksize[0]), int(ksize[1])
    kx = np.full(kw, 1.0 / kw if normalize else 1.0)
    ky = np.full(kh, 1.0 / kh if normalize else 1.0)
    out, was_2d = sep_correlate(v, kx, ky, anchor, borderType)
    return finish(out, was_2d, np_dtype(v), ddepth)


def blur(src: Any, ksize: Sequence[int], anchor: Sequence[int] | None = None,
         borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Normalised box filter (MNN: `cv.blur`)."""
    return boxFilter(src, -1, ksize, anchor, True, borderType)


def sqrBoxFilter(src: Any, ddepth: int, ksize: Sequence[int], anchor: Sequence[int] | None = None,
                 normalize: bool = True, borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Box filter of the squared pixels; float result for uint8 input (MNN: `cv.sqrBoxFilter`)."""
    v = as_float(to_var(src))
    return boxFilter(v * v, ddepth if ddepth >= 0 else -1, ksize, anchor, normalize, borderType)


def GaussianBlur(src: Any, ksize: Sequence[int], sigmaX: float, sigmaY: float = 0.0,  # noqa: N803
                 borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Gaussian smoothing; a zero ksize is derived from sigma as OpenCV does (MNN: `cv.GaussianBlur`)."""
    v = to_var(src)
    sy = sigmaY if sigmaY > 0 else sigmaX
    depth_factor = 3 if np_dtype(v) == np.uint8 else 4
    kw, kh = int(ksize[0]), int(ksize[1])
    if kw <= 0:
        kw = round(sigmaX * depth_factor * 2 + 1) | 1
    if kh <= 0:
        kh = round(sy * depth_factor * 2 + 1) | 1
    if kw % 2 == 0 or kh % 2 == 0:
        raise ValueError(f"GaussianBlur: ksize must be odd and positive (or zero with sigma > 0), got {tuple(ksize)}")
    if np_dtype(v) == np.uint8:  # OpenCV's bit-exact fixed-point path: Q8 taps, Q16 sums, round half up
        kx, ky = _gaussian_q8(kw, sigmaX), _gaussian_q8(kh, sy)
        out, was_2d = sep_correlate(v, kx, ky, None, borderType)  # integers < 2**24: exact in float32
        out = ex.floor((out + 32768.0) * (1.0 / 65536.0))
        return restore(ex.cast(ex.minimum(out, 255.0), ex.uint8), was_2d)
    kx = getGaussianKernel(kw, sigmaX)
    ky = getGaussianKernel(kh, sy)
    out, was_2d = sep_correlate(v, kx, ky, None, borderType)
    return finish(out, was_2d, np_dtype(v), -1, half_up=True)


def _gaussian_q8(n: int, sigma: float) -> np.ndarray:
    """OpenCV's uint8 Gaussian taps: the double kernel (normalised from the half-kernel sum) quantised to Q8 by
    error diffusion from the outside in (round half to even), the centre tap taking the rest so the taps sum to 256."""
    if sigma <= 0 and n in _SMALL_GAUSS:
        k = np.asarray(_SMALL_GAUSS[n], np.float64)
    else:
        s = sigma if sigma > 0 else n * 0.15 + 0.35
        x = np.arange(1 - n, 0, 2, dtype=np.float64)[: (n - 1) // 2]  # twice the distance to the centre
        side = np.exp(x * x * (-0.125 / (s * s)))
        mul = 1.0 / (side.sum() * 2.0 + 1.0 + (0.0 if n % 2 else 1.0))
        k = np.concatenate([side * mul, [mul], side[::-1] * mul])
    q = np.zeros(n, np.float64)
    err = 0.0
    for i in range(n // 2):
        adj = k[i] * 256.0 + err
        q[i] = q[n - 1 - i] = round(adj)
        err = adj - q[i]
    q[n // 2] = 256.0 - 2.0 * q[: n // 2].sum()
    return q


def Sobel(src: Any, ddepth: int, dx: int, dy: int, ksize: int = 3, scale: float = 1.0,
          delta: float = 0.0, borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Sobel derivative (MNN: `cv.Sobel`); ddepth CV_16S gives an int32 Var holding int16-saturated values."""
    v = to_var(src)
    kx, ky = getDerivKernels(dx, dy, ksize, False, 6)
    out, was_2d = sep_correlate(v, kx, ky, None, borderType)
    return finish(out, was_2d, np_dtype(v), ddepth, scale=scale, delta=delta)


def Scharr(src: Any, ddepth: int, dx: int, dy: int, scale: float = 1.0, delta: float = 0.0,
           borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Scharr derivative (MNN: `cv.Scharr`)."""
    return Sobel(src, ddepth, dx, dy, -1, scale, delta, borderType)


def Laplacian(src: Any, ddepth: int, ksize: int = 1, scale: float = 1.0, delta: float = 0.0,
              borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Sum of second derivatives (MNN: `cv.Laplacian`)."""
    v = to_var(src)
    if ksize in (1, 3):
        k = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]] if ksize == 1 else [[2, 0, 2], [0, -8, 0], [2, 0, 2]],
                     np.float64)
        out, was_2d = correlate(v, k, None, borderType)
    else:
        kx2, ky0 = getDerivKernels(2, 0, ksize, False, 6)
        kx0, ky2 = getDerivKernels(0, 2, ksize, False, 6)
        a, was_2d = sep_correlate(v, kx2, ky0, None, borderType)
        b, _ = sep_correlate(v, kx0, ky2, None, borderType)
        out = a + b
    return finish(out, was_2d, np_dtype(v), ddepth, scale=scale, delta=delta)


def spatialGradient(src: Any, ksize: int = 3,
                    borderType: int = cc.BORDER_DEFAULT) -> tuple[Var, Var]:  # noqa: N803 - cv2 name
    """First derivatives (dx, dy) by 3x3 Sobel, int16 values in int32 Vars (MNN: `cv.spatialGradient`)."""
    return Sobel(src, CV_16S, 1, 0, 3, 1, 0, borderType), Sobel(src, CV_16S, 0, 1, 3, 1, 0, borderType)


def bilateralFilter(src: Any, d: int, sigmaColor: float, sigmaSpace: float,  # noqa: N803 - cv2 names
                    borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Edge-preserving bilateral filter, colour distance = sum of |channel differences| (MNN: `cv.bilateralFilter`)."""
    v, was_2d = hwc(to_var(src))
    h, w, _ = v.shape
    sc = sigmaColor if sigmaColor > 0 else 1.0
    ss = sigmaSpace if sigmaSpace > 0 else 1.0
    radius = round(ss * 1.5) if d <= 0 else d // 2
    radius = max(radius, 1)
    x = as_float(v)
    padded = pad_image(x, radius, radius, radius, radius, borderType)
    num = None
    den = None
    for i in range(-radius, radius + 1):
        for j in range(-radius, radius + 1):
            r = math.sqrt(i * i + j * j)
            if r > radius:
                continue
            shifted = ex.slice(padded, [radius + i, radius + j, 0], [h, w, v.shape[2]])
            dist = ex.reduce_sum(ex.abs(shifted - x), [2], True)
            wt = ex.exp(dist * dist * (-0.5 / (sc * sc))) * math.exp(r * r * (-0.5 / (ss * ss)))
            num = shifted * wt if num is None else num + shifted * wt
            den = wt if den is None else den + wt
    assert num is not None and den is not None
    out = num / den
    return restore(saturate(out, np_dtype(v)) if np_dtype(v) != np.float32 else out, was_2d)


_PYR = np.array([1.0, 4.0, 6.0, 4.0, 1.0])


def pyrDown(src: Any, dstsize: Sequence[int] | None = None,
            borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Gaussian 5x5 blur then drop odd rows/columns; size ((w+1)/2, (h+1)/2) (MNN: `cv.pyrDown`)."""
    v = to_var(src)
    out, was_2d = sep_correlate(v, _PYR / 16, _PYR / 16, None, borderType)
    h, w = out.shape[0], out.shape[1]
    rows, cols = np.arange(0, h, 2), np.arange(0, w, 2)
    if dstsize is not None and len(dstsize) == 2 and dstsize[0] > 0:
        cols, rows = cols[: int(dstsize[0])], rows[: int(dstsize[1])]
    out = ex.gather(ex.gather(out, ints(rows), 0), ints(cols), 1)
    return finish(out, was_2d, np_dtype(v), -1, half_up=True)


def _pyr_up_axis(x: Var, axis: int) -> Var:
    """Double one axis: even = p[i-1] + 6 p[i] + p[i+1], odd = 4 (p[i] + p[i+1]); left reflect-101, right replicate."""
    n = x.shape[axis]

    def part(src: Var, start: int, length: int) -> Var:
        begin = [0, 0, 0]
        size = list(src.shape)
        begin[axis] = start
        size[axis] = length
        return ex.slice(src, begin, size)

    p = ex.concat([part(x, 1 if n > 1 else 0, 1), x, part(x, n - 1, 1)], axis)
    a, b, c = part(p, 0, n), part(p, 1, n), part(p, 2, n)
    even = a + b * 6.0 + c
    odd = (b + c) * 4.0
    both = ex.stack([even, odd], axis + 1)
    shape = list(x.shape)
    shape[axis] = 2 * n
    return ex.reshape(both, shape)


def pyrUp(src: Any, dstsize: Sequence[int] | None = None,
          borderType: int = cc.BORDER_DEFAULT) -> Var:  # noqa: N803 - cv2 name
    """Upsample by 2 with OpenCV's 5-tap kernel (x4 gain), size (2w, 2h) (MNN: `cv.pyrUp`)."""
    v, was_2d = hwc(to_var(src))
    out = _pyr_up_axis(_pyr_up_axis(as_float(v), 0), 1) * (1.0 / 64.0)
    return finish(out, was_2d, np_dtype(v), -1, half_up=True)
