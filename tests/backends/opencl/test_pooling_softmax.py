"""Pooling (max / average / global, pad modes) and Softmax on OpenCL vs numpy."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from .helpers import AWKWARD_CHANNELS, Harness, assert_close, make_op, rand


def reference_pool(x: np.ndarray, k: tuple[int, int], s: tuple[int, int], pads: tuple[int, int, int, int],
                   out_hw: tuple[int, int], kind: str, include_pad: bool) -> np.ndarray:
    """Caffe-style windows: clipped to the padded input for the divisor, to the input for the values."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, *out_hw))
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            hs, ws = oy * s[0] - pads[0], ox * s[1] - pads[1]
            he, we = min(hs + k[0], h + pads[2]), min(ws + k[1], w + pads[3])
            area = (he - hs) * (we - ws)
            win = x[:, :, max(hs, 0):min(he, h), max(ws, 0):min(we, w)]
            if kind == "max":
                out[:, :, oy, ox] = win.max(axis=(2, 3))
            else:
                out[:, :, oy, ox] = win.sum(axis=(2, 3)) / (area if include_pad else win.shape[2] * win.shape[3])
    return out


def pool_op(kind: str, k: tuple[int, int] = (2, 2), s: tuple[int, int] = (2, 2), pads: tuple[int, ...] = (0, 0, 0, 0),
            pad_type: int = 0, count: int = 0, is_global: bool = False) -> fb.OpT:
    p = fb.PoolT()
    p.type = 0 if kind == "max" else 1
    p.kernelY, p.kernelX = k
    p.strideY, p.strideX = s
    p.pads, p.padType, p.countType, p.isGlobal = list(pads), pad_type, count, is_global
    return make_op(fb.OpType.Pooling, p)


@pytest.mark.parametrize("c", AWKWARD_CHANNELS)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_3x3_s2_padded(backend: object, c: int, kind: str) -> None:
    x = rand((2, c, 7, 6), seed=c)
    pads = (1, 1, 1, 1)
    out_hw = (4, 3)
    (y,) = Harness(backend).run(fb.OpType.Pooling, pool_op(kind, (3, 3), (2, 2), pads, count=1), [x], ["NC4HW4"],
                                [(2, c, *out_hw)])
    assert_close(y, reference_pool(x, (3, 3), (2, 2), pads, out_hw, kind, include_pad=True))


@pytest.mark.parametrize("count", [0, 2])
def test_avg_default_excludes_padding(backend: object, count: int) -> None:
    x = rand((1, 5, 5, 5), seed=1)
    pads = (1, 1, 1, 1)
    op = pool_op("avg", (3, 3), (2, 2), pads, count=count)
    (y,) = Harness(backend).run(fb.OpType.Pooling, op, [x], ["NC4HW4"], [(1, 5, 3, 3)])
    assert_close(y, reference_pool(x, (3, 3), (2, 2), pads, (3, 3), "avg", include_pad=False))


def test_same_padding_excludes_pad(backend: object) -> None:
    x = rand((1, 3, 5, 4), seed=2)
    op = pool_op("avg", (3, 3), (2, 2), pad_type=2)
    # SAME: out 3 x 2, pads total (2, 1) -> (1, 0, 1, 1)
    (y,) = Harness(backend).run(fb.OpType.Pooling, op, [x], ["NC4HW4"], [(1, 3, 3, 2)])
    assert_close(y, reference_pool(x, (3, 3), (2, 2), (1, 0, 1, 1), (3, 2), "avg", include_pad=False))


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_global_pool(backend: object, kind: str) -> None:
    x = rand((2, 13, 4, 3), seed=7)
    (y,) = Harness(backend).run(fb.OpType.Pooling, pool_op(kind, is_global=True), [x], ["NC4HW4"], [(2, 13, 1, 1)])
    expected = x.max(axis=(2, 3), keepdims=True) if kind == "max" else x.mean(axis=(2, 3), keepdims=True)
    assert_close(y, expected)


def softmax_ref(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(("shape", "axis", "fmt"), [
    ((2, 13, 3, 2), 1, "NC4HW4"), ((2, 127, 1, 1), 1, "NC4HW4"), ((3, 7), -1, "NCHW"), ((2, 3, 5), 1, "NCHW"),
    ((4, 1, 6), 0, "NCHW"), ((1, 3, 2, 5), 3, "NC4HW4"),
])
def test_softmax(backend: object, shape: tuple, axis: int, fmt: str) -> None:
    x = rand(shape, seed=len(shape), low=-5, high=5)
    axis_t = fb.AxisT()
    axis_t.axis = axis
    (y,) = Harness(backend).run(fb.OpType.Softmax, make_op(fb.OpType.Softmax, axis_t), [x], [fmt], [shape],
                                out_fmt=fmt)
    assert_close(y, softmax_ref(x, axis))
