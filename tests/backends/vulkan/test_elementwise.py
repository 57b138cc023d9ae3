"""Vulkan UnaryOp / ReLU / ReLU6 / BinaryOp against numpy, on NC4HW4 tails (channels 1, 3, 13, 127)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(7)
SHAPES = [(1, 1, 3, 3), (2, 3, 4, 5), (1, 13, 2, 3), (1, 127, 1, 2)]
UNARY = {
    "ABS": np.abs, "NEG": np.negative, "EXP": np.exp, "SQUARE": np.square, "SIGMOID": lambda x: 1 / (1 + np.exp(-x)),
    "TANH": np.tanh, "SIN": np.sin, "FLOOR": np.floor, "HARDSWISH": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "SILU": lambda x: x / (1 + np.exp(-x)),
}
BINARY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "MAXIMUM": np.maximum, "MINIMUM": np.minimum,
          "GREATER": lambda a, b: (a > b).astype(np.float32), "SquaredDifference": lambda a, b: (a - b) ** 2}


def _close(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("shape", "fmt"), [*((s, "NC4HW4") for s in SHAPES), (SHAPES[2], "NCHW")])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(run_op: Any, make_op: Any, name: str, shape: tuple[int, ...], fmt: str) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    param = fb.UnaryOpT()
    param.opType = getattr(fb.UnaryOpOperation, name)
    (y,) = run_op(fb.OpType.UnaryOp, make_op(fb.OpType.UnaryOp, param), [(x, fmt)],
                  [TensorDesc(shape, np.float32, fmt)]).run()
    _close(y, UNARY[name](x))


@pytest.mark.parametrize("shape", SHAPES)
def test_relu_relu6_zero_pads(run_op: Any, make_op: Any, shape: tuple[int, ...]) -> None:
    x = (RNG.standard_normal(shape) * 5).astype(np.float32)
    leaky = fb.ReluT()
    leaky.slope = 0.1
    (y,) = run_op(fb.OpType.ReLU, make_op(fb.OpType.ReLU, leaky), [(x, "NC4HW4")],
                  [TensorDesc(shape, np.float32, "NC4HW4")]).run()
    _close(y, np.where(x > 0, x, 0.1 * x))
    runner = run_op(fb.OpType.ReLU6, make_op(fb.OpType.ReLU6, fb.Relu6T()), [(x, "NC4HW4")],
                    [TensorDesc(shape, np.float32, "NC4HW4")])
    (y,) = runner.run()
    _close(y, np.clip(x, 0, 6))
    raw = runner.out_refs[0].array.reshape(shape[0], -1, 4)
    c = shape[1]
    if c % 4:
        assert not raw.reshape(shape[0], -(-c // 4), -1, 4)[:, -1, :, c % 4:].any(), "padded lanes must be zero"


@pytest.mark.parametrize("b_shape", [(2, 13, 3, 5), (1, 13, 1, 1), (5,), (2, 1, 3, 1), ()])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(run_op: Any, make_op: Any, name: str, b_shape: tuple[int, ...]) -> None:
    a = RNG.standard_normal((2, 13, 3, 5)).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    param = fb.BinaryOpT()
    param.opType = getattr(fb.BinaryOpOperation, name)
    b_fmt = "NC4HW4" if len(b_shape) == 4 else "NCHW"
    (y,) = run_op(fb.OpType.BinaryOp, make_op(fb.OpType.BinaryOp, param), [(a, "NC4HW4"), (b, b_fmt)],
                  [TensorDesc(a.shape, np.float32, "NC4HW4")]).run()
    _close(y, BINARY[name](a, b))


def test_binary_fused_relu_and_mixed_rank(run_op: Any, make_op: Any) -> None:
    a = RNG.standard_normal((3, 1, 7)).astype(np.float32)
    b = RNG.standard_normal((4, 1)).astype(np.float32)
    param = fb.BinaryOpT()
    param.opType = fb.BinaryOpOperation.ADD
    param.activationType = 1
    (y,) = run_op(fb.OpType.BinaryOp, make_op(fb.OpType.BinaryOp, param), [(a, "NCHW"), (b, "NCHW")],
                  [TensorDesc((3, 4, 7), np.float32, "NCHW")]).run()
    _close(y, np.maximum(a + b, 0))


def test_unsupported_returns_none(run_op: Any, make_op: Any) -> None:
    param = fb.UnaryOpT()
    param.opType = fb.UnaryOpOperation.ERFINV
    x = np.zeros((1, 3, 2, 2), np.float32)
    runner = run_op(fb.OpType.UnaryOp, make_op(fb.OpType.UnaryOp, param), [(x, "NCHW")],
                    [TensorDesc(x.shape, np.float32, "NCHW")])
    assert runner.execution is None
    runner = run_op(fb.OpType.Interp, make_op(fb.OpType.Interp), [(x, "NCHW")],
                    [TensorDesc(x.shape, np.float32, "NCHW")])
    assert runner.execution is None


def test_pow_with_negative_bases(run_op: Any, make_op: Any) -> None:
    a = np.array([[-2.0, -3.0, 2.0, -1.5, 0.0, -4.0]], np.float32)
    b = np.array([[2.0, 3.0, 0.5, 2.0, 2.0, -1.0]], np.float32)
    param = fb.BinaryOpT()
    param.opType = fb.BinaryOpOperation.POW
    (y,) = run_op(fb.OpType.BinaryOp, make_op(fb.OpType.BinaryOp, param), [(a, "NCHW"), (b, "NCHW")],
                  [TensorDesc(a.shape, np.float32, "NCHW")]).run()
    _close(y, np.power(a, b))


def test_empty_tensors(run_op: Any, make_op: Any) -> None:
    a = np.zeros((0, 3), np.float32)
    param = fb.BinaryOpT()
    param.opType = fb.BinaryOpOperation.ADD
    (y,) = run_op(fb.OpType.BinaryOp, make_op(fb.OpType.BinaryOp, param), [(a, "NCHW"), (a, "NCHW")],
                  [TensorDesc((0, 3), np.float32, "NCHW")]).run()
    assert y.shape == (0, 3)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf)(x.astype(np.float64))


DOMAIN_UNARY = {  # op -> (input generator range, numpy reference)
    "SQRT": ((0.01, 9), np.sqrt), "RSQRT": ((0.1, 9), lambda x: 1 / np.sqrt(x)), "LOG": ((0.01, 9), np.log),
    "RECIPROCAL": ((0.5, 4), np.reciprocal), "CEIL": ((-3, 3), np.ceil), "ROUND": ((-3, 3), np.rint),
    "SIGN": ((-3, 3), np.sign), "COS": ((-3, 3), np.cos), "TAN": ((-1.2, 1.2), np.tan),
    "ASIN": ((-0.99, 0.99), np.arcsin), "ACOS": ((-0.99, 0.99), np.arccos), "ATAN": ((-5, 5), np.arctan),
    "ATANH": ((-0.9, 0.9), np.arctanh), "ASINH": ((-5, 5), np.arcsinh), "ACOSH": ((1, 5), np.arccosh),
    "SINH": ((-3, 3), np.sinh), "COSH": ((-3, 3), np.cosh), "EXPM1": ((-3, 3), np.expm1),
    "LOG1P": ((-0.5, 3), np.log1p), "BNLL": ((-5, 5), lambda x: np.logaddexp(0, x)), "ERF": ((-3, 3), _erf),
    "ERFC": ((-3, 3), lambda x: 1 - _erf(x)),
    "GELU_STANDARD": ((-4, 4), lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    "GELU": ((-4, 4), lambda x: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))),
}


@pytest.mark.parametrize("name", sorted(DOMAIN_UNARY))
def test_unary_domains(run_op: Any, make_op: Any, name: str) -> None:
    (lo, hi), ref = DOMAIN_UNARY[name]
    x = RNG.uniform(lo, hi, size=(1, 13, 4, 5)).astype(np.float32)
    param = fb.UnaryOpT()
    param.opType = getattr(fb.UnaryOpOperation, name)
    (y,) = run_op(fb.OpType.UnaryOp, make_op(fb.OpType.UnaryOp, param), [(x, "NC4HW4")],
                  [TensorDesc(x.shape, np.float32, "NC4HW4")]).run()
    _close(y, np.asarray(ref(x)))


MORE_BINARY = {
    "DIV": np.divide, "REALDIV": np.divide, "FLOORDIV": np.floor_divide, "FLOORMOD": np.mod, "ATAN2": np.arctan2,
    "EQUAL": np.equal, "NOTEQUAL": np.not_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal,
    "GREATER_EQUAL": np.greater_equal, "MAX_TEMP": np.maximum, "MIN_TEMP": np.minimum,
    "MUL_SILU": lambda a, b: a * (b / (1 + np.exp(-b))),
}


@pytest.mark.parametrize("name", sorted(MORE_BINARY))
def test_binary_ops_vs_numpy(run_op: Any, make_op: Any, name: str) -> None:
    a = np.round(RNG.uniform(-4, 4, size=(1, 13, 3, 4)), 1).astype(np.float32)  # rounded: equal pairs occur
    b = np.round(RNG.uniform(0.5, 3, size=(1, 13, 1, 4)) * RNG.choice([-1, 1], size=(1, 13, 1, 4)), 1)
    b = b.astype(np.float32)
    param = fb.BinaryOpT()
    param.opType = getattr(fb.BinaryOpOperation, name)
    (y,) = run_op(fb.OpType.BinaryOp, make_op(fb.OpType.BinaryOp, param), [(a, "NC4HW4"), (b, "NCHW")],
                  [TensorDesc(a.shape, np.float32, "NC4HW4")]).run()
    _close(y, np.asarray(MORE_BINARY[name](a, b), dtype=np.float32))
