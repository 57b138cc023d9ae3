"""Vulkan Deconvolution (groups, stride, dilation, padding, fused activation), PReLU, ELU, Selu and Eltwise."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(29)


def deconv_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: int, dil: int, group: int,
               out_hw: tuple[int, int]) -> np.ndarray:
    """Scatter form of a transposed convolution; w is (IC, OC/g, KH, KW)."""
    n, ic, h, wd = x.shape
    _, ocg, kh, kw = w.shape
    icg = ic // group
    full = np.zeros((n, ocg * group, (h - 1) * stride + (kh - 1) * dil + 1 + out_hw[0],
                     (wd - 1) * stride + (kw - 1) * dil + 1 + out_hw[1]), np.float64)
    for g in range(group):
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", x[:, g * icg:(g + 1) * icg], w[g * icg:(g + 1) * icg, :, ky, kx])
                full[:, g * ocg:(g + 1) * ocg, ky * dil: ky * dil + (h - 1) * stride + 1: stride,
                     kx * dil: kx * dil + (wd - 1) * stride + 1: stride] += contrib
    out = full[:, :, pad: pad + out_hw[0], pad: pad + out_hw[1]] + b.reshape(1, -1, 1, 1)
    return out.astype(np.float32)


@pytest.mark.parametrize(("n", "ic", "oc", "hw", "k", "stride", "pad", "dil", "group", "act"), [
    (1, 3, 13, 4, 3, 2, 1, 1, 1, "none"), (2, 13, 5, 3, 2, 2, 0, 1, 1, "relu"), (1, 6, 9, 5, 3, 1, 1, 2, 3, "relu6"),
    (1, 13, 13, 4, 4, 2, 1, 1, 13, "none"), (1, 1, 1, 3, 3, 3, 0, 1, 1, "none"),
])
def test_deconvolution(run_op: Any, make_op: Any, n: int, ic: int, oc: int, hw: int, k: int, stride: int, pad: int,
                       dil: int, group: int, act: str) -> None:
    x = RNG.standard_normal((n, ic, hw, hw + 1)).astype(np.float32)
    w = (RNG.standard_normal((ic, oc // group, k, k)) * 0.5).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    oh = (hw - 1) * stride + (k - 1) * dil + 1 - 2 * pad
    ow = hw * stride + (k - 1) * dil + 1 - 2 * pad
    want = deconv_ref(x, w, b, stride, pad, dil, group, (oh, ow))
    want = np.maximum(want, 0) if act == "relu" else np.clip(want, 0, 6) if act == "relu6" else want
    common = fb.Convolution2DCommonT()
    common.kernelX = common.kernelY = k
    common.strideX = common.strideY = stride
    common.dilateX = common.dilateY = dil
    common.padX = common.padY = pad
    common.group, common.outputCount = group, oc
    common.relu, common.relu6 = act == "relu", act == "relu6"
    conv = fb.Convolution2DT()
    conv.common, conv.weight, conv.bias = common, w.ravel(), b
    op_type = fb.OpType.DeconvolutionDepthwise if group == ic == oc else fb.OpType.Deconvolution
    runner = run_op(op_type, make_op(op_type, conv), [(x, "NC4HW4")], [TensorDesc(want.shape, np.float32, "NC4HW4")])
    (got,) = runner.run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1, 2, 2), (2, 13, 3, 1), (1, 127, 1, 2)])
@pytest.mark.parametrize("shared", [False, True])
def test_prelu(run_op: Any, make_op: Any, shape: tuple, shared: bool) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    slope = RNG.standard_normal(1 if shared else shape[1]).astype(np.float32)
    param = fb.PReluT()
    param.slopeCount, param.slope = slope.size, slope
    (got,) = run_op(fb.OpType.PReLU, make_op(fb.OpType.PReLU, param), [(x, "NC4HW4")],
                    [TensorDesc(shape, np.float32, "NC4HW4")]).run()
    s = slope.reshape(1, -1, 1, 1) if not shared else slope[0]
    np.testing.assert_allclose(got, np.where(x > 0, x, x * s), rtol=1e-5, atol=1e-6)


def test_elu_selu(run_op: Any, make_op: Any) -> None:
    x = (RNG.standard_normal((1, 13, 3, 3)) * 2).astype(np.float32)
    elu = fb.ELUT()
    elu.alpha = 0.7
    (got,) = run_op(fb.OpType.ELU, make_op(fb.OpType.ELU, elu), [(x, "NC4HW4")],
                    [TensorDesc(x.shape, np.float32, "NC4HW4")]).run()
    np.testing.assert_allclose(got, np.where(x > 0, x, 0.7 * np.expm1(x)), rtol=1e-4, atol=1e-5)
    selu = fb.SeluT()
    selu.alpha, selu.scale = 1.6732632, 1.0507010
    (got,) = run_op(fb.OpType.Selu, make_op(fb.OpType.Selu, selu), [(x, "NCHW")],
                    [TensorDesc(x.shape, np.float32, "NCHW")]).run()
    np.testing.assert_allclose(got, 1.0507010 * np.where(x > 0, x, 1.6732632 * np.expm1(x)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("kind", "fn"), [(fb.EltwiseType.SUM, np.add), (fb.EltwiseType.PROD, np.multiply),
                                          (fb.EltwiseType.MAXIMUM, np.maximum), (fb.EltwiseType.SUB, np.subtract)])
def test_eltwise_three_inputs(run_op: Any, make_op: Any, kind: int, fn: Any) -> None:
    xs = [RNG.standard_normal((1, 13, 2, 3)).astype(np.float32) for _ in range(3)]
    param = fb.EltwiseT()
    param.type = kind
    (got,) = run_op(fb.OpType.Eltwise, make_op(fb.OpType.Eltwise, param), [(xs[0], "NC4HW4"), (xs[1], "NCHW"),
                                                                          (xs[2], "NC4HW4")],
                    [TensorDesc(xs[0].shape, np.float32, "NC4HW4")]).run()
    np.testing.assert_allclose(got, fn(fn(xs[0], xs[1]), xs[2]), rtol=1e-5, atol=1e-6)


def test_eltwise_with_coefficients_falls_back(run_op: Any, make_op: Any) -> None:
    param = fb.EltwiseT()
    param.type, param.coeff = fb.EltwiseType.SUM, [0.5, 2.0]
    x = np.zeros((1, 3, 2, 2), np.float32)
    runner = run_op(fb.OpType.Eltwise, make_op(fb.OpType.Eltwise, param), [(x, "NCHW"), (x, "NCHW")],
                    [TensorDesc(x.shape, np.float32, "NCHW")])
    assert runner.execution is None
