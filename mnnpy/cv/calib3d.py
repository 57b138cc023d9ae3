"""Camera geometry (MNN: `cv.Rodrigues`, `cv.solvePnP`, `cv.solve`): small dense linear algebra on the host,
as MNN's C++ computes it. Results follow cv2's return conventions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mnnpy.cv import constants as cc
from mnnpy.cv._util import to_np


def _vec_to_mat(r: np.ndarray) -> np.ndarray:
    theta = float(np.linalg.norm(r))
    if theta < 1e-300:
        return np.eye(3)
    k = r / theta
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return math.cos(theta) * np.eye(3) + (1 - math.cos(theta)) * np.outer(k, k) + math.sin(theta) * kx


def _mat_to_vec(m: np.ndarray) -> np.ndarray:
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    v = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    s = math.sqrt(float(v @ v) * 0.25)
    c = min(max((np.trace(r) - 1) * 0.5, -1.0), 1.0)
    theta = math.acos(c)
    if s < 1e-5:
        if c > 0:
            return np.zeros(3)
        out = np.array([math.sqrt(max((r[0, 0] + 1) * 0.5, 0.0)),
                        math.sqrt(max((r[1, 1] + 1) * 0.5, 0.0)) * (-1.0 if r[0, 1] < 0 else 1.0),
                        math.sqrt(max((r[2, 2] + 1) * 0.5, 0.0)) * (-1.0 if r[0, 2] < 0 else 1.0)])
        if abs(out[0]) < abs(out[1]) and abs(out[0]) < abs(out[2]) and (r[1, 2] > 0) != (out[1] * out[2] > 0):
            out[2] = -out[2]
        return out * (theta / np.linalg.norm(out))
    return v * (theta / (2 * s))


def Rodrigues(src: Any) -> tuple[np.ndarray, np.ndarray]:
    """Rotation vector <-> rotation matrix, with the Jacobian (numerical, central differences)
    (MNN: `cv.Rodrigues`; returns (dst, jacobian) as cv2)."""
    a = np.asarray(to_np(src))
    dt = a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    x = a.astype(np.float64)
    eps = 1e-7
    if x.size == 3:
        r = x.ravel()
        out = _vec_to_mat(r)
        jac = np.zeros((3, 9))
        for i in range(3):
            d = np.zeros(3)
            d[i] = eps
            jac[i] = ((_vec_to_mat(r + d) - _vec_to_mat(r - d)) / (2 * eps)).ravel()
        return out.astype(dt), jac.astype(dt)
    m = x.reshape(3, 3)
    out = _mat_to_vec(m).reshape(3, 1)
    jac = np.zeros((9, 3))
    for i in range(9):
        d = np.zeros(9)
        d[i] = eps
        jac[i] = (_mat_to_vec(m + d.reshape(3, 3)) - _mat_to_vec(m - d.reshape(3, 3))) / (2 * eps)
    return out.astype(dt), jac.astype(dt)


def solve(src1: Any, src2: Any, flags: int = cc.DECOMP_LU) -> tuple[bool, np.ndarray]:
    """Solve src1 @ x = src2; least squares for DECOMP_SVD / DECOMP_QR / DECOMP_NORMAL (MNN: `cv.solve`)."""
    a = np.asarray(to_np(src1))
    b = np.asarray(to_np(src2))
    dt = np.result_type(a.dtype, b.dtype, np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    method = flags & ~cc.DECOMP_NORMAL
    if flags & cc.DECOMP_NORMAL:
        a64, b64 = a64.T @ a64, a64.T @ b64
    if method in (cc.DECOMP_SVD, cc.DECOMP_QR) or a64.shape[0] != a64.shape[1]:
        x = np.linalg.lstsq(a64, b64, rcond=None)[0]
        return True, x.astype(dt)
    try:
        if method == cc.DECOMP_CHOLESKY:
            low = np.linalg.cholesky(a64)
            x = np.linalg.solve(low.T, np.linalg.solve(low, b64))
        else:
            x = np.linalg.solve(a64, b64)
    except np.linalg.LinAlgError:
        return False, np.zeros((a64.shape[1], *b64.shape[1:]), dt)
    return True, x.astype(dt)


def _project(obj: np.ndarray, rvec: np.ndarray, tvec: np.ndarray, k: np.ndarray, dist: np.ndarray) -> np.ndarray:
    cam = obj @ _vec_to_mat(rvec).T + tvec
    x, y = cam[:, 0] / cam[:, 2], cam[:, 1] / cam[:, 2]
    d = np.zeros(5)
    d[: min(5, dist.size)] = dist[:5]
    r2 = x * x + y * y
    radial = 1 + d[0] * r2 + d[1] * r2 * r2 + d[4] * r2 ** 3
    xd = x * radial + 2 * d[2] * x * y + d[3] * (r2 + 2 * x * x)
    yd = y * radial + d[2] * (r2 + 2 * y * y) + 2 * d[3] * x * y
    return np.stack([k[0, 0] * xd + k[0, 1] * yd + k[0, 2], k[1, 1] * yd + k[1, 2]], 1)


def _initial_pose(obj: np.ndarray, norm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DLT for general scenes, plane homography for planar ones (normalised image coordinates)."""
    centred = obj - obj.mean(0)
    _, sv, vt = np.linalg.svd(centred)
    if sv[2] < 1e-6 * max(sv[0], 1e-12):  # planar: express points in the plane's frame
        basis = vt
        plane = centred @ basis.T
        rows = []
        for (px, py, _), (u, v) in zip(plane, norm, strict=True):
            rows.append([px, py, 1, 0, 0, 0, -u * px, -u * py, -u])
            rows.append([0, 0, 0, px, py, 1, -v * px, -v * py, -v])
        h = np.linalg.svd(np.asarray(rows))[2][-1].reshape(3, 3)
        scale = 2.0 / (np.linalg.norm(h[:, 0]) + np.linalg.norm(h[:, 1]))
        h = h * scale * (1 if h[2, 2] * scale > 0 else -1)
        r1, r2 = h[:, 0], h[:, 1]
        r = np.stack([r1, r2, np.cross(r1, r2)], 1)
        u, _, vt2 = np.linalg.svd(r)
        r = u @ vt2
        rot = r @ basis  # world -> camera
        t = h[:, 2] - rot @ obj.mean(0)
        return _mat_to_vec(rot), t
    rows = []
    for (x, y, z), (u, v) in zip(obj, norm, strict=True):
        rows.append([x, y, z, 1, 0, 0, 0, 0, -u * x, -u * y, -u * z, -u])
        rows.append([0, 0, 0, 0, x, y, z, 1, -v * x, -v * y, -v * z, -v])
    p = np.linalg.svd(np.asarray(rows))[2][-1].reshape(3, 4)
    u, sv3, vt3 = np.linalg.svd(p[:, :3])
    scale = 1.0 / sv3.mean()
    rot = u @ vt3
    if np.linalg.det(rot) < 0:
        rot, scale = -rot, -scale
    return _mat_to_vec(rot), p[:, 3] * scale


