"""Elementwise math of `MNN.expr`: UnaryOp, BinaryOp, Cast, ConvertTensor, MatMul (MNN: `_Abs`, `_Add`, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr.enums import FORMAT_NAME, data_format, dtype, to_np_dtype
from mnnpy.expr.var import Var, apply, to_var
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
PT = fb.OpParameter
F32 = np.dtype(np.float32)
I32 = np.dtype(np.int32)
COMPARE = {10, 11, 12, 15, 16, 21, 22, 26}


# *** unary ***
def unary(x: Any, kind: int, float_only: bool = True) -> Var:
    """UnaryOp of MNN's UnaryOpOperation `kind` (integer inputs are cast to float first when `float_only`)."""
    v = to_var(x)
    if float_only and v.np_dtype.kind != "f":
        v = cast(v, dtype.float)
    p = fb.UnaryOpT()
    p.opType = kind
    p.t = 1 if v.np_dtype.kind == "f" else 3
    return apply(OT.UnaryOp, [v], PT.UnaryOp, p)


def abs(x: Any) -> Var:
    """|x| (MNN: `expr.abs`)."""
    return unary(x, 0, False)


def negative(x: Any) -> Var:
    """-x (MNN: `expr.negative`)."""
    return unary(x, 1, False)


def floor(x: Any) -> Var:
    """Floor (MNN: `expr.floor`)."""
    return unary(x, 2, False) if to_var(x).np_dtype.kind == "f" else to_var(x)


def ceil(x: Any) -> Var:
    """Ceil (MNN: `expr.ceil`)."""
    return unary(x, 3, False) if to_var(x).np_dtype.kind == "f" else to_var(x)


def square(x: Any) -> Var:
    """x*x (MNN: `expr.square`)."""
    return unary(x, 4, False)


def sqrt(x: Any) -> Var:
    """Square root (MNN: `expr.sqrt`)."""
    return unary(x, 5)


def rsqrt(x: Any) -> Var:
    """1/sqrt(x) (MNN: `expr.rsqrt`)."""
    return unary(x, 6)


def exp(x: Any) -> Var:
    """e**x (MNN: `expr.exp`)."""
    return unary(x, 7)


def log(x: Any) -> Var:
    """Natural log (MNN: `expr.log`)."""
    return unary(x, 8)


def sin(x: Any) -> Var:
    """Sine (MNN: `expr.sin`)."""
    return unary(x, 9)


def cos(x: Any) -> Var:
    """Cosine (MNN: `expr.cos`)."""
    return unary(x, 10)


def tan(x: Any) -> Var:
    """Tangent (MNN: `expr.tan`)."""
    return unary(x, 11)


def asin(x: Any) -> Var:
    """Arc sine (MNN: `expr.asin`)."""
    return unary(x, 12)


def acos(x: Any) -> Var:
    """Arc cosine (MNN: `expr.acos`)."""
    return unary(x, 13)


def atan(x: Any) -> Var:
    """Arc tangent (MNN: `expr.atan`)."""
    return unary(x, 14)


def reciprocal(x: Any) -> Var:
    """1/x (MNN: `expr.reciprocal`)."""
    return unary(x, 15)


def log1p(x: Any) -> Var:
    """log(1+x) (MNN: `expr.log1p`)."""
    return unary(x, 16)


def softplus(x: Any) -> Var:
    """log(1+e**x) (MNN: `expr.softplus`)."""
    return unary(x, 17)


def acosh(x: Any) -> Var:
    """Inverse hyperbolic cosine (MNN: `expr.acosh`)."""
    return unary(x, 18)


def sinh(x: Any) -> Var:
    """Hyperbolic sine (MNN: `expr.sinh`)."""
    return unary(x, 19)


def asinh(x: Any) -> Var:
    """Inverse hyperbolic sine (MNN: `expr.asinh`)."""
    return unary(x, 20)


