"""Products of `mnnpy.numpy`: dot, matmul, inner, vdot, tensordot (MNN: `MNN.numpy`), on MatMul / BatchMatMul."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as em
from mnnpy.expr import reduce as er
from mnnpy.expr import shape_ops as es
from mnnpy.expr.var import Var
from mnnpy.numpy._util import pair


def matmul(a: Any, b: Any) -> Var:
    """numpy matmul: 1-D operands promoted and squeezed, batches broadcast (MNN: `numpy.matmul`)."""
    x, y = pair(a, b)
    xa, ya = x.ndim, y.ndim
    if xa == 0 or ya == 0:
        raise ValueError("matmul: input operand does not have enough dimensions")
    if xa == 1:
        x = es.unsqueeze(x, [0])
    if ya == 1:
        y = es.unsqueeze(y, [1])
    out = em.matmul(x, y)
    if xa == 1 and ya == 1:
        return es.reshape(out, [])
    if xa == 1:
        return es.squeeze(out, [out.ndim - 2])
    if ya == 1:
        return es.squeeze(out, [out.ndim - 1])
    return out


def dot(a: Any, b: Any, out: Any = None) -> Var:
    """numpy dot (MNN: `numpy.dot`)."""
    x, y = pair(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return em.multiply(x, y)
    if x.ndim == 1 and y.ndim == 1:
        return er.reduce_sum(em.multiply(x, y), [0])
    if y.ndim <= 2:
        return matmul(x, y)
    return tensordot(x, y, ([x.ndim - 1], [y.ndim - 2]))


def vdot(a: Any, b: Any) -> Var:
    """Dot of the flattened arrays (MNN: `numpy.vdot`)."""
    x, y = pair(a, b)
    return er.reduce_sum(em.multiply(es.reshape(x, [-1]), es.reshape(y, [-1])), [0])


def inner(a: Any, b: Any) -> Var:
    """Sum product over the last axes (MNN: `numpy.inner`)."""
    x, y = pair(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return em.multiply(x, y)
    return tensordot(x, y, ([x.ndim - 1], [y.ndim - 1]))


def tensordot(a: Any, b: Any, axes: Any = 2) -> Var:
    """Sum products over given axes, as Transpose + Reshape + MatMul (MNN: `numpy.tensordot`)."""
    x, y = pair(a, b)
    if isinstance(axes, (int, np.integer)):
        ax_a = list(range(x.ndim - int(axes), x.ndim))
        ax_b = list(range(int(axes)))
    else:
        ax_a = [int(i) % x.ndim for i in np.atleast_1d(axes[0])]
        ax_b = [int(i) % y.ndim for i in np.atleast_1d(axes[1])]
    free_a = [i for i in range(x.ndim) if i not in ax_a]
    free_b = [i for i in range(y.ndim) if i not in ax_b]
    xs, ys = x.shape, y.shape
    k = int(np.prod([xs[i] for i in ax_a], dtype=np.int64))
    ma = int(np.prod([xs[i] for i in free_a], dtype=np.int64))
    nb = int(np.prod([ys[i] for i in free_b], dtype=np.int64))
    x2 = es.reshape(es.transpose(x, free_a + ax_a), [ma, k])
    y2 = es.reshape(es.transpose(y, ax_b + free_b), [k, nb])
    return es.reshape(em.matmul(x2, y2), [xs[i] for i in free_a] + [ys[i] for i in free_b])
