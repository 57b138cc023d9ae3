"""mnnpy.numpy reductions, statistics, sorting, shapes, joining, creation, linalg, random and stubs vs numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mnnpy.numpy as mnp

RNG = np.random.default_rng(1)
X = RNG.uniform(-3, 3, (2, 3, 4)).astype(np.float32)
XI = RNG.integers(-5, 6, (2, 3, 4)).astype(np.int32)
AXES = [None, 0, -1, (0, 2)]
REDUCE = ["sum", "prod", "max", "min", "amax", "amin", "mean", "all", "any"]


@pytest.mark.parametrize("name", REDUCE)
@pytest.mark.parametrize("x", [X, XI], ids=["f32", "i32"])
def test_reductions(name: str, x: np.ndarray, check: Any) -> None:
    ref = getattr(np, name)
    for axis in AXES:
        for keepdims in (False, True):
            want = ref(x, axis=axis, keepdims=keepdims)
            if x.dtype.kind == "i" and want.dtype.kind == "i":
                want = want.astype(np.int32)
            if name == "mean":
                want = want.astype(np.float32)
            check(getattr(mnp, name)(x, axis, keepdims=keepdims), want, rtol=1e-4)
    check(getattr(mnp, name)(np.float32(2.5)), ref(np.float32(2.5)))


def test_statistics(check: Any) -> None:
    for axis in AXES:
        check(mnp.var(X, axis), np.var(X, axis).astype(np.float32), rtol=1e-4)
        check(mnp.std(X, axis, ddof=1), np.std(X, axis, ddof=1).astype(np.float32), rtol=1e-4)
        check(mnp.ptp(X, axis), np.ptp(X, axis))
        check(mnp.count_nonzero(XI, axis), np.count_nonzero(XI, axis))
        check(mnp.average(X, axis), np.average(X, axis).astype(np.float32), rtol=1e-5)
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    check(mnp.average(X, -1, weights=w), np.average(X, -1, weights=w).astype(np.float32), rtol=1e-5)
    nan = X.copy()
    nan[0, 1, 2] = np.nan
    nan[1, 0, 0] = np.nan
    for name in ["nansum", "nanmax", "nanmin", "nanmean", "nanprod", "nanstd", "nanvar"]:
        for axis in (None, 1):
            check(getattr(mnp, name)(nan, axis), getattr(np, name)(nan, axis).astype(np.float32), rtol=1e-4)
    check(mnp.nanargmax(nan), np.nanargmax(nan))
    check(mnp.nanargmin(nan, 2), np.nanargmin(nan, 2))
    check(mnp.nancumsum(nan, 1), np.nancumsum(nan, 1), rtol=1e-5)
    check(mnp.nancumprod(nan[0], 1), np.nancumprod(nan[0], 1), rtol=1e-5)


def test_scans_sorting_searching(check: Any) -> None:
    for axis in (None, 0, 2):
        check(mnp.cumsum(X, axis), np.cumsum(X, axis), rtol=1e-5, atol=1e-5)
        check(mnp.cumprod(XI, axis), np.cumprod(XI, axis).astype(np.int32))
        check(mnp.argmax(X, axis), np.argmax(X, axis))
        check(mnp.argmin(XI[0, 0] * 0 + np.arange(4, dtype=np.int32)[::-1], None), 3)
    for axis in (0, 1, -1, None):
        check(mnp.sort(X, axis), np.sort(X, axis))
        check(mnp.argsort(X, axis), np.argsort(X, axis))
    check(mnp.msort(X), np.sort(X, 0))
    keys = (np.array([1, 5, 1, 4, 3], np.int32), np.array([9, 4, 0, 4, 0], np.int32))
    check(mnp.lexsort(keys), np.lexsort(keys))
    sparse = np.array([[0, 3, 0], [2, 0, 5]], np.float32)
    check(mnp.nonzero(sparse), list(np.nonzero(sparse)))
    check(mnp.flatnonzero(sparse), np.flatnonzero(sparse))
    check(mnp.argwhere(sparse), np.argwhere(sparse))
    check(mnp.where(sparse > 1, sparse, -1.0), np.where(sparse > 1, sparse, -1.0))
    counts, edges = mnp.histogram(X, 5)
    want_counts, want_edges = np.histogram(X, 5)
    check(counts, want_counts.astype(np.int32))
    check(edges, want_edges.astype(np.float32), rtol=1e-5)
    check(mnp.unravel_index(np.array([5, 11], np.int32), (3, 4)), list(np.unravel_index([5, 11], (3, 4))))


def test_shape_manipulation(check: Any) -> None:
    check(mnp.reshape(X, (4, -1)), X.reshape(4, -1))
    check(mnp.reshape(X, 4, 6), X.reshape(4, 6))
    check(mnp.ravel(X), X.ravel())
    check(mnp.transpose(X), X.T)
    check(mnp.transpose(X, (1, 0, 2)), X.transpose(1, 0, 2))
    check(mnp.swapaxes(X, 0, 2), np.swapaxes(X, 0, 2))
    check(mnp.moveaxis(X, 0, -1), np.moveaxis(X, 0, -1))
    check(mnp.moveaxis(X, [0, 1], [-1, -2]), np.moveaxis(X, [0, 1], [-1, -2]))
    check(mnp.rollaxis(X, 2), np.rollaxis(X, 2))
    check(mnp.squeeze(X[:1]), np.squeeze(X[:1]))
    check(mnp.expand_dims(X, (0, 2)), np.expand_dims(X, (0, 2)))
    check(mnp.atleast_1d(np.float32(3)), np.atleast_1d(np.float32(3)))
    check(mnp.atleast_2d(X[0, 0]), np.atleast_2d(X[0, 0]))
    check(mnp.atleast_3d(X[0]), np.atleast_3d(X[0]))
    check(mnp.broadcast_to(X[0, 0], (3, 4)), np.broadcast_to(X[0, 0], (3, 4)))
    check(mnp.broadcast_arrays(X[0], X[:, :1, 0:1]), list(np.broadcast_arrays(X[0], X[:, :1, 0:1])))
    assert mnp.shape(X) == X.shape
    check(mnp.tile(X[0], (2, 1)), np.tile(X[0], (2, 1)))
    check(mnp.tile(X[0, 0], 2), np.tile(X[0, 0], 2))
    check(mnp.repmat(X[0], 2, 3), np.tile(X[0], (2, 3)))
    check(mnp.repeat(X, 2, 1), np.repeat(X, 2, 1))
    check(mnp.repeat(X[0, 0], [1, 0, 2, 1]), np.repeat(X[0, 0], [1, 0, 2, 1]))
    check(mnp.repeat(XI, 2), np.repeat(XI, 2))
    check(mnp.pad(X, 1), np.pad(X, 1))
    check(mnp.pad(X, ((0, 0), (1, 2), (2, 1)), "reflect"), np.pad(X, ((0, 0), (1, 2), (2, 1)), "reflect"))
    check(mnp.pad(X, ((0, 0), (1, 2), (2, 1)), "symmetric"), np.pad(X, ((0, 0), (1, 2), (2, 1)), "symmetric"))
    check(mnp.pad(X, (1, 2), "edge"), np.pad(X, (1, 2), "edge"))
    check(mnp.pad(X, 1, constant_values=7), np.pad(X, 1, constant_values=7))
    a, b = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32)
    check(mnp.meshgrid(a, b), list(np.meshgrid(a, b)))
    check(mnp.meshgrid(a, b, indexing="ij"), list(np.meshgrid(a, b, indexing="ij")))


def test_joining_and_splitting(check: Any) -> None:
    a, b = X[0], X[1]
    check(mnp.concatenate([a, b]), np.concatenate([a, b]))
    check(mnp.concatenate([a, b], 1), np.concatenate([a, b], 1))
    check(mnp.concatenate([a, XI[0]], None), np.concatenate([a, XI[0]], None).astype(np.float32))
    for name in ["stack", "vstack", "hstack", "dstack", "column_stack"]:
        check(getattr(mnp, name)([a, b]), getattr(np, name)([a, b]))
    check(mnp.row_stack([a, b]), np.vstack([a, b]))
    v1, v2 = a[0], b[0]
    for name in ["stack", "vstack", "hstack", "dstack", "column_stack"]:
        check(getattr(mnp, name)((v1, v2)), getattr(np, name)((v1, v2)))
    check(mnp.stack([a, b], -1), np.stack([a, b], -1))
    check(mnp.split(X, 2), np.split(X, 2))
    check(mnp.split(X, [1, 3], 2), np.split(X, [1, 3], 2))
    check(mnp.array_split(X, 2, 1), np.array_split(X, 2, 1))
    check(mnp.hsplit(X, 3), np.hsplit(X, 3))
    check(mnp.vsplit(X, 2), np.vsplit(X, 2))
    check(mnp.dsplit(X, [1]), np.dsplit(X, [1]))
    with pytest.raises(ValueError, match="equal division"):
        mnp.split(X, 3, 2)


def test_creation_and_conversion(check: Any) -> None:
    check(mnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    check(mnp.array([1.5, 2.0]), np.array([1.5, 2.0], np.float32))
    check(mnp.array(3.0), np.float32(3.0))
    check(mnp.array([1, 2], dtype=mnp.float32), np.array([1, 2], np.float32))
    check(mnp.array([1, 2], ndmin=3), np.array([1, 2], ndmin=3))
    check(mnp.asarray(np.arange(4.0)), np.arange(4.0, dtype=np.float32))
    check(mnp.asfarray([1, 2]), np.array([1, 2], np.float32))
    check(mnp.asmatrix([1, 2]), np.array([[1, 2]]))
    assert mnp.asscalar(mnp.array([7])) == 7
    check(mnp.zeros((2, 3)), np.zeros((2, 3), np.float32))
    check(mnp.ones(3, dtype=mnp.int32), np.ones(3, np.int32))
    check(mnp.full((2, 2), 7), np.full((2, 2), 7, np.int32))
    check(mnp.empty((1, 2)), np.zeros((1, 2), np.float32))
    check(mnp.zeros_like(XI), np.zeros_like(XI))
    check(mnp.ones_like(X), np.ones_like(X))
    check(mnp.full_like(X, 2.5), np.full_like(X, 2.5))
    check(mnp.empty_like(X), np.zeros_like(X))
    check(mnp.eye(3, 4, 1), np.eye(3, 4, 1, dtype=np.float32))
    check(mnp.identity(3), np.identity(3, np.float32))
    check(mnp.arange(5), np.arange(5, dtype=np.int32))
    check(mnp.arange(1, 7, 2), np.arange(1, 7, 2, dtype=np.int32))
    check(mnp.arange(0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25, dtype=np.float32))
    check(mnp.linspace(0, 1, 5), np.linspace(0, 1, 5).astype(np.float32))
    check(mnp.logspace(0, 2, 3), np.logspace(0, 2, 3).astype(np.float32))
    check(mnp.geomspace(1, 8, 4), np.geomspace(1, 8, 4).astype(np.float32), rtol=1e-5)
    check(mnp.frombuffer(np.arange(3, dtype=np.float32).tobytes(), mnp.float32), np.arange(3, dtype=np.float32))
    c = mnp.copy(X)
    check(c, X)
    dst = mnp.zeros((2, 3))
    mnp.copyto(dst, [1.0, 2.0, 3.0])
    check(dst, np.tile([1.0, 2.0, 3.0], (2, 1)).astype(np.float32))
    mnp.fill(dst, 4.0)
    check(dst, np.full((2, 3), 4.0, np.float32))
    assert mnp.array_equal(X, X.copy()) and not mnp.array_equal(X, X[:1])
    assert mnp.array_equiv(X[0, 0], np.broadcast_to(X[0, 0], (3, 4))) and not mnp.array_equiv(X[0], X[1])
    with pytest.raises(ValueError, match="infs or NaNs"):
        mnp.asarray_chkfinite([1.0, np.inf])
    assert (mnp.float32, mnp.int32, mnp.pi, mnp.inf, mnp.newaxis) == (mnp.float32, mnp.int32, np.pi, np.inf, None)


def test_products_and_linalg(check: Any) -> None:
    a = RNG.uniform(-1, 1, (3, 4)).astype(np.float32)
    b = RNG.uniform(-1, 1, (4, 2)).astype(np.float32)
    v = RNG.uniform(-1, 1, 4).astype(np.float32)
    batch = RNG.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    for x, y in [(a, b), (v, v), (a, v), (v, b), (batch, b), (batch, v), (np.float32(2.0), a)]:
        check(mnp.dot(x, y), np.dot(x, y), rtol=1e-5, atol=1e-5)
    for x, y in [(a, b), (v, v), (a, v), (v, b), (batch, b), (batch, np.swapaxes(batch, 1, 2))]:
        check(mnp.matmul(x, y), np.matmul(x, y), rtol=1e-5, atol=1e-5)
    check(mnp.inner(a, a), np.inner(a, a), rtol=1e-5, atol=1e-5)
    check(mnp.vdot(a, a), np.vdot(a, a), rtol=1e-5)
    check(mnp.tensordot(batch, b, 1), np.tensordot(batch, b, 1), rtol=1e-5, atol=1e-5)
    check(mnp.tensordot(batch, batch, ([1, 2], [1, 2])), np.tensordot(batch, batch, ([1, 2], [1, 2])), rtol=1e-5)
    for ordv, axis in [(None, None), (1, None), (np.inf, None), (2, 0), (3, 1), (0, 1), ("fro", None),
                       (-np.inf, 1)]:
        want = np.linalg.norm(a, ordv, axis) if axis is not None or ordv is None or ordv == "fro" else \
            np.linalg.norm(a, ordv)
        check(mnp.linalg.norm(a, ordv, axis), np.asarray(want, np.float32), rtol=1e-5)
    m = RNG.uniform(-1, 1, (4, 4)).astype(np.float32) + np.eye(4, dtype=np.float32)
    m[0, 0] = 0.0  # needs a row swap
    rhs = RNG.uniform(-1, 1, 4).astype(np.float32)
    check(mnp.linalg.solve(m, rhs), np.linalg.solve(m, rhs).astype(np.float32), rtol=1e-4, atol=1e-5)
    check(mnp.linalg.solve(m, np.stack([rhs, rhs], 1)),
          np.linalg.solve(m, np.stack([rhs, rhs], 1)).astype(np.float32), rtol=1e-4, atol=1e-5)
    u, s, vh = mnp.linalg.svd(m)
    np.testing.assert_allclose(s.read(), np.linalg.svd(m, compute_uv=False), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(u.read() @ np.diag(s.read()) @ vh.read(), m, rtol=1e-4, atol=1e-5)
    tall = RNG.uniform(-1, 1, (6, 3)).astype(np.float32)
    np.testing.assert_allclose(mnp.linalg.svd(tall, compute_uv=False).read(), np.linalg.svd(tall, compute_uv=False),
                               rtol=1e-5, atol=1e-6)


def test_random() -> None:
    r = mnp.random.rand(2, 3).read()
    assert r.shape == (2, 3) and r.dtype == np.float32 and (r >= 0).all() and (r < 1).all()
    assert mnp.random.randn(4).read().shape == (4,)
    assert mnp.random.random((3, 2)).read().shape == (3, 2)
    i = mnp.random.randint(2, 5, (10,)).read()
    assert i.dtype == np.int32 and i.min() >= 2 and i.max() < 5


def test_stubs_and_names() -> None:
    from mnnpy.numpy._stubs import NAMES

    assert len(NAMES) == 101
    for name in NAMES:
        with pytest.raises(NotImplementedError, match=f"mnnpy.numpy does not implement {name}"):
            getattr(mnp, name)([1.0, 2.0])
    mnn = pytest.importorskip("MNN", reason="official MNN wheel lists its names")
    theirs = {n for n in dir(mnn.numpy) if not n.startswith("_")}
    assert not sorted(theirs - set(dir(mnp)))
