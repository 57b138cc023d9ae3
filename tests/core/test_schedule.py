"""Schedule: a device backend that rejects an op (on_create -> None) gets it run on the CPU with Copy commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core import registry
from mnnpy.core.backend import Backend, Execution, Runtime, StorageType, TensorRef
from mnnpy.core.session import Session

sys.path.insert(0, str(Path(__file__).parent))
from netbuild import NetBuilder


class Dev:
    """A 'device buffer': CPU kernels cannot read it, only the fake backend's copies can."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.data = np.zeros(shape, np.float32)


class AbsExecution(Execution):
    def on_execute(self) -> None:
        np.abs(self.inputs[0].array.data, out=self.outputs[0].array.data)


class FakeBackend(Backend):
    name = "fake"

    def on_create(self, op_type: int, op: Any, inputs: list, outputs: list) -> Execution | None:
        if op_type == fb.OpType.UnaryOp and op.main.opType == 0:
            return AbsExecution(self, op, inputs, outputs)
        return None

    def on_acquire(self, tensor: TensorRef, storage: StorageType) -> None:
        tensor.array = Dev(tensor.desc.shape)

    def on_release(self, tensor: TensorRef, storage: StorageType) -> None:
        pass

    def on_copy(self, src: TensorRef, dst: TensorRef) -> None:
        value = src.array.data if isinstance(src.array, Dev) else np.asarray(src.array).reshape(src.desc.shape)
        if isinstance(dst.array, Dev):
            np.copyto(dst.array.data, value)
        else:
            np.copyto(dst.array, value.reshape(dst.array.shape))


class FakeRuntime(Runtime):
    name = "fake"

    def create_backend(self, config: dict | None = None) -> Backend:
        return FakeBackend(self, config)


def test_cpu_fallback_inserts_copies() -> None:
    registry._RUNTIMES["fake"] = FakeRuntime()
    nb = NetBuilder()
    nb.input("x", (2, 3, 4))
    nb.permute("x", "t", [2, 0, 1])
    nb.unary("t", "a", 0)  # ABS on the fake device
    nb.unary("a", "y", 1)  # NEG: CPU fallback
    nb.outputs("y")
    s = Session(nb.net, {"backend": "fake"})
    kinds = [(c.op_type, c.backend) for c in s.commands]
    assert (int(fb.OpType.Copy), "fake") in kinds
    assert (int(fb.OpType.UnaryOp), "fake") in kinds and (int(fb.OpType.UnaryOp), "cpu") in kinds
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    s.write(s.input_index("x"), x)
    s.run()
    np.testing.assert_array_equal(s.read(s.output_index("y")), -np.abs(np.transpose(x, (2, 0, 1))))


def test_nhwc_tensors_pass_plain_kernels() -> None:
    nb = NetBuilder()
    nb.input("x", (1, 4, 5, 3))
    nb.net.oplists[0].main.dformat = 1  # NHWC, as TF models declare
    nb.unary("x", "a", 0)
    p = fb.TensorConvertInfoT()
    p.source, p.dest = 1, 2
    nb.op(fb.OpType.ConvertTensor, ["a"], ["b"], fb.OpParameter.TensorConvertInfo, p)
    nb.unary("b", "y", 1)
    nb.outputs("y", "a")
    s = Session(nb.net)
    assert s.tensor_ref(s.output_index("a")).desc.fmt == "NHWC"
    assert s.tensor_ref(s.output_index("y")).desc.shape == (1, 3, 4, 5)
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 3)).astype(np.float32)
    s.write(s.input_index("x"), x)
    s.run()
    np.testing.assert_array_equal(s.read(s.output_index("a")), np.abs(x))
    np.testing.assert_array_equal(s.read(s.output_index("y")), -np.abs(np.transpose(x, (0, 3, 1, 2))))


def test_group_norm_kernel() -> None:
    nb = NetBuilder()
    nb.input("x", (2, 6, 3, 5))
    p = fb.GroupNormT()
    p.group, p.epsilon, p.axis = 3, 1e-5, 1
    rng = np.random.default_rng(2)
    p.gamma, p.beta = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    nb.op(fb.OpType.GroupNorm, ["x"], ["y"], fb.OpParameter.GroupNorm, p)
    nb.outputs("y")
    s = Session(nb.net)
    x = rng.standard_normal((2, 6, 3, 5)).astype(np.float32)
    s.write(s.input_index("x"), x)
    s.run()
    g = x.reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    want = want * p.gamma.reshape(1, 6, 1, 1) + p.beta.reshape(1, 6, 1, 1)
    np.testing.assert_allclose(s.read(s.output_index("y")), want, rtol=1e-5, atol=1e-5)


def test_lstm_op_matches_onnxruntime() -> None:
    """MNN's LSTM op in ONNX form (X, W, R, B=Wb+Rb, h0, c0), as the converter leaves it inside If bodies."""
    import pytest

    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(3)
    seq, batch, feat, hid = 4, 2, 3, 5
    w = rng.standard_normal((1, 4 * hid, feat)).astype(np.float32)
    r = rng.standard_normal((1, 4 * hid, hid)).astype(np.float32)
    b = rng.standard_normal((1, 4 * hid)).astype(np.float32)
    h0 = rng.standard_normal((1, batch, hid)).astype(np.float32)
    c0 = rng.standard_normal((1, batch, hid)).astype(np.float32)
    x = rng.standard_normal((seq, batch, feat)).astype(np.float32)
    nb = NetBuilder()
    nb.input("x", x.shape)
    for name, value in (("w", w), ("r", r), ("b", b), ("h0", h0), ("c0", c0)):
        nb.const(name, value)
    p = fb.LSTMT()
    p.outputCount = hid
    nb.op(fb.OpType.LSTM, ["x", "w", "r", "b", "h0", "c0"], ["y", "yh", "yc"], fb.OpParameter.LSTM, p)
    nb.outputs("y", "yh", "yc")
    s = Session(nb.net)
    s.write(s.input_index("x"), x)
    s.run()
    inits = [nh.from_array(v, n) for n, v in (("w", w), ("r", r), ("h0", h0), ("c0", c0))]
    inits.append(nh.from_array(np.concatenate([b, np.zeros_like(b)], axis=1), "b"))
    node = h.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0"], ["y", "yh", "yc"], hidden_size=hid)
    graph = h.make_graph([node], "l", [h.make_tensor_value_info("x", T.FLOAT, list(x.shape))],
                         [h.make_empty_tensor_value_info(n) for n in ("y", "yh", "yc")], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 14)])
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    for name, ref in zip(("y", "yh", "yc"), want, strict=True):
        np.testing.assert_allclose(s.read(s.output_index(name)), ref, rtol=1e-4, atol=1e-5)
