"""Selection, indexing and block-rearranging ops. In TF layout (`ctx.x`): Select / SelectV2, LogicalAnd /
LogicalNot, GatherNd, TopKV2, OneHot, Cumsum, BroadcastTo, LogSoftmax. On the NCHW copy: DepthToSpace /
SpaceToDepth, SpaceToBatchND / BatchToSpaceND."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ....writer import make_blob
from ..context import BIN, OP, PARAM, UN, Context, TfNode
from ..registry import tf_op
from .arith import broadcast_shape


@tf_op("Select", "SelectV2")
def select(ctx: Context, node: TfNode) -> None:
    """Select / SelectV2 (tf.where with three arguments) -> Select. SelectV2 broadcasts numpy-style; TF1's Select
    also takes a vector condition that picks whole rows, reshaped here to [n, 1, ...] so that it broadcasts."""
    cond, a, b = node.inputs[0], node.inputs[1], node.inputs[2]
    cond_x = ctx.x(cond)
    rank_c, rank_a = ctx.rank(cond), ctx.rank(a)
    if node.op == "Select" and rank_c == 1 and rank_a is not None and rank_a > 1:
        cond_x = ctx.reshape(cond_x, [-1] + [1] * (rank_a - 1))
    elif node.op == "Select" and (rank_c is None or rank_a is None) and rank_c != rank_a:
        raise ConvertError(f"{node.label()}: Select needs the ranks of its condition and values")
    ctx.emit(OP.Select, [cond_x, ctx.x(a), ctx.x(b)], [node.name], name=node.name)
    shape = broadcast_shape(ctx.shape(a), ctx.shape(b))
    ctx.set_out(node.name, node.name, shape=broadcast_shape(shape, ctx.shape(cond)) if node.op == "SelectV2" else shape)


@tf_op("LogicalAnd")
def logical_and(ctx: Context, node: TfNode) -> None:
    """LogicalAnd -> the product of the two 0/1 tensors (MNN has no LOGICALAND; its converter multiplies too)."""
    ctx.binary(BIN.MUL, ctx.x(node.inputs[0]), ctx.x(node.inputs[1]), node.name)
    ctx.set_out(node.name, node.name, shape=broadcast_shape(ctx.shape(node.inputs[0]), ctx.shape(node.inputs[1])))


@tf_op("LogicalNot")
def logical_not(ctx: Context, node: TfNode) -> None:
    """LogicalNot -> x == 0."""
    ctx.binary(BIN.EQUAL, ctx.x(node.inputs[0]), ctx.const(np.int32(0), node.name + "/zero"), node.name)
    ctx.set_out(node.name, node.name, shape=ctx.shape(node.inputs[0]))


@tf_op("GatherNd")
def gather_nd(ctx: Context, node: TfNode) -> None:
    """GatherNd(params, indices) -> GatherND (the last axis of indices indexes the leading axes of params)."""
    params, indices = node.inputs[0], node.inputs[1]
    ctx.emit(OP.GatherND, [ctx.x(params), ctx.x(indices)], [node.name], name=node.name)
    p_shape, i_shape = ctx.shape(params), ctx.shape(indices)
    shape = None
    if p_shape is not None and i_shape is not None and i_shape[-1] is not None:
        shape = list(i_shape[:-1]) + list(p_shape[int(i_shape[-1]):])
    ctx.set_out(node.name, node.name, shape=shape)


@tf_op("TopKV2")
def top_k(ctx: Context, node: TfNode) -> None:
    """TopKV2(x, k) -> TopKV2 over the last axis: values and int32 indices, largest first."""
    x = node.inputs[0]
    k_value = ctx.value(node.inputs[1])
    param = fb.TopKV2T()
    param.sorted = bool(node.attr("sorted", True))
    param.largest = True
    k = ctx.const(np.asarray(k_value, np.int32).reshape(1), node.name + "/k") if k_value is not None \
        else ctx.x(node.inputs[1])
    outputs = [node.output(0), node.output(1)]
    ctx.emit(OP.TopKV2, [ctx.x(x), k, ctx.const(np.int32(-1), node.name + "/axis")], outputs, PARAM.TopKV2, param,
             name=node.name)
    shape = ctx.shape(x)
    if shape is not None and k_value is not None:
        shape = [*shape[:-1], int(np.asarray(k_value).reshape(-1)[0])]
    for key in outputs:
        ctx.set_out(key, key, shape=shape)


@tf_op("OneHot")
def one_hot(ctx: Context, node: TfNode) -> None:
    """OneHot(indices, depth, on_value, off_value) -> OneHot(axis) (out-of-range indices give off rows, as TF)."""
    indices, depth, on, off = node.inputs
    param = fb.OneHotParamT()
    param.axis = int(node.attr("axis", -1))
    param.dType = fb.DataType.DT_FLOAT if int(node.attr("T", 1)) in (1, 2, 14, 19) else fb.DataType.DT_INT32
    ctx.emit(OP.OneHot, [ctx.x(indices), ctx.x(depth), ctx.x(on), ctx.x(off)], [node.name], PARAM.OneHotParam,
             param, name=node.name)
    shape, depth_value = ctx.shape(indices), ctx.value(depth)
    if shape is not None and depth_value is not None:
        axis = param.axis if param.axis >= 0 else len(shape)
        shape = [*shape[:axis], int(np.asarray(depth_value).reshape(-1)[0]), *shape[axis:]]
    else:
        shape = None
    ctx.set_out(node.name, node.name, shape=shape)


@tf_op("Cumsum")
def cumsum(ctx: Context, node: TfNode) -> None:
    """Cumsum(x, axis) -> CumSum with TF's exclusive / reverse attributes."""
    param = fb.CumSumT()
    param.exclusive = bool(node.attr("exclusive", False))
    param.reverse = bool(node.attr("reverse", False))
    ctx.emit(OP.CumSum, [ctx.x(node.inputs[0]), ctx.x(node.inputs[1])], [node.name], PARAM.CumSum, param,
             name=node.name)
    ctx.set_out(node.name, node.name, shape=ctx.shape(node.inputs[0]))