def solvePnP(objectPoints: Any, imagePoints: Any, cameraMatrix: Any, distCoeffs: Any = None,  # noqa: N803
             flags: int = cc.SOLVEPNP_ITERATIVE) -> tuple[bool, np.ndarray, np.ndarray]:
    """Camera pose from 3-D/2-D correspondences: linear initial pose then Levenberg-Marquardt on the
    reprojection error (MNN: `cv.solvePnP`; returns (ok, rvec [3, 1], tvec [3, 1]) as cv2)."""
    obj = np.asarray(to_np(objectPoints), np.float64).reshape(-1, 3)
    img = np.asarray(to_np(imagePoints), np.float64).reshape(-1, 2)
    k = np.asarray(to_np(cameraMatrix), np.float64).reshape(3, 3)
    dist = np.zeros(5) if distCoeffs is None else np.asarray(to_np(distCoeffs), np.float64).ravel()
    norm = (np.linalg.inv(k) @ np.hstack([img, np.ones((len(img), 1))]).T).T[:, :2]
    rvec, tvec = _initial_pose(obj, norm)
    params = np.concatenate([rvec, tvec])
    lam = 1e-3

    def residual(p: np.ndarray) -> np.ndarray:
        return (_project(obj, p[:3], p[3:], k, dist) - img).ravel()

    err = residual(params)
    for _ in range(100):
        jac = np.zeros((err.size, 6))
        for i in range(6):
            d = np.zeros(6)
            d[i] = 1e-7
            jac[:, i] = (residual(params + d) - residual(params - d)) / 2e-7
        g = jac.T @ err
        a = jac.T @ jac
        step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
        trial = params + step
        new_err = residual(trial)
        if new_err @ new_err < err @ err:
            params, err, lam = trial, new_err, lam * 0.1
            if np.linalg.norm(step) < 1e-12 * (np.linalg.norm(params) + 1e-12):
                break
        else:
            lam *= 10
            if lam > 1e12:
                break
    return True, params[:3].reshape(3, 1), params[3:].reshape(3, 1)
