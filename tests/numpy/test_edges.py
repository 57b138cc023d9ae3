"""mnnpy.numpy against real numpy where the other files stay on one dtype or on n-d inputs: 0-d arrays, integer
and float inputs side by side, broadcasting of the binary / ternary functions, and the conversion aliases.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mnnpy.numpy as mnp

RNG = np.random.default_rng(9)
F0, I0 = np.float32(-1.75), np.int32(-3)  # 0-d inputs
F1 = RNG.uniform(-3, 3, (3, 4)).astype(np.float32)
I1 = RNG.integers(-6, 7, (3, 4)).astype(np.int32)


@pytest.mark.parametrize("x", [F0, I0, F1, I1], ids=["f32-0d", "i32-0d", "f32", "i32"])
def test_array_functions_keep_numpy_shapes_and_dtypes(x: np.ndarray, check: Any) -> None:
    want_i = (lambda v: np.asarray(v).astype(np.int32)) if x.dtype.kind == "i" else np.asarray
    check(mnp.ravel(x), np.ravel(x))
    check(mnp.reshape(x, (1, -1)), np.reshape(x, (1, -1)))
    check(mnp.expand_dims(x, 0), np.expand_dims(x, 0))
    check(mnp.atleast_2d(x), np.atleast_2d(x))
    check(mnp.transpose(x), np.transpose(x))
    check(mnp.tile(x, 2), np.tile(x, 2))
    check(mnp.repeat(x, 2), np.repeat(x, 2))
    check(mnp.cumsum(x), want_i(np.cumsum(x)), rtol=1e-5, atol=1e-5)
    check(mnp.argmax(x), np.argmax(x))
    check(mnp.argmin(x), np.argmin(x))
    check(mnp.sort(x, None), np.sort(x, None))
    check(mnp.copy(x), np.copy(x))
    check(mnp.square(x), np.square(x))
    check(mnp.abs(x), np.abs(x))
    check(mnp.sign(x), np.sign(x))
    check(mnp.ptp(x), np.ptp(x))
    check(mnp.count_nonzero(x), np.count_nonzero(x))
    check(mnp.zeros_like(x), np.zeros_like(x))
    check(mnp.full_like(x, 2), np.full_like(x, 2))
    check(mnp.clip(x, -1, 2), np.clip(x, -1, 2))
    if x.ndim:
        check(mnp.sort(x), np.sort(x))
        check(mnp.argsort(x, 0), np.argsort(x, 0, kind="stable"))
        check(mnp.concatenate([x, x]), np.concatenate([x, x]))
        check(mnp.stack([x, x], 1), np.stack([x, x], 1))
        check(mnp.pad(x, 1), np.pad(x, 1))


BINARY = ["arctan2", "hypot", "copysign", "logaddexp", "logaddexp2", "float_power", "fmod", "maximum", "minimum",
          "add", "subtract", "multiply", "divide", "power", "greater", "equal"]
SHAPES = [((), ()), ((), (3, 1)), ((2, 1, 3), ()), ((4, 1), (1, 5)), ((3,), (2, 3))]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("kind", ["f", "i"])
def test_binary_broadcasting_and_0d(name: str, kind: str, check: Any) -> None:
    for sa, sb in SHAPES:
        if kind == "f":
            a = RNG.uniform(0.5, 2.5, sa).astype(np.float32)
            b = RNG.uniform(0.5, 2.5, sb).astype(np.float32) * np.float32(RNG.choice([-1, 1]))
        else:
            a = RNG.integers(1, 5, sa).astype(np.int32)
            b = RNG.integers(1, 4, sb).astype(np.int32)
        want = getattr(np, name)(a, b)
        if want.dtype.kind == "f":
            want = want.astype(np.float32)
        elif want.dtype.kind == "i":
            want = want.astype(np.int32)
        check(getattr(mnp, name)(a, b), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["f", "i"])
def test_ternary_broadcasting(kind: str, check: Any) -> None:
    x = RNG.uniform(-4, 4, (2, 3, 4)).astype(np.float32) if kind == "f" else \
        RNG.integers(-4, 5, (2, 3, 4)).astype(np.int32)
    lo, hi = np.asarray(-1, x.dtype), np.arange(4).astype(x.dtype)
    check(mnp.clip(x, lo, hi), np.clip(x, lo, hi))
    check(mnp.clip(x[0, 0, 0], lo, hi), np.clip(x[0, 0, 0], lo, hi))
    cond = x[:, :1] > 0
    check(mnp.where(cond, x, np.asarray(0, x.dtype)), np.where(cond, x, np.asarray(0, x.dtype)))
    check(mnp.where(np.bool_(True), x[0, 0, 0], x[0]), np.where(np.bool_(True), x[0, 0, 0], x[0]))


def test_reductions_and_statistics_on_0d_and_int(check: Any) -> None:
    for x in (F0, I0):
        for name in ("sum", "prod", "max", "min", "mean", "std", "var", "average"):
            want = getattr(np, name)(x)
            want = want.astype(np.float32) if want.dtype.kind == "f" else want.astype(np.int32)
            check(getattr(mnp, name)(x), want, rtol=1e-6)
    for axis in (None, 0, 1):
        check(mnp.var(I1, axis), np.var(I1, axis).astype(np.float32), rtol=1e-5)
        check(mnp.std(I1, axis), np.std(I1, axis).astype(np.float32), rtol=1e-5)
        check(mnp.average(I1, axis), np.average(I1, axis).astype(np.float32), rtol=1e-5)
        check(mnp.cumprod(F1 / 2, axis), np.cumprod(F1 / 2, axis), rtol=1e-5, atol=1e-6)


def test_conversion_aliases(check: Any) -> None:
    for x in ([[1, 2], [3, 4]], F1, I1, 2.5):
        want = np.asarray(x)
        want = want.astype(np.float32) if want.dtype.kind == "f" else want.astype(np.int32)
        check(mnp.asanyarray(x), want)
        check(mnp.ascontiguousarray(x), np.ascontiguousarray(want))
    check(mnp.mat([1, 2]), np.array([[1, 2]], np.int32))
    check(mnp.matrix([[1.5, 2.0]]), np.array([[1.5, 2.0]], np.float32))
