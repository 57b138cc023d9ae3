"""UnaryOp / ReLU / ReLU6 / Sigmoid / TanH, BinaryOp (with broadcast) and Eltwise on OpenCL vs numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from .helpers import AWKWARD_CHANNELS, Harness, assert_close, make_op, rand

U = fb.UnaryOpOperation
UNARY = {
    U.ABS: np.abs, U.NEG: np.negative, U.FLOOR: np.floor, U.CEIL: np.ceil, U.SQUARE: np.square,
    U.EXP: np.exp, U.SIN: np.sin, U.COS: np.cos, U.ATAN: np.arctan, U.SIGN: np.sign, U.ROUND: np.round,
    U.SIGMOID: lambda x: 1 / (1 + np.exp(-x)), U.TANH: np.tanh, U.EXPM1: np.expm1,
    U.ERF: np.vectorize(math.erf), U.SILU: lambda x: x / (1 + np.exp(-x)),
    U.HARDSWISH: lambda x: x * np.clip(x + 3, 0, 6) / 6,
    U.GELU_STANDARD: lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2))),
}
POSITIVE = {U.SQRT: np.sqrt, U.RSQRT: lambda x: 1 / np.sqrt(x), U.LOG: np.log, U.RECIPROCAL: np.reciprocal,
            U.LOG1P: np.log1p}


def unary_op(code: int) -> fb.OpT:
    main = fb.UnaryOpT()
    main.opType = code
    return make_op(fb.OpType.UnaryOp, main)


@pytest.mark.parametrize("code", sorted(UNARY) + sorted(POSITIVE))
def test_unary_ops(backend: object, code: int) -> None:
    low = 0.1 if code in POSITIVE else -3.0
    x = rand((2, 13, 3, 2), seed=code, low=low, high=3.0)
    (y,) = Harness(backend).run(fb.OpType.UnaryOp, unary_op(code), [x], ["NC4HW4"], [x.shape])
    fn = {**UNARY, **POSITIVE}[code]
    assert_close(y, fn(x.astype(np.float64)))


@pytest.mark.parametrize("c", AWKWARD_CHANNELS)
@pytest.mark.parametrize("fmt", ["NC4HW4", "NCHW"])
def test_activations_keep_channel_tails_zero(backend: object, c: int, fmt: str) -> None:
    x = rand((1, c, 2, 3), seed=c)
    relu = fb.ReluT()
    relu.slope = 0.1
    h = Harness(backend)
    (y,) = h.run(fb.OpType.ReLU, make_op(fb.OpType.ReLU, relu), [x], [fmt], [x.shape], out_fmt=fmt)
    assert_close(y, np.where(x >= 0, x, 0.1 * x))
    (y,) = h.run(fb.OpType.ReLU6, make_op(fb.OpType.ReLU6, fb.Relu6T()), [x], [fmt], [x.shape], out_fmt=fmt)
    assert_close(y, np.clip(x, 0, 6))
    (y,) = h.run(fb.OpType.UnaryOp, unary_op(U.EXP), [x], [fmt], [x.shape], out_fmt=fmt)
    assert_close(y, np.exp(x))
    if fmt == "NC4HW4":
        flat = backend.read_physical(h.refs[-1].array)
        tail = flat.reshape(-(-c // 4), 2 * 3, 4)[-1, :, c % 4:]
        assert not tail.any(), "padded NC4HW4 lanes must stay zero"


def test_sigmoid_tanh_op_types(backend: object) -> None:
    x = rand((1, 3, 4, 4))
    h = Harness(backend)
    (y,) = h.run(fb.OpType.Sigmoid, make_op(fb.OpType.Sigmoid), [x], ["NC4HW4"], [x.shape])
    assert_close(y, 1 / (1 + np.exp(-x.astype(np.float64))))
    (y,) = h.run(fb.OpType.TanH, make_op(fb.OpType.TanH), [x], ["NC4HW4"], [x.shape])
    assert_close(y, np.tanh(x))


def test_unsupported_unary_returns_none(backend: object) -> None:
    h = Harness(backend)
    assert h.create(fb.OpType.UnaryOp, unary_op(U.ERFINV), [h.tensor((4,))], [h.tensor((4,))]) is None


B = fb.BinaryOpOperation
BINARY = {B.ADD: np.add, B.SUB: np.subtract, B.MUL: np.multiply, B.DIV: np.divide, B.REALDIV: np.divide,
          B.MAXIMUM: np.maximum, B.MINIMUM: np.minimum, B.SquaredDifference: lambda a, b: (a - b) ** 2,
          B.FLOORDIV: lambda a, b: np.floor(a / b), B.FLOORMOD: lambda a, b: a - np.floor(a / b) * b,
          B.POW: np.power, B.ATAN2: np.arctan2}


def binary_op(code: int, activation: int = 0) -> fb.OpT:
    main = fb.BinaryOpT()
    main.opType, main.activationType = code, activation
    return make_op(fb.OpType.BinaryOp, main)


@pytest.mark.parametrize("code", sorted(BINARY))
def test_binary_ops(backend: object, code: int) -> None:
    a = rand((1, 13, 2, 3), seed=1, low=0.5, high=2.0)
    b = rand((1, 13, 2, 3), seed=2, low=0.5, high=2.0)
    (y,) = Harness(backend).run(fb.OpType.BinaryOp, binary_op(code), [a, b], ["NC4HW4"] * 2, [a.shape])
    assert_close(y, BINARY[code](a.astype(np.float64), b.astype(np.float64)))


@pytest.mark.parametrize(("a_shape", "b_shape", "fmts"), [
    ((2, 13, 3, 4), (13, 1, 1), ("NC4HW4", "NCHW", "NC4HW4")),
    ((2, 3, 3, 4), (1, 3, 1, 4), ("NC4HW4", "NC4HW4", "NC4HW4")),
    ((1, 127, 2, 2), (), ("NC4HW4", "NCHW", "NC4HW4")),
    ((5, 1, 7), (1, 6, 1), ("NCHW", "NCHW", "NCHW")),
    ((4, 1), (3,), ("NCHW", "NCHW", "NCHW")),
    ((1, 1, 2, 3), (2, 1, 1, 1), ("NCHW", "NC4HW4", "NC4HW4")),
])
def test_binary_broadcast(backend: object, a_shape: tuple, b_shape: tuple, fmts: tuple) -> None:
    a, b = rand(a_shape, seed=3), rand(b_shape, seed=4)
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    h = Harness(backend)
    (y,) = h.run(fb.OpType.BinaryOp, binary_op(B.SUB, activation=1), [a, b], fmts[:2], [out_shape],
                 out_fmt=fmts[2])
    assert_close(y, np.maximum(a - b, 0))


def test_binary_rejects_comparisons_and_mismatched_shapes(backend: object) -> None:
    h = Harness(backend)
    a, b, y = h.tensor((2, 3)), h.tensor((2, 3)), h.tensor((2, 3))
    assert h.create(fb.OpType.BinaryOp, binary_op(B.GREATER), [a, b], [y]) is None
    assert h.create(fb.OpType.BinaryOp, binary_op(B.ADD), [a, h.tensor((4,))], [y]) is None


def eltwise_op(kind: int, coeff: list[float] | None = None) -> fb.OpT:
    main = fb.EltwiseT()
    main.type, main.coeff = kind, coeff
    return make_op(fb.OpType.Eltwise, main)


@pytest.mark.parametrize("c", AWKWARD_CHANNELS)
def test_eltwise(backend: object, c: int) -> None:
    xs = [rand((1, c, 3, 2), seed=s) for s in range(3)]
    h = Harness(backend)
    e = fb.EltwiseType
    cases = [(eltwise_op(e.SUM), xs[0] + xs[1] + xs[2]), (eltwise_op(e.PROD), xs[0] * xs[1] * xs[2]),
             (eltwise_op(e.MAXIMUM), np.maximum(np.maximum(xs[0], xs[1]), xs[2])),
             (eltwise_op(e.SUM, [0.5, -2.0, 3.0]), 0.5 * xs[0] - 2.0 * xs[1] + 3.0 * xs[2])]
    for op, expected in cases:
        (y,) = h.run(fb.OpType.Eltwise, op, xs, ["NC4HW4"] * 3, [xs[0].shape])
        assert_close(y, expected)
