"""Vulkan Winograd F(2x2, 3x3) convolution: matches the CPU backend (and numpy) at 1e-4 on awkward shapes, is chosen
by its rule for 3x3 stride-1 convolutions with enough channels (algorithm and dispatches in session.info()), and
its transformed weights are uploaded once per op (kept across resizes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.io import net_to_bytes
from support.models import net_op
from support.runners import run_once

import mnnpy as MNN  # noqa: N812 - the MNN spelling scripts use
from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(23)
WINOGRAD_CASES = [  # (n, ic, oc, h, w, pads (top, left, bottom, right), act)
    (1, 33, 37, 7, 5, (1, 1, 1, 1), "none"),   # odd H/W, channels not multiples of 4, edge tiles on both axes
    (2, 29, 45, 6, 9, (0, 1, 1, 0), "relu"),   # batch 2, asymmetric padding
    (1, 40, 26, 1, 3, (1, 1, 1, 1), "relu6"),  # a single row
    (1, 64, 64, 13, 11, (0, 0, 0, 0), "none"), # no padding: output smaller than the input
]


@pytest.mark.parametrize("case", WINOGRAD_CASES, ids=[f"{c[1]}x{c[2]}_{c[3]}x{c[4]}" for c in WINOGRAD_CASES])
def test_winograd_matches_cpu_backend(run_op: Any, run_cpu: Any, make_conv: Any, conv_ref: Any, case: tuple) -> None:
    n, ic, oc, h, w, pads, act = case
    x = RNG.standard_normal((n, ic, h, w)).astype(np.float32)
    wt = (RNG.standard_normal((oc, ic, 3, 3)) * 0.2).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    op = make_conv(wt, b, pads, act)
    want = conv_ref(x, wt, b, (1, 1), pads, (1, 1), 1)
    want = np.maximum(want, 0) if act == "relu" else np.clip(want, 0, 6) if act == "relu6" else want
    desc = TensorDesc(want.shape, np.float32, "NC4HW4")
    runner = run_op(fb.OpType.Convolution, op, [(x, "NC4HW4")], [desc])
    assert runner.execution.algorithm == "winograd"
    assert [d.split(" ")[0] for d in runner.execution.info()["dispatches"]] == [
        "winograd_input", "winograd_gemm", "winograd_output"]
    (got,) = runner.run()
    (cpu,) = run_cpu(fb.OpType.Convolution, op, [(x, "NC4HW4")], [desc]).run()
    np.testing.assert_allclose(got, cpu, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("ic", "oc", "stride", "algo"), [(33, 37, 1, "winograd"), (33, 37, 2, "direct"),
                                                         (16, 16, 1, "direct"), (4, 300, 1, "direct")])
def test_winograd_rule(run_op: Any, make_conv: Any, conv_ref: Any, ic: int, oc: int, stride: int, algo: str) -> None:
    """3x3 stride 1 with IC x OC >= 1024 and both >= 8 (ops/winograd.py); the others run the direct shader."""
    x = RNG.standard_normal((1, ic, 6, 6)).astype(np.float32)
    wt = (RNG.standard_normal((oc, ic, 3, 3)) * 0.2).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    want = conv_ref(x, wt, b, (stride, stride), (1, 1, 1, 1), (1, 1), 1)
    runner = run_op(fb.OpType.Convolution, make_conv(wt, b, (1, 1, 1, 1), stride=stride), [(x, "NC4HW4")],
                    [TensorDesc(want.shape, np.float32, "NC4HW4")])
    assert runner.execution.algorithm == algo
    (got,) = runner.run()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def winograd_net(ic: int = 20, oc: int = 52) -> tuple[bytes, np.ndarray, np.ndarray]:
    """x [1, ic, 9, 7] -> Convolution 3x3 pad 1 + ReLU (Winograd) -> y; returns the model, weights and bias."""
    w = (RNG.standard_normal((oc, ic, 3, 3)) * 0.2).astype(np.float32)
    b = RNG.standard_normal(oc).astype(np.float32)
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [1, ic, 9, 7], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NC4HW4
    common = fb.Convolution2DCommonT()
    common.kernelX = common.kernelY = 3
    common.padX = common.padY = 1
    common.inputCount, common.outputCount, common.relu = ic, oc, True
    conv = fb.Convolution2DT()
    conv.common, conv.weight, conv.bias = common, w.ravel(), b
    net = fb.NetT()
    net.tensorName = ["x", "y"]
    net.oplists = [net_op(fb.OpType.Input, "x", [], [0], fb.OpParameter.Input, inp),
                   net_op(fb.OpType.Convolution, "conv", [0], [1], fb.OpParameter.Convolution2D, conv)]
    net.outputName = ["y"]
    net.sourceType = fb.NetSource.ONNX
    return net_to_bytes(net), w, b


def test_session_reports_winograd_and_uploads_weights_once(vk_runtime: Any, conv_ref: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    data, w, b = winograd_net()
    interp = MNN.Interpreter(data)
    session = interp.createSession({"backend": "VULKAN"})
    (conv,) = [c for c in session.info()["commands"] if c["name"] == "conv"]
    assert conv["backend"] == "vulkan" and conv["algorithm"] == "winograd"
    assert [d.split(" ")[0] for d in conv["dispatches"]] == ["winograd_input", "winograd_gemm", "winograd_output"]
    for shape in ((1, 20, 9, 7), (2, 20, 5, 12)):
        interp.resizeTensor(interp.getSessionInput(session), shape)
        before = COUNTERS["uploads"]
        interp.resizeSession(session)
        assert COUNTERS["uploads"] == before, "transformed weights are kept across resizes"
        x = RNG.standard_normal(shape).astype(np.float32)
        got = run_once(interp, session, x)
        want = np.maximum(conv_ref(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1), 0)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
