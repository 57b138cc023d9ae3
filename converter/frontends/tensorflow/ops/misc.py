"""PlaceholderWithDefault, Split, SplitV, Tile, Range, ArgMax/ArgMin, Rank, Size, ZerosLike/OnesLike, Where,
NonMaxSuppressionV2/V3."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, Context, TfNode
from ..registry import tf_op


def _const_out(ctx: Context, key: str, value: np.ndarray) -> None:
    ctx.set_out(key, ctx.const(value, key))


@tf_op("PlaceholderWithDefault")
def placeholder_with_default(ctx: Context, node: TfNode) -> None:
    """PlaceholderWithDefault: a frozen graph always takes the default (e.g. Keras' learning phase)."""
    ctx.forward(node.name, node.inputs[0])


def _split(ctx: Context, node: TfNode, x: str, axis: int, sizes: list[int] | None, num: int) -> None:
    value = ctx.value(x)
    shape = ctx.shape(x)
    if value is not None:
        bounds = np.cumsum(sizes)[:-1] if sizes else num
        for i, part in enumerate(np.split(value, bounds, axis=axis)):
            _const_out(ctx, node.output(i), part)
        return
    param = fb.SliceT()
    param.axis = axis
    param.slicePoints = sizes
    param.sourceType = fb.NetSource.TENSORFLOW
    outputs = [node.output(i) for i in range(num)]
    ctx.emit(OP.Slice, [ctx.x(x)], outputs, PARAM.Slice, param, name=node.name)
    for i, key in enumerate(outputs):
        out_shape = None
        if shape is not None:
            out_shape = list(shape)
            dim = shape[axis % len(shape)]
            out_shape[axis % len(shape)] = sizes[i] if sizes else (None if dim is None else dim // num)
        ctx.set_out(key, key, shape=out_shape)


@tf_op("Split")
def split(ctx: Context, node: TfNode) -> None:
    """Split(axis, value, num_split) -> Slice into equal parts."""
    axis = int(ctx.need_value(node, 0, "the axis").ravel()[0])
    num = int(node.attr("num_split", 1))
    _split(ctx, node, node.inputs[1], axis, None, num)


@tf_op("SplitV")
def split_v(ctx: Context, node: TfNode) -> None:
    """SplitV(value, size_splits, axis) -> Slice with sizes (one -1 is inferred from a static shape)."""
    sizes = [int(v) for v in ctx.need_value(node, 1, "size_splits").ravel()]
    axis = int(ctx.need_value(node, 2, "the axis").ravel()[0])
    if -1 in sizes:
        shape = ctx.shape(node.inputs[0])
        dim = None if shape is None else shape[axis % len(shape)]
        if dim is None:
            raise ConvertError(f"{node.label()}: a -1 split size needs a static dimension")
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    _split(ctx, node, node.inputs[0], axis, sizes, len(sizes))


@tf_op("Tile")
def tile(ctx: Context, node: TfNode) -> None:
    """Tile(x, multiples) -> Tile (constants tile here)."""
    value, reps = ctx.value(node.inputs[0]), ctx.value(node.inputs[1])
    if value is not None and reps is not None:
        _const_out(ctx, node.name, np.tile(value, [int(r) for r in reps.ravel()]))
        return
    shape = ctx.shape(node.inputs[0])
    out_shape = None
    if shape is not None and reps is not None:
        out_shape = [None if d is None else d * int(r) for d, r in zip(shape, reps.ravel(), strict=False)]
    ctx.emit(OP.Tile, [ctx.x(node.inputs[0]), ctx.x(node.inputs[1])], [node.name], name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Range")
def range_op(ctx: Context, node: TfNode) -> None:
    """Range(start, limit, delta) -> a constant (or a Range op for run-time bounds)."""
    values = [ctx.value(key) for key in node.inputs[:3]]
    if all(v is not None for v in values):
        start, limit, delta = (v.ravel()[0] for v in values)
        _const_out(ctx, node.name, np.arange(start, limit, delta).astype(np.result_type(*values)))
        return
    ctx.emit(OP.Range, [ctx.x(key) for key in node.inputs[:3]], [node.name], name=node.name)
    ctx.set_out(node.name, node.name, shape=[None])


@tf_op("ArgMax", "ArgMin")
def argmax(ctx: Context, node: TfNode) -> None:
    """ArgMax/ArgMin(x, axis) -> ArgMax/ArgMin (the axis is removed, as in TF)."""
    axis = int(ctx.need_value(node, 1, "the axis").ravel()[0])
    param = fb.ArgMaxT()
    param.axis = axis
    param.topK = 1
    shape = ctx.shape(node.inputs[0])
    out_shape = None if shape is None else [d for i, d in enumerate(shape) if i != axis % len(shape)]
    op_type = OP.ArgMax if node.op == "ArgMax" else OP.ArgMin
    ctx.emit(op_type, [ctx.x(node.inputs[0])], [node.name], PARAM.ArgMax, param, name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Rank", "Size")
def rank_size(ctx: Context, node: TfNode) -> None:
    """Rank / Size: constants for static shapes, else Rank / Size ops."""
    shape = ctx.shape(node.inputs[0])
    if node.op == "Rank" and shape is not None:
        _const_out(ctx, node.name, np.int32(len(shape)))
        return
    if node.op == "Size" and shape is not None and all(d is not None for d in shape):
        _const_out(ctx, node.name, np.int32(np.prod(shape)))
        return
    ctx.emit(OP.Rank if node.op == "Rank" else OP.Size, [ctx.x(node.inputs[0])], [node.name], name=node.name)
    ctx.set_out(node.name, node.name, shape=[])


@tf_op("ZerosLike", "OnesLike")
def zeros_like(ctx: Context, node: TfNode) -> None:
    """ZerosLike / OnesLike: constants for static shapes, else x * 0 (+ 1)."""
    x = node.inputs[0]
    shape = ctx.shape(x)
    value = ctx.value(x)
    fill = 0 if node.op == "ZerosLike" else 1
    if shape is not None and all(d is not None for d in shape):
        dtype = value.dtype if value is not None else np.float32
        _const_out(ctx, node.name, np.full(shape, fill, dtype))
        return
    zero = ctx.binary(fb.BinaryOpOperation.MUL, ctx.x(x), ctx.const(np.float32(0), node.name + "/zero"))
    ctx.binary(fb.BinaryOpOperation.ADD, zero, ctx.const(np.float32(fill), node.name + "/fill"), node.name)
    ctx.set_out(node.name, node.name, shape=shape)


@tf_op("Where")
def where(ctx: Context, node: TfNode) -> None:
    """Where(condition) -> Where: int32 [count, rank] coordinates of the true (non-zero) elements, row-major (a
    non-bool input is compared with 0 first). The count comes from the values: the net runs through the Module API
    (`mnnpy.nn._segments`). Where with three inputs is TF1's Select."""
    if len(node.inputs) != 1:
        raise ConvertError(f"{node.label()}: Where with {len(node.inputs)} inputs (TF1's Select) is not supported")
    cond = ctx.x(node.inputs[0])
    if int(node.attr("T", 10)) != 10:  # DT_BOOL
        zero = ctx.const(np.float32(0) if int(node.attr("T")) in (1, 2, 19) else np.int32(0), node.name + "/zero")
        cond = ctx.binary(fb.BinaryOpOperation.NOTEQUAL, cond, zero)
    # an empty Extra parameter, as MNN's converters write it (official MNN's Module API needs it)
    ctx.emit(OP.Where, [cond], [node.name], PARAM.Extra, fb.ExtraT(), name=node.name)
    rank = ctx.rank(node.inputs[0])
    ctx.set_out(node.name, node.name, shape=None if rank is None else [None, rank])


@tf_op("NonMaxSuppressionV2", "NonMaxSuppressionV3")
def non_max_suppression(ctx: Context, node: TfNode) -> None:
    """NonMaxSuppressionV2/V3 (boxes [n, 4], scores [n], max_output_size, iou_threshold[, score_threshold]) ->
    NonMaxSuppressionV2: the kept indices, best first (a count from the values, as Where)."""
    ctx.emit(OP.NonMaxSuppressionV2, [ctx.x(k) for k in node.inputs], [node.name], PARAM.NonMaxSuppressionV2,
             fb.NonMaxSuppressionV2T(), name=node.name)
    ctx.set_out(node.name, node.name, shape=[None])
