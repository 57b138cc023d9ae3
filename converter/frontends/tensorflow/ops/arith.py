"""Element-wise ops: binary arithmetic/comparison (broadcasting), unary math, activations.

They run in NCHW when an input already is NCHW (constants are transposed to match), otherwise in TF layout.
"""

from __future__ import annotations

import numpy as np
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


_NUMPY_BINARY = {BIN.ADD: np.add, BIN.SUB: np.subtract, BIN.MUL: np.multiply, BIN.REALDIV: np.true_divide,
                 BIN.MAXIMUM: np.maximum, BIN.MINIMUM: np.minimum, BIN.POW: np.power}
_NUMPY_UNARY = {UN.RSQRT: lambda v: 1 / np.sqrt(v), UN.SQRT: np.sqrt, UN.SQUARE: np.square, UN.EXP: np.exp,
                UN.LOG: np.log, UN.NEG: np.negative, UN.ABS: np.abs, UN.RECIPROCAL: np.reciprocal}


def _per_channel(value: np.ndarray | None, channels: int) -> np.ndarray | None:
    """A constant that broadcasts along the channel axis only, as a [C] vector (else None)."""
    if value is None or value.dtype.kind != "f" or (value.ndim and value.shape[-1] not in (1, channels)) or \
            int(np.prod(value.shape[:-1] if value.ndim else ())) != 1:
        return None
    return np.broadcast_to(np.asarray(value, np.float64).reshape(-1), (channels,))


def _fold_into_conv(ctx: Context, node: TfNode, operation: int) -> bool:
    """x * c, x + c, x - c or c + x on a convolution's only reader, with c per channel: fold it into the conv."""
    from .conv import channel_affine, foldable_conv

    a, b = node.inputs[0], node.inputs[1]
    conv_key, const_key = (a, b) if foldable_conv(ctx, a) is not None else (b, a)
    conv = foldable_conv(ctx, conv_key)
    if conv is None or (operation == BIN.SUB and conv_key != a):
        return False
    vec = _per_channel(ctx.value(const_key), conv.param.common.outputCount)
    if vec is None:
        return False
    if operation == BIN.MUL:
        channel_affine(ctx, node, conv_key, vec, np.zeros_like(vec))
    else:
        channel_affine(ctx, node, conv_key, None, -vec if operation == BIN.SUB else vec)
    return True


def binary(ctx: Context, node: TfNode, operation: int) -> None:
    """BinaryOp over the first two inputs, in NCHW when that avoids a layout change; constants fold here."""
    a, b = node.inputs[0], node.inputs[1]
    va, vb = ctx.value(a), ctx.value(b)
    if va is not None and vb is not None and operation in _NUMPY_BINARY:
        with np.errstate(all="ignore"):
            value = np.asarray(_NUMPY_BINARY[operation](va, vb)).astype(np.result_type(va, vb))
        ctx.set_out(node.name, ctx.const(value, node.name))
        return
    if operation in (BIN.MUL, BIN.ADD, BIN.SUB) and _fold_into_conv(ctx, node, operation):
        return
    shape = broadcast_shape(ctx.shape(a), ctx.shape(b))
    nchw = _nchw_ok(ctx, [a, b])
    read = ctx.x_nchw if nchw else ctx.x
    out = ctx.out_name(node.name, nchw)
    ctx.binary(operation, read(a), read(b), out)
    ctx.set_out(node.name, out, nchw, shape)


_TF_FLOATS = {1, 2, 14, 19}  # DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF


@tf_op(*_BINARY)
def binary_op(ctx: Context, node: TfNode) -> None:
    """Add/AddV2/Sub/Mul/RealDiv/Maximum/Minimum/... -> BinaryOp."""
    operation = _BINARY[node.op]
    if operation == BIN.FLOORMOD and int(node.attr("T", 1)) not in _TF_FLOATS:
        operation = BIN.MOD  # MNN's integer kernels swap the two: integer MOD is Python's (TF's) floored mod
    binary(ctx, node, operation)


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


def _same_layout_op(ctx: Context, node: TfNode, op_type: int, param_type: int, param: object) -> None:
    """`op_type` on input 0 in the layout it has (an NCHW tensor stays NCHW); the output is named after the node."""
    x, out, nchw = _same_layout(ctx, node)
    ctx.emit(op_type, [x], [out], param_type, param, name=node.name)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


@tf_op(*_UNARY)
def unary_op(ctx: Context, node: TfNode) -> None:
    """Rsqrt/Sqrt/Square/Exp/Sigmoid/Tanh/... -> UnaryOp (Softplus as log(1 + exp(x)))."""
    operation = _UNARY[node.op]
    value = ctx.value(node.inputs[0])
    if value is not None and operation in _NUMPY_UNARY:
        with np.errstate(all="ignore"):
            ctx.set_out(node.name, ctx.const(np.asarray(_NUMPY_UNARY[operation](value), value.dtype), node.name))
        return
    x, out, nchw = _same_layout(ctx, node)
    if operation is None:
        ctx.unary(UN.LOG1P, ctx.unary(UN.EXP, x), out)
    else:
        ctx.unary(operation, x, out)
    ctx.set_out(node.name, out, nchw, ctx.shape(node.inputs[0]))


@tf_op("Relu", "LeakyRelu")
def relu(ctx: Context, node: TfNode) -> None:
    """Relu / LeakyRelu(alpha) -> ReLU(slope)."""
    param = fb.ReluT()
    param.slope = float(node.attr("alpha", 0.2)) if node.op == "LeakyRelu" else 0.0
    _same_layout_op(ctx, node, OP.ReLU, PARAM.Relu, param)


@tf_op("Relu6")
def relu6(ctx: Context, node: TfNode) -> None:
    """Relu6 -> ReLU6(0, 6)."""
    param = fb.Relu6T()
    param.minValue = 0.0
    param.maxValue = 6.0
    _same_layout_op(ctx, node, OP.ReLU6, PARAM.Relu6, param)


@tf_op("Elu")
def elu(ctx: Context, node: TfNode) -> None:
    """Elu -> ELU(alpha 1)."""
    param = fb.ELUT()
    param.alpha = 1.0
    _same_layout_op(ctx, node, OP.ELU, PARAM.ELU, param)


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
    from ..loader import NP_DTYPES

    value = ctx.value(node.inputs[0])
    target = NP_DTYPES.get(node.attr("DstT", 1))
    if value is not None and target is not None:
        ctx.set_out(node.name, ctx.const(value.astype(target), node.name))
        return
    param = fb.CastParamT()
    param.srcT = TF_TO_MNN_DTYPE.get(node.attr("SrcT", 1), fb.DataType.DT_FLOAT)
    param.dstT = TF_TO_MNN_DTYPE.get(node.attr("DstT", 1), fb.DataType.DT_FLOAT)
    _same_layout_op(ctx, node, OP.Cast, PARAM.CastParam, param)