def atanh(x: Any) -> Var:
    """Inverse hyperbolic tangent (MNN: `expr.atanh`)."""
    return unary(x, 21)


def sign(x: Any) -> Var:
    """Sign (MNN: `expr.sign`)."""
    return unary(x, 22, False)


def round(x: Any) -> Var:
    """Round half to even (MNN: `expr.round`)."""
    return unary(x, 23, False) if to_var(x).np_dtype.kind == "f" else to_var(x)


def cosh(x: Any) -> Var:
    """Hyperbolic cosine (MNN: `expr.cosh`)."""
    return unary(x, 24)


def erf(x: Any) -> Var:
    """Error function (MNN: `expr.erf`)."""
    return unary(x, 25)


def erfc(x: Any) -> Var:
    """1 - erf(x) (MNN: `expr.erfc`)."""
    return unary(x, 26)


def erfinv(x: Any) -> Var:
    """Inverse error function (MNN: `expr.erfinv`).

    The CPU backend has no UnaryOp ERFINV kernel, so this is Winitzki's closed form refined by three Newton steps
    on erf, all as core ops.
    """
    v = to_var(x)
    if v.np_dtype.kind != "f":
        v = cast(v, dtype.float)
    a = 0.147
    ln = log(subtract(1.0, square(v)))
    t = add(2.0 / (np.pi * a), multiply(ln, 0.5))
    y = multiply(sign(v), sqrt(subtract(sqrt(subtract(square(t), multiply(ln, 1.0 / a))), t)))
    for _ in range(3):
        slope = multiply(exp(negative(square(y))), float(2.0 / np.sqrt(np.pi)))
        y = subtract(y, divide(subtract(erf(y), v), slope))
    return y


def expm1(x: Any) -> Var:
    """e**x - 1 (MNN: `expr.expm1`)."""
    return unary(x, 28)


def sigmoid(x: Any) -> Var:
    """1/(1+e**-x) (MNN: `expr.sigmoid`)."""
    return unary(x, 29)


def tanh(x: Any) -> Var:
    """Hyperbolic tangent (MNN: `expr.tanh`)."""
    return unary(x, 30)


def gelu(x: Any) -> Var:
    """GELU, erf form (MNN: `expr.gelu`)."""
    return unary(x, 33)


def softsign(x: Any) -> Var:
    """x / (1 + |x|) (MNN: `expr.softsign`)."""
    v = to_var(x)
    return divide(v, add(abs(v), 1.0))


# *** binary ***
def _pair(x: Any, y: Any) -> tuple[Var, Var]:
    """Two operands with a common dtype: Python scalars adopt the Var's dtype; int meets float as float32."""
    if not isinstance(x, Var) and isinstance(y, Var):
        x = to_var(x, y)
    a = to_var(x)
    b = to_var(y, a)
    da, db = a.np_dtype, b.np_dtype
    if da != db:
        floats = [d for d in (da, db) if d.kind == "f"]
        want = np.result_type(*floats) if floats else I32
        a = a if da == want else cast(a, want)
        b = b if db == want else cast(b, want)
    return a, b


def binary(x: Any, y: Any, kind: int) -> Var:
    """BinaryOp of MNN's BinaryOpOperation `kind` with numpy broadcasting."""
    a, b = _pair(x, y)
    p = fb.BinaryOpT()
    p.opType = kind
    p.t = 1 if a.np_dtype.kind == "f" else 3
    return apply(OT.BinaryOp, [a, b], PT.BinaryOp, p, dtypes=[I32 if kind in COMPARE else a.np_dtype])


def add(x: Any, y: Any) -> Var:
    """x + y (MNN: `expr.add`)."""
    return binary(x, y, 0)


def subtract(x: Any, y: Any) -> Var:
    """x - y (MNN: `expr.subtract`)."""
    return binary(x, y, 1)


