"""`mnnpy.numpy.linalg`: norm, solve and svd as core ops (MNN: `MNN.numpy.linalg`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as em
from mnnpy.expr import reduce as er
from mnnpy.expr import shape_ops as es
from mnnpy.expr.var import Var, const_of
from mnnpy.numpy._util import axes_of, fvar


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Var:
    """Vector and matrix norms (None/'fro', 1, -1, inf, -inf, p for vectors) (MNN: `numpy.linalg.norm`)."""
    v = fvar(x)
    axes = axes_of(axis, v.ndim)
    kd = bool(keepdims)
    if ord is None or ord == "fro":
        return em.sqrt(er.reduce_sum(em.square(v), axes, kd))
    a = em.abs(v)
    if len(axes) == 1:
        if ord == np.inf:
            return er.reduce_max(a, axes, kd)
        if ord == -np.inf:
            return er.reduce_min(a, axes, kd)
        if ord == 0:
            return er.reduce_sum(em.cast(em.not_equal(v, 0.0), np.float32), axes, kd)
        if ord == 1:
            return er.reduce_sum(a, axes, kd)
        p = float(ord)
        return em.pow(er.reduce_sum(em.pow(a, p), axes, kd), 1.0 / p)
    if len(axes) == 2 and ord in (1, -1, np.inf, -np.inf):
        row, col = axes
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        sums = er.reduce_sum(a, [inner], True)
        out = er.reduce_max(sums, [outer], True) if ord in (1, np.inf) else er.reduce_min(sums, [outer], True)
        return out if kd else es.squeeze(out, axes)
    raise NotImplementedError(f"mnnpy.numpy.linalg.norm does not implement ord={ord!r} (needs an SVD)")


def solve(a: Any, b: Any) -> Var:
    """Solve a x = b by Gauss-Jordan elimination with partial pivoting, step by step in the core.

    MNN: `numpy.linalg.solve`. Each step reads the pivot row index (ArgMax) and materialises the updated
    augmented matrix, so graphs stay small.
    """
    A, B = fvar(a), fvar(b)  # noqa: N806 - matrix names
    n = A.shape[0]
    vector = B.ndim == 1
    if vector:
        B = es.reshape(B, [n, 1])  # noqa: N806
    m = es.concat([A, B], 1)
    for k in range(n):
        p = int(er.argmax(em.abs(m[k:, k]), 0).read()) + k
        if p != k:
            perm = np.arange(n, dtype=np.int32)
            perm[[k, p]] = perm[[p, k]]
            m = es.gather(m, const_of(perm), 0)
        pivot = m[k, k]
        if float(np.abs(pivot.read())) == 0.0:
            raise np.linalg.LinAlgError("Singular matrix")
        row = em.divide(m[k], pivot)
        factors = em.multiply(m[:, k], const_of((np.arange(n) != k).astype(np.float32)))
        m = em.subtract(m, em.multiply(es.unsqueeze(factors, [1]), es.unsqueeze(row, [0])))
        mask = const_of((np.arange(n) == k).astype(np.int32).reshape(n, 1))
        m = es.select(mask, es.unsqueeze(row, [0]), m)
        m = const_of(np.array(m.read()))
    out = m[:, n:]
    return es.reshape(out, [n]) if vector else out


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """(u, s, vh) of an [M, N] matrix, M >= N, through the core's Svd op (MNN: `numpy.linalg.svd`).

    As MNN, the factors are always the thin ones (u [M, N], vh [N, N]) whatever `full_matrices` says; with
    `compute_uv=False` only the singular values come back, as numpy.
    """
    from mnnpy.expr.lowlevel import svd as expr_svd

    w, u, vt = expr_svd(fvar(a))
    return (u, w, vt) if compute_uv else w