@tf_op("BroadcastTo")
def broadcast_to(ctx: Context, node: TfNode) -> None:
    """BroadcastTo(x, shape) -> BroadcastTo."""
    ctx.emit(OP.BroadcastTo, [ctx.x(node.inputs[0]), ctx.x(node.inputs[1])], [node.name], name=node.name)
    target = ctx.value(node.inputs[1])
    ctx.set_out(node.name, node.name, shape=None if target is None else [int(d) for d in np.asarray(target).ravel()])


@tf_op("LogSoftmax")
def log_softmax(ctx: Context, node: TfNode) -> None:
    """LogSoftmax over the last axis -> x - max - log(sum(exp(x - max))) (no log of a rounded-to-zero softmax)."""
    x = ctx.x(node.inputs[0])
    shifted = ctx.binary(BIN.SUB, x, _reduce(ctx, x, fb.ReductionType.MAXIMUM, node.name + "/max"))
    total = _reduce(ctx, ctx.unary(UN.EXP, shifted), fb.ReductionType.SUM, node.name + "/sum")
    ctx.binary(BIN.SUB, shifted, ctx.unary(UN.LOG, total), node.name)
    ctx.set_out(node.name, node.name, shape=ctx.shape(node.inputs[0]))


def _reduce(ctx: Context, x: str, operation: int, name: str) -> str:
    """A last-axis reduction that keeps the axis."""
    param = fb.ReductionParamT()
    param.operation, param.dim, param.keepDims, param.dType = operation, [-1], True, fb.DataType.DT_FLOAT
    ctx.emit(OP.Reduction, [x], [name], PARAM.ReductionParam, param, name=name)
    return name


@tf_op("DepthToSpace", "SpaceToDepth")
def depth_space(ctx: Context, node: TfNode) -> None:
    """DepthToSpace / SpaceToDepth (NHWC, block b) -> the MNN op on the NCHW copy in DCR order: TF's channel index
    (i * b + j) * C + c is ONNX's DCR one."""
    if node.attr("data_format", "NHWC") != "NHWC":
        raise ConvertError(f"{node.label()}: only NHWC data_format is supported")
    x = node.inputs[0]
    block = int(node.attr("block_size", 2))
    param = fb.DepthSpaceParamT()
    param.blockSize, param.mode = block, fb.DepthToSpaceMode.DCR
    out = ctx.out_name(node.name, True)
    to_space = node.op == "DepthToSpace"
    ctx.emit(OP.DepthToSpace if to_space else OP.SpaceToDepth, [ctx.x_nchw(x)], [out], PARAM.DepthSpaceParam, param,
             name=node.name)
    shape = ctx.shape(x)
    if shape is not None and len(shape) == 4 and None not in shape:
        n, h, w, c = shape
        shape = [n, h * block, w * block, c // (block * block)] if to_space else \
            [n, h // block, w // block, c * block * block]
    ctx.set_out(node.name, out, True, shape)


@tf_op("SpaceToBatchND", "BatchToSpaceND")
def space_batch(ctx: Context, node: TfNode) -> None:
    """SpaceToBatchND / BatchToSpaceND (TF1's atrous convolutions) with constant block [bh, bw] and paddings / crops
    [[t, b], [l, r]] -> the MNN op with a SpaceBatch parameter, on the NCHW copy (the spatial axes and the batch
    order (i * bw + j) * N + n are the same there)."""
    x = node.inputs[0]
    block = np.asarray(ctx.need_value(node, 1, "block_shape"), np.int32).reshape(-1)
    pads = np.asarray(ctx.need_value(node, 2, "paddings / crops"), np.int32).reshape(-1, 2)
    if block.size != 2 or pads.shape != (2, 2) or ctx.rank(x) != 4:
        raise ConvertError(f"{node.label()}: only 4-D inputs with two spatial block dims are supported")
    param = fb.SpaceBatchT()
    param.blockShape, param.padding = make_blob(block), make_blob(pads)
    out = ctx.out_name(node.name, True)
    to_batch = node.op == "SpaceToBatchND"
    ctx.emit(OP.SpaceToBatchND if to_batch else OP.BatchToSpaceND, [ctx.x_nchw(x)], [out], PARAM.SpaceBatch, param,
             name=node.name)
    shape = ctx.shape(x)
    if shape is not None and None not in shape:
        n, h, w, c = shape
        (pt, pb), (pl, pr) = pads.tolist()
        bh, bw = block.tolist()
        shape = [n * bh * bw, (h + pt + pb) // bh, (w + pl + pr) // bw, c] if to_batch else \
            [n // (bh * bw), h * bh - pt - pb, w * bw - pl - pr, c]
    ctx.set_out(node.name, out, True, shape)
