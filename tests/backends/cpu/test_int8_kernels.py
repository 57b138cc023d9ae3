"""int8 kernels (QNNPACK scheme, MNN's float32 requantisation) against a float64 reference of the same math."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.backends.cpu.int8.conv import Int8Conv, Int8ConvParams, reference_conv
from mnnpy.backends.cpu.int8.requant import add_int8, dequantize, post_treat, quantize, roundf

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
    post_scale = 0.75 if float_bias else None
    p = Int8ConvParams(w, rng.integers(-5000, 5000, oc), rng.uniform(1e-4, 2e-3, oc), (s, s), (1, 1), pads, g,
                       izp, 0, ozp, -128 if ozp else -127, 127, dw, out_bias, post_scale)
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


def test_post_treat_rounds_like_mnn() -> None:
    """float32 steps, then +-0.5 added in float32 and truncated (MNN's SIMD rounding), clamp, zero point."""
    acc = np.array([[-5], [-3], [-1], [1], [3], [5], [1000]], np.int64)
    q = post_treat(acc, np.array([0.5], np.float32), 0, -127, 127)
    np.testing.assert_array_equal(q.ravel(), [-3, -2, -1, 1, 2, 3, 127])  # ties away from zero, then the clamp
    # 0.49999997 + 0.5 rounds to 1.0 in float32: MNN's kernels give 1 where exact rounding gives 0
    below_half = np.nextafter(np.float32(0.5), np.float32(0))
    assert post_treat(np.array([[1]]), np.array([below_half]), 0, -127, 127)[0, 0] == 1
    assert roundf(np.array([below_half]))[0] == 0
    q = post_treat(np.array([[10, 10]]), np.array([1.0, 1.0], np.float32), 3, 0, 127, 0.5,
                   np.array([0.25, -20.0], np.float32))
    np.testing.assert_array_equal(q, [[8, 0]])  # 10 * 0.5 + 0.25 -> 5, + zero point 3; -15 + 3 clamped at 0


def test_quantize_roundtrip() -> None:
    x = np.linspace(-2, 2, 101, dtype=np.float32)
    q = quantize(x, 0.02, 0, -127, 127)
    assert np.abs(dequantize(q, 0.02) - x).max() <= 0.01 + 1e-6


def test_add_int8_matches_float_reference() -> None:
    rng = np.random.default_rng(4)
    qa = rng.integers(-128, 128, size=(2, 8, 5, 5)).astype(np.int8)
    qb = rng.integers(-128, 128, size=(1, 8, 1, 5)).astype(np.int8)  # broadcast operand
    sa, sb, so, za, zb, zo = 0.03, 0.011, 0.04, 3, -2, 1
    out = np.zeros(qa.shape, np.int8)
    add_int8(qa, za, qb, zb, (sa, sb, so), zo, zo, 127, out)  # fused ReLU: clamp at the output zero point
    real = sa * (qa.astype(np.float64) - za) + sb * (qb.astype(np.float64) - zb)
    ref = np.clip(np.sign(real) * np.floor(np.abs(real / so) + 0.5) + zo, zo, 127)  # ties away from zero
    assert np.abs(out.astype(np.int64) - ref).max() <= 1  # float32 steps decide exact ties either way
    clear = np.abs(np.abs(np.broadcast_to(real, out.shape) / so) % 1 - 0.5) > 1e-4
    np.testing.assert_array_equal(out[clear], ref[clear])  # and nothing else
    swapped = np.zeros(qa.shape, np.int8)
    add_int8(qb, zb, qa, za, (sb, sa, so), zo, zo, 127, swapped)  # the broadcast operand may come first
    np.testing.assert_array_equal(swapped, out)
    with pytest.raises(ValueError, match="positive"):
        add_int8(qa, 0, qb, 0, (sa, 0.0, so), 0, -127, 127, out)
