"""Element-wise ops: arithmetic, comparison and logic -> BinaryOp; math functions -> UnaryOp; Where -> Select."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op

_BINARY = {
    "Add": BIN.ADD, "Sub": BIN.SUB, "Mul": BIN.MUL,
    "Equal": BIN.EQUAL, "Greater": BIN.GREATER, "GreaterOrEqual": BIN.GREATER_EQUAL,
    "LessOrEqual": BIN.LESS_EQUAL, "Or": BIN.LOGICALOR, "Xor": BIN.LOGICALXOR, "And": BIN.MUL,
    "BitwiseAnd": BIN.BITWISE_AND, "BitwiseOr": BIN.BITWISE_OR, "BitwiseXor": BIN.BITWISE_XOR,
}

_UNARY = {
    "Abs": UN.ABS, "Neg": UN.NEG, "Floor": UN.FLOOR, "Ceil": UN.CEIL, "Sqrt": UN.SQRT, "Exp": UN.EXP, "Log": UN.LOG,
    "Sin": UN.SIN, "Cos": UN.COS, "Tan": UN.TAN, "Asin": UN.ASIN, "Acos": UN.ACOS, "Atan": UN.ATAN,
    "Sinh": UN.SINH, "Cosh": UN.COSH, "Asinh": UN.ASINH, "Acosh": UN.ACOSH, "Atanh": UN.ATANH, "Sign": UN.SIGN,
    "Round": UN.ROUND, "Erf": UN.ERF, "Reciprocal": UN.RECIPROCAL, "Sigmoid": UN.SIGMOID, "Tanh": UN.TANH,
    "HardSwish": UN.HARDSWISH,
}


def _binary(ctx: Context, node: OnnxNode) -> None:
    ctx.binary(_BINARY[node.op_type], node.inputs[0], node.inputs[1], node.outputs[0])


for _name in _BINARY:
    onnx_op(_name)(_binary)


def _unary(ctx: Context, node: OnnxNode) -> None:
    ctx.unary(_UNARY[node.op_type], node.inputs[0], node.outputs[0])


for _name in _UNARY:
    onnx_op(_name)(_unary)


@onnx_op("Less")
def less(ctx: Context, node: OnnxNode) -> None:
    """Less(a, b) -> BinaryOp GREATER(b, a): MNN 3.6.1's float LESS is wrong when both operands are negative."""
    ctx.binary(BIN.GREATER, node.inputs[1], node.inputs[0], node.outputs[0])


@onnx_op("Div")
def div(ctx: Context, node: OnnxNode) -> None:
    """Div -> BinaryOp REALDIV (MNN's REALDIV truncates on integers, as ONNX does; DIV has no int kernel)."""
    ctx.binary(BIN.REALDIV, node.inputs[0], node.inputs[1], node.outputs[0])


@onnx_op("Mod")
def mod(ctx: Context, node: OnnxNode, *, fmod: int = 0) -> None:
    """Mod -> MNN's MOD / FLOORMOD, whose meanings swap between float and int kernels in MNN 3.6.1.

    Measured: float MOD = C fmod, float FLOORMOD = Python mod; int MOD = Python mod, int FLOORMOD = C fmod.
    """
    floating = ctx.is_float(node.inputs[0])
    python_mod = BIN.FLOORMOD if floating else BIN.MOD
    c_fmod = BIN.MOD if floating else BIN.FLOORMOD
    ctx.binary(c_fmod if fmod else python_mod, node.inputs[0], node.inputs[1], node.outputs[0])


@onnx_op("Pow")
def power(ctx: Context, node: OnnxNode) -> None:
    """Pow -> BinaryOp POW; MNN needs both operands of one type, so a mismatched exponent/base is cast."""
    base, exponent = node.inputs[0], node.inputs[1]
    float_base, float_exp = ctx.is_float(base), ctx.is_float(exponent)
    if float_base == float_exp:
        ctx.binary(BIN.POW, base, exponent, node.outputs[0])
        return
    if float_base:
        ctx.binary(BIN.POW, base, _cast(ctx, exponent, fb.DataType.DT_FLOAT), node.outputs[0])
        return
    result = ctx.binary(BIN.POW, _cast(ctx, base, fb.DataType.DT_FLOAT), exponent)
    _cast(ctx, result, fb.DataType.DT_INT32, node.outputs[0])


def _cast(ctx: Context, x: str, dtype: int, output: str | None = None) -> str:
    param = fb.CastParamT()
    param.dstT = dtype
    return ctx.out(OP.Cast, [x], None if output is None else [output], PARAM.CastParam, param,
                   name=None if output is not None else "Cast")


@onnx_op("Not")
def logical_not(ctx: Context, node: OnnxNode) -> None:
    """Not -> x == 0."""
    ctx.binary(BIN.EQUAL, node.inputs[0], ctx.const(np.int32(0)), node.outputs[0])