def multiply(x: Any, y: Any) -> Var:
    """x * y (MNN: `expr.multiply`)."""
    return binary(x, y, 2)


def divide(x: Any, y: Any) -> Var:
    """True division; integers are divided as float32 (MNN: `expr.divide`)."""
    a, b = _pair(x, y)
    if a.np_dtype.kind != "f":
        a, b = cast(a, dtype.float), cast(b, dtype.float)
    return binary(a, b, 7)


def pow(x: Any, y: Any) -> Var:
    """x ** y (MNN: `expr.pow`)."""
    return binary(x, y, 6)


def minimum(x: Any, y: Any) -> Var:
    """Elementwise minimum (MNN: `expr.minimum`)."""
    return binary(x, y, 8)


def maximum(x: Any, y: Any) -> Var:
    """Elementwise maximum (MNN: `expr.maximum`)."""
    return binary(x, y, 9)


def greater(x: Any, y: Any) -> Var:
    """x > y as int32 0/1 (MNN: `expr.greater`)."""
    return binary(x, y, 10)


def greater_equal(x: Any, y: Any) -> Var:
    """x >= y (MNN: `expr.greater_equal`)."""
    return binary(x, y, 11)


def less(x: Any, y: Any) -> Var:
    """x < y (MNN: `expr.less`)."""
    return binary(x, y, 12)


def floordiv(x: Any, y: Any) -> Var:
    """Floor division (MNN: `expr.floordiv`)."""
    return binary(x, y, 13)


def squared_difference(x: Any, y: Any) -> Var:
    """(x - y)**2 (MNN: `expr.squared_difference`)."""
    return binary(x, y, 14)


def equal(x: Any, y: Any) -> Var:
    """x == y (MNN: `expr.equal`)."""
    return binary(x, y, 15)


def less_equal(x: Any, y: Any) -> Var:
    """x <= y (MNN: `expr.less_equal`)."""
    return binary(x, y, 16)


def _modulo(x: Any, y: Any, python_sign: bool) -> Var:
    """MNN's MOD (19) / FLOORMOD (17) swap meanings between float and integer kernels (MNN 3.6.1, measured; the
    CPU backend follows it): float MOD = C fmod, FLOORMOD = Python mod; integer MOD = Python mod, FLOORMOD = C
    fmod. The code is picked per dtype so the graph means the same in mnnpy and in official MNN."""
    a, b = _pair(x, y)
    floating = a.np_dtype.kind == "f"
    return binary(a, b, (17 if floating else 19) if python_sign else (19 if floating else 17))


def floormod(x: Any, y: Any) -> Var:
    """Python-style modulo (sign of y) (MNN: `expr.floormod`)."""
    return _modulo(x, y, True)


def mod(x: Any, y: Any) -> Var:
    """C-style fmod (sign of x) (MNN: `expr.mod`)."""
    return _modulo(x, y, False)


def atan2(x: Any, y: Any) -> Var:
    """atan2(x, y) (MNN: `expr.atan2`)."""
    a, b = _pair(x, y)
    if a.np_dtype.kind != "f":
        a, b = cast(a, dtype.float), cast(b, dtype.float)
    return binary(a, b, 20)


def logical_or(x: Any, y: Any) -> Var:
    """x || y (MNN: `expr.logical_or`)."""
    return binary(x, y, 21)


def not_equal(x: Any, y: Any) -> Var:
    """x != y (MNN: `expr.not_equal`)."""
    return binary(x, y, 22)


def bitwise_and(x: Any, y: Any) -> Var:
    """x & y (MNN: `expr.bitwise_and`)."""
    return binary(x, y, 23)


def bitwise_or(x: Any, y: Any) -> Var:
    """x | y (MNN: `expr.bitwise_or`)."""
    return binary(x, y, 24)


def bitwise_xor(x: Any, y: Any) -> Var:
    """x ^ y (MNN: `expr.bitwise_xor`)."""
    return binary(x, y, 25)


