"""precision='low': tensors stored as float16 on devices with 16-bit storage (lavapipe has it); results within 1e-2."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import Region, TensorDesc, View

RNG = np.random.default_rng(41)
LOW = {"precision": "low"}


@pytest.fixture(autouse=True)
def _needs_fp16(vk_runtime: Any) -> None:
    if not vk_runtime.device.fp16_storage:
        pytest.skip("device has no storageBuffer16BitAccess: precision='low' stays fp32")


def _close(got: np.ndarray, want: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * scale)


def test_backend_stores_tensors_as_float16(run_op: Any, make_op: Any) -> None:
    x = RNG.standard_normal((1, 13, 3, 3)).astype(np.float32)
    runner = run_op(fb.OpType.ReLU6, make_op(fb.OpType.ReLU6, fb.Relu6T()), [(x, "NC4HW4")],
                    [TensorDesc(x.shape, np.float32, "NC4HW4")], LOW)
    assert runner.backend.fp16 and runner.out_refs[0].array.dtype == np.float16
    (got,) = runner.run()
    assert got.dtype == np.float16 or got.dtype == np.float32
    _close(got, np.clip(x, 0, 6))


@pytest.mark.parametrize(("k", "group", "algo"), [(3, 1, "direct"), (1, 1, "conv1x1"), (3, 13, "depthwise")])
def test_convolution_fp16(run_op: Any, make_op: Any, k: int, group: int, algo: str) -> None:
    x = RNG.standard_normal((1, 13, 6, 5)).astype(np.float32)
    w = (RNG.standard_normal((13, 13 // group, k, k)) * 0.3).astype(np.float32)
    b = RNG.standard_normal(13).astype(np.float32)
    common = fb.Convolution2DCommonT()
    common.kernelX = common.kernelY = k
    common.padX = common.padY = k // 2
    common.group, common.outputCount, common.relu = group, 13, True
    conv = fb.Convolution2DT()
    conv.common, conv.weight, conv.bias = common, w.ravel(), b
    op_type = fb.OpType.ConvolutionDepthwise if group > 1 else fb.OpType.Convolution
    xp = np.pad(x, ((0, 0), (0, 0), (k // 2, k // 2), (k // 2, k // 2)))
    want = np.zeros((1, 13, 6, 5), np.float64)
    for o in range(13):
        for i in range(13 // group):
            ci = o if group > 1 else i
            for ky in range(k):
                for kx in range(k):
                    want[0, o] += w[o, i, ky, kx] * xp[0, ci, ky:ky + 6, kx:kx + 5]
    want = np.maximum(want + b.reshape(1, -1, 1, 1), 0)
    runner = run_op(op_type, make_op(op_type, conv), [(x, "NC4HW4")], [TensorDesc(want.shape, np.float32, "NC4HW4")],
                    LOW)
    assert runner.execution.algorithm == algo
    (got,) = runner.run()
    _close(got, want)


def test_elementwise_softmax_raster_matmul_fp16(run_op: Any, make_op: Any) -> None:
    a = RNG.standard_normal((2, 13, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((1, 13, 1, 4)).astype(np.float32)
    p = fb.BinaryOpT()
    p.opType = fb.BinaryOpOperation.MUL
    (got,) = run_op(fb.OpType.BinaryOp, make_op(fb.OpType.BinaryOp, p), [(a, "NC4HW4"), (b, "NCHW")],
                    [TensorDesc(a.shape, np.float32, "NC4HW4")], LOW).run()
    _close(got, a * b)
    axis = fb.AxisT()
    axis.axis = 1
    (got,) = run_op(fb.OpType.Softmax, make_op(fb.OpType.Softmax, axis), [(a, "NC4HW4")],
                    [TensorDesc(a.shape, np.float32, "NC4HW4")], LOW).run()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    _close(got, e / e.sum(axis=1, keepdims=True))
    region = Region(View(0, (12, 4, 1)), View(0, (1, 13, 39)), (13, 3, 4), 0)  # batch 0, (C,H,W) -> (W,H,C)
    (got,) = run_op(fb.OpType.Raster, [region], [(a, "NC4HW4")], [TensorDesc((4, 3, 13), np.float32, "NCHW")],
                    LOW).run()
    _close(got, np.transpose(a[0], (2, 1, 0)))
    m1 = RNG.standard_normal((3, 13)).astype(np.float32)
    m2 = RNG.standard_normal((13, 5)).astype(np.float32)
    (got,) = run_op(fb.OpType.MatMul, make_op(fb.OpType.MatMul, fb.MatMulT()), [(m1, "NCHW"), (m2, "NCHW")],
                    [TensorDesc((3, 5), np.float32, "NCHW")], LOW).run()
    _close(got, m1 @ m2)


def test_pooling_layernorm_reduce_fp16(run_op: Any, make_op: Any) -> None:
    x = RNG.standard_normal((1, 13, 6, 6)).astype(np.float32)
    pool = fb.PoolT()
    pool.kernelX = pool.kernelY = pool.strideX = pool.strideY = 2
    pool.type = fb.PoolType.AVEPOOL
    (got,) = run_op(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [(x, "NC4HW4")],
                    [TensorDesc((1, 13, 3, 3), np.float32, "NC4HW4")], LOW).run()
    _close(got, x.reshape(1, 13, 3, 2, 3, 2).mean(axis=(3, 5)))
    ln = fb.LayerNormT()
    ln.axis, ln.epsilon = [-1], 1e-5
    t = RNG.standard_normal((4, 16)).astype(np.float32)
    (got,) = run_op(fb.OpType.LayerNorm, make_op(fb.OpType.LayerNorm, ln), [(t, "NCHW")],
                    [TensorDesc(t.shape, np.float32, "NCHW")], LOW).run()
    c = t - t.mean(axis=-1, keepdims=True)
    _close(got, c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5))
    red = fb.ReductionParamT()
    red.operation, red.dim, red.keepDims = fb.ReductionType.MEAN, [2, 3], True
    (got,) = run_op(fb.OpType.Reduction, make_op(fb.OpType.Reduction, red), [(x, "NC4HW4")],
                    [TensorDesc((1, 13, 1, 1), np.float32, "NC4HW4")], LOW).run()
    _close(got, x.mean(axis=(2, 3), keepdims=True))