# BitwiseNot as an XOR with all ones of the source type: MNN holds every integer tensor as int32, so signed values
# (sign-extended) take -1 and the unsigned 8- and 16-bit ones their own maximum
_NOT_MASKS = {2: 0xFF, 4: 0xFFFF, 3: -1, 5: -1, 6: -1, 7: -1}  # uint8, uint16, int8, int16, int32, int64


@onnx_op("BitwiseNot", since=18)
def bitwise_not(ctx: Context, node: OnnxNode) -> None:
    """BitwiseNot -> x XOR all-ones (int32 arithmetic; 32- and 64-bit unsigned inputs are refused)."""
    dtype = ctx.dtypes.get(node.inputs[0])
    if dtype not in _NOT_MASKS:
        raise UseFunctionBody(f"{node.label()}: BitwiseNot of ONNX type {dtype} is not supported (MNN holds "
                              f"integers as int32)")
    ctx.binary(BIN.BITWISE_XOR, node.inputs[0], ctx.const(np.int32(_NOT_MASKS[dtype])), node.outputs[0])


@onnx_op("Where")
def where(ctx: Context, node: OnnxNode) -> None:
    """Where(cond, x, y) -> Select."""
    ctx.emit(OP.Select, list(node.inputs[:3]), node.outputs, name=node.name)


def _variadic(ctx: Context, node: OnnxNode, operation: int) -> str | None:
    inputs = [name for name in node.inputs if name]
    if not inputs:
        raise UseFunctionBody(f"{node.label()}: needs at least one input")
    if len(inputs) == 1:
        return inputs[0]
    acc = inputs[0]
    for i, name in enumerate(inputs[1:], start=2):
        acc = ctx.binary(operation, acc, name, node.outputs[0] if i == len(inputs) else None)
    return None


@onnx_op("Max", "Min", "Sum")
def variadic(ctx: Context, node: OnnxNode) -> None:
    """Max/Min/Sum of N inputs -> a chain of BinaryOp MAXIMUM/MINIMUM/ADD."""
    operation = {"Max": BIN.MAXIMUM, "Min": BIN.MINIMUM, "Sum": BIN.ADD}[node.op_type]
    single = _variadic(ctx, node, operation)
    if single is not None:
        ctx.alias(single, node.outputs[0])


@onnx_op("Mean")
def mean(ctx: Context, node: OnnxNode) -> None:
    """Mean of N inputs -> sum chain, then MUL 1/N."""
    inputs = [name for name in node.inputs if name]
    acc = inputs[0]
    for name in inputs[1:]:
        acc = ctx.binary(BIN.ADD, acc, name)
    ctx.binary(BIN.MUL, acc, ctx.const(np.float32(1.0 / len(inputs))), node.outputs[0])


@onnx_op("Identity")
def identity(ctx: Context, node: OnnxNode) -> None:
    """Identity -> Identity op (removed by the identity pass)."""
    value = ctx.value(node.inputs[0])
    if value is not None and node.outputs[0] not in ctx.graph.outputs:
        ctx.graph.constants[node.outputs[0]] = value
        return
    ctx.alias(node.inputs[0], node.outputs[0])


@onnx_op("Dropout")
def dropout(ctx: Context, node: OnnxNode, *, ratio: float = 0.5, is_test: int = 0, seed: int = 0) -> None:
    """Dropout (inference) -> Dropout op removed by the identity pass; the mask output is all ones (Fill). A
    constant true training_mode with a ratio that is not a constant 0 is refused: training-mode dropout draws a
    random mask. A training_mode given at run time runs as inference (an inference engine's mode)."""
    training = ctx.value(node.input(2)) if node.input(2) else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        ratio_value = ctx.value(node.input(1)) if node.input(1) else np.float32(0.5)
        if ratio_value is None or float(np.asarray(ratio_value).reshape(-1)[0]) != 0.0:
            raise UseFunctionBody(f"{node.label()}: training-mode Dropout (a random mask) is not supported")
    ctx.emit(OP.Dropout, [node.inputs[0]], [node.outputs[0]], name=node.name)
    if len(node.outputs) > 1 and node.outputs[1]:
        ones = ctx.const(np.ones(1, np.int32), "ones")
        ctx.emit(OP.Fill, [ctx.shape_of(node.inputs[0]), ones], [node.outputs[1]])


@onnx_op("Constant")
def constant(ctx: Context, node: OnnxNode, *, value: np.ndarray | None = None, value_float: float | None = None,
             value_floats: list[float] | None = None, value_int: int | None = None,
             value_ints: list[int] | None = None, sparse_value: object = None, value_string: str | None = None,
             value_strings: list[str] | None = None) -> None:
    """Constant -> a graph constant (written as a Const op only if something reads it)."""
    if value is not None:
        result = np.asarray(value)
    elif value_float is not None:
        result = np.asarray(value_float, np.float32)
    elif value_floats is not None:
        result = np.asarray(value_floats, np.float32)
    elif value_int is not None:
        result = np.asarray(value_int, np.int64)
    elif value_ints is not None:
        result = np.asarray(value_ints, np.int64)
    else:
        raise UseFunctionBody(f"{node.label()}: only numeric constants are supported")
    ctx.graph.constants[node.outputs[0]] = result
