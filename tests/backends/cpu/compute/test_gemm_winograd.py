"""Strassen GEMM against numpy matmul; Winograd matrices against direct 1-D correlation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from mnnpy.backends.cpu.compute.gemm import StrassenGemm
from mnnpy.backends.cpu.compute.winograd import default_interp, interpolation_points, winograd_matrices


@pytest.mark.parametrize(("e", "l_dim", "h", "depth"), [(96, 64, 48, 1), (257, 128, 75, 2), (300, 96, 90, 3),
                                                        (33, 16, 9, 1), (64, 64, 64, 0)])
def test_strassen_matches_matmul(e: int, l_dim: int, h: int, depth: int) -> None:
    rng = np.random.default_rng(e)
    a = rng.standard_normal((e, l_dim)).astype(np.float32)
    b = rng.standard_normal((l_dim, h)).astype(np.float32)
    gemm = StrassenGemm(e, l_dim, h, depth)
    assert gemm.depth == depth
    out = np.full((e, h), np.nan, np.float32)
    gemm(a, b, out)
    ref = a.astype(np.float64) @ b
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max() * (1 + depth)
    gemm(a, b, out)  # scratch reuse gives the same answer
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max() * (1 + depth)


def test_strassen_rejects_wrong_shapes() -> None:
    with pytest.raises(ValueError):
        StrassenGemm(8, 8, 8, 1)(np.zeros((8, 4), np.float32), np.zeros((4, 8), np.float32), np.zeros((8, 8)))


def test_points_and_f23_matches_mnn() -> None:
    assert interpolation_points(5) == [0, 1, -1, 2, -2]
    a, b, g = winograd_matrices(2, 3)
    np.testing.assert_array_equal(a, [[1, 0], [1, 1], [1, -1], [0, 1]])
    np.testing.assert_array_equal(b, [[1, 0, 0, 0], [0, 1, -1, -1], [-1, 1, 1, 0], [0, 0, 0, 1]])
    np.testing.assert_array_equal(g, [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])


@pytest.mark.parametrize(("m", "r"), [(2, 3), (4, 3), (6, 3), (2, 5), (4, 5), (6, 5), (2, 7), (4, 7), (3, 2), (5, 2)])
@pytest.mark.parametrize("interp", [Fraction(1), Fraction(1, 2)])
def test_winograd_identity_1d(m: int, r: int, interp: Fraction) -> None:
    a, b, g = winograd_matrices(m, r, interp)
    alpha = m + r - 1
    assert a.shape == (alpha, m) and b.shape == (alpha, alpha) and g.shape == (alpha, r)
    if interp == 1:  # MNN's convention: the Lagrange denominators live in G, so A and B are integral
        assert np.array_equal(a, np.round(a)) and np.array_equal(b, np.round(b))
    rng = np.random.default_rng(m * 10 + r)
    for _ in range(5):
        d, w = rng.standard_normal(alpha), rng.standard_normal(r)
        y = a.T @ ((g @ w) * (b.T @ d))
        ref = np.array([d[i : i + r] @ w for i in range(m)])
        np.testing.assert_allclose(y, ref, rtol=1e-9, atol=1e-9)


def test_default_interp() -> None:
    assert default_interp(4) == default_interp(6) == 1
    assert default_interp(8) == Fraction(1, 2)
