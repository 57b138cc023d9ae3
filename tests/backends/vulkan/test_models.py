"""Small ONNX models (converted by the official converter) run with backend='VULKAN' vs onnxruntime (1e-4).

Reports which op types ran where; ops without a Vulkan kernel run on the CPU with Copy commands around them.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.models import attention_nodes
from support.runners import run_once

import mnnpy as MNN  # noqa: N812 - as official scripts do

RNG = np.random.default_rng(21)


def _w(name: str, *shape: int, scale: float = 0.3) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _const(name: str, value: Any) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(value), name)


def _graph(nodes: list, x_shape: list[int], inits: list, opset: int = 17) -> Any:
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _converter_models() -> Any:
    """tests/converter/models.py (the converter tests' model builders), imported by path: a plain
    `import converter` may find the repository's top-level `converter/` package instead."""
    name = "_vulkan_tests_converter"
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(Path(__file__).resolve().parents[2] / "converter")]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    return importlib.import_module(f"{name}.models")


def _placement(path: Any, precision: str = "normal") -> tuple[dict[str, set[str]], Any, Any]:
    interp = MNN.Interpreter(str(path))
    session = interp.createSession({"backend": "VULKAN", "precision": precision})
    by_type: dict[str, set[str]] = {}
    for c in session.info()["commands"]:
        by_type.setdefault(c["type"], set()).add(c["backend"])
    return by_type, interp, session


def mobilenet_like() -> Any:
    """Inverted residual (1x1 expand, ReLU6, depthwise 3x3, 1x1 project, residual add), strided conv, avg pool,
    global average pool, flatten, fully connected, softmax."""
    from onnx import helper

    c, e = 13, 52
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["e1"]),
        helper.make_node("Clip", ["e1", "lo", "hi"], ["e2"]),
        helper.make_node("Conv", ["e2", "wd", "bd"], ["d1"], group=e, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["d1", "lo", "hi"], ["d2"]),
        helper.make_node("Conv", ["d2", "w2", "b2"], ["p1"]),
        helper.make_node("Add", ["p1", "x"], ["r"]),
        helper.make_node("Conv", ["r", "ws", "bs"], ["s"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["s"], ["s2"]),
        helper.make_node("AveragePool", ["s2"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["ap"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
    ]
    inits = [_w("w1", e, c, 1, 1), _w("b1", e), _w("wd", e, 1, 3, 3), _w("bd", e), _w("w2", c, e, 1, 1), _w("b2", c),
             _w("ws", 20, c, 3, 3), _w("bs", 20), _const("lo", np.float32(0)), _const("hi", np.float32(6)),
             _w("wf", 10, 20), _w("bf", 10)]
    return _graph(nodes, [1, c, 11, 10], inits)


def attention_like(d: int = 16, heads: int = 2) -> Any:
    """Q/K/V projections, head split (Reshape/Transpose), scaled QK^T, softmax, PV, merge, projection, residual."""

    hd = d // heads
    nodes = attention_nodes()
    inits = [_w(f"w{n}", d, d) for n in "qkvo"]
    inits += [_const("hs", np.array([0, 0, heads, hd], np.int64)), _const("ms", np.array([0, 0, d], np.int64)),
              _const("scale", np.float32(1 / np.sqrt(hd)))]
    return _graph(nodes, [2, 7, d], inits, opset=13)


def test_mobilenet_like_all_on_vulkan(vk_runtime: Any, e2e: Any) -> None:
    model = mobilenet_like()
    x = RNG.standard_normal((1, 13, 11, 10)).astype(np.float32)
    path = e2e.convert(model)
    by_type, interp, session = _placement(path)
    for op in ("Convolution", "ConvolutionDepthwise", "Pooling", "Pooling3D", "BinaryOp", "Softmax"):
        assert by_type.get(op) == {"vulkan"}, (op, by_type)
    assert set().union(*by_type.values()) == {"vulkan"}, by_type
    got = run_once(interp, session, x)
    want = e2e.ort(model, {"x": x})["y"]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)


def test_attention_like_on_vulkan(vk_runtime: Any, e2e: Any) -> None:
    model = attention_like()
    x = RNG.standard_normal((2, 7, 16)).astype(np.float32)
    path = e2e.convert(model)
    by_type, interp, session = _placement(path)
    assert set().union(*by_type.values()) == {"vulkan"}, by_type  # gathers in Raster included
    got = run_once(interp, session, x)
    want = e2e.ort(model, {"x": x})["y"]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)


def test_mobilenet_like_low_precision(vk_runtime: Any, e2e: Any) -> None:
    model = mobilenet_like()
    x = RNG.standard_normal((1, 13, 11, 10)).astype(np.float32)
    path = e2e.convert(model)
    _, interp, session = _placement(path, "low")
    assert session.main.fp16 == vk_runtime.device.fp16_storage
    got = run_once(interp, session, x)
    want = e2e.ort(model, {"x": x})["y"]
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("precision", ["normal", "low"])
@pytest.mark.parametrize("name", ["encoder_layer_model", "resnet_block_model", "mobilenet_v2_block_model"])
def test_converter_models_all_on_vulkan(vk_runtime: Any, e2e: Any, name: str, precision: str) -> None:
    model, feeds = getattr(_converter_models(), name)()
    path = e2e.convert(model)
    by_type, interp, session = _placement(path, precision)
    assert set().union(*by_type.values()) == {"vulkan"}, by_type
    (input_name, x), = feeds.items()
    interp.getSessionInput(session, input_name).fromNumpy(x)
    interp.runSession(session)
    got = {k: np.array(v.getNumpyData()) for k, v in interp.getSessionOutputAll(session).items()}
    tol = 1e-2 if precision == "low" else 1e-4
    for key, want in e2e.ort(model, feeds).items():
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got[key].reshape(want.shape), want, rtol=tol, atol=tol * scale)
