"""Reductions: Reduce{Mean,Sum,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp} -> Reduction; ArgMax/ArgMin."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, UN, Context, OnnxNode
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


def reduction(ctx: Context, x: str, operation: int, axes: list[int] | None, keepdims: bool,
              output: str | None = None, name: str | None = None) -> str:
    """Reduction op over constant `axes` (None = all axes)."""
    param = fb.ReductionParamT()
    param.operation = operation
    param.dim = None if axes is None else [int(a) for a in axes]
    param.keepDims = bool(keepdims)
    param.dType = fb.DataType.DT_FLOAT
    return ctx.out(OP.Reduction, [x], None if output is None else [output], PARAM.ReductionParam, param,
                   name=name or ("Reduction" if output is None else None))


def _reduce(ctx: Context, node: OnnxNode, *, axes: list[int] | None = None, keepdims: int = 1,
            noop_with_empty_axes: int = 0) -> None:
    operation, before, after = _REDUCE[node.op_type]
    if axes is None and node.input(1):
        axes = [int(a) for a in ctx.need_value(node, 1, "axes").ravel()]
    x = node.inputs[0]
    if not axes:
        if noop_with_empty_axes:
            ctx.alias(x, node.outputs[0])
            return
        axes = None
    if before is not None:
        x = ctx.unary(before, x)
    if after is None:
        reduction(ctx, x, operation, axes, bool(keepdims), node.outputs[0], node.name)
        return
    y = reduction(ctx, x, operation, axes, bool(keepdims))
    ctx.unary(after, y, node.outputs[0])


for _name in _REDUCE:
    onnx_op(_name)(_reduce)


def _arg(ctx: Context, node: OnnxNode, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0) -> None:
    if select_last_index:
        raise ConvertError(f"{node.label()}: select_last_index=1 is not supported")
    param = fb.ArgMaxT()
    param.axis = axis
    param.topK = 1
    op_type = OP.ArgMax if node.op_type == "ArgMax" else OP.ArgMin
    if not keepdims:
        ctx.emit(op_type, [node.inputs[0]], node.outputs, PARAM.ArgMax, param, name=node.name)
        return
    rank = ctx.need_rank(node, node.inputs[0])
    y = ctx.out(op_type, [node.inputs[0]], None, PARAM.ArgMax, param, name=node.name)
    ctx.squeeze(y, [axis % rank], node.outputs[0], unsqueeze=True)


onnx_op("ArgMax")(_arg)
onnx_op("ArgMin")(_arg)
