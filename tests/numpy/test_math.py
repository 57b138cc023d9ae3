"""mnnpy.numpy elementwise math against real numpy: several dtypes, 0-d shapes and broadcasting."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mnnpy.numpy as mnp

RNG = np.random.default_rng(0)
SHAPES = [(), (5,), (2, 3, 4)]


def data(shape: tuple[int, ...], kind: str, low: float = -3.0, high: float = 3.0) -> np.ndarray:
    if kind == "i":
        return RNG.integers(int(low), int(high) + 1, size=shape).astype(np.int32)
    return RNG.uniform(low, high, size=shape).astype(np.float32)


# name, numpy reference, input range
FLOAT_UNARY = [
    ("sqrt", np.sqrt, (0.1, 4)), ("exp", np.exp, (-3, 3)), ("expm1", np.expm1, (-1, 1)), ("log", np.log, (0.1, 5)),
    ("log1p", np.log1p, (0, 3)), ("log2", np.log2, (0.1, 5)), ("log10", np.log10, (0.1, 5)), ("sin", np.sin, (-3, 3)),
    ("cos", np.cos, (-3, 3)), ("tan", np.tan, (-1, 1)), ("arcsin", np.arcsin, (-0.9, 0.9)),
    ("arccos", np.arccos, (-0.9, 0.9)), ("arctan", np.arctan, (-3, 3)), ("sinh", np.sinh, (-2, 2)),
    ("cosh", np.cosh, (-2, 2)), ("tanh", np.tanh, (-3, 3)), ("arcsinh", np.arcsinh, (-3, 3)),
    ("arccosh", np.arccosh, (1.1, 4)), ("arctanh", np.arctanh, (-0.9, 0.9)), ("reciprocal", np.reciprocal, (0.5, 3)),
    ("exp2", np.exp2, (-3, 3)), ("cbrt", np.cbrt, (-8, 8)), ("trunc", np.trunc, (-3, 3)), ("fix", np.fix, (-3, 3)),
    ("sinc", np.sinc, (-2, 2)), ("rint", np.rint, (-3, 3)), ("around", np.around, (-3, 3)),
    ("round_", np.round, (-3, 3)), ("round", np.round, (-3, 3)),
]
ANY_UNARY = [("abs", np.abs), ("absolute", np.absolute), ("fabs", np.abs), ("negative", np.negative),
             ("positive", np.positive), ("sign", np.sign), ("square", np.square), ("ceil", np.ceil),
             ("floor", np.floor), ("signbit", np.signbit)]


@pytest.mark.parametrize(("name", "ref", "rng"), FLOAT_UNARY, ids=[u[0] for u in FLOAT_UNARY])
def test_float_unary(name: str, ref: object, rng: tuple[float, float], check: Any) -> None:
    for shape in SHAPES:
        x = data(shape, "f", *rng)
        check(getattr(mnp, name)(x), ref(x), rtol=2e-5, atol=2e-5)
    check(getattr(mnp, name)(mnp.array(np.float32(rng[1]))), ref(np.float32(rng[1])), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(("name", "ref"), ANY_UNARY, ids=[u[0] for u in ANY_UNARY])
@pytest.mark.parametrize("kind", ["f", "i"])
def test_any_unary(name: str, ref: object, kind: str, check: Any) -> None:
    for shape in SHAPES:
        x = data(shape, kind)
        want = ref(x)
        if kind == "i" and name in ("ceil", "floor"):
            want = want.astype(np.int32)  # integer floor/ceil stay integer in MNN
        check(getattr(mnp, name)(x), want)


BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("maximum", np.maximum),
          ("minimum", np.minimum), ("fmax", np.fmax), ("fmin", np.fmin), ("equal", np.equal),
          ("not_equal", np.not_equal), ("greater", np.greater), ("greater_equal", np.greater_equal),
          ("less", np.less), ("less_equal", np.less_equal), ("floor_divide", np.floor_divide), ("mod", np.mod),
          ("remainder", np.remainder), ("fmod", np.fmod), ("power", np.power)]
BROADCAST = [((2, 3), (3,)), ((), (2, 1)), ((4, 1, 3), (2, 1))]


@pytest.mark.parametrize(("name", "ref"), BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("kind", ["f", "i"])
def test_binary_broadcast(name: str, ref: object, kind: str, check: Any) -> None:
    for sa, sb in BROADCAST:
        a = data(sa, kind, 1 if name == "power" else -5, 3 if name == "power" else 5)
        b = data(sb, kind, 1, 3) if name in ("floor_divide", "mod", "remainder", "fmod", "power") else data(sb, kind)
        want = ref(a, b)
        if kind == "i":
            want = want.astype(np.int32) if want.dtype.kind != "b" else want
        check(getattr(mnp, name)(a, b), want, rtol=1e-4)
        check(getattr(mnp, name)(mnp.array(a), b), want, rtol=1e-4)
    a = data((3,), kind, 1, 4)
    check(getattr(mnp, name)(a, 2), ref(a, np.asarray(2, a.dtype)), rtol=1e-4)


def test_division_and_mixed_dtypes(check: Any) -> None:
    a = np.array([[1, 2, 3], [4, 5, -6]], np.int32)
    b = np.array([2.0, 4.0, 8.0], np.float32)
    check(mnp.divide(a, b), (a / b).astype(np.float32))
    check(mnp.true_divide(a, 2), (a / 2).astype(np.float32))
    check(mnp.add(a, b), (a + b).astype(np.float32))
    check(mnp.add(a, 1.5), (a + 1.5).astype(np.float32))
    check(mnp.float_power(a, 2), np.float_power(a, 2).astype(np.float32))
    q, r = mnp.divmod(a, 4)
    check(q, a // 4)
    check(r, a % 4)
    frac, whole = mnp.modf(b - 0.5)
    check([frac, whole], list(np.modf(b - 0.5)))
    x = data((2, 3), "f")
    y = data((3,), "f")
    for name in ["arctan2", "hypot", "copysign", "logaddexp", "logaddexp2"]:
        check(getattr(mnp, name)(x, y), getattr(np, name)(x, y), rtol=1e-5, atol=1e-5)
    check(mnp.ldexp(x, np.array([1, 2, 3], np.int32)), np.ldexp(x, np.array([1, 2, 3])), rtol=1e-6)
    check(mnp.clip(x, -1.0, 1.0), np.clip(x, -1.0, 1.0))
    ints = np.array([5, 6, 12], np.int32)
    for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        check(getattr(mnp, name)(ints, np.int32(3)), getattr(np, name)(ints, 3).astype(np.int32))


def test_var_operators_match_numpy(check: Any) -> None:
    a = data((2, 3), "f")
    b = data((3,), "f")
    va, vb = mnp.array(a), mnp.array(b)
    check(va + vb, a + b)
    check(2.0 - va, 2.0 - a)
    check(va * vb / 3.0, a * b / 3.0)
    check(-va, -a)
    check(abs(va), np.abs(a))
    check(va ** 2, a ** 2, rtol=1e-5)
    check(va > vb, a > b)
    check(va @ mnp.array(a.T), a @ a.T, rtol=1e-5)
    check(b + va, a + b)  # numpy on the left defers to Var
    i = mnp.array(np.array([7, -7, 9], np.int32))
    check(i // 2, np.array([7, -7, 9]) // 2)
    check(i % 4, np.array([7, -7, 9]) % 4)


def test_new_data_reuses_the_plan(check: Any) -> None:
    from mnnpy.core.session import COUNTERS as CORE
    from mnnpy.expr.graph import COUNTERS

    def preprocess(img: Any) -> Any:
        x = mnp.array(img).astype(mnp.float32)
        return mnp.sum(mnp.transpose((x - 127.5) * 0.0078125, (2, 0, 1)), (1, 2))

    images = [RNG.integers(0, 256, (8, 8, 3)).astype(np.uint8) for _ in range(3)]
    check(preprocess(images[0]), ((images[0] - 127.5) * 0.0078125).sum((0, 1)), rtol=1e-5, atol=1e-5)
    plans, resizes = COUNTERS["plans"], CORE["resizes"]
    for img in images[1:]:  # big constants are fed at run time: new pixels, same plan
        check(preprocess(img), ((img - 127.5) * 0.0078125).sum((0, 1)), rtol=1e-5, atol=1e-5)
    assert (COUNTERS["plans"], CORE["resizes"]) == (plans, resizes)
