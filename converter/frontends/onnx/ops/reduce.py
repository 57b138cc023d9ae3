"""Reductions: Reduce{Mean,Sum,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp} -> Reduction; ArgMax/ArgMin."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op

RT = fb.ReductionType

# ONNX op -> (MNN reduction, unary applied before, unary applied after)
_REDUCE = {
    "ReduceMean": (RT.MEAN, None, None), "ReduceSum": (RT.SUM, None, None), "ReduceMax": (RT.MAXIMUM, None, None),
    "ReduceMin": (RT.MINIMUM, None, None), "ReduceProd": (RT.PROD, None, None), "ReduceL1": (RT.SUM, UN.ABS, None),
    "ReduceSumSquare": (RT.SUM, UN.SQUARE, None), "ReduceL2": (RT.SUM, UN.SQUARE, UN.SQRT),
    "ReduceLogSum": (RT.SUM, None, UN.LOG), "ReduceLogSumExp": (RT.SUM, UN.EXP, UN.LOG),
}

# Opset from which each op takes its axes as an input instead of an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def reduction(ctx: Context, x: str, operation: int, axes: list[int] | str | None, keepdims: bool,
              output: str | None = None, name: str | None = None) -> str:
    """Reduction op over constant `axes` (None = all axes) or a run-time axes tensor (input 1, as MNNConvert)."""
    param = fb.ReductionParamT()
    param.operation = operation
    param.dim = None if axes is None or isinstance(axes, str) else [int(a) for a in axes]
    param.keepDims = bool(keepdims)
    param.dType = fb.DataType.DT_FLOAT
    inputs = [x, axes] if isinstance(axes, str) else [x]
    return ctx.out(OP.Reduction, inputs, None if output is None else [output], PARAM.ReductionParam, param,
                   name=name or ("Reduction" if output is None else None))


def _reduce(ctx: Context, node: OnnxNode, *, axes: list[int] | None = None, keepdims: int = 1,
            noop_with_empty_axes: int = 0) -> None:
    operation, before, after = _REDUCE[node.op_type]
    dynamic_axes: str | None = None
    if axes is None and node.input(1) and ctx.shape(node.input(1)) != [0]:
        value = ctx.value(node.input(1))
        if value is None:
            if noop_with_empty_axes:
                raise UseFunctionBody(f"{node.label()}: run-time axes with noop_with_empty_axes=1 are not supported")
            dynamic_axes = node.input(1)
        else:
            axes = [int(a) for a in value.ravel()]
    x = node.inputs[0]
    if dynamic_axes is not None:
        if before is not None:
            x = ctx.unary(before, x)
        y = reduction(ctx, x, operation, dynamic_axes, bool(keepdims), None if after else node.outputs[0])
        if after is not None:
            ctx.unary(after, y, node.outputs[0])
        return
    if not axes:
        if noop_with_empty_axes:
            ctx.alias(x, node.outputs[0])
            return
        rank = ctx.rank(x)
        if rank is None:
            raise UseFunctionBody(f"{node.label()}: reducing over all axes needs the input rank")
        axes = list(range(rank))  # MNN's Reduction with no dims keeps the input shape
    if before is not None:
        x = ctx.unary(before, x)
    if after is None:
        reduction(ctx, x, operation, axes, bool(keepdims), node.outputs[0], node.name)
        return
    y = reduction(ctx, x, operation, axes, bool(keepdims))
    ctx.unary(after, y, node.outputs[0])


for _name in _REDUCE:
    onnx_op(_name)(_reduce)


def _last_index(ctx: Context, node: OnnxNode, op_type: int, param: fb.ArgMaxT, axis: int) -> str:
    """select_last_index: arg over x reversed along `axis`, mapped back as (dim - 1) - index."""
    x = node.inputs[0]
    rank = ctx.need_rank(node, x)
    axis %= rank
    slice_param = fb.StridedSliceParamT()
    slice_param.fromType = 1
    starts, ends = ctx.const(np.int32([-1])), ctx.const(np.int32([-(2**31 - 1)]))
    reverse = ctx.out(OP.StridedSlice, [x, starts, ends, ctx.const(np.int32([axis])), ctx.const(np.int32([-1]))],
                      None, PARAM.StridedSliceParam, slice_param, name="StridedSlice")
    index = ctx.out(op_type, [reverse], None, PARAM.ArgMax, param, name=node.name)
    dim = ctx.out(OP.GatherV2, [ctx.shape_of(x), ctx.const(np.int32(axis)), ctx.const(np.int32(0))], name="GatherV2")
    last = ctx.binary(BIN.SUB, dim, ctx.const(np.int32(1)))
    return ctx.binary(BIN.SUB, last, index)


def _arg(ctx: Context, node: OnnxNode, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> None:
    param = fb.ArgMaxT()
    param.axis = axis
    param.topK = 1
    op_type = OP.ArgMax if node.op_type == "ArgMax" else OP.ArgMin
    if select_last_index:
        y = _last_index(ctx, node, op_type, param, axis)
    elif not keepdims:
        ctx.emit(op_type, [node.inputs[0]], node.outputs, PARAM.ArgMax, param, name=node.name)
        return
    else:
        y = ctx.out(op_type, [node.inputs[0]], None, PARAM.ArgMax, param, name=node.name)
    if keepdims:  # the output has the input's rank, so a negative axis means the same place (MNN accepts it)
        rank = ctx.rank(node.inputs[0])
        ctx.squeeze(y, [axis % rank if rank is not None else axis], node.outputs[0], unsqueeze=True)
    else:
        ctx.alias(y, node.outputs[0])


onnx_op("ArgMax")(_arg)
onnx_op("ArgMin")(_arg)