def logical_xor(x: Any, y: Any) -> Var:
    """x xor y (MNN BinaryOp LOGICALXOR)."""
    return binary(x, y, 26)


def _eltwise(values: list[Any], kind: int, coeff: list[float] | None = None) -> Var:
    vs = [to_var(v) for v in values]
    p = fb.EltwiseT()
    p.type = kind
    p.coeff = list(coeff) if coeff else []
    return apply(OT.Eltwise, vs, PT.Eltwise, p)


def eltwise_prod(x: Any, y: Any, coeff: list[float] | None = None) -> Var:
    """Eltwise PROD (MNN: `expr.eltwise_prod`)."""
    return _eltwise([x, y], 0, coeff)


def eltwise_sum(x: Any, y: Any, coeff: list[float] | None = None) -> Var:
    """Eltwise SUM with optional coefficients (MNN: `expr.eltwise_sum`)."""
    return _eltwise([x, y], 1, coeff)


def eltwise_max(x: Any, y: Any, coeff: list[float] | None = None) -> Var:
    """Eltwise MAXIMUM (MNN: `expr.eltwise_max`)."""
    return _eltwise([x, y], 2, coeff)


def eltwise_sub(x: Any, y: Any, coeff: list[float] | None = None) -> Var:
    """Eltwise SUB (MNN: `expr.eltwise_sub`)."""
    return _eltwise([x, y], 3, coeff)


# *** type, format, matmul ***
def cast(x: Any, dtype: Any = dtype.float) -> Var:
    """Convert the element type (MNN: `expr.cast`)."""
    v = to_var(x)
    want = to_np_dtype(dtype)
    if want == np.int64:
        want = I32  # the core runs int64 as int32, as MNN does
    p = fb.CastParamT()
    p.srcT = _mnn_type(v.np_dtype)
    p.dstT = _mnn_type(want)
    return apply(OT.Cast, [v], PT.CastParam, p, dtypes=[want])


def _mnn_type(dt: np.dtype) -> int:
    from mnnpy.expr.enums import MNN_OF_NP

    return MNN_OF_NP.get(np.dtype(dt), 1)


def convert(x: Any, format: data_format) -> Var:
    """Change the data format (NCHW / NHWC / NC4HW4) (MNN: `expr.convert`)."""
    v = to_var(x)
    p = fb.TensorConvertInfoT()
    p.source = fb.MNN_DATA_FORMAT.NCHW
    p.dest = {"NCHW": 0, "NHWC": 1, "NC4HW4": 2}[FORMAT_NAME[format]]
    return apply(OT.ConvertTensor, [v], PT.TensorConvertInfo, p)


def matmul(a: Any, b: Any, transposeA: bool = False, transposeB: bool = False) -> Var:  # noqa: N803 - MNN's names
    """Matrix product with batch broadcasting (rank >= 2) (MNN: `expr.matmul`)."""
    x, y = _pair(a, b)
    if x.ndim > 2 or y.ndim > 2:
        p = fb.BatchMatMulParamT()
        p.adjX, p.adjY = bool(transposeA), bool(transposeB)
        return apply(OT.BatchMatMul, [x, y], PT.BatchMatMulParam, p)
    p = fb.MatMulT()
    p.transposeA, p.transposeB = bool(transposeA), bool(transposeB)
    return apply(OT.MatMul, [x, y], PT.MatMul, p)


def bias_add(value: Any, bias: Any) -> Var:
    """value + bias over the last axis (MNN: `expr.bias_add`)."""
    return add(value, bias)


def clone(x: Any, deepCopy: bool = False) -> Var:  # noqa: N803 - MNN's name
    """A copy: a new constant with the value when deepCopy, else the same Var (MNN: `expr.clone`)."""
    v = to_var(x)
    if not deepCopy:
        return v
    from mnnpy.expr.var import const_of

    return const_of(np.array(v.read()))
