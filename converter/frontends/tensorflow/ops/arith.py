"""Element-wise ops: binary arithmetic/comparison (broadcasting), unary math, activations.

They run in NCHW when an input already is NCHW (constants are transposed to match), otherwise in TF layout.
"""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, Shape, TfNode
from ..registry import tf_op

_BINARY = {
    "Add": BIN.ADD, "AddV2": BIN.ADD, "Sub": BIN.SUB, "Mul": BIN.MUL, "RealDiv": BIN.REALDIV, "Div": BIN.REALDIV,
    "DivNoNan": BIN.REALDIV, "FloorDiv": BIN.FLOORDIV, "FloorMod": BIN.FLOORMOD, "Maximum": BIN.MAXIMUM,
    "Minimum": BIN.MINIMUM, "Pow": BIN.POW, "SquaredDifference": BIN.SquaredDifference, "Greater": BIN.GREATER,
    "GreaterEqual": BIN.GREATER_EQUAL, "Less": BIN.LESS, "LessEqual": BIN.LESS_EQUAL, "Equal": BIN.EQUAL,
    "NotEqual": BIN.NOTEQUAL, "LogicalOr": BIN.LOGICALOR,
}

_UNARY = {
    "Rsqrt": UN.RSQRT, "Sqrt": UN.SQRT, "Square": UN.SQUARE, "Exp": UN.EXP, "Log": UN.LOG, "Neg": UN.NEG,
    "Abs": UN.ABS, "Floor": UN.FLOOR, "Ceil": UN.CEIL, "Reciprocal": UN.RECIPROCAL, "Inv": UN.RECIPROCAL,
    "Sigmoid": UN.SIGMOID, "Tanh": UN.TANH, "Sin": UN.SIN, "Cos": UN.COS, "Round": UN.ROUND, "Sign": UN.SIGN,
    "Erf": UN.ERF, "Log1p": UN.LOG1P, "Expm1": UN.EXPM1, "Softplus": None,
}


def broadcast_shape(a: Shape | None, b: Shape | None) -> Shape | None:
    """numpy broadcasting of two static shapes (unknown dims stay unknown)."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a = [1] * (rank - len(a)) + list(a)
    b = [1] * (rank - len(b)) + list(b)
    out: Shape = []
    for x, y in zip(a, b, strict=True):
        out.append(y if x == 1 else x if y == 1 else x if x is not None else y)
    return out


def _nchw_ok(ctx: Context, keys: list[str]) -> bool:
    """All inputs can be read as NCHW 4-D tensors and at least one already is."""
    if not any(ctx.is_nchw(key) for key in keys):
        return False
    for key in keys:
        if ctx.is_nchw(key):
            continue
        value = ctx.value(key)
        if value is None or value.ndim > 4:
            return False
    return True


def binary(ctx: Context, node: TfNode, operation: int) -> None:
    """BinaryOp over the first two inputs, in NCHW when that avoids a layout change."""
    a, b = node.inputs[0], node.inputs[1]
    shape = broadcast_shape(ctx.shape(a), ctx.shape(b))
    nchw = _nchw_ok(ctx, [a, b])
    read = ctx.x_nchw if nchw else ctx.x
    out = ctx.out_name(node.name, nchw)
    ctx.binary(operation, read(a), read(b), out)
    ctx.set_out(node.name, out, nchw, shape)


@tf_op(*_BINARY)
def binary_op(ctx: Context, node: TfNode) -> None:
    """Add/AddV2/Sub/Mul/RealDiv/Maximum/Minimum/... -> BinaryOp."""
    binary(ctx, node, _BINARY[node.op])


@tf_op("AddN")
def add_n(ctx: Context, node: TfNode) -> None:
    """AddN -> Eltwise SUM."""
    nchw = all(ctx.is_nchw(key) for key in node.inputs)
    read = ctx.x_nchw if nchw else ctx.x
    param = fb.EltwiseT()
    param.type = fb.EltwiseType.SUM
    out = ctx.out_name(node.name, nchw)
    ctx.emit(OP.Eltwise, [read(key) for key in node.inputs], [out], PARAM.Eltwise, param, name=node.name)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


def _same_layout(ctx: Context, node: TfNode) -> tuple[str, str, bool]:
    key = node.inputs[0]
    nchw = ctx.is_nchw(key)
    x = ctx.x_nchw(key) if nchw else ctx.x(key)
    return x, ctx.out_name(node.name, nchw), nchw


@tf_op(*_UNARY)
def unary_op(ctx: Context, node: TfNode) -> None:
    """Rsqrt/Sqrt/Square/Exp/Sigmoid/Tanh/... -> UnaryOp (Softplus as log(1 + exp(x)))."""
    x, out, nchw = _same_layout(ctx, node)
    operation = _UNARY[node.op]
    if operation is None:
        ctx.unary(UN.LOG1P, ctx.unary(UN.EXP, x), out)
    else:
        ctx.unary(operation, x, out)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


@tf_op("Relu", "LeakyRelu")
def relu(ctx: Context, node: TfNode) -> None:
    """Relu / LeakyRelu(alpha) -> ReLU(slope)."""
    x, out, nchw = _same_layout(ctx, node)
    param = fb.ReluT()
    param.slope = float(node.attr("alpha", 0.2)) if node.op == "LeakyRelu" else 0.0
    ctx.emit(OP.ReLU, [x], [out], PARAM.Relu, param, name=node.name)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


@tf_op("Relu6")
def relu6(ctx: Context, node: TfNode) -> None:
    """Relu6 -> ReLU6(0, 6)."""
    x, out, nchw = _same_layout(ctx, node)
    param = fb.Relu6T()
    param.minValue = 0.0
    param.maxValue = 6.0
    ctx.emit(OP.ReLU6, [x], [out], PARAM.Relu6, param, name=node.name)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


@tf_op("Elu")
def elu(ctx: Context, node: TfNode) -> None:
    """Elu -> ELU(alpha 1)."""
    x, out, nchw = _same_layout(ctx, node)
    param = fb.ELUT()
    param.alpha = 1.0
    ctx.emit(OP.ELU, [x], [out], PARAM.ELU, param, name=node.name)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


@tf_op("ClipByValue")
def clip_by_value(ctx: Context, node: TfNode) -> None:
    """ClipByValue(x, lo, hi) -> Maximum then Minimum."""
    keys = node.inputs[:3]
    nchw = _nchw_ok(ctx, keys)
    read = ctx.x_nchw if nchw else ctx.x
    low = ctx.binary(BIN.MAXIMUM, read(keys[0]), read(keys[1]))
    out = ctx.out_name(node.name, nchw)
    ctx.binary(BIN.MINIMUM, low, read(keys[2]), out)
    ctx.set_out(node.name, out, nchw, ctx.shape(keys[0]))


@tf_op("Cast")
def cast(ctx: Context, node: TfNode) -> None:
    """Cast(DstT) -> Cast with TF types mapped to MNN's."""
    from ..context import TF_TO_MNN_DTYPE

    x, out, nchw = _same_layout(ctx, node)
    param = fb.CastParamT()
    param.srcT = TF_TO_MNN_DTYPE.get(node.attr("SrcT", 1), fb.DataType.DT_FLOAT)
    param.dstT = TF_TO_MNN_DTYPE.get(node.attr("DstT", 1), fb.DataType.DT_FLOAT)
    ctx.emit(OP.Cast, [x], [out], PARAM.CastParam, param, name=node.name)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))
