"""ScatterND, ScatterElements (and the old Scatter), BitShift."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .tensor import _wrap_indices

_REDUCTIONS = {"add": BIN.ADD, "mul": BIN.MUL, "max": BIN.MAXIMUM, "min": BIN.MINIMUM}


def _reduction_param(node: OnnxNode, reduction: str) -> tuple[int, Any]:
    if reduction == "none":
        return 0, None
    if reduction not in _REDUCTIONS:
        raise UseFunctionBody(f"{node.label()}: reduction '{reduction}' is not supported")
    param = fb.BinaryOpT()
    param.opType = _REDUCTIONS[reduction]
    return PARAM.BinaryOp, param


@onnx_op("ScatterND")
def scatter_nd(ctx: Context, node: OnnxNode, *, reduction: str = "none") -> None:
    """ScatterND -> ScatterNd(indices, updates, Shape(data), data) (MNNConvert's 4-input form)."""
    param_type, param = _reduction_param(node, reduction)
    data, indices, updates = node.inputs[:3]
    ctx.emit(OP.ScatterNd, [indices, updates, ctx.shape_of(data), data], node.outputs, param_type, param,
             name=node.name)


@onnx_op("ScatterElements", "Scatter")
def scatter_elements(ctx: Context, node: OnnxNode, *, axis: int = 0, reduction: str = "none") -> None:
    """ScatterElements -> ScatterElements(data, indices, updates, axis) with a BinaryOp param (opType -1 = none).

    MNN reads the param unconditionally (it crashes without one), as MNNConvert always writes it.
    """
    param_type, param = _reduction_param(node, reduction)
    if param is None:
        param_type, param = PARAM.BinaryOp, fb.BinaryOpT()
        param.opType = -1
    data, indices, updates = node.inputs[:3]
    if axis < 0:
        axis += ctx.need_rank(node, data)
    value = ctx.value(indices)
    if value is None or (value < 0).any():
        indices = _wrap_indices(ctx, node, indices, axis)
    ctx.emit(OP.ScatterElements, [data, indices, updates, ctx.const(np.int32(axis), "axis")], node.outputs,
             param_type, param, name=node.name)


@onnx_op("BitShift")
def bit_shift(ctx: Context, node: OnnxNode, *, direction: str = "LEFT") -> None:
    """BitShift -> BinaryOp LEFTSHIFT / RIGHTSHIFT."""
    operation = BIN.LEFTSHIFT if direction == "LEFT" else BIN.RIGHTSHIFT
    ctx.binary(operation, node.inputs[0], node.inputs[1], node.outputs[0])
