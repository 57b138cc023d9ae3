"""Vulkan Convolution (direct / 1x1 / depthwise / grouped, fused ReLU/ReLU6), Pooling, Softmax and MatMul vs numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(11)


def _conv_op(make_op: Any, op_type: int, w: np.ndarray, b: np.ndarray, stride: tuple[int, int],
             pads: tuple[int, int, int, int], dil: tuple[int, int], group: int, relu: bool, relu6: bool) -> Any:
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = w.shape[2:]
    common.strideY, common.strideX = stride
    common.dilateY, common.dilateX = dil
    common.pads = list(pads)
    common.group = group
    common.outputCount = w.shape[0]
    common.relu, common.relu6 = relu, relu6
    conv = fb.Convolution2DT()
    conv.common = common
    conv.weight = w.reshape(-1).tolist()
    conv.bias = b.tolist()
    return make_op(op_type, conv)


CONV_CASES = [  # (n, ic, oc, h, w, k, stride, pads, dil, group, expected algorithm)
    (1, 3, 13, 7, 6, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "direct"),
    (2, 13, 5, 5, 5, 3, (2, 2), (0, 1, 1, 0), (1, 1), 1, "direct"),
    (1, 1, 1, 6, 7, 3, (1, 1), (0, 1, 0, 1), (2, 2), 1, "direct"),
    (1, 127, 3, 2, 3, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, "conv1x1"),
    (5, 13, 9, 1, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, "conv1x1"),
    (3, 7, 6, 1, 2, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, "conv1x1"),
    (1, 6, 9, 5, 4, 3, (1, 2), (1, 1, 1, 1), (1, 1), 3, "direct"),
    (2, 13, 13, 6, 5, 3, (1, 1), (1, 1, 1, 1), (1, 1), 13, "depthwise"),
    (1, 3, 3, 7, 7, 5, (2, 2), (2, 2, 2, 2), (1, 1), 3, "depthwise"),
]


@pytest.mark.parametrize("act", ["none", "relu", "relu6"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[c[-1] + str(i) for i, c in enumerate(CONV_CASES)])
def test_convolution(run_op: Any, make_op: Any, conv_ref: Any, case: tuple, act: str) -> None:
    n, ic, oc, h, w, k, stride, pads, dil, group, algo = case
    x = RNG.standard_normal((n, ic, h, w)).astype(np.float32)
    wt = (RNG.standard_normal((oc, ic // group, k, k)) * 0.5).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    op_type = fb.OpType.ConvolutionDepthwise if algo == "depthwise" else fb.OpType.Convolution
    op = _conv_op(make_op, op_type, wt, b, stride, pads, dil, group, act == "relu", act == "relu6")
    want = conv_ref(x, wt, b, stride, pads, dil, group)
    want = np.maximum(want, 0) if act == "relu" else np.clip(want, 0, 6) if act == "relu6" else want
    runner = run_op(op_type, op, [(x, "NC4HW4")], [TensorDesc(want.shape, np.float32, "NC4HW4")])
    assert runner.execution is not None and runner.execution.algorithm == algo
    (got,) = runner.run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def pool_ref(x: np.ndarray, k: int, s: int, pad: int, mode: str, ceil: bool) -> np.ndarray:
    """Caffe-style pooling: windows clipped to the padded input; average counts padding inside it."""
    n, c, h, w = x.shape
    size = [((d + 2 * pad - k + (s - 1 if ceil else 0)) // s) + 1 for d in (h, w)]
    out = np.zeros((n, c, *size), np.float32)
    for oy in range(size[0]):
        for ox in range(size[1]):
            y0, x0 = oy * s - pad, ox * s - pad
            y1, x1 = min(y0 + k, h + pad), min(x0 + k, w + pad)
            win = x[:, :, max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)]
            if mode == "max":
                out[:, :, oy, ox] = win.max(axis=(2, 3))
            else:
                out[:, :, oy, ox] = win.sum(axis=(2, 3)) / ((y1 - y0) * (x1 - x0))
    return out


@pytest.mark.parametrize("mode", ["max", "avg"])
@pytest.mark.parametrize(("shape", "k", "s", "pad", "ceil"),
                         [((1, 13, 7, 7), 3, 2, 1, False), ((2, 3, 5, 6), 2, 2, 0, True),
                          ((1, 127, 3, 3), 3, 1, 1, False), ((1, 1, 4, 4), 2, 1, 0, False)])
def test_pooling(run_op: Any, make_op: Any, mode: str, shape: tuple, k: int, s: int, pad: int, ceil: bool) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    pool = fb.PoolT()
    pool.kernelX = pool.kernelY = k
    pool.strideX = pool.strideY = s
    pool.padX = pool.padY = pad
    pool.type = fb.PoolType.MAXPOOL if mode == "max" else fb.PoolType.AVEPOOL
    want = pool_ref(x, k, s, pad, mode, ceil)
    (got,) = run_op(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [(x, "NC4HW4")],
                    [TensorDesc(want.shape, np.float32, "NC4HW4")]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_global_average_pool(run_op: Any, make_op: Any) -> None:
    x = RNG.standard_normal((2, 13, 5, 3)).astype(np.float32)
    pool = fb.PoolT()
    pool.isGlobal = True
    pool.type = fb.PoolType.AVEPOOL
    (got,) = run_op(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [(x, "NC4HW4")],
                    [TensorDesc((2, 13, 1, 1), np.float32, "NC4HW4")]).run()
    np.testing.assert_allclose(got, x.mean(axis=(2, 3), keepdims=True), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", [fb.PoolType.MAXPOOL, fb.PoolType.AVEPOOL])
def test_global_pooling3d(run_op: Any, make_op: Any, mode: int) -> None:
    x = RNG.standard_normal((2, 13, 3, 4)).astype(np.float32)
    pool = fb.Pool3DT()
    pool.type, pool.isGlobal = mode, True
    (got,) = run_op(fb.OpType.Pooling3D, make_op(fb.OpType.Pooling3D, pool), [(x, "NC4HW4")],
                    [TensorDesc((2, 13, 1, 1), np.float32, "NC4HW4")]).run()
    want = x.max(axis=(2, 3), keepdims=True) if mode == fb.PoolType.MAXPOOL else x.mean(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("shape", "axis", "fmt"), [((2, 13, 3, 2), 1, "NC4HW4"), ((3, 127), -1, "NCHW"),
                                                    ((2, 3, 5), 0, "NCHW"), ((1, 3, 4, 4), 3, "NC4HW4")])
def test_softmax(run_op: Any, make_op: Any, shape: tuple, axis: int, fmt: str) -> None:
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    param = fb.AxisT()
    param.axis = axis
    (got,) = run_op(fb.OpType.Softmax, make_op(fb.OpType.Softmax, param), [(x, fmt)],
                    [TensorDesc(shape, np.float32, fmt)]).run()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=axis, keepdims=True), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(("a_shape", "b_shape", "ta", "tb", "bias"), [
    ((3, 13), (13, 5), False, False, False), ((13, 3), (5, 13), True, True, True),
    ((2, 4, 7), (2, 7, 1), False, False, False),
    ((2, 3, 4, 7), (7, 127), False, False, True), ((1, 1), (1, 1), False, False, False),
    ((2, 5, 6), (1, 6, 9), False, False, False), ((3, 6, 5), (3, 7, 6), True, True, True),
])
def test_matmul(run_op: Any, make_op: Any, a_shape: tuple, b_shape: tuple, ta: bool, tb: bool, bias: bool) -> None:
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    am = np.swapaxes(a, -1, -2) if ta else a
    bm = np.swapaxes(b, -1, -2) if tb else b
    want = np.matmul(am, bm)
    inputs = [(a, "NCHW"), (b, "NCHW")]
    if bias:
        c = RNG.standard_normal(want.shape[-1]).astype(np.float32)
        inputs.append((c, "NCHW"))
        want = want + c
    param = fb.MatMulT()
    param.transposeA, param.transposeB = ta, tb
    (got,) = run_op(fb.OpType.MatMul, make_op(fb.OpType.MatMul, param), inputs,
                    [TensorDesc(want.shape, np.float32, "NCHW")]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("pad_type", "pads", "count", "ceil"), [
    (fb.PoolPadType.SAME, None, 0, False), (fb.PoolPadType.VALID, None, 0, True),
    (fb.PoolPadType.CAFFE, [1, 0, 1, 0], 0, False), (fb.PoolPadType.CAFFE, None, 2, False),
    (fb.PoolPadType.CAFFE, None, 1, True),
])
@pytest.mark.parametrize("mode", [fb.PoolType.MAXPOOL, fb.PoolType.AVEPOOL])
def test_pooling_matches_cpu(run_op: Any, run_cpu: Any, make_op: Any, pad_type: int, pads: list | None, count: int,
                             ceil: bool, mode: int) -> None:
    x = RNG.standard_normal((1, 13, 7, 6)).astype(np.float32)
    pool = fb.PoolT()
    pool.kernelX = pool.kernelY = 3
    pool.strideX = pool.strideY = 2
    pool.padX = pool.padY = 1
    pool.type, pool.padType, pool.pads, pool.countType, pool.ceilModel = mode, pad_type, pads, count, ceil
    if pad_type == fb.PoolPadType.SAME:
        out_hw = (4, 3)
    elif pad_type == fb.PoolPadType.VALID:
        out_hw = (3, 3) if ceil else (3, 2)
    else:
        extra = 1 if ceil else 0
        out_hw = ((7 + 2 - 3 + extra) // 2 + 1, (6 + (0 if pads else 2) - 3 + extra) // 2 + 1)
    out = TensorDesc((1, 13, *out_hw), np.float32, "NC4HW4")
    (got,) = run_op(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [(x, "NC4HW4")], [out]).run()
    (want,) = run_cpu(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [(x, "NC4HW4")], [out]).run()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
