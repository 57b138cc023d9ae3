"""int8 kernels (QNNPACK scheme) against a float64 reference of the same quantised math."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.backends.cpu.int8.conv import Int8Conv, Int8ConvParams, reference_conv
from mnnpy.backends.cpu.int8.requant import (
    add_int8,
    add_multipliers,
    dequantize,
    quantize,
    quantize_multiplier,
    requantize,
)

CASES = [  # c, oc, k, stride, pads, group, depthwise, in_zero, out_zero
    (8, 16, 3, 1, (1, 1, 1, 1), 1, False, 3, -5),
    (8, 16, 3, 2, (1, 1, 1, 1), 1, False, 0, 0),
    (8, 16, 1, 1, (0, 0, 0, 0), 1, False, -4, 2),
    (8, 16, 5, 2, (2, 2, 2, 2), 2, False, 0, 0),
    (8, 8, 3, 2, (1, 1, 1, 1), 8, True, 2, 1),
    (8, 8, 3, 1, (1, 1, 1, 1), 8, True, 0, 0),
    (6, 6, 5, 1, (2, 2, 2, 2), 6, True, 1, 0),
    (8, 8, 3, 1, (0, 1, 2, 1), 1, False, 0, 0),
]


@pytest.mark.parametrize("float_bias", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[f"c{i}" for i in range(len(CASES))])
def test_conv_matches_reference(case: tuple, float_bias: bool) -> None:
    c, oc, k, s, pads, g, dw, izp, ozp = case
    rng = np.random.default_rng(len(str(case)))
    x = rng.integers(-128, 128, size=(2, c, 9, 11)).astype(np.int8)
    w = rng.integers(-127, 128, size=(oc, 1 if dw else c // g, k, k)).astype(np.int8)
    out_bias = rng.normal(0, 20, oc) if float_bias else None
    p = Int8ConvParams(w, rng.integers(-5000, 5000, oc), rng.uniform(1e-4, 2e-3, oc), (s, s), (1, 1), pads, g,
                       izp, 0, ozp, -128 if ozp else -127, 127, dw, out_bias)
    assert (p.offset is not None) == float_bias
    kernel = Int8Conv(p, x.shape)
    out = np.zeros(kernel.out_shape, np.int8)
    kernel.run(x, out)
    np.testing.assert_array_equal(out, reference_conv(x, p))
    assert kernel.dw3x3 == (dw and k == 3)
    assert kernel.pointwise == (k == 1)


def test_large_reduction_uses_exact_carrier() -> None:
    x = np.full((1, 512, 3, 3), 127, np.int8)
    w = np.full((4, 512, 3, 3), -127, np.int8)
    p = Int8ConvParams(w, np.zeros(4), np.full(4, 1e-7), pads=(1, 1, 1, 1))
    kernel = Int8Conv(p, x.shape)
    assert kernel.carrier is np.float32 and kernel.acc_dtype is np.float64  # per tap < 2**24, the sum is not
    acc = kernel.accumulate(x)
    assert acc.min() == -127 * 127 * 512 * 9  # exact beyond float32's 2**24
    out = np.zeros(kernel.out_shape, np.int8)
    kernel.run(x, out)
    np.testing.assert_array_equal(out, reference_conv(x, p))


def test_requantize_fixed_point() -> None:
    scales = np.array([1e-6, 3.7e-4, 0.25, 0.9999, 1.5])
    m, shift = quantize_multiplier(scales)
    assert np.all((m >= 1 << 30) & (m < 1 << 31))
    np.testing.assert_allclose(m / 2.0 ** shift, scales, rtol=1e-9)
    acc = np.array([[-1_000_000, -3, 0, 5, 1_000_000]] * 5).T.astype(np.int64)
    q = requantize(acc, m, shift, 3, -128, 127)
    ref = np.clip(np.floor(acc * scales + 0.5) + 3, -128, 127)
    np.testing.assert_array_equal(q, ref)
    with pytest.raises(ValueError):
        quantize_multiplier(np.array([0.0]))


def test_quantize_roundtrip() -> None:
    x = np.linspace(-2, 2, 101, dtype=np.float32)
    q = quantize(x, 0.02, 0, -127, 127)
    assert np.abs(dequantize(q, 0.02) - x).max() <= 0.01 + 1e-6


def test_add_int8_matches_float_reference() -> None:
    rng = np.random.default_rng(4)
    qa = rng.integers(-128, 128, size=(2, 8, 5, 5)).astype(np.int8)
    qb = rng.integers(-128, 128, size=(1, 8, 1, 5)).astype(np.int8)  # broadcast operand
    sa, sb, so, za, zb, zo = 0.03, 0.011, 0.04, 3, -2, 1
    ma, mb = add_multipliers(sa, sb, so)
    out = np.zeros(qa.shape, np.int8)
    add_int8(qa, za, qb, zb, ma, mb, zo, zo, 127, out)  # fused ReLU: clamp at the output zero point
    real = sa * (qa.astype(np.float64) - za) + sb * (qb.astype(np.float64) - zb)
    ref = np.clip(np.floor(real / so + 0.5) + zo, zo, 127)
    assert np.abs(out.astype(np.int64) - ref).max() <= 1  # fixed-point multipliers: off by one only at ties
    assert np.mean(out == ref) > 0.99
