"""Fixtures for the Vulkan tests: the runtime (skipped when no device) and a driver running executions directly.

`run_op` plays the pipeline's part until the session can run a Vulkan model: on_resize_begin -> on_create ->
on_acquire (+ the execution's scratch) -> on_resize_end -> Execution.on_resize, then host copies in, one run,
host copy out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from mnnpy.core.backend import StorageType, TensorRef
from mnnpy.core.ir import TensorDesc


def _runtime_class() -> Any:
    from mnnpy.backends import vulkan

    return vulkan.RUNTIME


@pytest.fixture(scope="session")
def vk_runtime() -> Any:
    """The VulkanRuntime, or a skip saying why there is no device."""
    cls = _runtime_class()
    if not cls.is_available():
        pytest.skip(f"Vulkan device absent: {cls.unavailable_reason()}")
    return cls()


class OpRunner:
    """Runs one op on a fresh backend: `run()` returns the logical NCHW outputs."""

    def __init__(self, runtime: Any, op_type: int, op: Any, inputs: Sequence[tuple[np.ndarray, str]],
                 out_descs: Sequence[TensorDesc], config: dict[str, Any] | None = None) -> None:
        self.backend = runtime.create_backend(config)
        self.values = [np.asarray(x) for x, _ in inputs]
        self.in_refs = [TensorRef(i, TensorDesc(x.shape, x.dtype, fmt)) for i, ((_, fmt), x) in
                        enumerate(zip(inputs, self.values, strict=True))]
        self.out_refs = [TensorRef(len(inputs) + i, d) for i, d in enumerate(out_descs)]
        b = self.backend
        b.on_resize_begin()
        self.execution = b.on_create(op_type, op, self.in_refs, self.out_refs)
        if self.execution is None:
            return
        for ref in (*self.in_refs, *self.out_refs):
            b.on_acquire(ref, StorageType.DYNAMIC)
        need = self.execution.scratch_bytes()
        if need:  # as the schedule does: an arena chunk for the execution's work memory
            scratch = TensorRef(-1, TensorDesc((need,), np.dtype(np.uint8)), "scratch")
            b.on_acquire(scratch, StorageType.DYNAMIC)
            self.execution.scratch_ref = scratch
        b.on_resize_end()
        self.execution.on_resize()

    def run(self) -> list[np.ndarray]:
        from mnnpy.backends.vulkan import layout

        assert self.execution is not None, "the backend refused the op"
        for ref, x in zip(self.in_refs, self.values, strict=True):
            layout.from_nchw(ref.desc, x if ref.desc.fmt != "NHWC" else np.moveaxis(x, -1, 1), ref.array)
        self.backend.on_execute_begin()
        self.execution.on_execute()
        self.backend.on_execute_end()
        outs = []
        for ref in self.out_refs:
            y = np.array(layout.to_nchw(ref.desc, ref.array))
            outs.append(np.moveaxis(y, 1, -1) if ref.desc.fmt == "NHWC" and y.ndim >= 3 else y)
        return outs


@pytest.fixture
def run_op(vk_runtime: Any) -> Any:
    """`run_op(op_type, op, [(array, fmt), ...], [TensorDesc, ...], config=None) -> OpRunner`."""

    def make(op_type: int, op: Any, inputs: Sequence[tuple[np.ndarray, str]],
             out_descs: Sequence[TensorDesc], config: dict[str, Any] | None = None) -> OpRunner:
        return OpRunner(vk_runtime, op_type, op, inputs, out_descs, config)

    return make


@pytest.fixture
def run_cpu() -> Any:
    """`run_cpu(...)`: the same driver on the CPU backend, the oracle for ops without a short numpy reference."""
    from mnnpy.core import registry

    runtime = registry.get_runtime("cpu")

    def make(op_type: int, op: Any, inputs: Sequence[tuple[np.ndarray, str]],
             out_descs: Sequence[TensorDesc]) -> OpRunner:
        return OpRunner(runtime, op_type, op, inputs, out_descs)

    return make


def _make_op(op_type: int, param: Any = None) -> Any:
    from mnnpy.schema import mnn_generated as fb

    op = fb.OpT()
    op.type = op_type
    op.main = param
    return op


@pytest.fixture
def make_op() -> Any:
    """`make_op(op_type, param)`: an object-API `fb.OpT` with `main` set."""
    return _make_op


def conv_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: tuple[int, int],
                   pads: tuple[int, int, int, int], dil: tuple[int, int], group: int) -> np.ndarray:
    """Plain numpy grouped convolution, NCHW; pads = (top, left, bottom, right)."""
    n, _, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (wd + pads[1] + pads[3] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow), np.float64)
    ocg = oc // group
    for g in range(group):
        xs = xp[:, g * icg:(g + 1) * icg]
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dil[0]: ky * dil[0] + (oh - 1) * stride[0] + 1: stride[0],
                           kx * dil[1]: kx * dil[1] + (ow - 1) * stride[1] + 1: stride[1]]
                out[:, g * ocg:(g + 1) * ocg] += np.einsum("nchw,oc->nohw", patch, w[g * ocg:(g + 1) * ocg, :, ky, kx])
    return (out + b.reshape(1, -1, 1, 1)).astype(np.float32)


@pytest.fixture
def conv_ref() -> Any:
    """`conv_ref(x, w, b, stride, pads (top, left, bottom, right), dilation, group)`: numpy NCHW convolution."""
    return conv_reference


def conv_op(w: np.ndarray, b: np.ndarray, pads: tuple[int, ...], act: str = "none", stride: int = 1) -> Any:
    """A Convolution op (one group) with weights (OC, IC, KH, KW), pads (top, left, bottom, right), ReLU/ReLU6."""
    from mnnpy.schema import mnn_generated as fb

    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = w.shape[2:]
    common.strideY = common.strideX = stride
    common.pads, common.group, common.outputCount = list(pads), 1, w.shape[0]
    common.relu, common.relu6 = act == "relu", act == "relu6"
    conv = fb.Convolution2DT()
    conv.common, conv.weight, conv.bias = common, w.ravel().tolist(), b.tolist()
    return _make_op(fb.OpType.Convolution, conv)


@pytest.fixture
def make_conv() -> Any:
    """`make_conv(w, b, pads, act='none', stride=1)`: a one-group Convolution op (see `conv_op`)."""
    return conv_op
