"""Scale, PReLU, ELU, Selu and Pooling3D (global) on OpenCL vs numpy."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from .helpers import AWKWARD_CHANNELS, Harness, assert_close, make_op, rand


@pytest.mark.parametrize("c", AWKWARD_CHANNELS)
@pytest.mark.parametrize("fmt", ["NC4HW4", "NCHW"])
def test_scale(backend: object, c: int, fmt: str) -> None:
    x = rand((2, c, 3, 2), seed=c)
    p = fb.ScaleT()
    p.scaleData, p.biasData = rand((c,), seed=1).tolist(), rand((c,), seed=2).tolist()
    (y,) = Harness(backend).run(fb.OpType.Scale, make_op(fb.OpType.Scale, p), [x], [fmt], [x.shape], out_fmt=fmt)
    s, b = np.asarray(p.scaleData).reshape(1, c, 1, 1), np.asarray(p.biasData).reshape(1, c, 1, 1)
    assert_close(y, x * s + b)


@pytest.mark.parametrize(("c", "shared"), [(13, False), (3, True), (127, False)])
def test_prelu(backend: object, c: int, shared: bool) -> None:
    x = rand((1, c, 4, 3), seed=c)
    p = fb.PReluT()
    p.slope = rand((1 if shared else c,), seed=3).tolist()
    p.slopeCount = len(p.slope)
    (y,) = Harness(backend).run(fb.OpType.PReLU, make_op(fb.OpType.PReLU, p), [x], ["NC4HW4"], [x.shape])
    slope = np.asarray(p.slope).reshape(1, -1, 1, 1)
    assert_close(y, np.where(x > 0, x, x * slope))


def test_prelu_wrong_slope_count_is_rejected(backend: object) -> None:
    p = fb.PReluT()
    p.slope = [0.1, 0.2]
    h = Harness(backend)
    assert h.create(fb.OpType.PReLU, make_op(fb.OpType.PReLU, p), [h.tensor((1, 3, 2, 2), "NC4HW4")],
                    [h.tensor((1, 3, 2, 2), "NC4HW4")]) is None


def test_elu_selu(backend: object) -> None:
    x = rand((1, 13, 2, 3), seed=4)
    h = Harness(backend)
    elu = fb.ELUT()
    elu.alpha = 0.7
    (y,) = h.run(fb.OpType.ELU, make_op(fb.OpType.ELU, elu), [x], ["NC4HW4"], [x.shape])
    assert_close(y, np.where(x > 0, x, 0.7 * np.expm1(x)))
    selu = fb.SeluT()
    selu.alpha, selu.scale = 1.6732632, 1.0507010
    (y,) = h.run(fb.OpType.Selu, make_op(fb.OpType.Selu, selu), [x], ["NC4HW4"], [x.shape])
    assert_close(y, 1.0507010 * np.where(x > 0, x, 1.6732632 * np.expm1(x)))


def test_pooling3d_global_average(backend: object) -> None:
    x = rand((2, 13, 5, 3), seed=6)
    p = fb.Pool3DT()
    p.isGlobal, p.type = True, 1
    (y,) = Harness(backend).run(fb.OpType.Pooling3D, make_op(fb.OpType.Pooling3D, p), [x], ["NC4HW4"],
                                [(2, 13, 1, 1)])
    assert_close(y, x.mean(axis=(2, 3), keepdims=True))
