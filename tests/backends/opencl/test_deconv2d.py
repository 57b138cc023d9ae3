"""Deconvolution / DeconvolutionDepthwise on OpenCL vs a direct (scatter) numpy transposed convolution."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from support.references import deconv2d_full

from .helpers import Harness, assert_close, conv_op, rand


def deconv_op(op_type: int, ic: int, oc: int, k: tuple[int, int], stride: tuple[int, int],
              pads: tuple[int, int, int, int], dilation: tuple[int, int] = (1, 1), group: int = 1,
              relu: bool = False, pad_mode: int = 0) -> fb.OpT:
    return conv_op(op_type, ic, oc, k, stride, pads, dilation, group, relu=relu, pad_mode=pad_mode, seed=ic * 7 + oc)


def reference_deconv(x: np.ndarray, op: fb.OpT, group: int, pads: tuple[int, int, int, int]) -> np.ndarray:
    """The op's transposed convolution (float64), cropped by pads (top, left, bottom, right)."""
    c = op.main.common
    weight = np.asarray(op.main.weight).reshape(x.shape[1], c.outputCount // group, c.kernelY, c.kernelX)
    full = deconv2d_full(x, weight, np.asarray(op.main.bias), (c.strideY, c.strideX), (c.dilateY, c.dilateX), group)
    pt, pl, pb, pr = pads
    return full[:, :, pt:full.shape[2] - pb, pl:full.shape[3] - pr]


@pytest.mark.parametrize(("ic", "oc", "k", "stride", "pads", "dilation", "group"), [
    (3, 13, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    (13, 3, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (1, 5, (3, 2), (1, 2), (0, 1, 0, 1), (1, 1), 1),
    (6, 4, (3, 3), (2, 1), (1, 0, 1, 0), (2, 1), 2),
    (127, 3, (4, 4), (2, 2), (1, 1, 1, 1), (1, 1), 1),
])
def test_deconv(backend: object, ic: int, oc: int, k: tuple, stride: tuple, pads: tuple, dilation: tuple,
                group: int) -> None:
    x = rand((2, ic, 3, 4), seed=ic)
    op = deconv_op(fb.OpType.Deconvolution, ic, oc, k, stride, pads, dilation, group)
    expected = reference_deconv(x, op, group, pads)
    (y,) = Harness(backend).run(op.type, op, [x], ["NC4HW4"], [expected.shape])
    assert_close(y, expected)


@pytest.mark.parametrize("c", [1, 3, 13])
def test_deconv_depthwise_relu(backend: object, c: int) -> None:
    x = rand((1, c, 4, 3), seed=c)
    op = deconv_op(fb.OpType.DeconvolutionDepthwise, c, c, (3, 3), (2, 2), (1, 1, 1, 1), group=c, relu=True)
    expected = np.maximum(reference_deconv(x, op, c, (1, 1, 1, 1)), 0)
    (y,) = Harness(backend).run(op.type, op, [x], ["NC4HW4"], [expected.shape])
    assert_close(y, expected)

