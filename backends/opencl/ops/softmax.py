"""Softmax along one axis (any layout: the kernel maps logical indices to the buffer layout)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc


@opencl_kernel(fb.OpType.Softmax, formats=("NCHW", "NC4HW4", "NHWC"))
class SoftmaxExecution(CLExecution):
    """`y = exp(x - max) / sum(exp(x - max))` along `axis` (MNN: Softmax)."""

    algorithm = "softmax"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1 or inputs[0].desc.shape != outputs[0].desc.shape:
            return False
        return inputs[0].desc.fmt == outputs[0].desc.fmt and len(inputs[0].desc.shape) >= 1

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape
        axis = int(getattr(self.op.main, "axis", -1)) if self.op.main is not None else -1
        axis = axis + len(shape) if axis < 0 else axis
        outside = math.prod(shape[:axis])
        inside = math.prod(shape[axis + 1:])
        if has_channel_tail(y):
            self.fill_zero(y)
        args = [self.buf(x), self.buf(y), tensor_desc(x), tensor_desc(y), np.int32(outside), np.int32(shape[axis]),
                np.int32(inside)]
        self.launch("softmax", "softmax", args, (inside, outside))
