"""Winograd F(m, r) convolution: exact transform matrices from Toom-Cook points, and a batched-GEMM kernel.

Transform matrices (cached) follow MNN's convention ``y = Aᵀ[(G g) ⊙ (Bᵀ d)]`` with interpolation points
0, 1, -1, 2, -2, ... and infinity (mnn-facts §5). They are built exactly in rational arithmetic:

* ``A`` (alphaxm) and ``G`` (alphaxr) evaluate polynomials of degree m-1 and r-1 at the points (the ∞ row picks the
  leading coefficient).
* ``Bᵀ`` is the transpose of the alphaxalpha interpolation matrix (inverse Vandermonde with the ∞ row), which makes
  the correlation algorithm the transpose of Toom-Cook's linear convolution. Its rows are written down directly as
  the Lagrange numerators (products of (x - a_j)) instead of inverting the Vandermonde matrix.
* Each row's Lagrange denominator f_i = Π_{j≠i}(a_i - a_j) is moved from ``Bᵀ`` into ``G`` (MNN's
  ``dividedInG``) so that ``A`` and ``B`` stay integral.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np


def interpolation_points(count: int, interp: Fraction = Fraction(1)) -> list[Fraction]:
    """The first ``count`` finite points: 0, 1, -1, 2, -2, 3, -3, ... times ``interp`` (MNN's generator knob)."""
    return [Fraction(0)] + [(1 + i // 2) * (1 if i % 2 == 0 else -1) * interp for i in range(count - 1)]


def default_interp(alpha: int) -> Fraction:
    """Point spacing used by the kernels: MNN's interp=1 up to alpha 6; 1/2 from alpha 8 on.

    With points 0, +-1, +-2, +-3 (alpha 8) the matrices reach 243 and float32 F(6,3) loses ~2e-4 relative
    accuracy; spacing the same points by 1/2 (MNN's generator default) keeps it near 3e-6.
    """
    return Fraction(1) if alpha <= 6 else Fraction(1, 2)


def _monic(roots: list[Fraction]) -> list[Fraction]:
    """Coefficients (lowest power first) of the product of (x - root), in integer arithmetic: with D the roots'
    common denominator and q = D * root, it is D^-n times the product of (D x - q), one Fraction per coefficient at
    the end. (Gauss-Jordan on Fractions, the inverse Vandermonde this replaces, took 4.7 ms for F(6, 3), paid by the
    first session of every process that uses the unit.)"""
    den = math.lcm(*(r.denominator for r in roots)) if roots else 1
    coeffs = [1]  # of the product of (y - q) in y = D x
    for q in (int(r * den) for r in roots):
        nxt = [0] * (len(coeffs) + 1)
        for k, c in enumerate(coeffs):
            nxt[k + 1] += c
            nxt[k] -= q * c
        coeffs = nxt
    n = len(roots)
    return [Fraction(c * den**k, den**n) for k, c in enumerate(coeffs)]


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

    signed = [math.prod((p - q for j, q in enumerate(pts) if j != i), start=Fraction(1)) for i, p in enumerate(pts)]
    f = [abs(signed[0]), *signed[1:], Fraction(1)]  # row 0's f_0 taken positive, as MNN's generator does
    # The inverse of evaluation(alpha) maps [h(a_0), .., lead] to the coefficients of h: its column i is the
    # Lagrange polynomial N_i / F_i (N_i the product of (x - a_j) over j != i, F_i = N_i(a_i) = signed[i]), its ∞
    # column the product over every finite point. Row i of Bᵀ is column i times f_i: N_i itself (negated for row 0
    # when F_0 < 0), integral when the points are.
    bt = [[*_monic([q for j, q in enumerate(pts) if j != i]), Fraction(0)] for i in range(alpha - 1)]
    if signed[0] < 0:
        bt[0] = [-v for v in bt[0]]
    bt.append(_monic(pts))
    g = [[v / f[i] for v in row] for i, row in enumerate(evaluation(r))]
    out = []
    for mat in (evaluation(m), [list(col) for col in zip(*bt, strict=True)], g):
        arr = np.array([[float(v) for v in row] for row in mat], dtype=np.float64)
        arr.flags.writeable = False
        out.append(arr)
    return out[0], out[1], out[2]


def transform_weights_into_panels(weight: np.ndarray, unit: int, panels: np.ndarray) -> None:
    """``transform_weights`` for one group written straight in the packed GEMM's layout ``panels`` [alpha², P,
    icp, NR] (zero-filled; ``packed_gemm.PackedWeights``): the filters' columns are put in panel order first, so the
    one GEMM ``(G ⊗ G) @ g`` lands there, with no [alpha², icp, ocp] result to pack afterwards (ResNet-18: ~80 MB
    less memory touched at session creation, and half the weights held)."""
    _, ocg, icg, k, _ = weight.shape
    _, p, icp, nr = panels.shape
    _, _, gm = winograd_matrices(unit, k, default_interp(unit + k - 1))
    kron = np.kron(gm, gm).astype(np.float32)
    taps = np.zeros((k * k, p, icp, nr), dtype=np.float32)  # column (panel, ic, j) = filter p * NR + j, channel ic
    by_column = taps.transpose(0, 2, 1, 3)  # [k², icp, P, NR] (a view: its last two axes cannot merge)
    filters = weight[0].transpose(2, 3, 1, 0).reshape(k * k, icg, ocg)
    whole = ocg // nr
    by_column[:, :icg, :whole] = filters[:, :, : whole * nr].reshape(k * k, icg, whole, nr)
    if whole < p:
        by_column[:, :icg, whole, : ocg - whole * nr] = filters[:, :, whole * nr:]
    np.matmul(kron, taps.reshape(k * k, -1), out=panels.reshape(kron.shape[0], -1))


def transform_weights(weight: np.ndarray, unit: int, icp: int, ocp: int) -> np.ndarray:
    """Transform ``[G, ocg, icg, k, k]`` weights to ``U = G g Gᵀ`` laid out ``[G, alpha², icp, ocp]`` (zero-padded).

    ``U[x, y] = Σ_ab G[x, a] G[y, b] g[a, b]`` for every filter is one GEMM ``(G ⊗ G) @ g``: the Kronecker product
    (alpha² x k², float64, rounded once) times all filters laid out ``[k², G·icg·ocg]``, which is the packed order,
    so the result needs no transpose for one group. (A five-axis einsum here dominated ResNet's createSession.)
    """
    groups, ocg, icg, k, _ = weight.shape
    _, _, gm = winograd_matrices(unit, k, default_interp(unit + k - 1))
    alpha = unit + k - 1
    kron = np.kron(gm, gm).astype(np.float32)  # row x*alpha + y, column a*k + b
    taps = np.ascontiguousarray(weight.transpose(3, 4, 0, 2, 1), dtype=np.float32).reshape(k * k, -1)
    if groups == 1 and (icg, ocg) == (icp, ocp):  # the common case: straight into the result, no copy
        packed = np.empty((1, alpha * alpha, icp, ocp), dtype=np.float32)
        np.matmul(kron, taps, out=packed.reshape(alpha * alpha, icp * ocp))
        return packed
    packed = np.zeros((groups, alpha * alpha, icp, ocp), dtype=np.float32)
    u = (kron @ taps).reshape(alpha * alpha, groups, icg, ocg)
    packed[:, :, :icg, :ocg] = u.transpose(1, 0, 2, 3)
    return packed
