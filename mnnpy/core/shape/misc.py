"""Shapes of shape queries, generators, matmul, reductions and selection ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import broadcast, ints, norm_axis
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
I32 = np.dtype(np.int32)


@shape_fn(OT.Shape)
def shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc((len(descs[0].shape),), I32, NCHW)]


@shape_fn(OT.Rank, OT.Size)
def rank(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc((), I32, NCHW)]


@shape_fn(OT.Fill, needs_values=(0,))
def fill(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc(tuple(ints(values[0])), descs[1].dtype, NCHW)]


@shape_fn(OT.ZerosLike)
def zeros_like(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [descs[0]]


@shape_fn(OT.ReverseSequence)
def reverse_sequence(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """x [.., batch, .., seq, ..] and lengths [batch]: the shape of x."""
    p, shape = op.main, descs[0].shape
    rank = len(shape)
    if p is None or not (-rank <= p.batchDim < rank and -rank <= p.seqDim < rank) \
            or p.batchDim % max(rank, 1) == p.seqDim % max(rank, 1):
        raise ModelError(f"op {op.name!r} (ReverseSequence): batch and sequence axes must be two different axes of "
                         f"shape {list(shape)}")
    if descs[1].shape != (shape[p.batchDim],):
        raise ModelError(f"op {op.name!r} (ReverseSequence): lengths of shape {list(descs[1].shape)} for a batch of "
                         f"{shape[p.batchDim]}")
    return [TensorDesc(shape, descs[0].dtype, NCHW)]


@shape_fn(OT.Range, needs_values=(0, 1, 2))
def range_(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    start, limit, delta = (np.asarray(v).ravel()[0] for v in values[:3])
    n = max(0, int(np.ceil((limit - start) / delta)))
    return [TensorDesc((n,), descs[0].dtype, NCHW)]


def matmul_dims(op: Any, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Output shape of MatMul/BatchMatMul with transposes and batch broadcasting."""
    p = op.main
    ta = bool(p.transposeA if op.type == OT.MatMul else p.adjX) if p is not None else False
    tb = bool(p.transposeB if op.type == OT.MatMul else p.adjY) if p is not None else False
    if len(a) < 2 or len(b) < 2:
        raise ModelError(f"op {op.name!r}: matmul needs rank >= 2, got {a} and {b}")
    m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if k != k2:
        raise ModelError(f"op {op.name!r}: matmul inner dims differ: {a} x {b}")
    return (*broadcast([a[:-2], b[:-2]], op.name), m, n)


@shape_fn(OT.MatMul, OT.BatchMatMul)
def matmul(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc(matmul_dims(op, descs[0].shape, descs[1].shape), descs[0].dtype, NCHW)]


def reduce_axes(op: Any, x: TensorDesc, values: list) -> list[int]:
    """Reduction axes (param `dim` or input 1; empty = all)."""
    dims = ints(values[1]) if len(values) > 1 and values[1] is not None else ints(op.main.dim)
    return sorted({norm_axis(d, len(x.shape), op.name) for d in dims}) if dims else list(range(len(x.shape)))


@shape_fn(OT.Reduction, needs_values=(1,))
def reduction(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    axes = reduce_axes(op, x, values)
    keep = bool(op.main.keepDims)
    out = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else \
        [d for i, d in enumerate(x.shape) if i not in axes]
    return [TensorDesc(tuple(out), x.dtype, NCHW)]


@shape_fn(OT.ArgMax, OT.ArgMin)
def argmax(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    axis = norm_axis(op.main.axis if op.main else 0, len(x.shape), op.name)
    return [TensorDesc(tuple(d for i, d in enumerate(x.shape) if i != axis), I32, NCHW)]


@shape_fn(OT.TopKV2, needs_values=(1,))
def topk(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x = descs[0]
    k = ints(values[1])[0]
    out = (*x.shape[:-1], min(k, x.shape[-1]))
    return [TensorDesc(out, x.dtype, NCHW), TensorDesc(out, I32, NCHW)]


@shape_fn(OT.Unique, needs_values=(0,))
def unique(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Unique (MNN: the values of the flattened input, sorted; ONNX's outputs): y [u] (x's dtype), then int32 first
    indices [u], inverse indices [n] and counts [u], as many as the op has outputs. The count u comes from the
    values."""
    outputs = len(op.outputIndexes) if op.outputIndexes is not None else 1
    if outputs not in (1, 4):
        raise ModelError(f"op {op.name!r} (Unique): {outputs} outputs are not supported (1: the values, or 4: values, "
                         f"first indices, inverse indices, counts)")
    u = int(np.unique(np.asarray(values[0]).reshape(-1)).size)
    n = int(np.asarray(values[0]).size)
    i32 = np.dtype(np.int32)
    descs_out = [TensorDesc((u,), descs[0].dtype, NCHW), TensorDesc((u,), i32, NCHW), TensorDesc((n,), i32, NCHW),
                 TensorDesc((u,), i32, NCHW)]
    return descs_out[:outputs]
