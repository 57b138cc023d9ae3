"""Convolution / ConvolutionDepthwise on OpenCL vs a direct numpy convolution (awkward channel counts)."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from support.references import conv2d as reference_conv

from .helpers import Harness, assert_close, conv_op, rand


def run_conv(backend: object, op: fb.OpT, x: np.ndarray, pads: tuple[int, int, int, int]) -> None:
    c = op.main.common
    group = x.shape[1] if op.type == fb.OpType.ConvolutionDepthwise else c.group
    weight = np.asarray(op.main.weight).reshape(c.outputCount, x.shape[1] // group, c.kernelY, c.kernelX)
    expected = reference_conv(x, weight, np.asarray(op.main.bias), (c.strideY, c.strideX), pads,
                              (c.dilateY, c.dilateX), group)
    if c.relu:
        expected = np.maximum(expected, 0)
    if c.relu6:
        expected = np.clip(expected, 0, 6)
    (y,) = Harness(backend).run(op.type, op, [x], ["NC4HW4"], [expected.shape])
    assert_close(y, expected)


@pytest.mark.parametrize(("ic", "oc"), [(1, 3), (3, 13), (13, 1), (127, 5), (4, 8)])
def test_conv_1x1(backend: object, ic: int, oc: int) -> None:
    x = rand((2, ic, 3, 5), seed=ic)
    run_conv(backend, conv_op(fb.OpType.Convolution, ic, oc, (1, 1), seed=oc), x, (0, 0, 0, 0))


@pytest.mark.parametrize(("ic", "oc", "k", "stride", "pads", "dilation"), [
    (3, 13, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    (13, 3, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    (1, 7, (5, 3), (1, 2), (2, 1, 0, 1), (1, 1)),
    (5, 6, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    (127, 4, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),
])
def test_conv_general(backend: object, ic: int, oc: int, k: tuple[int, int], stride: tuple[int, int],
                      pads: tuple[int, int, int, int], dilation: tuple[int, int]) -> None:
    x = rand((1, ic, 7, 9), seed=ic + oc)
    op = conv_op(fb.OpType.Convolution, ic, oc, k, stride, pads, dilation, relu=ic == 3)
    run_conv(backend, op, x, pads)


@pytest.mark.parametrize("c", [1, 3, 13, 127])
def test_depthwise(backend: object, c: int) -> None:
    x = rand((2, c, 6, 5), seed=c)
    pads = (1, 1, 1, 1)
    op = conv_op(fb.OpType.ConvolutionDepthwise, c, c, (3, 3), (1, 1), pads, group=c, relu6=True, seed=c)
    run_conv(backend, op, x, pads)


def test_depthwise_strided(backend: object) -> None:
    x = rand((1, 13, 9, 8), seed=5)
    pads = (0, 1, 1, 0)
    op = conv_op(fb.OpType.ConvolutionDepthwise, 13, 13, (3, 3), (2, 2), pads, group=13)
    run_conv(backend, op, x, pads)


def test_grouped(backend: object) -> None:
    x = rand((1, 6, 5, 5), seed=9)
    op = conv_op(fb.OpType.Convolution, 6, 9, (3, 3), (1, 1), (1, 1, 1, 1), group=3)
    run_conv(backend, op, x, (1, 1, 1, 1))


def test_same_padding(backend: object) -> None:
    x = rand((1, 3, 7, 6), seed=2)
    op = conv_op(fb.OpType.Convolution, 3, 5, (3, 3), (2, 2), pad_mode=2)
    # SAME, stride 2: output ceil(7/2) x ceil(6/2) = 4 x 3; total pads 2 (h) and 1 (w)
    run_conv(backend, op, x, (1, 0, 1, 1))


@pytest.mark.parametrize("op_type", [fb.OpType.Convolution, fb.OpType.Deconvolution])
def test_weight_quantized_files_run_on_device(backend: object, op_type: int) -> None:
    """IDSTQuan weights (``--weightQuantBits``) are decoded once by the core in encode and run on the device; the
    reference uses the same decoded weights, so the tolerance is fp32's."""
    from mnnpy.converter.quantize import quantize_conv

    from mnnpy.core.idst import dequantize_idst

    op = conv_op(fb.OpType.Convolution, 5, 6, (3, 3), (1, 1), (1, 1, 1, 1), seed=4)
    if op_type == fb.OpType.Deconvolution:  # same (oc=6, ic=5) block read as a (ic=6, oc=5) transposed weight
        op.type, op.main.common.outputCount, op.main.bias = op_type, 5, op.main.bias[:5]
    assert quantize_conv(op.main, 6) and op.main.weight is None
    c = op.main.common
    x = rand((1, 6 if op_type == fb.OpType.Deconvolution else 5, 5, 4), seed=3)
    decoded = dequantize_idst(op.main.quanParameter, c.outputCount, 6 * 5 * 9).reshape(6, 5, 3, 3)
    if op_type == fb.OpType.Deconvolution:
        # transposed conv = conv of the zero-stuffed input with the flipped, (oc, ic)-swapped kernel; stride 1
        weight = decoded.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
        expected = reference_conv(x, np.ascontiguousarray(weight), np.asarray(op.main.bias), (1, 1), (1, 1, 1, 1),
                                  (1, 1), 1)
    else:
        expected = reference_conv(x, decoded, np.asarray(op.main.bias), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert c.outputCount == expected.shape[1]
    (y,) = Harness(backend).run(op.type, op, [x], ["NC4HW4"], [expected.shape])
    assert_close(y, expected)


WINOGRAD_CASES = [(3, 13, (5, 7), (1, 1, 1, 1), 2), (13, 3, (4, 4), (0, 0, 0, 0), 1), (127, 5, (3, 6), (1, 2, 1, 0), 1),
                  (1, 1, (2, 3), (2, 2, 2, 2), 1)]


@pytest.mark.parametrize(("ic", "oc", "hw", "pads", "n"), WINOGRAD_CASES)
def test_winograd_forced(runtime: object, ic: int, oc: int, hw: tuple, pads: tuple, n: int) -> None:
    backend = runtime.create_backend({"convAlgorithm": "winograd", "tuning": "none"})
    x = rand((n, ic, *hw), seed=ic)
    op = conv_op(fb.OpType.Convolution, ic, oc, (3, 3), (1, 1), pads, relu6=ic == 13, seed=oc)
    run_conv(backend, op, x, pads)


def test_winograd_chosen_by_cost_and_direct_forced(runtime: object) -> None:
    op = conv_op(fb.OpType.Convolution, 64, 64, (3, 3), (1, 1), (1, 1, 1, 1))
    x = rand((1, 64, 6, 6), seed=1)
    for config, algorithm in (({}, "winograd2x2"), ({"convAlgorithm": "direct"}, "direct"),
                              ({"convAlgorithm": {"other": "direct"}}, "winograd2x2")):
        h = Harness(runtime.create_backend({**config, "tuning": "none"}))
        ins, outs = [h.tensor(x.shape, "NC4HW4")], [h.tensor((1, 64, 6, 6), "NC4HW4")]
        execution = h.create(op.type, op, ins, outs)
        h.resize([execution], ins, outs)
        assert execution.algorithm == algorithm, config
