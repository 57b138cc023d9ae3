"""End to end: models run through `Interpreter`/`Session` with backend='VULKAN' match the CPU backend.

Also checks pre-inference: a second run creates no pipeline and records no command buffer, and a fully Vulkan
model runs with one queue submit per run; a model with a CPU fallback in the middle still matches.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.io import net_to_bytes
from support.models import net_op, scratch_cnn, scratch_cnn_reference
from support.runners import run_once

import mnnpy as MNN  # noqa: N812 - the MNN spelling scripts use

RNG = np.random.default_rng(5)


def _run(data: bytes, backend: str, x: np.ndarray, runs: int = 1) -> tuple[np.ndarray, Any]:
    interp = MNN.Interpreter(data)
    session = interp.createSession({"backend": backend})
    for _ in range(runs):
        out = run_once(interp, session, x)
    return out, session


def mixed_net(channels: int = 13) -> fb.NetT:
    """x[1,3,6,5] -> conv 3x3 (13 ch) -> CumSum over H (no Vulkan kernel: CPU) -> add to conv -> * const
    -> Softmax over channels."""
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [1, 3, 6, 5], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NC4HW4
    common = fb.Convolution2DCommonT()
    common.kernelX = common.kernelY = 3
    common.padX = common.padY = 1
    common.inputCount, common.outputCount = 3, channels
    conv = fb.Convolution2DT()
    conv.common = common
    conv.weight = RNG.standard_normal(channels * 27).astype(np.float32)
    conv.bias = RNG.standard_normal(channels).astype(np.float32)
    axis_blob = fb.BlobT()
    axis_blob.dims, axis_blob.dataType, axis_blob.dataFormat = [1], fb.DataType.DT_INT32, 0
    axis_blob.int32s = np.array([2], np.int32)
    add = fb.BinaryOpT()
    add.opType = fb.BinaryOpOperation.ADD
    mul = fb.BinaryOpT()
    mul.opType = fb.BinaryOpOperation.MUL
    blob = fb.BlobT()
    blob.dims, blob.dataType, blob.dataFormat = [1, channels, 1, 1], fb.DataType.DT_FLOAT, 0
    blob.float32s = RNG.standard_normal(channels).astype(np.float32)
    axis = fb.AxisT()
    axis.axis = 1
    net = fb.NetT()
    net.tensorName = ["x", "conv", "cumsum", "sum", "scale", "scaled", "y", "axis"]
    net.oplists = [
        net_op(fb.OpType.Input, "x", [], [0], fb.OpParameter.Input, inp),
        net_op(fb.OpType.Convolution, "conv", [0], [1], fb.OpParameter.Convolution2D, conv),
        net_op(fb.OpType.Const, "axis", [], [7], fb.OpParameter.Blob, axis_blob),
        net_op(fb.OpType.CumSum, "cumsum", [1, 7], [2]),
        net_op(fb.OpType.BinaryOp, "sum", [1, 2], [3], fb.OpParameter.BinaryOp, add),
        net_op(fb.OpType.Const, "scale", [], [4], fb.OpParameter.Blob, blob),
        net_op(fb.OpType.BinaryOp, "scaled", [3, 4], [5], fb.OpParameter.BinaryOp, mul),
        net_op(fb.OpType.Softmax, "y", [5], [6], fb.OpParameter.Axis, axis),
    ]
    net.outputName = ["y"]
    net.sourceType = fb.NetSource.ONNX
    return net


def test_cnn_matches_cpu_and_reference(vk_runtime: Any) -> None:
    net, weights = scratch_cnn()
    data = net_to_bytes(net)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    got, session = _run(data, "VULKAN", x)
    want, _ = _run(data, "CPU", x)
    backends = {c["backend"] for c in session.info()["commands"]} if hasattr(session, "info") else {"vulkan"}
    assert backends == {"vulkan"}
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, scratch_cnn_reference(x, weights["w"], weights["b"]), rtol=1e-4, atol=1e-5)


def test_second_run_records_and_creates_nothing(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    net, _ = scratch_cnn(seed=1)
    interp = MNN.Interpreter(net_to_bytes(net))
    session = interp.createSession({"backend": "VULKAN"})
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    first = run_once(interp, session, x)
    before = dict(COUNTERS)
    interp.runSession(session)
    after = dict(COUNTERS)
    for key in ("pipelines_created", "records", "allocations", "descriptor_sets"):
        assert after[key] == before[key], f"second run moved {key}"
    assert after["submits"] == before["submits"] + 1, "a fully Vulkan model runs with one submit"
    np.testing.assert_array_equal(np.array(interp.getSessionOutput(session).getNumpyData()), first)


@pytest.mark.parametrize("channels", [1, 13])
def test_cpu_fallback_in_the_middle(vk_runtime: Any, channels: int) -> None:
    data = net_to_bytes(mixed_net(channels))
    x = RNG.standard_normal((1, 3, 6, 5)).astype(np.float32)
    got, session = _run(data, "VULKAN", x, runs=2)
    want, _ = _run(data, "CPU", x)
    if hasattr(session, "info"):
        backends = [c["backend"] for c in session.info()["commands"]]
        assert "cpu" in backends and "vulkan" in backends
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cpu_fallback_session_resized_to_the_same_shape_records_nothing(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    interp = MNN.Interpreter(net_to_bytes(mixed_net(13)))
    session = interp.createSession({"backend": "VULKAN"})
    x = RNG.standard_normal((1, 3, 6, 5)).astype(np.float32)
    first = run_once(interp, session, x)
    before = dict(COUNTERS)
    interp.resizeSession(session)
    interp.getSessionInput(session).fromNumpy(x)
    interp.runSession(session)
    for key in ("records", "executions_recorded", "pipelines_created", "descriptor_sets", "uploads", "allocations"):
        assert COUNTERS[key] == before[key], f"resize to the same shape + run moved {key}"
    assert COUNTERS["submits"] - before["submits"] == 2, "one submit per Vulkan segment"
    np.testing.assert_array_equal(np.array(interp.getSessionOutput(session).getNumpyData()), first)


def test_many_sessions_do_not_leak_device_memory(vk_runtime: Any) -> None:
    import gc

    from mnnpy.backends.vulkan.memory import DeviceBuffer

    net, _ = scratch_cnn(seed=2)
    data = net_to_bytes(net)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    _run(data, "VULKAN", x)
    gc.collect()
    base = DeviceBuffer.live
    for _ in range(30):
        _run(data, "VULKAN", x)
    gc.collect()
    assert DeviceBuffer.live <= base


def test_resize_session_to_a_new_shape(vk_runtime: Any) -> None:
    net, weights = scratch_cnn(seed=4)
    interp = MNN.Interpreter(net_to_bytes(net))
    session = interp.createSession({"backend": "VULKAN"})
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    interp.getSessionInput(session).fromNumpy(x)
    interp.runSession(session)
    tensor = interp.getSessionInput(session)
    interp.resizeTensor(tensor, (2, 3, 12, 10))
    interp.resizeSession(session)
    x2 = RNG.standard_normal((2, 3, 12, 10)).astype(np.float32)
    got = run_once(interp, session, x2)
    np.testing.assert_allclose(got, scratch_cnn_reference(x2, weights["w"], weights["b"]), rtol=1e-4, atol=1e-5)


def test_on_resize_done_records_in_pre_inference(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    net, weights = scratch_cnn(seed=7)
    interp = MNN.Interpreter(net_to_bytes(net))
    session = interp.createSession({"backend": "VULKAN"})
    session.main.on_resize_done()  # what a schedule with the hook would call after every Execution.on_resize
    before = COUNTERS["records"]
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    interp.getSessionInput(session).fromNumpy(x)
    interp.runSession(session)
    assert COUNTERS["records"] == before, "the run found the command buffer already recorded"
    got = np.array(interp.getSessionOutput(session).getNumpyData())
    np.testing.assert_allclose(got, scratch_cnn_reference(x, weights["w"], weights["b"]), rtol=1e-4, atol=1e-5)


def test_resize_reuses_packed_weights_and_pipelines(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    net, weights = scratch_cnn(seed=6)
    interp = MNN.Interpreter(net_to_bytes(net))
    session = interp.createSession({"backend": "VULKAN"})
    interp.runSession(session)
    before = dict(COUNTERS)
    interp.resizeTensor(interp.getSessionInput(session), (1, 3, 16, 16))
    interp.resizeSession(session)
    x = RNG.standard_normal((1, 3, 16, 16)).astype(np.float32)
    interp.getSessionInput(session).fromNumpy(x)
    interp.runSession(session)
    assert COUNTERS["pipelines_created"] == before["pipelines_created"]
    assert COUNTERS["uploads"] == before["uploads"], "packed weights are kept"
    # new: the bigger arena and the own buffers of the grown session input and output (kept while they fit)
    assert COUNTERS["allocations"] - before["allocations"] <= 3
    got = np.array(interp.getSessionOutput(session).getNumpyData())
    np.testing.assert_allclose(got, scratch_cnn_reference(x, weights["w"], weights["b"]), rtol=1e-4, atol=1e-5)
