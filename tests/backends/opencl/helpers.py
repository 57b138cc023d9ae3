"""Drive OpenCL executions directly (no session): make TensorRefs, plan memory, resize, run, read back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from mnnpy.schema import mnn_generated as fb
from support.models import make_conv

from mnnpy.core.backend import Execution, StorageType, TensorRef
from mnnpy.core.ir import NC4HW4, NCHW, TensorDesc

if TYPE_CHECKING:
    from mnnpy.backends.opencl.backend import OpenCLBackend

AWKWARD_CHANNELS = (1, 3, 13, 127)


def make_op(op_type: int, main: Any = None) -> fb.OpT:
    """An object-API op with its parameter table."""
    op = fb.OpT()
    op.type = op_type
    op.main = main
    return op


def conv_op(op_type: int, ic: int, oc: int, k: tuple[int, int], stride: tuple[int, int] = (1, 1),
            pads: tuple[int, int, int, int] = (0, 0, 0, 0), dilation: tuple[int, int] = (1, 1), group: int = 1,
            relu: bool = False, relu6: bool = False, pad_mode: int = 0, seed: int = 0) -> fb.OpT:
    """A (de)convolution op with random weights in MNN's layout: (oc, ic/group, kh, kw), or (ic, oc/group, kh, kw)
    for Deconvolution / DeconvolutionDepthwise."""
    transposed = op_type in (fb.OpType.Deconvolution, fb.OpType.DeconvolutionDepthwise)
    return make_op(op_type, make_conv(ic, oc, k, stride=stride, dilation=dilation, pads=pads, pad_mode=pad_mode,
                                      group=group, relu=relu, relu6=relu6, transposed=transposed, seed=seed))


class Harness:
    """One backend with a small tensor table: inputs are uploaded, outputs downloaded in logical order."""

    def __init__(self, backend: OpenCLBackend) -> None:
        self.backend = backend
        self.refs: list[TensorRef] = []

    def tensor(self, shape: Sequence[int], fmt: str = NCHW, dtype: Any = np.float32) -> TensorRef:
        ref = TensorRef(len(self.refs), TensorDesc(tuple(shape), dtype, fmt), name=f"t{len(self.refs)}")
        self.refs.append(ref)
        return ref

    def run(self, op_type: int, op: Any, inputs: Sequence[np.ndarray], in_fmts: Sequence[str],
            out_shapes: Sequence[Sequence[int]], out_fmt: str = NC4HW4, runs: int = 1,
            out_dtype: Any = np.float32) -> list[np.ndarray]:
        """Create, plan, resize and execute one op; return the outputs as logical arrays."""
        ins = [self.tensor(x.shape, f, x.dtype) for x, f in zip(inputs, in_fmts, strict=True)]
        outs = [self.tensor(s, out_fmt, out_dtype) for s in out_shapes]
        execution = self.create(op_type, op, ins, outs)
        assert execution is not None, f"on_create returned None for op type {op_type}"
        self.resize([execution], ins, outs)
        for ref, x in zip(ins, inputs, strict=True):
            self.backend.upload(ref.array, x)
        for _ in range(runs):
            self.execute([execution])
        return [self.backend.download(ref.array) for ref in outs]

    def create(self, op_type: int, op: Any, ins: Sequence[TensorRef], outs: Sequence[TensorRef]) -> Execution | None:
        return self.backend.on_create(op_type, op, ins, outs)

    def resize(self, executions: Sequence[Execution], ins: Sequence[TensorRef], outs: Sequence[TensorRef]) -> None:
        self.backend.on_resize_begin()
        for ref in (*ins, *outs):
            self.backend.on_acquire(ref, StorageType.DYNAMIC)
        self.backend.on_resize_end()
        for execution in executions:
            execution.on_resize()

    def execute(self, executions: Sequence[Execution]) -> None:
        self.backend.on_execute_begin()
        for execution in executions:
            execution.on_execute()
        self.backend.on_execute_end()


def rand(shape: Sequence[int], seed: int = 0, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """Random float32 values with a fixed seed."""
    return np.random.default_rng(seed).uniform(low, high, size=tuple(shape)).astype(np.float32)


def assert_close(actual: np.ndarray, expected: np.ndarray, tol: float = 1e-4) -> None:
    """fp32 comparison: absolute and relative tolerance `tol`."""
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual, expected.astype(np.float32), rtol=tol, atol=tol)
