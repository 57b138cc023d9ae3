"""Activations: Relu, LeakyRelu, Clip, PRelu, Elu, Selu, HardSigmoid, Softplus, Gelu, ... as MNNConvert maps them."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..registry import onnx_op

FLT_MAX = float(np.finfo(np.float32).max)


def _relu(ctx: Context, node: OnnxNode, slope: float) -> None:
    param = fb.ReluT()
    param.slope = float(slope)
    ctx.emit(OP.ReLU, [node.inputs[0]], node.outputs, PARAM.Relu, param, name=node.name)


def _relu6(ctx: Context, x: str, low: float, high: float, output: str | None = None, name: str | None = None) -> str:
    param = fb.Relu6T()
    param.minValue = float(low)
    param.maxValue = float(high)
    return ctx.out(OP.ReLU6, [x], None if output is None else [output], PARAM.Relu6, param, name=name)


@onnx_op("Relu")
def relu(ctx: Context, node: OnnxNode) -> None:
    """Relu -> ReLU(slope 0)."""
    _relu(ctx, node, 0.0)


@onnx_op("LeakyRelu")
def leaky_relu(ctx: Context, node: OnnxNode, *, alpha: float = 0.01) -> None:
    """LeakyRelu -> ReLU(slope alpha)."""
    _relu(ctx, node, alpha)


@onnx_op("Clip")
def clip_v6(ctx: Context, node: OnnxNode, *, min: float = -FLT_MAX, max: float = FLT_MAX) -> None:
    """Clip with min/max attributes -> ReLU6(minValue, maxValue)."""
    _relu6(ctx, node.inputs[0], min, max, node.outputs[0], node.name)


@onnx_op("Clip", since=11)
def clip(ctx: Context, node: OnnxNode) -> None:
    """Clip with min/max inputs: constant bounds -> ReLU6, run-time bounds -> BinaryOp MAXIMUM/MINIMUM."""
    low_name, high_name = node.input(1), node.input(2)
    low, high = ctx.value(low_name), ctx.value(high_name)
    if (not low_name or low is not None) and (not high_name or high is not None) and ctx.is_float(node.inputs[0]):
        lo = -FLT_MAX if low is None else float(low)
        hi = FLT_MAX if high is None else float(high)
        _relu6(ctx, node.inputs[0], lo, hi, node.outputs[0], node.name)
        return
    x = node.inputs[0]
    if low_name and high_name:
        x = ctx.binary(BIN.MAXIMUM, x, low_name)
        ctx.binary(BIN.MINIMUM, x, high_name, node.outputs[0])
    elif low_name:
        ctx.binary(BIN.MAXIMUM, x, low_name, node.outputs[0])
    elif high_name:
        ctx.binary(BIN.MINIMUM, x, high_name, node.outputs[0])
    else:
        ctx.alias(x, node.outputs[0])


@onnx_op("PRelu")
def prelu(ctx: Context, node: OnnxNode) -> None:
    """PRelu: per-channel constant slope [C,1,..] -> PReLU; otherwise x * select(x < 0, slope, 1) as MNNConvert."""
    x, slope_name = node.inputs[0], node.inputs[1]
    slope = ctx.value(slope_name)
    rank = ctx.rank(x)
    if slope is not None and slope.size == 1:
        _relu(ctx, node, float(slope.ravel()[0]))
        return
    if slope is not None and rank is not None and rank >= 3 and slope.ndim == rank - 1 and \
            all(d == 1 for d in slope.shape[1:]):
        param = fb.PReluT()
        param.slopeCount = int(slope.shape[0])
        param.slope = slope.astype(np.float32).ravel()
        ctx.emit(OP.PReLU, [x], node.outputs, PARAM.PRelu, param, name=node.name)
        return
    mask = ctx.binary(BIN.GREATER, ctx.const(np.float32(0)), x)  # x < 0 (MNN's float LESS is unreliable)
    factor = ctx.out(OP.Select, [mask, slope_name, ctx.const(np.float32(1))], name="Select")
    ctx.binary(BIN.MUL, x, factor, node.outputs[0])


@onnx_op("Elu")
def elu(ctx: Context, node: OnnxNode, *, alpha: float = 1.0) -> None:
    """Elu -> ELU(alpha)."""
    param = fb.ELUT()
    param.alpha = float(alpha)
    ctx.emit(OP.ELU, [node.inputs[0]], node.outputs, PARAM.ELU, param, name=node.name)


@onnx_op("Selu")
def selu(ctx: Context, node: OnnxNode, *, alpha: float = 1.67326319217681884765625,
         gamma: float = 1.05070102214813232421875) -> None:
    """Selu -> Selu(scale=gamma, alpha)."""
    param = fb.SeluT()
    param.scale = float(gamma)
    param.alpha = float(alpha)
    ctx.emit(OP.Selu, [node.inputs[0]], node.outputs, PARAM.Selu, param, name=node.name)


@onnx_op("HardSigmoid")
def hard_sigmoid(ctx: Context, node: OnnxNode, *, alpha: float = 0.2, beta: float = 0.5) -> None:
    """HardSigmoid -> x*alpha + beta, then ReLU6(0, 1)."""
    y = ctx.binary(BIN.MUL, node.inputs[0], ctx.const(np.float32(alpha)))
    y = ctx.binary(BIN.ADD, y, ctx.const(np.float32(beta)))
    _relu6(ctx, y, 0.0, 1.0, node.outputs[0], node.name)


@onnx_op("Softplus")
def softplus(ctx: Context, node: OnnxNode) -> None:
    """Softplus -> log(exp(x) + 1)."""
    y = ctx.unary(UN.EXP, node.inputs[0])
    y = ctx.binary(BIN.ADD, y, ctx.const(np.float32(1)))
    ctx.unary(UN.LOG, y, node.outputs[0])


@onnx_op("Softsign")
def softsign(ctx: Context, node: OnnxNode) -> None:
    """Softsign -> x / (|x| + 1)."""
    y = ctx.unary(UN.ABS, node.inputs[0])
    y = ctx.binary(BIN.ADD, y, ctx.const(np.float32(1)))
    ctx.binary(BIN.REALDIV, node.inputs[0], y, node.outputs[0])


@onnx_op("Gelu")
def gelu(ctx: Context, node: OnnxNode, *, approximate: str = "none") -> None:
    """Gelu -> UnaryOp GELU_STANDARD (erf form) or GELU (tanh approximation)."""
    ctx.unary(UN.GELU if approximate == "tanh" else UN.GELU_STANDARD, node.inputs[0], node.outputs[0])


@onnx_op("Mish")
def mish(ctx: Context, node: OnnxNode) -> None:
    """Mish -> x * tanh(softplus(x))."""
    y = ctx.unary(UN.EXP, node.inputs[0])
    y = ctx.binary(BIN.ADD, y, ctx.const(np.float32(1)))
    y = ctx.unary(UN.TANH, ctx.unary(UN.LOG, y))
    ctx.binary(BIN.MUL, node.inputs[0], y, node.outputs[0])


@onnx_op("ThresholdedRelu")
def thresholded_relu(ctx: Context, node: OnnxNode, *, alpha: float = 1.0) -> None:
    """ThresholdedRelu -> select(x > alpha, x, 0)."""
    mask = ctx.binary(BIN.GREATER, node.inputs[0], ctx.const(np.float32(alpha)))
    ctx.emit(OP.Select, [mask, node.inputs[0], ctx.const(np.float32(0))], node.outputs)


@onnx_op("Celu")
def celu(ctx: Context, node: OnnxNode, *, alpha: float = 1.0) -> None:
    """Celu -> max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    x = node.inputs[0]
    pos = ctx.binary(BIN.MAXIMUM, x, ctx.const(np.float32(0)))
    e = ctx.unary(UN.EXPM1, ctx.binary(BIN.MUL, x, ctx.const(np.float32(1.0 / alpha))))
    neg = ctx.binary(BIN.MINIMUM, ctx.binary(BIN.MUL, e, ctx.const(np.float32(alpha))), ctx.const(np.float32(0)))
    ctx.binary(BIN.ADD, pos, neg, node.outputs[0])
