"""Interp (nearest / bilinear / cubic, coordinate modes), LayerNorm and Reduction on OpenCL vs numpy."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from .helpers import AWKWARD_CHANNELS, Harness, assert_close, make_op, rand


def interp_op(kind: int, align: bool = False, half: bool = False) -> fb.OpT:
    p = fb.InterpT()
    p.resizeType, p.alignCorners, p.halfPixelCenters = kind, align, half
    return make_op(fb.OpType.Interp, p)


def reference_resize(x: np.ndarray, oh: int, ow: int, kind: int, mode: int) -> np.ndarray:
    """Separable resize from the same per-axis tables, applied with numpy (float64)."""
    from mnnpy.backends.opencl.ops.interp import axis_table

    h, w = x.shape[2:]
    hi, hw = axis_table(oh, h, oh / h, mode, kind, -0.75)
    wi, ww = axis_table(ow, w, ow / w, mode, kind, -0.75)
    rows = np.einsum("nchtw,ht->nchw", x.astype(np.float64)[:, :, hi], hw)
    return np.einsum("nchwt,wt->nchw", rows[:, :, :, wi], ww)


def test_axis_tables_match_known_values() -> None:
    from mnnpy.backends.opencl.ops.interp import axis_table

    idx, weights = axis_table(4, 2, 2.0, 4, 1, -0.75)  # nearest, asymmetric, x2
    assert idx[:, 0].tolist() == [0, 0, 1, 1] and np.all(weights == 1)
    idx, weights = axis_table(3, 2, 1.5, 1, 2, -0.75)  # bilinear, align corners: 0, 0.5, 1
    assert idx.tolist() == [[0, 1], [0, 1], [1, 1]]
    np.testing.assert_allclose(weights, [[1, 0], [0.5, 0.5], [1, 0]])


@pytest.mark.parametrize("c", AWKWARD_CHANNELS)
@pytest.mark.parametrize(("kind", "align", "half", "mode"), [(1, False, False, 4), (2, True, False, 1),
                                                            (2, False, True, 2), (3, False, True, 2)])
def test_interp(backend: object, c: int, kind: int, align: bool, half: bool, mode: int) -> None:
    x = rand((2, c, 3, 4), seed=c)
    out_shape = (2, c, 5, 7)
    (y,) = Harness(backend).run(fb.OpType.Interp, interp_op(kind, align, half), [x], ["NC4HW4"], [out_shape])
    assert_close(y, reference_resize(x, 5, 7, kind, mode))


def test_interp_nearest_upsample_exact(backend: object) -> None:
    x = rand((1, 3, 2, 3), seed=1)
    (y,) = Harness(backend).run(fb.OpType.Interp, interp_op(1), [x], ["NC4HW4"], [(1, 3, 4, 6)])
    assert_close(y, x.repeat(2, axis=2).repeat(2, axis=3), tol=0)


def layernorm_op(n_axes: int, d: int, rms: bool = False, affine: bool = True) -> fb.OpT:
    p = fb.LayerNormT()
    p.axis, p.epsilon, p.useRmsnorm = list(range(-n_axes, 0)), 1e-5, rms
    if affine:
        p.gamma = rand((d,), seed=1).tolist()
        p.beta = rand((d,), seed=2).tolist()
    return make_op(fb.OpType.LayerNorm, p)


@pytest.mark.parametrize(("shape", "n_axes", "rms", "affine"), [((2, 5, 13), 1, False, True), ((3, 127), 1, True, True),
                                                              ((2, 3, 4), 2, False, True), ((4, 1), 1, False, False)])
def test_layernorm(backend: object, shape: tuple, n_axes: int, rms: bool, affine: bool) -> None:
    x = rand(shape, seed=3)
    d = int(np.prod(shape[-n_axes:]))
    op = layernorm_op(n_axes, d, rms, affine)
    axes = tuple(range(len(shape) - n_axes, len(shape)))
    x64 = x.astype(np.float64)
    centred = x64 if rms else x64 - x64.mean(axis=axes, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=axes, keepdims=True) + 1e-5)
    if affine:
        expected = expected * np.asarray(op.main.gamma).reshape(shape[-n_axes:]) + \
            np.asarray(op.main.beta).reshape(shape[-n_axes:])
    (y,) = Harness(backend).run(fb.OpType.LayerNorm, op, [x], ["NCHW"], [shape], out_fmt="NCHW")
    assert_close(y, expected)


REDUCE = {0: np.sum, 1: lambda x, **k: np.abs(x).sum(**k), 2: lambda x, **k: np.square(x).sum(**k), 3: np.mean,
          4: np.max, 5: np.min, 6: np.prod}


def reduction_op(kind: int, dims: list[int], keep: bool) -> fb.OpT:
    p = fb.ReductionParamT()
    p.operation, p.dim, p.keepDims = kind, dims, keep
    return make_op(fb.OpType.Reduction, p)


@pytest.mark.parametrize("kind", sorted(REDUCE))
@pytest.mark.parametrize(("shape", "dims", "keep", "fmt"), [((2, 13, 3, 2), [1], True, "NC4HW4"),
                                                            ((2, 3, 4), [0, 2], False, "NCHW"),
                                                            ((5, 7), [], False, "NCHW"),
                                                            ((2, 127, 2, 1), [2, 3], True, "NC4HW4")])
def test_reduction(backend: object, kind: int, shape: tuple, dims: list[int], keep: bool, fmt: str) -> None:
    x = rand(shape, seed=kind, low=0.5, high=1.5)
    axes = tuple(dims) if dims else tuple(range(len(shape)))
    expected = REDUCE[kind](x.astype(np.float64), axis=axes, keepdims=keep)
    (y,) = Harness(backend).run(fb.OpType.Reduction, reduction_op(kind, dims, keep), [x], [fmt], [expected.shape],
                                out_fmt=fmt if keep else "NCHW")
    assert_close(y, expected)


def argmax_op(op_type: int, axis: int) -> fb.OpT:
    p = fb.ArgMaxT()
    p.axis = axis
    return make_op(op_type, p)


@pytest.mark.parametrize(("shape", "axis", "fmt"), [((2, 13, 3, 2), 1, "NC4HW4"), ((4, 7), -1, "NCHW"),
                                                    ((3, 5, 2), 0, "NCHW")])
@pytest.mark.parametrize("op_type", [fb.OpType.ArgMax, fb.OpType.ArgMin])
def test_argmax(backend: object, shape: tuple, axis: int, fmt: str, op_type: int) -> None:
    x = rand(shape, seed=len(shape))
    fn = np.argmax if op_type == fb.OpType.ArgMax else np.argmin
    expected = fn(x, axis=axis).astype(np.int32)
    (y,) = Harness(backend).run(op_type, argmax_op(op_type, axis), [x], [fmt], [expected.shape], out_fmt="NCHW",
                                out_dtype=np.int32)
    np.testing.assert_array_equal(y, expected)
