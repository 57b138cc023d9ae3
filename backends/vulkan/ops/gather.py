"""GatherV2 / Gather with runtime int32 indices (constant ones become Raster regions in geometry)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import VulkanExecution, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NHWC
from mnnpy.core.shape.tensor_ops import gather_axis


def _axis(op: Any, inputs: Sequence[TensorRef]) -> int | None:
    if len(inputs) > 2 and not (inputs[2].const and inputs[2].array is not None):
        return None
    values = [None, None, np.asarray(inputs[2].array) if len(inputs) > 2 else None]
    try:
        return gather_axis(op, inputs[0].desc, values)
    except (ValueError, TypeError, AttributeError):
        return None


@vulkan_kernel(fb.OpType.GatherV2, fb.OpType.Gather, formats=("NCHW", "NC4HW4"))
class VulkanGather(VulkanExecution):
    """One invocation per output element; float data, int32 indices."""

    algorithm = "gather"

    @classmethod
    def dtypes_ok(cls, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        return (len(inputs) >= 2 and inputs[0].desc.dtype == np.float32 and inputs[1].desc.dtype == np.int32
                and all(t.desc.dtype == np.int32 for t in inputs[2:]) and outputs[0].desc.dtype == np.float32)

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) not in (2, 3) or len(outputs) != 1 or inputs[1].desc.fmt == "NC4HW4":
            return False
        if any(t.desc.fmt == NHWC for t in (inputs[0], outputs[0])):
            return False
        axis = _axis(op, inputs)
        if axis is None:
            return False
        data = inputs[0].desc.shape
        return math.prod(outputs[0].desc.shape) == math.prod(data) // max(data[axis], 1) * inputs[1].desc.size

    def encode(self) -> None:
        data, idx, out = self.inputs[0], self.inputs[1], self.outputs[0]
        axis = _axis(self.op, self.inputs)
        assert axis is not None
        shape = data.desc.shape
        dim, inner = shape[axis], math.prod(shape[axis + 1:])
        total = math.prod(out.desc.shape)
        values = (dim, inner, idx.desc.size, total, *shader_format(data.desc), *shader_format(out.desc))
        self.dispatch("gather_axis", [self.bind(data), self.bind(idx)], [self.bind(out)], "8i", values, total)
