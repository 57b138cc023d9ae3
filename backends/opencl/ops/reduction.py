"""Reduction (SUM, ASUM, SUMSQ, MEAN, MAX, MIN, PROD) over any set of axes, keepdims or not; ArgMax / ArgMin."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc

FLOAT_OPS = (0, 1, 2, 3, 4, 5, 6)


def reduce_axes(op: Any, inputs: list[TensorRef]) -> list[int] | None:
    """Sorted reduced axes (the `dim` param or constant input 1; empty = all), or None if not constant."""
    rank = len(inputs[0].desc.shape)
    if len(inputs) > 1:
        if not inputs[1].const or inputs[1].array is None:
            return None
        dims = [int(d) for d in np.asarray(inputs[1].array).reshape(-1)]
    else:
        dims = [int(d) for d in (op.main.dim if op.main.dim is not None else [])]
    return sorted({d + rank if d < 0 else d for d in dims}) if dims else list(range(rank))


def reduce_meta(shape: tuple[int, ...], axes: list[int]) -> np.ndarray:
    """The `reduce` kernel's table: kept dims and strides, then reduced dims and strides (input logical strides)."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    kept = [i for i in range(len(shape)) if i not in axes]
    return np.asarray([len(kept), *[shape[i] for i in kept], *[strides[i] for i in kept],
                       len(axes), *[shape[i] for i in axes], *[strides[i] for i in axes]], dtype=np.int32)


@opencl_kernel(fb.OpType.Reduction, formats=("NCHW", "NC4HW4", "NHWC"))
class ReductionExecution(CLExecution):
    """One work item per output element loops over the reduced sub-space (MNN: Reduction)."""

    value_inputs = (1,)

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if op.main is None or op.main.operation not in FLOAT_OPS or len(outputs) != 1:
            return False
        axes = reduce_axes(op, inputs)
        if axes is None or any(not 0 <= a < len(inputs[0].desc.shape) for a in axes):
            return False
        kept = math.prod(d for i, d in enumerate(inputs[0].desc.shape) if i not in axes)
        return kept == outputs[0].desc.size

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        axes = reduce_axes(self.op, self.inputs)
        self.algorithm = f"reduce-{self.op.main.operation}"
        if has_channel_tail(y):
            self.fill_zero(y)
        count = max(y.desc.size, 1)
        meta = self.constant(reduce_meta(x.desc.shape, axes))
        args = [self.buf(x), self.buf(y), tensor_desc(x), tensor_desc(y), meta, np.int32(self.op.main.operation),
                np.int32(count)]
        self.launch("reduce", "reduce", args, (count,))


@opencl_kernel(fb.OpType.ArgMax, fb.OpType.ArgMin, formats=("NCHW", "NC4HW4"))
class ArgMaxExecution(CLExecution):
    """Index of the largest (smallest) value along an axis, as int32 (MNN: ArgMax / ArgMin)."""

    dtypes = (np.dtype(np.float32), np.dtype(np.int32))

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1 or inputs[0].desc.dtype != np.float32:
            return False
        if outputs[0].desc.dtype != np.int32:
            return False
        if op.main is not None and (int(getattr(op.main, "topK", 1)) > 1 or getattr(op.main, "outMaxVal", 0)):
            return False
        shape = inputs[0].desc.shape
        axis = int(op.main.axis) if op.main is not None else 0
        axis = axis + len(shape) if axis < 0 else axis
        return 0 <= axis < len(shape) and outputs[0].desc.size * shape[axis] == inputs[0].desc.size

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape
        axis = int(self.op.main.axis) if self.op.main is not None else 0
        axis = axis + len(shape) if axis < 0 else axis
        outside, inside = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        is_min = self.op.type == fb.OpType.ArgMin
        self.algorithm = "argmin" if is_min else "argmax"
        if has_channel_tail(y):
            self.fill_zero(y)
        args = [self.buf(x), self.buf(y), tensor_desc(x), tensor_desc(y), np.int32(outside), np.int32(shape[axis]),
                np.int32(inside), np.int32(is_min)]
        self.launch("reduce", "argmax", args, (inside, outside))
