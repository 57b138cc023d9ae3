"""Softmax along one axis, in the logical index space (MNN: `VulkanSoftmax`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef


def _axis(op: Any, rank: int) -> int:
    axis = int(getattr(op_param(op), "axis", 1 if rank > 1 else 0))
    return axis + rank if axis < 0 else axis


@vulkan_kernel(fb.OpType.Softmax, formats=("NCHW", "NC4HW4"))
class VulkanSoftmax(VulkanExecution):
    """One invocation per (outer, inner) pair: max, sum of exp, then write."""

    algorithm = "softmax"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        rank = len(x.shape)
        return x.shape == y.shape and (x.fmt == "NHWC") == (y.fmt == "NHWC") and 0 <= _axis(op, rank) < max(rank, 1)

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape or (1,)
        axis = _axis(self.op, len(shape))
        outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
        pairs = outer * inner
        values = (outer, shape[axis], inner, pairs, *shader_format(x.desc), *shader_format(y.desc))
        self.dispatch("softmax", [self.bind(x)], [self.bind(y)], "8i", values, pairs)
