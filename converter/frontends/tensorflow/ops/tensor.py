"""Shape and data-movement ops: Identity, Reshape, Squeeze, ExpandDims, Shape, Fill, Transpose, Pack, Unpack."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import OP, PARAM, TO_NCHW, Context, TfNode
from ..registry import tf_op


@tf_op("Identity", "StopGradient", "Snapshot", "PreventGradient", "CheckNumerics", "EnsureShape")
def identity(ctx: Context, node: TfNode) -> None:
    """Identity and friends: the output is the input's graph tensor (nothing is emitted)."""
    ctx.forward(node.name, node.inputs[0])


@tf_op("IdentityN")
def identity_n(ctx: Context, node: TfNode) -> None:
    """IdentityN: output i is input i."""
    for i, key in enumerate(node.inputs):
        ctx.forward(node.output(i), key)


def _const_out(ctx: Context, node: TfNode, value: np.ndarray, index: int = 0) -> None:
    key = node.output(index)
    ctx.set_out(key, ctx.const(value, key))


@tf_op("Reshape")
def reshape(ctx: Context, node: TfNode) -> None:
    """Reshape(x, shape) in TF order; constant inputs fold here."""
    x, shape = node.inputs[0], node.inputs[1]
    value, target = ctx.value(x), ctx.value(shape)
    if value is not None and target is not None:
        _const_out(ctx, node, value.reshape([int(d) for d in target.ravel()]))
        return
    out_shape = None
    if target is not None:
        dims = [int(d) for d in target.ravel()]
        src = ctx.shape(x)
        known = src is not None and all(d is not None for d in src)
        if -1 in dims and known:
            rest = int(np.prod([d for d in dims if d != -1]))
            dims = [int(np.prod(src)) // max(rest, 1) if d == -1 else d for d in dims]
        out_shape = [None if d < 0 else d for d in dims]
    ctx.reshape(ctx.x(x), ctx.x(shape), node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Squeeze")
def squeeze(ctx: Context, node: TfNode) -> None:
    """Squeeze(squeeze_dims) -> Squeeze."""
    x = node.inputs[0]
    axes = [int(a) for a in node.attr("squeeze_dims", []) or []]
    shape = ctx.shape(x)
    out_shape = None
    if shape is not None:
        norm = {a % len(shape) for a in axes} if axes else {i for i, d in enumerate(shape) if d == 1}
        out_shape = [d for i, d in enumerate(shape) if i not in norm]
    value = ctx.value(x)
    if value is not None:
        _const_out(ctx, node, np.squeeze(value, axis=tuple(axes)) if axes else np.squeeze(value))
        return
    param = fb.SqueezeParamT()
    param.squeezeDims = axes or None
    ctx.emit(OP.Squeeze, [ctx.x(x)], [node.name], PARAM.SqueezeParam, param, name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("ExpandDims")
def expand_dims(ctx: Context, node: TfNode) -> None:
    """ExpandDims(x, axis) -> Unsqueeze(axis) (a negative axis counts from the end of the output)."""
    x = node.inputs[0]
    axis = int(ctx.need_value(node, 1, "the axis").ravel()[0])
    shape = ctx.shape(x)
    out_shape = None
    if shape is not None:
        pos = axis % (len(shape) + 1)
        out_shape = [*shape[:pos], 1, *shape[pos:]]
    value = ctx.value(x)
    if value is not None:
        _const_out(ctx, node, np.expand_dims(value, axis))
        return
    param = fb.SqueezeParamT()
    param.squeezeDims = [axis]
    ctx.emit(OP.Unsqueeze, [ctx.x(x)], [node.name], PARAM.SqueezeParam, param, name=node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Shape")
def shape_op(ctx: Context, node: TfNode) -> None:
    """Shape: a constant when the input shape is static, else a Shape op on the TF-layout tensor."""
    x = node.inputs[0]
    shape = ctx.shape(x)
    if shape is not None and all(d is not None for d in shape):
        _const_out(ctx, node, np.asarray(shape, np.int32))
        return
    ctx.emit(OP.Shape, [ctx.x(x)], [node.name], name=node.name, default_format=fb.MNN_DATA_FORMAT.NHWC)
    ctx.set_out(node.name, node.name, shape=None if shape is None else [len(shape)])


@tf_op("Fill")
def fill(ctx: Context, node: TfNode) -> None:
    """Fill(dims, value) -> Fill (a constant when both inputs are)."""
    dims, value = ctx.value(node.inputs[0]), ctx.value(node.inputs[1])
    if dims is not None and value is not None:
        _const_out(ctx, node, np.full([int(d) for d in dims.ravel()], value.ravel()[0], value.dtype))
        return
    ctx.emit(OP.Fill, [ctx.x(node.inputs[0]), ctx.x(node.inputs[1])], [node.name], name=node.name)
    ctx.set_out(node.name, node.name, shape=None if dims is None else [int(d) for d in dims.ravel()])


@tf_op("Transpose")
def transpose(ctx: Context, node: TfNode) -> None:
    """Transpose(x, perm) -> Permute; NHWC->NCHW of an NCHW feature map is that feature map itself."""
    x = node.inputs[0]
    perm = [int(p) for p in ctx.need_value(node, 1, "the permutation").ravel()]
    shape = ctx.shape(x)
    out_shape = None if shape is None else [shape[p] for p in perm]
    value = ctx.value(x)
    if value is not None:
        _const_out(ctx, node, np.transpose(value, perm))
        return
    if perm == TO_NCHW and ctx.is_nchw(x):
        ctx.set_out(node.name, ctx.x_nchw(x), shape=out_shape)
        return
    ctx.permute(ctx.x(x), perm, node.name)
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Pack")
def pack(ctx: Context, node: TfNode) -> None:
    """Pack(values, axis) -> Unsqueeze each value, then Concat (constants stack here)."""
    axis = int(node.attr("axis", 0))
    values = [ctx.value(key) for key in node.inputs]
    if all(v is not None for v in values):
        _const_out(ctx, node, np.stack(values, axis=axis))
        return
    param = fb.SqueezeParamT()
    param.squeezeDims = [axis]
    parts = [ctx.out(OP.Unsqueeze, [ctx.x(key)], None, PARAM.SqueezeParam, param, name="Unsqueeze")
             for key in node.inputs]
    ctx.axis_op(OP.Concat, parts, axis, node.name)
    shape = ctx.shape(node.inputs[0])
    out_shape = None
    if shape is not None:
        pos = axis % (len(shape) + 1)
        out_shape = [*shape[:pos], len(node.inputs), *shape[pos:]]
    ctx.set_out(node.name, node.name, shape=out_shape)


@tf_op("Unpack")
def unpack(ctx: Context, node: TfNode) -> None:
    """Unpack(value, num, axis) -> Slice into equal parts, then Squeeze each (constants split here)."""
    x = node.inputs[0]
    axis = int(node.attr("axis", 0))
    num = int(node.attr("num", 1))
    value = ctx.value(x)
    if value is not None:
        for i, part in enumerate(np.moveaxis(value, axis, 0)):
            _const_out(ctx, node, part, i)
        return
    param = fb.SliceT()
    param.axis = axis
    param.sourceType = fb.NetSource.TORCH
    parts = [ctx.graph.unique_name(f"{node.name}/part{i}") for i in range(num)]
    ctx.emit(OP.Slice, [ctx.x(x)], parts, PARAM.Slice, param, name=node.name + "/split")
    shape = ctx.shape(x)
    out_shape = None if shape is None else [d for i, d in enumerate(shape) if i != axis % len(shape)]
    for i, part in enumerate(parts):
        squeeze_param = fb.SqueezeParamT()
        squeeze_param.squeezeDims = [axis]
        key = node.output(i)
        ctx.emit(OP.Squeeze, [part], [key], PARAM.SqueezeParam, squeeze_param, name=key)
        ctx.set_out(key, key, shape=out_shape)
