"""Vulkan Reduction, LayerNorm/RMSNorm, Scale and Interp vs numpy (Interp vs the CPU backend as the oracle)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(17)
REDUCE = {fb.ReductionType.SUM: np.sum, fb.ReductionType.MEAN: np.mean, fb.ReductionType.MAXIMUM: np.max,
          fb.ReductionType.MINIMUM: np.min, fb.ReductionType.SUMSQ: lambda x, axis, keepdims: np.sum(
              x * x, axis=axis, keepdims=keepdims),
          fb.ReductionType.ASUM: lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims)}


@pytest.mark.parametrize("operation", sorted(REDUCE))
@pytest.mark.parametrize(("shape", "dims", "keep", "fmt"), [
    ((2, 13, 3, 4), [1], True, "NC4HW4"), ((2, 13, 3, 4), [2, 3], False, "NC4HW4"), ((3, 127), [-1], False, "NCHW"),
    ((2, 3, 5), [], False, "NCHW"), ((1, 3, 4, 4), [0, 1], True, "NCHW"),
])
def test_reduction(run_op: Any, make_op: Any, operation: int, shape: tuple, dims: list, keep: bool, fmt: str) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    param = fb.ReductionParamT()
    param.operation, param.dim, param.keepDims = operation, dims, keep
    axes = tuple(d % len(shape) for d in dims) if dims else tuple(range(len(shape)))
    want = np.asarray(REDUCE[operation](x, axis=axes, keepdims=keep), dtype=np.float32)
    out_fmt = fmt if want.ndim == len(shape) else "NCHW"
    (got,) = run_op(fb.OpType.Reduction, make_op(fb.OpType.Reduction, param), [(x, fmt)],
                    [TensorDesc(want.shape, np.float32, out_fmt)]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_reduction_refuses_split_axes(run_op: Any, make_op: Any) -> None:
    param = fb.ReductionParamT()
    param.operation, param.dim, param.keepDims = fb.ReductionType.SUM, [0, 2], False
    x = np.zeros((2, 3, 4), np.float32)
    runner = run_op(fb.OpType.Reduction, make_op(fb.OpType.Reduction, param), [(x, "NCHW")],
                    [TensorDesc((3,), np.float32, "NCHW")])
    assert runner.execution is None


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize(("shape", "axes", "affine"), [((2, 7, 16), 1, True), ((3, 127), 1, False),
                                                       ((2, 3, 4, 5), 2, True)])
def test_layernorm(run_op: Any, make_op: Any, shape: tuple, axes: int, affine: bool, rms: bool) -> None:
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    norm_shape = shape[len(shape) - axes:]
    gamma = RNG.standard_normal(norm_shape).astype(np.float32)
    beta = RNG.standard_normal(norm_shape).astype(np.float32)
    param = fb.LayerNormT()
    param.axis = list(range(-axes, 0))
    param.epsilon = 1e-5
    param.useRmsnorm = rms
    if affine:
        param.gamma, param.beta = gamma.ravel(), beta.ravel()
    red = tuple(range(len(shape) - axes, len(shape)))
    centered = x if rms else x - x.mean(axis=red, keepdims=True)
    want = centered / np.sqrt((centered * centered).mean(axis=red, keepdims=True) + 1e-5)
    if affine:
        want = want * gamma + beta
    (got,) = run_op(fb.OpType.LayerNorm, make_op(fb.OpType.LayerNorm, param), [(x, "NCHW")],
                    [TensorDesc(shape, np.float32, "NCHW")]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1, 3, 3), (2, 13, 2, 5), (1, 127, 1, 1)])
def test_scale(run_op: Any, make_op: Any, shape: tuple) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    c = shape[1]
    param = fb.ScaleT()
    param.channels = c
    param.scaleData = RNG.standard_normal(c).astype(np.float32)
    param.biasData = RNG.standard_normal(c).astype(np.float32)
    want = x * param.scaleData.reshape(1, c, 1, 1) + param.biasData.reshape(1, c, 1, 1)
    (got,) = run_op(fb.OpType.Scale, make_op(fb.OpType.Scale, param), [(x, "NC4HW4")],
                    [TensorDesc(shape, np.float32, "NC4HW4")]).run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("kind", "ctm", "align"), [(1, 0, False), (1, 4, False), (2, 0, True), (2, 2, False),
                                                    (3, 2, False), (4, 2, False), (2, 3, False)])
@pytest.mark.parametrize(("shape", "out_hw"), [((1, 13, 5, 4), (10, 7)), ((2, 3, 6, 6), (3, 4)),
                                               ((1, 1, 1, 1), (2, 3))])
def test_interp_matches_cpu(run_op: Any, run_cpu: Any, make_op: Any, kind: int, ctm: int, align: bool,
                            shape: tuple, out_hw: tuple) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    param = fb.InterpT()
    param.resizeType, param.ctm, param.alignCorners = kind, ctm, align
    out = TensorDesc((*shape[:2], *out_hw), np.float32, "NC4HW4")
    vk = run_op(fb.OpType.Interp, make_op(fb.OpType.Interp, param), [(x, "NC4HW4")], [out])
    cpu = run_cpu(fb.OpType.Interp, make_op(fb.OpType.Interp, param), [(x, "NC4HW4")], [out])
    (got,), (want,) = vk.run(), cpu.run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if kind == 1 and ctm == 4:  # asymmetric nearest: plain index arithmetic
        iy = np.floor(np.arange(out_hw[0]) * shape[2] / out_hw[0]).astype(int)
        ix = np.floor(np.arange(out_hw[1]) * shape[3] / out_hw[1]).astype(int)
        np.testing.assert_array_equal(got, x[:, :, iy][:, :, :, ix])
