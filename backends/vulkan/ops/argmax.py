"""ArgMax / ArgMin along one axis (float in, int32 out; the first extreme wins, as numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NCHW, NHWC


def _axis(op: Any, rank: int) -> int:
    axis = int(getattr(op_param(op), "axis", 0) or 0)
    return axis + rank if axis < 0 else axis


@vulkan_kernel(fb.OpType.ArgMax, fb.OpType.ArgMin, formats=("NCHW", "NC4HW4"))
class VulkanArgMax(VulkanExecution):
    """One invocation per kept element."""

    algorithm = "argmax"

    @classmethod
    def dtypes_ok(cls, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        return len(inputs) == 1 and inputs[0].desc.dtype == np.float32 and outputs[0].desc.dtype == np.int32

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if len(outputs) != 1 or outputs[0].desc.fmt != NCHW or inputs[0].desc.fmt == NHWC:
            return False
        if p is not None and (int(p.topK or 0) > 1 or int(p.outMaxVal or 0)):
            return False
        shape = inputs[0].desc.shape
        axis = _axis(op, len(shape))
        return 0 <= axis < len(shape) and outputs[0].desc.size == math.prod(shape) // max(shape[axis], 1)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape
        axis = _axis(self.op, len(shape))
        outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        is_min = int(int(self.op.type) == fb.OpType.ArgMin)
        values = (outer, shape[axis], inner, is_min, *shader_format(x.desc), 0, 0)
        self.dispatch("argmax", [self.bind(x)], [self.bind(y)], "8i", values, outer * inner)
