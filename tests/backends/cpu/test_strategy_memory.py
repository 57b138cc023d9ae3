"""Issue 12: Winograd's tile choice weighs memory (transformed weights + intermediates), a budget picks smaller
tiles, and the session reports the chosen algorithm with its footprint per op."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.backends.cpu.compute.conv import conv2d_params
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from support.models import make_conv

from mnnpy.core.strategy import WINOGRAD_MEMORY_COST, plan_conv2d, winograd_memory

from .compute.helpers import assert_close, reference_conv, run_kernel

CONV = 12


def _plan(ic: int, oc: int, hw: int, limit: int | None = None, threads: int = 1, group: int = 1) -> Any:
    params = conv2d_params(make_conv(ic, oc, (3, 3), pads=(1, 1, 1, 1), group=group), CONV, (1, ic, hw, hw))
    return plan_conv2d(params, (1, ic, hw, hw), threads=threads, memory_limit=limit)


def test_weight_expansion_ratios() -> None:
    # transformed weights are alpha² / k² times the 3x3 weights: 1.78x, 4x, 7.1x (the 7.12x for F(6,3))
    base = 4 * 9 * 64 * 64
    got = {u: winograd_memory(64, 64, (1, 64, 56, 56), (56, 56), 3, u).weights / base for u in (2, 4, 6)}
    assert got == pytest.approx({2: 16 / 9, 4: 36 / 9, 6: 64 / 9})


def test_memory_term_is_in_the_cost() -> None:
    plan = _plan(256, 256, 28)
    for u in (2, 4):
        time_cost = plan.costs[f"winograd:{u}:time"] + 25.0 * (u + 2) ** 2 * 256 * 256
        assert plan.costs[f"winograd:{u}"] == pytest.approx(time_cost + WINOGRAD_MEMORY_COST
                                                            * plan.costs[f"winograd:{u}:bytes"])
    assert plan.memory_bytes == plan.costs[f"winograd:{plan.unit}:bytes"]


@pytest.mark.parametrize(("hw", "unit", "smaller"), [(28, 4, 2), (56, 4, 2)])  # 256ch 56²: F(4,3) 11.2 ms < F(6,3) 13.8
def test_tight_budget_picks_a_smaller_tile(hw: int, unit: int, smaller: int) -> None:
    free = _plan(256, 256, hw)
    assert (free.algorithm, free.unit) == ("winograd", unit)
    small, large = free.costs[f"winograd:{smaller}:bytes"], free.costs[f"winograd:{unit}:bytes"]
    assert small < large  # deep layer: the weight expansion dominates the footprint
    tight = _plan(256, 256, hw, limit=int((small + large) / 2))
    assert (tight.algorithm, tight.unit) == ("winograd", smaller)
    assert tight.memory_bytes <= tight.costs["memory_limit"] and "budget" in tight.reason
    none_fits = _plan(256, 256, hw, limit=int(min(free.costs[f"winograd:{u}:bytes"] for u in (2, 4, 6))) - 1)
    assert none_fits.algorithm == "im2col" and "budget" in none_fits.reason


@pytest.mark.parametrize("case", [(64, 64, 30, 1, 1), (256, 256, 14, 2, 1), (24, 40, 17, 1, 4), (32, 32, 64, 2, 1)])
def test_estimate_is_what_the_kernel_holds(case: tuple[int, ...]) -> None:
    ic, oc, hw, threads, group = case
    conv = make_conv(ic, oc, (3, 3), pads=(1, 1, 1, 1), group=group, seed=3)
    x = np.random.default_rng(4).standard_normal((1, ic, hw, hw)).astype(np.float32)
    plan = _plan(ic, oc, hw, threads=threads, group=group)
    got, kernel = run_kernel(conv, CONV, x, force=f"winograd:{plan.unit or 2}", threads=threads)
    assert kernel.memory_bytes == kernel.plan.memory_bytes, (kernel.memory_bytes, kernel.plan.memory_bytes)
    assert_close(got, reference_conv(x.astype(np.float64), conv, conv2d_params(conv, CONV, x.shape)))


def _conv_model(c: int = 256, hw: int = 20) -> Any:
    rng = np.random.default_rng(7)
    w = nh.from_array((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), "w")
    b = nh.from_array(rng.standard_normal(c).astype(np.float32), "b")
    graph = h.make_graph([h.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], "m",
                         [h.make_tensor_value_info("x", T.FLOAT, [1, c, hw, hw])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], [w, b])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])


def test_session_reports_tile_and_memory_and_budget_applies(e2e: Any) -> None:
    import mnnpy as MNN  # noqa: N812

    model = _conv_model()
    path = e2e.convert(model)
    x = np.random.default_rng(8).standard_normal((1, 256, 20, 20)).astype(np.float32)
    want = e2e.ort(model, {"x": x})["y"]
    units = {}
    for limit in (None, "tight"):
        interp = MNN.Interpreter(str(path))
        config: dict[str, Any] = {"numThread": 1}
        if limit == "tight":
            config["winogradMemoryLimit"] = int(units[None][1]["winograd:2:bytes"]) + 1
        session = interp.createSession(config)
        conv = next(c for c in session.info()["commands"] if c["type"] == "Convolution")
        assert conv["algorithm"] == "winograd"
        assert conv["memory_bytes"] == conv["memory_estimate"] == conv["costs"][f"winograd:{conv['unit']}:bytes"]
        units[limit] = (conv["unit"], conv["costs"])
        interp.getSessionInput(session).copyFrom(x)
        interp.runSession(session)
        got = interp.getSessionOutput(session).getNumpyData()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert units[None][0] > 2 and units["tight"][0] == 2, units
