"""ReLU, PReLU, Sigmoid, TanH, ELU, Power."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, Layer
from ..registry import caffe_layer


@caffe_layer("ReLU")
def relu(ctx: Context, layer: Layer) -> None:
    """ReLU(negative_slope) -> ReLU(slope)."""
    param = fb.ReluT()
    param.slope = float(layer.proto.relu_param.negative_slope)
    ctx.emit(OP.ReLU, [ctx.x(layer)], [ctx.top(layer)], PARAM.Relu, param, name=layer.name)


@caffe_layer("ReLU6")
def relu6(ctx: Context, layer: Layer) -> None:
    """ReLU6 (a common Caffe extension) -> ReLU6(0, 6)."""
    param = fb.Relu6T()
    param.minValue, param.maxValue = 0.0, 6.0
    ctx.emit(OP.ReLU6, [ctx.x(layer)], [ctx.top(layer)], PARAM.Relu6, param, name=layer.name)


@caffe_layer("PReLU")
def prelu(ctx: Context, layer: Layer) -> None:
    """PReLU (slope blob per channel, or one shared) -> PReLU."""
    slope = np.asarray(layer.blob(0, "slope"), np.float32).ravel()
    param = fb.PReluT()
    param.slopeCount = int(slope.size)
    param.slope = slope
    ctx.emit(OP.PReLU, [ctx.x(layer)], [ctx.top(layer)], PARAM.PRelu, param, name=layer.name)


@caffe_layer("Sigmoid")
def sigmoid(ctx: Context, layer: Layer) -> None:
    """Sigmoid -> UnaryOp SIGMOID."""
    ctx.unary(UN.SIGMOID, ctx.x(layer), ctx.top(layer))


@caffe_layer("TanH")
def tanh(ctx: Context, layer: Layer) -> None:
    """TanH -> UnaryOp TANH."""
    ctx.unary(UN.TANH, ctx.x(layer), ctx.top(layer))


@caffe_layer("AbsVal")
def absval(ctx: Context, layer: Layer) -> None:
    """AbsVal -> UnaryOp ABS."""
    ctx.unary(UN.ABS, ctx.x(layer), ctx.top(layer))


@caffe_layer("ELU")
def elu(ctx: Context, layer: Layer) -> None:
    """ELU(alpha) -> ELU."""
    param = fb.ELUT()
    param.alpha = float(layer.proto.elu_param.alpha)
    ctx.emit(OP.ELU, [ctx.x(layer)], [ctx.top(layer)], PARAM.ELU, param, name=layer.name)


@caffe_layer("Power")
def power(ctx: Context, layer: Layer) -> None:
    """Power: y = (shift + scale * x) ^ power, as BinaryOps (the trivial factors are skipped)."""
    p = layer.proto.power_param
    y = ctx.x(layer)
    steps = []
    if p.scale != 1.0:
        steps.append((BIN.MUL, p.scale))
    if p.shift != 0.0:
        steps.append((BIN.ADD, p.shift))
    if p.power != 1.0:
        steps.append((BIN.POW, p.power))
    if not steps:
        steps.append((BIN.MUL, 1.0))
    top = ctx.top(layer)
    for i, (operation, value) in enumerate(steps):
        const = ctx.const(np.float32(value), layer.name + "/c")
        y = ctx.binary(operation, y, const, top if i == len(steps) - 1 else None)
