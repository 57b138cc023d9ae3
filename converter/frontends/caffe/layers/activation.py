"""ReLU, PReLU, Sigmoid, TanH, ELU, Power."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, Layer
from ..registry import caffe_layer


@caffe_layer("ReLU")
def relu(ctx: Context, layer: Layer) -> None:
    """ReLU(negative_slope) -> ReLU(slope)."""
    ctx.layer_op(layer, OP.ReLU, PARAM.Relu, fb.ReluT, slope=float(layer.proto.relu_param.negative_slope))


@caffe_layer("ReLU6")
def relu6(ctx: Context, layer: Layer) -> None:
    """ReLU6 (a common Caffe extension) -> ReLU6(0, 6)."""
    ctx.layer_op(layer, OP.ReLU6, PARAM.Relu6, fb.Relu6T, minValue=0.0, maxValue=6.0)


@caffe_layer("PReLU")
def prelu(ctx: Context, layer: Layer) -> None:
    """PReLU (slope blob per channel, or one shared) -> PReLU."""
    slope = np.asarray(layer.blob(0, "slope"), np.float32).ravel()
    ctx.layer_op(layer, OP.PReLU, PARAM.PRelu, fb.PReluT, slopeCount=int(slope.size), slope=slope)


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
    ctx.layer_op(layer, OP.ELU, PARAM.ELU, fb.ELUT, alpha=float(layer.proto.elu_param.alpha))


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
