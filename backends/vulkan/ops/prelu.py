"""PReLU with per-channel (or one shared) slope on NC4HW4 tensors."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4


@vulkan_kernel(fb.OpType.PReLU, formats=("NC4HW4",))
class VulkanPReLU(VulkanExecution):
    """y = x > 0 ? x : slope[c] * x, one invocation per texel."""

    algorithm = "prelu"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if len(inputs) != 1 or len(outputs) != 1 or p is None or p.slope is None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NC4HW4 or y.fmt != NC4HW4 or x.shape != y.shape or len(x.shape) < 2:
            return False
        return len(p.slope) in (1, x.shape[1])

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        n, c = x.desc.shape[:2]
        area = math.prod(x.desc.shape[2:])
        c4 = -(-c // 4)
        slope = np.zeros(c4 * 4, np.float32)
        slope[:c] = np.broadcast_to(np.asarray(op_param(self.op).slope, np.float32), (c,))
        total = n * c4 * area
        slope_b = self.upload_once(f"slope{c}", lambda: slope)
        self.dispatch("prelu", [self.bind(x), slope_b], [self.bind(y)], "3i", (total, area, c4), total)
