"""QuantizeLinear / DequantizeLinear as float arithmetic (MNN computes them in float, values carried as int32)."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .misc import round_half_even

# ONNX integer element type -> saturation range
_RANGES = {2: (0, 255), 3: (-128, 127), 4: (0, 65535), 5: (-32768, 32767), 6: (-2**31, 2**31 - 1)}


def _cast(ctx: Context, x: str, dtype: int, output: str | None = None) -> str:
    param = fb.CastParamT()
    param.dstT = dtype
    return ctx.out(OP.Cast, [x], None if output is None else [output], PARAM.CastParam, param,
                   name=None if output is not None else "Cast")


def _per_axis(ctx: Context, node: OnnxNode, param: str, x: str, axis: int) -> str:
    """Reshape a 1-D per-axis parameter so it broadcasts along `axis` of x."""
    shape = ctx.shape(param)
    if shape is None or len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return param
    rank = ctx.need_rank(node, x)
    axis = axis % rank
    return ctx.reshape(param, [-1] + [1] * (rank - axis - 1))


def _elem_type(ctx: Context, name: str, default: int) -> int:
    value = ctx.value(name)
    if value is not None:
        return {np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.uint16): 4, np.dtype(np.int16): 5,
                np.dtype(np.int32): 6}.get(value.dtype, default)
    return ctx.dtypes.get(name, default) if name else default


@onnx_op("DequantizeLinear")
def dequantize_linear(ctx: Context, node: OnnxNode, *, axis: int = 1, block_size: int = 0,
                      output_dtype: int = 0) -> None:
    """DequantizeLinear -> (float(x) - float(zero_point)) * scale, per tensor or per axis."""
    if block_size:
        raise UseFunctionBody(f"{node.label()}: blocked quantization is not supported")
    x = _cast(ctx, node.inputs[0], fb.DataType.DT_FLOAT)
    scale = _per_axis(ctx, node, node.inputs[1], node.inputs[0], axis)
    if node.input(2):
        zero = _cast(ctx, _per_axis(ctx, node, node.inputs[2], node.inputs[0], axis), fb.DataType.DT_FLOAT)
        x = ctx.binary(BIN.SUB, x, zero)
    ctx.binary(BIN.MUL, x, scale, node.outputs[0])


@onnx_op("QuantizeLinear")
def quantize_linear(ctx: Context, node: OnnxNode, *, axis: int = 1, block_size: int = 0, output_dtype: int = 0,
                    precision: int = 0, saturate: int = 1) -> None:
    """QuantizeLinear -> clamp(round_half_even(x / scale) + zero_point) as int32 values."""
    if block_size:
        raise UseFunctionBody(f"{node.label()}: blocked quantization is not supported")
    elem = output_dtype or _elem_type(ctx, node.input(2), 2)
    if elem not in _RANGES:
        raise UseFunctionBody(f"{node.label()}: quantizing to ONNX type {elem} is not supported")
    low, high = _RANGES[elem]
    scale = _per_axis(ctx, node, node.inputs[1], node.inputs[0], axis)
    y = round_half_even(ctx, ctx.binary(BIN.REALDIV, node.inputs[0], scale))
    if node.input(2):
        zero = _cast(ctx, _per_axis(ctx, node, node.inputs[2], node.inputs[0], axis), fb.DataType.DT_FLOAT)
        y = ctx.binary(BIN.ADD, y, zero)
    y = ctx.binary(BIN.MAXIMUM, y, ctx.const(np.float32(low)))
    y = ctx.binary(BIN.MINIMUM, y, ctx.const(np.float32(high)))
    _cast(ctx, y, fb.DataType.DT_INT32, node.outputs[0])
