"""GatherV2 / Gather along an axis with runtime int32 indices, and Cast between float32 and int32."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc

F32, I32 = np.dtype(np.float32), np.dtype(np.int32)


def gather_axis(op: Any, inputs: list[TensorRef]) -> int | None:
    """The gather axis (constant input 2, else the param, else 0), normalised; None when not constant."""
    rank = len(inputs[0].desc.shape)
    axis = 0
    if len(inputs) > 2:
        if not inputs[2].const or inputs[2].array is None:
            return None
        axis = int(np.asarray(inputs[2].array).reshape(-1)[0])
    elif op.main is not None and hasattr(op.main, "axis"):
        axis = int(op.main.axis)
    axis = axis + rank if axis < 0 else axis
    return axis if 0 <= axis < rank else None


@opencl_kernel(fb.OpType.GatherV2, fb.OpType.Gather, formats=("NCHW", "NC4HW4"))
class GatherExecution(CLExecution):
    """`y = take(x, idx, axis)` (MNN: GatherV2)."""

    algorithm = "gather"
    dtypes = (F32, I32)
    value_inputs = (2,)

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) not in (2, 3) or len(outputs) != 1 or inputs[1].desc.dtype != I32:
            return False
        if inputs[0].desc.dtype != outputs[0].desc.dtype or inputs[1].desc.fmt == NC4HW4:
            return False
        axis = gather_axis(op, inputs)
        if axis is None:
            return False
        shape = inputs[0].desc.shape
        return outputs[0].desc.size == math.prod(shape[:axis]) * inputs[1].desc.size * math.prod(shape[axis + 1:])

    def encode(self) -> None:
        x, idx = self.inputs[:2]
        y = self.outputs[0]
        axis = gather_axis(self.op, self.inputs)
        shape = x.desc.shape
        if has_channel_tail(y):
            self.fill_zero(y)
        count = max(y.desc.size, 1)
        args = [self.buf(x), self.buf(idx), self.buf(y), tensor_desc(x), tensor_desc(y), np.int32(shape[axis]),
                np.int32(max(idx.desc.size, 1)), np.int32(math.prod(shape[axis + 1:])), np.int32(count)]
        options = "-DT=int" if y.desc.dtype == I32 else ""
        self.launch("gather", "gather_axis", args, (count,), options=options)


@opencl_kernel(fb.OpType.Cast, formats=("NC4HW4", "NCHW", "NHWC"))
class CastExecution(CLExecution):
    """float32 <-> int32 conversion over same-layout tensors (MNN: Cast)."""

    dtypes = (F32, I32)

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        return x.shape == y.shape and x.fmt == y.fmt and x.dtype != y.dtype

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        count = y.array.elements
        name = "cast_f2i" if x.desc.dtype == F32 else "cast_i2f"
        self.algorithm = name
        self.launch("gather", name, [self.buf(x), self.buf(y), np.int32(count)], (count,))
