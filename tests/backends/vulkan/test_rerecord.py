"""Resizing a Vulkan session re-records only what changed (backends/vulkan/recording.py), proven with counters:
a new shape for one input re-records the executions of its branch and the primary, not the other branch; a resize
to the same shapes records nothing and creates nothing; a second run records nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.io import net_to_bytes
from support.models import net_op

import mnnpy as MNN  # noqa: N812 - the MNN spelling scripts use
from mnnpy.core.session import COUNTERS as SESSION_COUNTERS

RNG = np.random.default_rng(31)
WATCHED = ("records", "executions_recorded", "pipelines_created", "descriptor_sets", "uploads", "allocations")


def two_branch_net() -> bytes:
    """a [1,8,6,6] -> conv 3x3 -> softmax -> ya;  b [1,8,10,10] -> conv 3x3 -> softmax -> yb (a's branch first)."""
    ops = []
    for k, (name, hw) in enumerate((("a", 6), ("b", 10))):
        inp = fb.InputT()
        inp.dims, inp.dtype, inp.dformat = [1, 8, hw, hw], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NC4HW4
        ops.append(net_op(fb.OpType.Input, name, [], [k], fb.OpParameter.Input, inp))
    for k, name in enumerate("ab"):
        common = fb.Convolution2DCommonT()
        common.kernelX = common.kernelY = 3
        common.padX = common.padY = 1
        common.inputCount, common.outputCount = 8, 8
        conv = fb.Convolution2DT()
        conv.common = common
        conv.weight = (RNG.standard_normal(8 * 8 * 9) * 0.2).astype(np.float32)
        conv.bias = RNG.standard_normal(8).astype(np.float32)
        axis = fb.AxisT()
        axis.axis = 1
        ops.append(net_op(fb.OpType.Convolution, f"conv_{name}", [k], [2 + k], fb.OpParameter.Convolution2D, conv))
        ops.append(net_op(fb.OpType.Softmax, f"y{name}", [2 + k], [4 + k], fb.OpParameter.Axis, axis))
    net = fb.NetT()
    net.tensorName = ["a", "b", "ta", "tb", "ya", "yb"]
    net.oplists = ops
    net.outputName = ["ya", "yb"]
    net.sourceType = fb.NetSource.ONNX
    return net_to_bytes(net)


def _run(interp: Any, session: Any, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(sum(map(sum, shapes.values())))
    for name, shape in shapes.items():
        interp.getSessionInput(session, name).fromNumpy(rng.standard_normal(shape).astype(np.float32))
    interp.runSession(session)
    return {n: np.array(interp.getSessionOutput(session, n).getNumpyData()) for n in ("ya", "yb")}


def _delta(before: dict[str, int]) -> dict[str, int]:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    return {k: COUNTERS[k] - before[k] for k in WATCHED}


def test_resize_rerecords_only_what_changed(vk_runtime: Any) -> None:
    from mnnpy.backends.vulkan.runtime import COUNTERS

    data = two_branch_net()
    interp = MNN.Interpreter(data)
    session = interp.createSession({"backend": "VULKAN"})
    cpu_interp = MNN.Interpreter(data)
    cpu = cpu_interp.createSession({"backend": "CPU"})
    vk_cmds = [c for c in session.info()["commands"] if c["backend"] == "vulkan"]
    assert len(vk_cmds) == 4, vk_cmds
    shapes = {"a": (1, 8, 6, 6), "b": (1, 8, 10, 10)}
    _run(interp, session, shapes)

    before = dict(COUNTERS)
    got = _run(interp, session, shapes)
    assert _delta(before) == dict.fromkeys(WATCHED, 0), "a second run records and creates nothing"

    # b gets a new (smaller) shape: only conv_b and yb are re-recorded, plus the primary that runs them all
    shapes["b"] = (1, 8, 7, 9)
    interp.resizeTensor(interp.getSessionInput(session, "b"), shapes["b"])
    before = dict(COUNTERS)
    interp.resizeSession(session)
    delta = _delta(before)
    assert delta["executions_recorded"] == 2 and delta["records"] == 1, delta
    assert delta["pipelines_created"] == 0 and delta["uploads"] == 0, delta
    assert delta["descriptor_sets"] == 2, "only the re-recorded dispatches get new descriptor sets"
    before = dict(COUNTERS)
    got = _run(interp, session, shapes)
    assert _delta(before) == dict.fromkeys(WATCHED, 0), "the resize recorded everything the run needs"
    cpu_interp.resizeTensor(cpu_interp.getSessionInput(cpu, "b"), shapes["b"])
    cpu_interp.resizeSession(cpu)
    want = _run(cpu_interp, cpu, shapes)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5)

    # the same shapes again: the core really re-plans, and the backend records and creates nothing
    resizes = SESSION_COUNTERS["resizes"]
    before = dict(COUNTERS)
    interp.resizeSession(session)
    assert SESSION_COUNTERS["resizes"] == resizes + 1
    assert _delta(before) == dict.fromkeys(WATCHED, 0), "a resize to the same shapes re-records nothing"
    got = _run(interp, session, shapes)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5)


def test_bigger_arena_rerecords_everything_bound_to_it(vk_runtime: Any) -> None:
    """Growing the arena moves every intermediate tensor: all executions bound to it are re-recorded (correctly)."""
    from mnnpy.backends.vulkan.runtime import COUNTERS

    data = two_branch_net()
    interp = MNN.Interpreter(data)
    session = interp.createSession({"backend": "VULKAN"})
    shapes = {"a": (1, 8, 6, 6), "b": (2, 8, 16, 16)}
    interp.resizeTensor(interp.getSessionInput(session, "b"), shapes["b"])
    before = dict(COUNTERS)
    interp.resizeSession(session)
    assert _delta(before)["executions_recorded"] == 4
    cpu_interp = MNN.Interpreter(data)
    cpu = cpu_interp.createSession({"backend": "CPU"})
    cpu_interp.resizeTensor(cpu_interp.getSessionInput(cpu, "b"), shapes["b"])
    cpu_interp.resizeSession(cpu)
    got, want = _run(interp, session, shapes), _run(cpu_interp, cpu, shapes)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5)
