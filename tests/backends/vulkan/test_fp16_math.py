"""precision='low' with float16 arithmetic: where the device reports shaderFloat16 + storageBuffer16BitAccess
(lavapipe does; the runtime enables both), conv (direct, 1x1, depthwise, Winograd), MatMul, binary, unary
activations, Softmax and LayerNorm run their `_fp16a` SPIR-V (float16 math, long sums in fp32) and stay within
1e-2 of the fp32 results; without shaderFloat16 the same ops run the `_fp16` (16-bit storage only) shaders."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(43)
LOW = {"precision": "low"}
SHADERS = Path(__file__).resolve().parents[3] / "backends" / "vulkan" / "shaders"
FP16A = ("conv2d", "conv2d_1x1", "depthwise", "winograd_input", "winograd_gemm", "winograd_output", "matmul",
         "binary", "unary", "softmax", "layernorm", "groupnorm")


def _x(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _unary(name: str) -> tuple:
    p = fb.UnaryOpT()
    p.opType = getattr(fb.UnaryOpOperation, name)
    return fb.OpType.UnaryOp, p


def _binary(name: str) -> tuple:
    p = fb.BinaryOpT()
    p.opType = getattr(fb.BinaryOpOperation, name)
    return fb.OpType.BinaryOp, p


def _cases(make_conv: Callable, make_op: Callable, conv_ref: Callable) -> dict[str, tuple]:
    """name -> (op_type, op, [(input, fmt)], [output desc], numpy reference)."""
    cases: dict[str, tuple] = {}
    for name, (ic, oc, k, algo_shape) in {"direct": (13, 11, 3, (7, 6)), "winograd": (33, 37, 3, (7, 5)),
                                          "conv1x1": (13, 9, 1, (5, 5))}.items():
        x, w, b = _x(1, ic, *algo_shape), _x(oc, ic, k, k, scale=0.2), _x(oc)
        pad = (k // 2,) * 4
        cases[name] = (fb.OpType.Convolution, make_conv(w, b, pad, "relu"), [(x, "NC4HW4")],
                       [TensorDesc((1, oc, *algo_shape), np.float32, "NC4HW4")],
                       np.maximum(conv_ref(x, w, b, (1, 1), pad, (1, 1), 1), 0))
    x, w, b = _x(2, 13, 6, 5), _x(13, 1, 3, 3, scale=0.3), _x(13)
    dw = make_conv(w, b, (1, 1, 1, 1), "relu6")
    dw.type = fb.OpType.ConvolutionDepthwise
    dw.main.common.group = 13
    cases["depthwise"] = (fb.OpType.ConvolutionDepthwise, dw, [(x, "NC4HW4")],
                          [TensorDesc(x.shape, np.float32, "NC4HW4")],
                          np.clip(conv_ref(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 13), 0, 6))
    m1, m2 = _x(3, 37), _x(37, 5)
    cases["matmul"] = (fb.OpType.MatMul, make_op(fb.OpType.MatMul, fb.MatMulT()), [(m1, "NCHW"), (m2, "NCHW")],
                       [TensorDesc((3, 5), np.float32, "NCHW")], m1 @ m2)
    a, c = _x(2, 13, 3, 4), _x(1, 13, 1, 4)
    for name, ref in {"MUL": np.multiply, "SUB": np.subtract}.items():
        op_type, p = _binary(name)
        cases[name] = (op_type, make_op(op_type, p), [(a, "NC4HW4"), (c, "NCHW")],
                       [TensorDesc(a.shape, np.float32, "NC4HW4")], ref(a, c))
    refs = {"SIGMOID": lambda v: 1 / (1 + np.exp(-v)), "HARDSWISH": lambda v: v * np.clip(v + 3, 0, 6) / 6,
            "SILU": lambda v: v / (1 + np.exp(-v)), "TANH": np.tanh}
    for name, ref in refs.items():
        op_type, p = _unary(name)
        v = _x(1, 13, 3, 4, scale=3.0)
        cases[name] = (op_type, make_op(op_type, p), [(v, "NC4HW4")], [TensorDesc(v.shape, np.float32, "NC4HW4")],
                       ref(v))
    v = _x(1, 13, 3, 4, scale=5.0)
    cases["relu6"] = (fb.OpType.ReLU6, make_op(fb.OpType.ReLU6, fb.Relu6T()), [(v, "NC4HW4")],
                      [TensorDesc(v.shape, np.float32, "NC4HW4")], np.clip(v, 0, 6))
    axis = fb.AxisT()
    axis.axis = 1
    e = np.exp(a - a.max(axis=1, keepdims=True))
    cases["softmax"] = (fb.OpType.Softmax, make_op(fb.OpType.Softmax, axis), [(a, "NC4HW4")],
                        [TensorDesc(a.shape, np.float32, "NC4HW4")], e / e.sum(axis=1, keepdims=True))
    ln = fb.LayerNormT()
    ln.axis, ln.epsilon = [-1], 1e-5
    t = _x(4, 48, scale=2.0) + 3.0
    d = t - t.mean(axis=-1, keepdims=True)
    norm = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5)
    cases["layernorm"] = (fb.OpType.LayerNorm, make_op(fb.OpType.LayerNorm, ln), [(t, "NCHW")],
                          [TensorDesc(t.shape, np.float32, "NCHW")], norm)
    return cases


CASE_NAMES = ["direct", "winograd", "conv1x1", "depthwise", "matmul", "MUL", "SUB", "SIGMOID", "HARDSWISH", "SILU",
              "TANH", "relu6", "softmax", "layernorm"]


@pytest.fixture
def cases(make_conv: Any, make_op: Any, conv_ref: Any) -> dict[str, tuple]:
    return _cases(make_conv, make_op, conv_ref)


def _shaders(runner: Any) -> list[str]:
    return [d.split(" ")[0] for d in runner.execution.info()["dispatches"]]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_fp16_arithmetic_within_1e2_of_fp32(vk_runtime: Any, run_op: Any, cases: dict, name: str) -> None:
    if not vk_runtime.device.fp16_math:
        pytest.skip("device has no shaderFloat16 + storageBuffer16BitAccess: no float16 arithmetic")
    op_type, op, inputs, outs, want = cases[name]
    low = run_op(op_type, op, inputs, outs, LOW)
    assert low.backend.fp16_math and all(s.endswith("_fp16a") for s in _shaders(low)), _shaders(low)
    (got,) = low.run()
    (fp32,) = run_op(op_type, op, inputs, outs).run()
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, fp32, rtol=1e-2, atol=1e-2 * scale)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * scale)


@pytest.mark.parametrize("name", ["direct", "winograd", "matmul", "SIGMOID", "softmax"])
def test_storage_only_without_shader_float16(vk_runtime: Any, run_op: Any, cases: dict, name: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if not vk_runtime.device.fp16_storage:
        pytest.skip("device has no storageBuffer16BitAccess: precision='low' stays fp32")
    monkeypatch.setattr(vk_runtime.device, "fp16_math", False)  # a device with 16-bit storage only
    op_type, op, inputs, outs, want = cases[name]
    runner = run_op(op_type, op, inputs, outs, LOW)
    assert runner.backend.fp16 and not runner.backend.fp16_math
    assert all(s.endswith("_fp16") for s in _shaders(runner)), _shaders(runner)
    (got,) = runner.run()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * max(1.0, float(np.abs(want).max())))


def test_pooling_has_no_fp16a_variant_and_stays_storage_only(vk_runtime: Any, run_op: Any, make_op: Any) -> None:
    if not vk_runtime.device.fp16_storage:
        pytest.skip("device has no storageBuffer16BitAccess")
    pool = fb.PoolT()
    pool.kernelX = pool.kernelY = pool.strideX = pool.strideY = 2
    pool.type = fb.PoolType.MAXPOOL
    x = _x(1, 13, 4, 4)
    runner = run_op(fb.OpType.Pooling, make_op(fb.OpType.Pooling, pool), [(x, "NC4HW4")],
                    [TensorDesc((1, 13, 2, 2), np.float32, "NC4HW4")], LOW)
    assert _shaders(runner) == ["pooling_fp16"]


def _capabilities(path: Path) -> set[int]:
    words = struct.unpack(f"<{path.stat().st_size // 4}I", path.read_bytes())
    caps, i = set(), 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if opcode == 17:  # OpCapability
            caps.add(words[i + 1])
        i += max(count, 1)
    return caps


def test_fp16a_spirv_declares_float16_arithmetic() -> None:
    """The `_fp16a` modules really compute in float16 (capability Float16 = 9); `_fp16` ones only store it."""
    for name in FP16A:
        assert 9 in _capabilities(SHADERS / f"{name}_fp16a.spv"), name
        assert 9 not in _capabilities(SHADERS / f"{name}_fp16.spv"), name
    assert sorted(p.stem[:-6] for p in SHADERS.glob("*_fp16a.spv")) == sorted(FP16A)
