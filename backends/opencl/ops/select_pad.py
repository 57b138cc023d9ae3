"""Select / Where (broadcasting, int32 or float condition) and Padding (constant, reflect, symmetric, edge).

Padding's source index of every output element is computed once on the host in on_resize (np.pad over an index
range, negative pads cropping); the kernel is a gather with a fill value.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc
from .binary import same_order

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)
PAD_MODES = {0: "constant", 1: "reflect", 2: "symmetric", 3: "edge"}


def _strides(shape: tuple[int, ...], rank: int) -> list[int]:
    padded = [1] * (rank - len(shape)) + list(shape)
    out, step = [0] * rank, 1
    for i in range(rank - 1, -1, -1):
        out[i] = step if padded[i] != 1 else 0
        step *= padded[i]
    return out


@opencl_kernel(fb.OpType.Select, fb.OpType.Where, formats=("NCHW", "NC4HW4", "NHWC"))
class SelectExecution(CLExecution):
    """`y = where(c, a, b)` (MNN: Select)."""

    algorithm = "select"
    dtypes = (F32, I32)

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) != 3 or len(outputs) != 1:
            return False
        if any(t.desc.dtype != F32 for t in (*inputs[1:], *outputs)):
            return False
        try:
            shape = np.broadcast_shapes(*(t.desc.shape for t in inputs))
        except ValueError:
            return False
        return tuple(shape) == outputs[0].desc.shape and same_order([*inputs, *outputs])

    def encode(self) -> None:
        c, a, b = self.inputs
        y = self.outputs[0]
        rank = max(len(y.desc.shape), 1)
        dims = list(y.desc.shape) or [1]
        meta = np.asarray([dims, *(_strides(t.desc.shape, rank) for t in (c, a, b))], np.int32).reshape(-1)
        if has_channel_tail(y):
            self.fill_zero(y)
        count = max(y.desc.size, 1)
        args = [self.buf(c), self.buf(a), self.buf(b), self.buf(y), tensor_desc(c), tensor_desc(a), tensor_desc(b),
                tensor_desc(y), np.int32(rank), self.constant(meta), np.int32(count)]
        options = "" if c.desc.dtype == I32 else "-DCT=float"
        self.launch("select", "select_bcast", args, (count,), options=options)


def pad_index(shape: tuple[int, ...], pads: list[int], mode: str) -> np.ndarray:
    """Logical source index of every output element (-1 for the constant fill), negative pads cropping."""
    rank = len(shape)
    widths = [(max(pads[2 * i], 0), max(pads[2 * i + 1], 0)) for i in range(rank)]
    crop = tuple(slice(max(-pads[2 * i], 0), d + widths[i][0] + widths[i][1] - max(-pads[2 * i + 1], 0))
                 for i, d in enumerate(shape))
    index = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    kwargs = {"constant_values": -1} if mode == "constant" else {}
    return np.ascontiguousarray(np.pad(index, widths, mode=mode, **kwargs)[crop]).reshape(-1)


@opencl_kernel(fb.OpType.Padding, formats=("NCHW", "NC4HW4"))
class PaddingExecution(CLExecution):
    """`y = np.pad(x, pads, mode)` (MNN: Padding)."""

    value_inputs = (1, 2)

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) not in (2, 3) or len(outputs) != 1 or not all(t.const for t in inputs[1:]):
            return False
        mode = int(op.main.mode) if op.main is not None else 0
        pads = np.asarray(inputs[1].array).reshape(-1)
        x, y = inputs[0].desc, outputs[0].desc
        if mode not in PAD_MODES or pads.size != 2 * len(x.shape) or x.fmt != y.fmt:
            return False
        expect = tuple(int(d + pads[2 * i] + pads[2 * i + 1]) for i, d in enumerate(x.shape))
        return expect == y.shape and (x.fmt != NC4HW4 or len(x.shape) >= 2)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        mode = PAD_MODES[int(self.op.main.mode) if self.op.main is not None else 0]
        pads = [int(p) for p in np.asarray(self.inputs[1].array).reshape(-1)]
        value = 0.0
        if mode == "constant" and len(self.inputs) > 2 and np.size(self.inputs[2].array):
            value = float(np.asarray(self.inputs[2].array).reshape(-1)[0])
        self.algorithm = f"pad-{mode}"
        if has_channel_tail(y):
            self.fill_zero(y)
        index = pad_index(x.desc.shape, pads, mode)
        args = [self.buf(x), self.buf(y), self.constant(index), tensor_desc(x), tensor_desc(y), np.float32(value),
                np.int32(index.size)]
        self.launch("select", "pad_gather", args, (index.size,))
