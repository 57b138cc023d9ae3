"""Winograd F(m, r) convolution: exact transform matrices from Toom-Cook points, and a batched-GEMM kernel.

Transform matrices (cached) follow MNN's convention ``y = Aᵀ[(G g) ⊙ (Bᵀ d)]`` with interpolation points
0, 1, -1, 2, -2, ... and infinity (mnn-facts §5). They are built exactly in rational arithmetic:

* ``A`` (alphaxm) and ``G`` (alphaxr) evaluate polynomials of degree m-1 and r-1 at the points (the ∞ row picks the
  leading coefficient).
* ``Bᵀ`` is the transpose of the alphaxalpha interpolation matrix (inverse Vandermonde with the ∞ row), which makes
  the correlation algorithm the transpose of Toom-Cook's linear convolution.
* Each row's Lagrange denominator f_i = Π_{j≠i}(a_i - a_j) is moved from ``Bᵀ`` into ``G`` (MNN's
  ``dividedInG``) so that ``A`` and ``B`` stay integral.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mnnpy.core.strategy import ConvPlan

from .common import COUNTERS, PACK, Conv2DKernel, Conv2DParams, ceil4, copy_pixels, nhwc_view


def interpolation_points(count: int, interp: Fraction = Fraction(1)) -> list[Fraction]:
    """The first ``count`` finite points: 0, 1, -1, 2, -2, 3, -3, ... times ``interp`` (MNN's generator knob)."""
    return [Fraction(0)] + [(1 + i // 2) * (1 if i % 2 == 0 else -1) * interp for i in range(count - 1)]


def default_interp(alpha: int) -> Fraction:
    """Point spacing used by the kernels: MNN's interp=1 up to alpha 6; 1/2 from alpha 8 on.

    With points 0, +-1, +-2, +-3 (alpha 8) the matrices reach 243 and float32 F(6,3) loses ~2e-4 relative
    accuracy; spacing the same points by 1/2 (MNN's generator default) keeps it near 3e-6.
    """
    return Fraction(1) if alpha <= 6 else Fraction(1, 2)


def _invert(matrix: list[list[Fraction]]) -> list[list[Fraction]]:
    n = len(matrix)
    aug = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[pivot] = aug[pivot], aug[col]
        inv = 1 / aug[col][col]
        aug[col] = [v * inv for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                factor = aug[r][col]
                aug[r] = [v - factor * p for v, p in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


@cache
def winograd_matrices(m: int, r: int, interp: Fraction = Fraction(1)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Transform matrices of F(m, r).

    Args:
        m: output tile size.
        r: kernel size.
        interp: spacing of the interpolation points (1 gives 0, 1, -1, 2, -2, ...).

    Returns:
        ``(A, B, G)`` as float64 arrays of shapes (alpha, m), (alpha, alpha), (alpha, r), alpha = m + r - 1, with
        ``y = Aᵀ[(G g) ⊙ (Bᵀ d)]`` for a length-alpha input ``d`` and length-r filter ``g``. Read-only.
    """
    alpha = m + r - 1
    pts = interpolation_points(alpha - 1, Fraction(interp))

    def evaluation(cols: int) -> list[list[Fraction]]:
        rows = [[p**k for k in range(cols)] for p in pts]
        return [*rows, [Fraction(int(k == cols - 1)) for k in range(cols)]]

    f = []
    for i, p in enumerate(pts):
        prod = Fraction(1)
        for j, q in enumerate(pts):
            if j != i:
                prod *= p - q
        f.append(abs(prod) if i == 0 else prod)
    f.append(Fraction(1))
    interp = _invert(evaluation(alpha))  # maps [h(a_0..), lead] -> coefficients of h
    bt = [[interp[j][i] * f[i] for j in range(alpha)] for i in range(alpha)]  # row i of Bᵀ scaled by f_i
    g = [[v / f[i] for v in row] for i, row in enumerate(evaluation(r))]
    out = []
    for mat in (evaluation(m), [list(col) for col in zip(*bt, strict=True)], g):
        arr = np.array([[float(v) for v in row] for row in mat], dtype=np.float64)
        arr.flags.writeable = False
        out.append(arr)
    return out[0], out[1], out[2]


def transform_weights(weight: np.ndarray, unit: int, icp: int, ocp: int) -> np.ndarray:
    """Transform ``[G, ocg, icg, k, k]`` weights to ``U = G g Gᵀ`` laid out ``[G, alpha², icp, ocp]`` (zero-padded)."""
    groups, ocg, icg, k, _ = weight.shape
    _, _, gm = winograd_matrices(unit, k, default_interp(unit + k - 1))
    alpha = unit + k - 1
    u = np.einsum("xa,goiab,yb->gxyio", gm, weight.astype(np.float64), gm)
    packed = np.zeros((groups, alpha * alpha, icp, ocp), dtype=np.float32)
    packed[:, :, :icg, :ocg] = u.reshape(groups, alpha * alpha, icg, ocg)
    return packed


class WinogradKernel(Conv2DKernel):
    """Winograd F(u, k) convolution (stride 1, dilation 1, square kernel), batched GEMM over the alpha² positions.

    ``run``: copy the input into a zero-bordered NHWC buffer; gather all alphaxalpha tiles with one strided copy into
    ``D[alpha, alpha, T, Cp]``; ``V = Bᵀ D B`` as two large matmuls; ``M = V @ U`` batched over alpha² (and groups);
    ``Y = Aᵀ M A`` as two matmuls; bias and activation on ``Y``; one strided copy into NC4HW4.
    """

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray) -> None:
        super().__init__(params, plan, in_shape, bias)
        k, u = params.kernel[0], int(plan.unit or 2)
        if params.kernel != (k, k) or params.stride != (1, 1) or params.dilation != (1, 1):
            raise ValueError("Winograd needs a square kernel, stride 1 and dilation 1")
        n, c, h, w = self.in_shape
        _, oc, oh, ow = self.out_shape
        pt, pl = params.pads[0], params.pads[1]
        g = params.group
        a = u + k - 1
        cp, ocp = ceil4(c), ceil4(oc)
        icg, ocg = c // g, oc // g
        th, tw = -(-oh // u), -(-ow // u)
        t = n * th * tw
        self.unit, self.alpha, self.tiles = u, a, (n, th, tw)
        self.xp = np.zeros((n, max(pt + h, th * u + k - 1), max(pl + w, tw * u + k - 1), cp), dtype=np.float32)
        self.interior = nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))
        s_n, s_h, s_w, s_c = self.xp.strides
        self.windows = as_strided(self.xp, shape=(a, a, n, th, tw, cp),
                                  strides=(s_h, s_w, s_n, u * s_h, u * s_w, s_c), writeable=False)
        mat_a, mat_b, _ = winograd_matrices(u, k, default_interp(a))
        self.bt = np.ascontiguousarray(mat_b.T, dtype=np.float32)
        self.at = np.ascontiguousarray(mat_a.T, dtype=np.float32)
        self.d = np.empty((a, a, n, th, tw, cp), dtype=np.float32)
        self.e = np.empty((a, a * t * cp), dtype=np.float32)
        self.v = np.empty((a, a, t * cp), dtype=np.float32)
        self.m = np.zeros((a * a, t, ocp), dtype=np.float32)
        self.f = np.empty((u, a * t * ocp), dtype=np.float32)
        self.y = np.empty((u, u, t * ocp), dtype=np.float32)
        wg = weight.reshape(g, ocg, icg, k, k)
        if g == 1:
            self.weight = transform_weights(wg, u, cp, ocp)[0]
            self.v_groups, self.m_groups = self.v.reshape(a * a, t, cp), self.m
        else:
            self.weight = np.ascontiguousarray(transform_weights(wg, u, icg, ocg).transpose(1, 0, 2, 3))
            self.v_groups = self.v.reshape(a * a, t, cp)[:, :, :c].reshape(a * a, t, g, icg).transpose(0, 2, 1, 3)
            self.m_groups = np.empty((a * a, g, t, ocg), dtype=np.float32)
            self.m_scatter = self.m[:, :, :oc].reshape(a * a, t, g, ocg)
        self.stage = None if (th * u, tw * u) == (oh, ow) else np.empty((n, ocp // PACK, th, u, tw, u, PACK),
                                                                          dtype=np.float32)
        COUNTERS["weight_transforms"] += 1

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        a, u = self.alpha, self.unit
        n, th, tw = self.tiles
        copy_pixels(self.interior, x, (0, 2, 3, 1))
        np.copyto(self.d, self.windows)
        np.matmul(self.bt, self.d.reshape(a, -1), out=self.e)
        np.matmul(self.bt, self.e.reshape(a, a, -1), out=self.v)
        np.matmul(self.v_groups, self.weight, out=self.m_groups)
        if self.m_groups is not self.m:
            np.copyto(self.m_scatter, self.m_groups.transpose(0, 2, 1, 3))
        np.matmul(self.at, self.m.reshape(a, -1), out=self.f)
        np.matmul(self.at, self.f.reshape(u, a, -1), out=self.y)
        ocp = self.m.shape[-1]
        y = self.y.reshape(u, u, n * th * tw, ocp)
        y += self.bias_row
        self._activate(y)
        tiles = y.reshape(u, u, n, th, tw, ocp // PACK, PACK)
        order = (2, 5, 3, 0, 4, 1)  # -> [n, oc4, th, u, tw, u, 4]
        if self.stage is None and out.flags.c_contiguous:
            copy_pixels(out.reshape(n, ocp // PACK, th, u, tw, u, PACK), tiles, order)
            return
        stage = self.stage if self.stage is not None else np.empty((n, ocp // PACK, th, u, tw, u, PACK), np.float32)
        copy_pixels(stage, tiles, order)
        _, _, oh, ow, _ = out.shape
        copy_pixels(out, stage.reshape(n, ocp // PACK, th * u, tw * u, PACK)[:, :, :oh, :ow], (0, 1, 2, 3))
