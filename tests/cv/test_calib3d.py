"""Rodrigues, solve and solvePnP against OpenCV."""

from __future__ import annotations

import numpy as np
import pytest

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

K = np.array([[500.0, 0, 320], [0, 510, 240], [0, 0, 1]])


@pytest.mark.parametrize("vec", [[0.1, -0.2, 0.3], [0.0, 0.0, 0.0], [3.0, 0.5, -1.0], [np.pi, 0, 0]])
def test_rodrigues(cv2, vec: list[float]) -> None:
    v = np.array(vec, np.float64).reshape(3, 1)
    m_ref, j_ref = cv2.Rodrigues(v)
    m_got, j_got = MNN.cv.Rodrigues(v)
    np.testing.assert_allclose(m_got, m_ref, atol=1e-9)
    if np.linalg.norm(v) > 0:
        np.testing.assert_allclose(j_got, j_ref, atol=1e-5)
    back_ref = cv2.Rodrigues(m_ref)[0]
    back_got = MNN.cv.Rodrigues(m_ref)[0]
    np.testing.assert_allclose(back_got, back_ref, atol=1e-7)
    f32 = MNN.cv.Rodrigues(v.astype(np.float32))[0]
    assert f32.dtype == np.float32


def test_solve(cv2) -> None:
    rs = np.random.RandomState(0)
    a = rs.rand(4, 4).astype(np.float32) + np.eye(4, dtype=np.float32)
    b = rs.rand(4, 2).astype(np.float32)
    for flags in (cv2.DECOMP_LU, cv2.DECOMP_SVD, cv2.DECOMP_QR):
        ok_ref, x_ref = cv2.solve(a, b, flags=flags)
        ok_got, x_got = MNN.cv.solve(a, b, flags)
        assert ok_got == ok_ref
        np.testing.assert_allclose(x_got, x_ref, rtol=1e-4, atol=1e-5)
    spd = (a @ a.T).astype(np.float64)
    np.testing.assert_allclose(MNN.cv.solve(spd, b, MNN.cv.DECOMP_CHOLESKY)[1],
                               cv2.solve(spd, b.astype(np.float64), flags=cv2.DECOMP_CHOLESKY)[1], rtol=1e-6)
    tall = rs.rand(7, 3)
    rhs = rs.rand(7, 1)
    np.testing.assert_allclose(MNN.cv.solve(tall, rhs, MNN.cv.DECOMP_SVD)[1],
                               cv2.solve(tall, rhs, flags=cv2.DECOMP_SVD)[1], atol=1e-9)
    np.testing.assert_allclose(MNN.cv.solve(tall, rhs, MNN.cv.DECOMP_NORMAL | MNN.cv.DECOMP_LU)[1],
                               cv2.solve(tall, rhs, flags=cv2.DECOMP_NORMAL | cv2.DECOMP_LU)[1], atol=1e-9)
    assert not MNN.cv.solve(np.zeros((3, 3)), np.ones((3, 1)))[0]


@pytest.mark.parametrize("planar", [False, True])
@pytest.mark.parametrize("dist", [None, [0.05, -0.02, 0.001, -0.001, 0.0]])
def test_solve_pnp(cv2, planar: bool, dist: list[float] | None) -> None:
    rs = np.random.RandomState(3)
    obj = rs.rand(12, 3) * 2 - 1
    if planar:
        obj[:, 2] = 0
    rvec = np.array([0.2, -0.3, 0.1])
    tvec = np.array([0.1, -0.2, 6.0])
    d = None if dist is None else np.array(dist)
    img = cv2.projectPoints(obj, rvec, tvec, K, d)[0].reshape(-1, 2)
    ok_ref, r_ref, t_ref = cv2.solvePnP(obj, img, K, d)
    ok_got, r_got, t_got = MNN.cv.solvePnP(obj.astype(np.float32), img.astype(np.float32), K, d)
    assert ok_got and ok_ref
    np.testing.assert_allclose(r_got, r_ref, atol=1e-4)
    np.testing.assert_allclose(t_got, t_ref, atol=1e-3)
    np.testing.assert_allclose(r_got.ravel(), rvec, atol=1e-4)
