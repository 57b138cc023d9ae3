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
