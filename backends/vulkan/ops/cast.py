"""Cast between float32 and int32 (same layout in and out; float -> int truncates toward zero, as C)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import VulkanExecution, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

FLOAT_TO_INT, INT_TO_FLOAT = 0, 1


@vulkan_kernel(fb.OpType.Cast, formats=("NCHW", "NC4HW4", "NHWC"))
class VulkanCast(VulkanExecution):
    """One invocation per physical element; both bindings of a side alias the same buffer."""

    algorithm = "cast"

    @classmethod
    def dtypes_ok(cls, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        pair = (inputs[0].desc.dtype, outputs[0].desc.dtype) if len(inputs) == 1 and len(outputs) == 1 else None
        return pair in ((np.dtype(np.float32), np.dtype(np.int32)), (np.dtype(np.int32), np.dtype(np.float32)))

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        x, y = inputs[0].desc, outputs[0].desc
        return x.shape == y.shape and x.fmt == y.fmt

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        mode = FLOAT_TO_INT if x.desc.dtype == np.float32 else INT_TO_FLOAT
        total = math.prod(x.desc.physical_shape)
        src, dst = self.bind(x), self.bind(y)
        self.dispatch("cast", [src, src], [dst, dst], "ii", (total, mode), total)
