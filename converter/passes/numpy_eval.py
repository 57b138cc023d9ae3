"""A small numpy evaluator for MNN ops whose inputs are all constant (used by constant folding).

Only ops whose semantics are simple and exact in numpy are here; anything else is left for the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Node

OP = fb.OpType
BIN = fb.BinaryOpOperation
UN = fb.UnaryOpOperation

Evaluator = Callable[[Node, list[np.ndarray]], list[np.ndarray]]

_BINARY: dict[int, Callable[[Any, Any], Any]] = {
    BIN.ADD: np.add, BIN.SUB: np.subtract, BIN.MUL: np.multiply, BIN.MAXIMUM: np.maximum, BIN.MINIMUM: np.minimum,
    BIN.GREATER: np.greater, BIN.GREATER_EQUAL: np.greater_equal, BIN.LESS: np.less, BIN.LESS_EQUAL: np.less_equal,
    BIN.EQUAL: np.equal, BIN.NOTEQUAL: np.not_equal, BIN.FLOORDIV: np.floor_divide,
    BIN.REALDIV: np.true_divide, BIN.POW: np.power, BIN.LOGICALOR: np.logical_or,
}

_UNARY: dict[int, Callable[[Any], Any]] = {
    UN.ABS: np.abs, UN.NEG: np.negative, UN.FLOOR: np.floor, UN.CEIL: np.ceil, UN.SQUARE: np.square,
    UN.SQRT: np.sqrt, UN.EXP: np.exp, UN.LOG: np.log, UN.SIN: np.sin, UN.COS: np.cos, UN.RECIPROCAL: np.reciprocal,
    UN.SIGN: np.sign,
}

_EVALUATORS: dict[int, Evaluator] = {}


def evaluator(op_type: int) -> Callable[[Evaluator], Evaluator]:
    """Register the numpy evaluation of an MNN op type."""

    def wrap(fn: Evaluator) -> Evaluator:
        _EVALUATORS[op_type] = fn
        return fn

    return wrap


def evaluate(node: Node, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """Outputs of `node` for constant `inputs`, or None if this op is not evaluated here."""
    fn = _EVALUATORS.get(node.op_type)
    if fn is None:
        return None
    return fn(node, inputs)


def _int_result(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iub" and b.dtype.kind in "iub" and out.dtype.kind == "f":
        return out.astype(np.int32)
    return out


@evaluator(OP.BinaryOp)
def _binary(node: Node, x: list[np.ndarray]) -> list[np.ndarray] | None:
    operation = node.param.opType
    a, b = x
    integer = a.dtype.kind in "iub" and b.dtype.kind in "iub"
    if operation in (BIN.DIV, BIN.REALDIV) and integer:
        return [np.trunc(a / b).astype(np.int32)]
    if operation in (BIN.MOD, BIN.FLOORMOD):  # MNN 3.6.1: MOD is Python mod on ints, C fmod on floats
        python_mod = (operation == BIN.MOD) == integer
        return [np.mod(a, b) if python_mod else np.fmod(a, b)]
    fn = _BINARY.get(operation)
    if fn is None:
        return None
    out = np.asarray(fn(a, b))
    if out.dtype == np.bool_:
        out = out.astype(np.int32)
    return [out if operation != BIN.POW else _int_result(a, b, out)]


@evaluator(OP.UnaryOp)
def _unary(node: Node, x: list[np.ndarray]) -> list[np.ndarray] | None:
    fn = _UNARY.get(node.param.opType)
    return None if fn is None else [np.asarray(fn(x[0]))]


@evaluator(OP.Cast)
def _cast(node: Node, x: list[np.ndarray]) -> list[np.ndarray] | None:
    dst = node.param.dstT
    if dst == fb.DataType.DT_FLOAT:
        return [x[0].astype(np.float32)]
    if dst in (fb.DataType.DT_INT32, fb.DataType.DT_INT64):
        return [x[0].astype(np.int32)]
    if dst == fb.DataType.DT_BOOL:
        return [(x[0] != 0).astype(np.int32)]
    return None


@evaluator(OP.Reshape)
def _reshape(node: Node, x: list[np.ndarray]) -> list[np.ndarray] | None:
    if len(x) < 2:
        return None
    shape = [int(v) for v in x[1].ravel()]
    shape = [x[0].shape[i] if v == 0 and i < x[0].ndim else v for i, v in enumerate(shape)]
    return [x[0].reshape(shape)]


@evaluator(OP.Permute)
def _permute(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    return [np.transpose(x[0], node.param.dims)]


def _norm_axes(axes: Any, rank: int) -> list[int]:
    return sorted(int(a) % rank for a in axes)


@evaluator(OP.Squeeze)
def _squeeze(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    axes = node.param.squeezeDims if node.param is not None else None
    if axes is None or len(axes) == 0:
        return [np.squeeze(x[0])]
    return [np.squeeze(x[0], axis=tuple(_norm_axes(axes, x[0].ndim)))]


@evaluator(OP.Unsqueeze)
def _unsqueeze(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    axes = list(node.param.squeezeDims)
    out = x[0]
    for axis in _norm_axes(axes, x[0].ndim + len(axes)):
        out = np.expand_dims(out, axis)
    return [out]


@evaluator(OP.Concat)
def _concat(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    return [np.concatenate(x, axis=node.param.axis)]


@evaluator(OP.GatherV2)
def _gather(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    axis = int(x[2].ravel()[0]) if len(x) > 2 else 0
    return [np.take(x[0], x[1].astype(np.int64), axis=axis)]


@evaluator(OP.Shape)
def _shape(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(x[0].shape, np.int32)]


@evaluator(OP.Range)
def _range(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    start, limit, delta = (v.ravel()[0] for v in x)
    return [np.arange(start, limit, delta).astype(np.result_type(x[0], x[1], x[2]))]


@evaluator(OP.Fill)
def _fill(node: Node, x: list[np.ndarray]) -> list[np.ndarray]:
    return [np.full([int(v) for v in x[0].ravel()], x[1].ravel()[0], dtype=x[1].dtype)]


@evaluator(OP.StridedSlice)
def _strided_slice(node: Node, x: list[np.ndarray]) -> list[np.ndarray] | None:
    if node.param is None or node.param.fromType != 1:
        return None
    data = x[0]
    starts, ends = x[1].ravel(), x[2].ravel()
    axes = x[3].ravel() if len(x) > 3 else np.arange(len(starts))
    steps = x[4].ravel() if len(x) > 4 else np.ones(len(starts), np.int64)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=False):
        index[int(axis) % data.ndim] = slice(int(start), int(end), int(step))
    return [data[tuple(index)]]
