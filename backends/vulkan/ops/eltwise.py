"""Eltwise (PROD, SUM, MAXIMUM, SUB over N same-shaped inputs) as a chain of binary dispatches.

Coefficients other than all ones are not supported here (the op returns None and runs on the CPU).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import FLT_MAX, VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NHWC

# EltwiseType -> BinaryOpOperation
BINARY = {fb.EltwiseType.PROD: fb.BinaryOpOperation.MUL, fb.EltwiseType.SUM: fb.BinaryOpOperation.ADD,
          fb.EltwiseType.MAXIMUM: fb.BinaryOpOperation.MAXIMUM, fb.EltwiseType.SUB: fb.BinaryOpOperation.SUB}


@vulkan_kernel(fb.OpType.Eltwise, formats=("NC4HW4", "NCHW"))
class VulkanEltwise(VulkanExecution):
    """out = ((x0 op x1) op x2) ...; later steps read the output (a barrier orders them)."""

    algorithm = "eltwise"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        p = op_param(op)
        if len(inputs) < 2 or len(outputs) != 1 or p is None or int(p.type) not in BINARY:
            return False
        if p.coeff is not None and len(p.coeff) and any(float(c) != 1.0 for c in p.coeff):
            return False
        shape = outputs[0].desc.shape
        return all(t.desc.shape == shape and t.desc.fmt != NHWC for t in (*inputs, *outputs))

    def encode(self) -> None:
        out = self.outputs[0]
        code = int(BINARY[int(op_param(self.op).type)])
        total = math.prod(out.desc.shape)
        dims = (1, 1, 1, total)
        flat = (0, 0, 0, 1)
        acc = self.inputs[0]
        for nxt in self.inputs[1:]:
            values = (*dims, *flat, *flat, *shader_format(acc.desc), *shader_format(nxt.desc),
                      *shader_format(out.desc), total, 0, -FLT_MAX, FLT_MAX)
            self.dispatch("binary", [self.bind(acc), self.bind(nxt)], [self.bind(out)], "20iff", values, total,
                          spec=(code, 1))
            acc = out
