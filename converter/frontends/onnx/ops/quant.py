"""QuantizeLinear / DequantizeLinear as float arithmetic (MNN computes them in float, values carried as int32);
MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on zero-point-centred values."""

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


def _blocked(ctx: Context, node: OnnxNode, param: str, x: str, axis: int, block: int) -> str:
    """A blocked-quantization parameter (x's rank, ceil(K / block) along `axis`) repeated block by block to x's
    size along `axis` (a GatherV2 of index // block): elementwise with x after that."""
    shape = ctx.shape(x)
    rank = ctx.need_rank(node, x)
    axis %= rank
    if shape is None or shape[axis] is None:
        raise UseFunctionBody(f"{node.label()}: blocked quantization needs the size of axis {axis}")
    index = ctx.const((np.arange(int(shape[axis])) // block).astype(np.int32), "block_index")
    return ctx.out(OP.GatherV2, [param, index, ctx.const(np.int32(axis))], name="GatherV2")


def _param(ctx: Context, node: OnnxNode, param: str, x: str, axis: int, block: int) -> str:
    """A scale / zero point made to broadcast against x: per tensor, per axis or per block."""
    return _blocked(ctx, node, param, x, axis, block) if block else _per_axis(ctx, node, param, x, axis)


def _elem_type(ctx: Context, name: str, default: int) -> int:
    value = ctx.value(name)
    if value is not None:
        return {np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.uint16): 4, np.dtype(np.int16): 5,
                np.dtype(np.int32): 6}.get(value.dtype, default)
    return ctx.dtypes.get(name, default) if name else default


@onnx_op("DequantizeLinear")
def dequantize_linear(ctx: Context, node: OnnxNode, *, axis: int = 1, block_size: int = 0,
                      output_dtype: int = 0) -> None:
    """DequantizeLinear -> (float(x) - float(zero_point)) * scale, per tensor, per axis or per block."""
    x = _cast(ctx, node.inputs[0], fb.DataType.DT_FLOAT)
    scale = _param(ctx, node, node.inputs[1], node.inputs[0], axis, block_size)
    if node.input(2):
        zero = _cast(ctx, _param(ctx, node, node.inputs[2], node.inputs[0], axis, block_size), fb.DataType.DT_FLOAT)
        x = ctx.binary(BIN.SUB, x, zero)
    ctx.binary(BIN.MUL, x, scale, node.outputs[0])


@onnx_op("QuantizeLinear")
def quantize_linear(ctx: Context, node: OnnxNode, *, axis: int = 1, block_size: int = 0, output_dtype: int = 0,
                    precision: int = 0, saturate: int = 1) -> None:
    """QuantizeLinear -> clamp(round_half_even(x / scale) + zero_point) as int32 values (per tensor, axis or
    block)."""
    elem = output_dtype or _elem_type(ctx, node.input(2), 2)
    if elem not in _RANGES:
        raise UseFunctionBody(f"{node.label()}: quantizing to ONNX type {elem} is not supported")
    low, high = _RANGES[elem]
    scale = _param(ctx, node, node.inputs[1], node.inputs[0], axis, block_size)
    y = round_half_even(ctx, ctx.binary(BIN.REALDIV, node.inputs[0], scale))
    if node.input(2):
        zero = _cast(ctx, _param(ctx, node, node.inputs[2], node.inputs[0], axis, block_size), fb.DataType.DT_FLOAT)
        y = ctx.binary(BIN.ADD, y, zero)
    y = ctx.binary(BIN.MAXIMUM, y, ctx.const(np.float32(low)))
    y = ctx.binary(BIN.MINIMUM, y, ctx.const(np.float32(high)))
    _cast(ctx, y, fb.DataType.DT_INT32, node.outputs[0])


# MatMulInteger / ConvInteger / QLinearMatMul / QLinearConv (onnxruntime's QOperator formats): the integer products
# run as float MatMul / Conv on the zero-point-centred values. Those are integers, and so is every partial sum while
# it stays below 2^24 (K * 255² for 8-bit inputs: exact up to K = 258); past that a sum may round by one part in
# 2^24, far below what the requantisation or the float scaling that follows keeps. The requantisation is
# onnxruntime's: round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zero_point, clamped.


def _centred(ctx: Context, node: OnnxNode, x: str, zero: str, axis: int) -> str:
    """float(x) - float(zero_point) (per tensor, or per `axis` for a 1-D zero point); constants fold here."""
    value, zero_value = ctx.value(x), ctx.value(zero) if zero else np.zeros((), np.float32)
    if value is not None and zero_value is not None:
        zero_value = np.asarray(zero_value, np.float32)
        if zero_value.ndim == 1 and zero_value.size > 1:
            zero_value = zero_value.reshape([-1] + [1] * (value.ndim - axis % value.ndim - 1))
        return ctx.const(value.astype(np.float32) - zero_value, "centred")
    xf = _cast(ctx, x, fb.DataType.DT_FLOAT)
    if zero:
        xf = ctx.binary(BIN.SUB, xf, _cast(ctx, _per_axis(ctx, node, zero, x, axis), fb.DataType.DT_FLOAT))
    if ctx.shape(x) is not None:  # what the MatMul / Conv converters ask of their operands
        ctx.shapes[xf] = list(ctx.shape(x))
    ctx.dtypes[xf] = 1
    return xf


def _integer_product(ctx: Context, node: OnnxNode, a: str, a_zero: str, b: str, b_zero: str,
                     conv_attrs: dict | None) -> str:
    """The int32-valued product as float: MatMul (zero points per row of a / per column of b) or Conv (per output
    channel of the weights) of the centred operands."""
    from .conv import conv
    from .matmul import matmul

    out = ctx.graph.unique_name(f"{node.name}_product")
    if conv_attrs is None:
        left, right = _centred(ctx, node, a, a_zero, -2), _centred(ctx, node, b, b_zero, -1)
        matmul(ctx, OnnxNode(out, "MatMul", [left, right], [out], source_name=node.source_name))
        rank = max(ctx.need_rank(node, a), ctx.need_rank(node, b))
    else:
        left, right = _centred(ctx, node, a, a_zero, 1), _centred(ctx, node, b, b_zero, 0)
        conv(ctx, OnnxNode(out, "Conv", [left, right], [out], source_name=node.source_name), **conv_attrs)
        rank = ctx.need_rank(node, a)
    ctx.shapes.setdefault(out, [None] * rank)  # the rank is what the per-axis parameters after it need
    return out


def _requantize(ctx: Context, node: OnnxNode, acc: str, scales: tuple[str, str, str], zero: str, axis: int) -> None:
    """round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point, clamped to y's type, as int32 values."""
    a_s, b_s, y_s = (ctx.value(s) for s in scales)
    if a_s is not None and b_s is not None and y_s is not None:
        multiplier = ctx.const(np.float32(a_s) * np.asarray(b_s, np.float32) / np.float32(y_s), "multiplier")
    else:
        multiplier = ctx.binary(BIN.REALDIV, ctx.binary(BIN.MUL, scales[0], scales[1]), scales[2])
    y = round_half_even(ctx, ctx.binary(BIN.MUL, acc, _per_axis(ctx, node, multiplier, acc, axis)))
    if zero:
        y = ctx.binary(BIN.ADD, y, _cast(ctx, zero, fb.DataType.DT_FLOAT))
    low, high = _RANGES[_elem_type(ctx, zero, 2)]
    y = ctx.binary(BIN.MINIMUM, ctx.binary(BIN.MAXIMUM, y, ctx.const(np.float32(low))), ctx.const(np.float32(high)))
    _cast(ctx, y, fb.DataType.DT_INT32, node.outputs[0])


@onnx_op("MatMulInteger", since=10)
def matmul_integer(ctx: Context, node: OnnxNode) -> None:
    """MatMulInteger (a, b, a_zero_point, b_zero_point) -> int32 (a - a_zp) @ (b - b_zp) (see above)."""
    acc = _integer_product(ctx, node, node.inputs[0], node.input(2), node.inputs[1], node.input(3), None)
    _cast(ctx, acc, fb.DataType.DT_INT32, node.outputs[0])


@onnx_op("ConvInteger", since=10)
def conv_integer(ctx: Context, node: OnnxNode, **attrs: object) -> None:
    """ConvInteger (x, w, x_zero_point, w_zero_point) -> int32 Conv of the centred operands (see above)."""
    acc = _integer_product(ctx, node, node.inputs[0], node.input(2), node.inputs[1], node.input(3), attrs)
    _cast(ctx, acc, fb.DataType.DT_INT32, node.outputs[0])


@onnx_op("QLinearMatMul", since=10)
def qlinear_matmul(ctx: Context, node: OnnxNode) -> None:
    """QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> the integer product, requantised."""
    i = node.inputs
    acc = _integer_product(ctx, node, i[0], i[2], i[3], i[5], None)
    _requantize(ctx, node, acc, (i[1], i[4], i[6]), i[7], -1)


@onnx_op("QLinearConv", since=10)
def qlinear_conv(ctx: Context, node: OnnxNode, **attrs: object) -> None:
    """QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B int32]) -> the integer Conv (plus B),
    requantised (w_scale per output channel)."""
    i = node.inputs
    acc = _integer_product(ctx, node, i[0], i[2], i[3], i[5], attrs)
    if node.input(8):
        acc = ctx.binary(BIN.ADD, acc, _cast(ctx, _per_axis(ctx, node, i[8], acc, 1), fb.DataType.DT_FLOAT))
        ctx.shapes[acc] = [None] * ctx.need_rank(node, i[0])
    _requantize(ctx, node, acc, (i[1], i[4], i[6]), i[7], 1)
