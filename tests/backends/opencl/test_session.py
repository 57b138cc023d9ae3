"""End to end through `Interpreter`/`Session` with backend='OPENCL': results match numpy / onnxruntime, every
command runs on OpenCL where it can, a second run builds and tunes nothing, a cache file skips both, and an op the
backend cannot run falls back to the CPU with copies around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.backends.opencl.runtime import OpenCLRuntime
from mnnpy.schema.io import net_to_bytes
from support.models import attention_nodes, scratch_cnn, scratch_cnn_reference
from support.runners import run_once

import mnnpy as MNN  # noqa: N812 - as official scripts do
from mnnpy.core import registry


def _session(data: bytes | str, config: dict[str, Any]) -> tuple[Any, Any]:
    interp = MNN.Interpreter(data)
    return interp, interp.createSession(config)


def test_scratch_cnn_all_on_opencl_and_second_run_is_launch_only() -> None:
    net, weights = scratch_cnn()
    interp, session = _session(net_to_bytes(net), {"backend": "OPENCL", "tuning": "fast"})
    assert session.main.name == "opencl"
    backends = {c["backend"] for c in session.info()["commands"]}
    assert backends == {"opencl"}, session.info()["commands"]
    conv = session.info()["commands"][0]
    assert conv["algorithm"] == "direct" and conv["launches"][0]["kernel"] == "conv2d"
    runtime = session.main.runtime
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    y = run_once(interp, session, x)
    np.testing.assert_allclose(y, scratch_cnn_reference(x, **weights), rtol=1e-4, atol=1e-5)
    before = dict(runtime.counters)
    y2 = run_once(interp, session, x * 2)
    after = dict(runtime.counters)
    assert (after["builds"], after["tunes"], after["binary_loads"]) == (
        before["builds"], before["tunes"], before["binary_loads"])
    assert after["enqueues"] - before["enqueues"] == len(session.commands)
    np.testing.assert_allclose(y2, scratch_cnn_reference(x * 2, **weights), rtol=1e-4, atol=1e-5)


def test_cache_file_through_session_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    net, _ = scratch_cnn(seed=3)
    path = str(tmp_path / "cl.cache")
    _interp, session = _session(net_to_bytes(net), {"backend": "OPENCL", "cacheFile": path})
    assert session.main.update_cache()
    fresh = OpenCLRuntime()
    monkeypatch.setitem(registry._RUNTIMES, "opencl", fresh)
    _interp, session = _session(net_to_bytes(net), {"backend": "OPENCL", "cacheFile": path, "tuning": "fast"})
    assert session.main.runtime is fresh
    assert fresh.counters["builds"] == 0 and fresh.counters["tunes"] == 0 and fresh.counters["binary_loads"] > 0


def test_unavailable_opencl_falls_back_to_backup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenCLRuntime, "_probe", (None, "opencl: no platform (install pocl?)"))
    monkeypatch.delitem(registry._RUNTIMES, "opencl", raising=False)
    net, _weights = scratch_cnn()
    _interp, session = _session(net_to_bytes(net), {"backend": "OPENCL", "backupType": "CPU"})
    assert session.main.name == "cpu"


def _onnx_cnn() -> Any:
    """conv 1x1 -> ReLU6 (Clip) -> depthwise 3x3 -> conv 1x1 -> +x -> conv 3x3 s2 -> AveragePool -> Resize ->
    Concat -> Softmax(axis 1) -> Sigmoid -> ConvTranspose -> CumSum (no OpenCL kernel: runs on the CPU)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    c, e = 13, 20

    def w(name: str, *shape: int) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["e1"]),
        helper.make_node("Clip", ["e1", "lo", "hi"], ["e2"]),
        helper.make_node("Conv", ["e2", "wd", "bd"], ["d1"], group=e, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d1", "w2", "b2"], ["p1"]),
        helper.make_node("Add", ["p1", "x"], ["r"]),
        helper.make_node("Conv", ["r", "ws", "bs"], ["s"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["s"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["ap", "", "sc"], ["up"], mode="nearest"),
        helper.make_node("Concat", ["up", "up"], ["cat"], axis=1),
        helper.make_node("Softmax", ["cat"], ["sm"], axis=1),
        helper.make_node("Sigmoid", ["sm"], ["sg"]),
        helper.make_node("ConvTranspose", ["sg", "wt"], ["ct"], strides=[2, 2]),
        helper.make_node("CumSum", ["ct", "axis"], ["y"]),
    ]
    inits = [w("w1", e, c, 1, 1), w("b1", e), w("wd", e, 1, 3, 3), w("bd", e), w("w2", c, e, 1, 1), w("b2", c),
             w("ws", 3, c, 3, 3), w("bs", 3), w("wt", 6, 2, 2, 2),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(1, np.int64), "axis"),
             numpy_helper.from_array(np.array(6, np.float32), "hi"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 11, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _onnx_attention(d: int = 16, heads: int = 2, seq: int = 5) -> Any:
    """Q/K/V projections, head split (Reshape/Transpose), scaled QK^T, Softmax, PV, merge, output projection."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)

    def w(name: str, *shape: int) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    hd = d // heads
    nodes = attention_nodes()
    inits = [w(f"w{n}", d, d) for n in "qkvo"]
    inits += [numpy_helper.from_array(np.array([0, 0, heads, hd], np.int64), "hs"),
              numpy_helper.from_array(np.array([0, 0, d], np.int64), "ms"),
              numpy_helper.from_array(np.array(1 / np.sqrt(hd), np.float32), "scale")]
    graph = helper.make_graph(nodes, "att", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, seq, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _check_onnx(e2e: Any, model: Any, x: np.ndarray) -> Any:
    path = e2e.convert(model)
    want = e2e.ort(model, {"x": x})["y"]
    interp, session = _session(str(path), {"backend": "OPENCL", "tuning": "none"})
    got = run_once(interp, session, x)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)
    return session


def test_onnx_cnn_block_with_cpu_fallback(e2e: Any) -> None:
    x = np.random.default_rng(3).standard_normal((1, 13, 11, 11)).astype(np.float32)
    session = _check_onnx(e2e, _onnx_cnn(), x)
    by_type = {}
    for c in session.info()["commands"]:
        by_type.setdefault(c["type"], set()).add(c["backend"])
    for op in ("Convolution", "ConvolutionDepthwise", "Pooling", "BinaryOp", "Softmax", "Interp", "UnaryOp",
               "Deconvolution"):
        assert by_type.get(op) == {"opencl"}, (op, by_type)
    assert by_type["CumSum"] == {"cpu"}  # no OpenCL kernel: on the CPU with a copy before it
    assert "Copy" in by_type


def _onnx_layernorm_reduce(d: int = 16) -> Any:
    """LayerNormalization -> MatMul -> Erf -> ReduceMean over the last axis (keepdims) -> Add."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(6)
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1),
             helper.make_node("MatMul", ["ln", "w"], ["m"]),
             helper.make_node("Erf", ["m"], ["e"]),
             helper.make_node("ReduceMean", ["e"], ["r"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["e", "r"], ["y"])]
    inits = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
             for name, shape in (("g", (d,)), ("b", (d,)), ("w", (d, 2 * d)))]
    graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_layernorm_reduce_all_on_opencl(e2e: Any) -> None:
    x = np.random.default_rng(7).standard_normal((2, 5, 16)).astype(np.float32)
    session = _check_onnx(e2e, _onnx_layernorm_reduce(), x)
    backends = {c["backend"] for c in session.info()["commands"]}
    assert backends == {"opencl"}, session.info()["commands"]


def test_onnx_attention_all_on_opencl(e2e: Any) -> None:
    x = np.random.default_rng(4).standard_normal((2, 5, 16)).astype(np.float32)
    session = _check_onnx(e2e, _onnx_attention(), x)
    backends = {c["backend"] for c in session.info()["commands"]}
    assert backends == {"opencl"}, session.info()["commands"]
