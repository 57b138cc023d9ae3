"""Elementwise math of `mnnpy.numpy` (MNN: `MNN.numpy` math functions), as expr ops evaluated by the core."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as em
from mnnpy.expr import shape_ops as es
from mnnpy.expr.var import Var
from mnnpy.numpy._util import fvar, pair, var


def _unary(name: str, fn: Any, float_only: bool = True) -> Any:
    def f(x: Any) -> Var:
        return fn(fvar(x) if float_only else var(x))

    f.__name__ = name
    f.__doc__ = f"numpy.{name} on Vars (MNN: `numpy.{name}`)."
    return f


def _binary(name: str, fn: Any) -> Any:
    def f(x: Any, y: Any) -> Var:
        return fn(*pair(x, y))

    f.__name__ = name
    f.__doc__ = f"numpy.{name} on Vars, with broadcasting (MNN: `numpy.{name}`)."
    return f


abs = absolute = fabs = _unary("abs", em.abs, False)
negative = _unary("negative", em.negative, False)
sign = _unary("sign", em.sign, False)
square = _unary("square", em.square, False)
ceil = _unary("ceil", em.ceil, False)
floor = _unary("floor", em.floor, False)
rint = around = round = round_ = _unary("rint", em.round, False)
sqrt = _unary("sqrt", em.sqrt)
exp = _unary("exp", em.exp)
expm1 = _unary("expm1", em.expm1)
log = _unary("log", em.log)
log1p = _unary("log1p", em.log1p)
sin = _unary("sin", em.sin)
cos = _unary("cos", em.cos)
tan = _unary("tan", em.tan)
arcsin = _unary("arcsin", em.asin)
arccos = _unary("arccos", em.acos)
arctan = _unary("arctan", em.atan)
sinh = _unary("sinh", em.sinh)
cosh = _unary("cosh", em.cosh)
tanh = _unary("tanh", em.tanh)
arcsinh = _unary("arcsinh", em.asinh)
arccosh = _unary("arccosh", em.acosh)
arctanh = _unary("arctanh", em.atanh)
reciprocal = _unary("reciprocal", em.reciprocal)

add = _binary("add", em.add)
subtract = _binary("subtract", em.subtract)
multiply = _binary("multiply", em.multiply)
maximum = fmax = _binary("maximum", em.maximum)
minimum = fmin = _binary("minimum", em.minimum)
floor_divide = _binary("floor_divide", em.floordiv)
mod = remainder = _binary("mod", em.floormod)
fmod = _binary("fmod", em.mod)
equal = _binary("equal", em.equal)
not_equal = _binary("not_equal", em.not_equal)
greater = _binary("greater", em.greater)
greater_equal = _binary("greater_equal", em.greater_equal)
less = _binary("less", em.less)
less_equal = _binary("less_equal", em.less_equal)
bitwise_and = _binary("bitwise_and", em.bitwise_and)
bitwise_or = _binary("bitwise_or", em.bitwise_or)
bitwise_xor = _binary("bitwise_xor", em.bitwise_xor)


def divide(x: Any, y: Any) -> Var:
    """True division (integers divide as float32) (MNN: `numpy.divide`)."""
    return em.divide(*pair(x, y))


true_divide = divide


def power(x: Any, y: Any) -> Var:
    """x ** y (MNN: `numpy.power`)."""
    return em.pow(*pair(x, y))


def float_power(x: Any, y: Any) -> Var:
    """x ** y in floating point (float32 here) (MNN: `numpy.float_power`)."""
    return em.pow(fvar(x), fvar(y))


def arctan2(x: Any, y: Any) -> Var:
    """atan2(x, y) (MNN: `numpy.arctan2`)."""
    return em.atan2(fvar(x), fvar(y))


def positive(x: Any, deepCopy: bool = False) -> Var:  # noqa: N803 - MNN's name
    """+x (MNN: `numpy.positive`)."""
    return var(x)


def exp2(x: Any) -> Var:
    """2 ** x (MNN: `numpy.exp2`)."""
    return em.pow(2.0, fvar(x))


def log2(x: Any) -> Var:
    """Base-2 log (MNN: `numpy.log2`)."""
    return em.multiply(em.log(fvar(x)), float(1.0 / np.log(2.0)))


def log10(x: Any) -> Var:
    """Base-10 log (MNN: `numpy.log10`)."""
    return em.multiply(em.log(fvar(x)), float(1.0 / np.log(10.0)))


def cbrt(x: Any) -> Var:
    """Cube root, sign kept (MNN: `numpy.cbrt`)."""
    v = fvar(x)
    return em.multiply(em.sign(v), em.pow(em.abs(v), 1.0 / 3.0))


def trunc(x: Any) -> Var:
    """Round towards zero (MNN: `numpy.trunc`)."""
    v = var(x)
    if v.np_dtype.kind != "f":
        return v
    return em.multiply(em.sign(v), em.floor(em.abs(v)))


fix = trunc


def signbit(x: Any) -> Var:
    """x < 0 as int32 0/1 (MNN: `numpy.signbit`)."""
    return em.less(var(x), 0)


def copysign(x1: Any, x2: Any) -> Var:
    """|x1| with the sign of x2 (MNN: `numpy.copysign`)."""
    a, b = fvar(x1), fvar(x2)
    return es.select(em.less(b, 0.0), em.negative(em.abs(a)), em.abs(a))


def hypot(x1: Any, x2: Any) -> Var:
    """sqrt(x1**2 + x2**2) (MNN: `numpy.hypot`)."""
    a, b = fvar(x1), fvar(x2)
    return em.sqrt(em.add(em.square(a), em.square(b)))


def ldexp(x1: Any, x2: Any) -> Var:
    """x1 * 2**x2 (MNN: `numpy.ldexp`)."""
    return em.multiply(fvar(x1), em.pow(2.0, fvar(x2)))


def logaddexp(x1: Any, x2: Any) -> Var:
    """log(exp(x1) + exp(x2)), computed stably (MNN: `numpy.logaddexp`)."""
    a, b = fvar(x1), fvar(x2)
    return em.add(em.maximum(a, b), em.log1p(em.exp(em.negative(em.abs(em.subtract(a, b))))))


def logaddexp2(x1: Any, x2: Any) -> Var:
    """log2(2**x1 + 2**x2) (MNN: `numpy.logaddexp2`)."""
    ln2 = float(np.log(2.0))
    return em.multiply(logaddexp(em.multiply(fvar(x1), ln2), em.multiply(fvar(x2), ln2)), 1.0 / ln2)


def modf(x: Any) -> tuple[Var, Var]:
    """(fractional part, integral part) (MNN: `numpy.modf`)."""
    v = fvar(x)
    t = trunc(v)
    return em.subtract(v, t), t


def divmod(x1: Any, x2: Any) -> tuple[Var, Var]:
    """(floor_divide, mod) (MNN: `numpy.divmod`)."""
    return floor_divide(x1, x2), mod(x1, x2)


def sinc(x: Any) -> Var:
    """sin(pi x) / (pi x), 1 at 0 (MNN: `numpy.sinc`)."""
    v = fvar(x)
    px = em.multiply(v, float(np.pi))
    zero = em.equal(v, 0.0)
    safe = es.select(zero, 1.0, px)
    return es.select(zero, 1.0, em.divide(em.sin(safe), safe))


def clip(x: Any, a_min: Any, a_max: Any) -> Var:
    """Limit values to [a_min, a_max] (MNN: `numpy.clip`)."""
    v = var(x)
    if a_min is not None:
        v = em.maximum(v, a_min)
    if a_max is not None:
        v = em.minimum(v, a_max)
    return v
