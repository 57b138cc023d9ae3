"""MatMul / BatchMatMul on row-major tensors, with transposes as strides and batch broadcasting (MNN: `VulkanMatMul`).

Inputs: A, B and an optional bias (third input). Batch dims must be equal or one operand's batch must be 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NCHW


def _flags(op: Any) -> tuple[bool, bool]:
    param = op_param(op)
    if int(getattr(op, "type", 0)) == fb.OpType.BatchMatMul:
        return bool(getattr(param, "adjX", False)), bool(getattr(param, "adjY", False))
    return bool(getattr(param, "transposeA", False)), bool(getattr(param, "transposeB", False))


def _batch(shape: tuple[int, ...]) -> int:
    return math.prod(shape[:-2]) if len(shape) > 2 else 1


@vulkan_kernel(fb.OpType.MatMul, fb.OpType.BatchMatMul, formats=("NCHW",))
class VulkanMatMul(VulkanExecution):
    """One invocation per 4 output columns (lavapipe prefers simple loops to shared-memory tiles)."""

    algorithm = "matmul"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) not in (2, 3) or len(outputs) != 1:
            return False
        a, b, c = inputs[0].desc, inputs[1].desc, outputs[0].desc
        if any(d.fmt != NCHW or len(d.shape) < 2 for d in (a, b, c)):
            return False
        ba, bb, bc = _batch(a.shape), _batch(b.shape), _batch(c.shape)
        return ba in (1, bc) and bb in (1, bc) and (len(inputs) == 2 or inputs[2].desc.size == c.shape[-1])

    def encode(self) -> None:
        a, b, c = self.inputs[0], self.inputs[1], self.outputs[0]
        ta, tb = _flags(self.op)
        m, n = c.desc.shape[-2:]
        k = a.desc.shape[-2] if ta else a.desc.shape[-1]
        a_stride = (1, m) if ta else (k, 1)      # (per m, per k)
        b_stride = (1, k) if tb else (n, 1)      # (per k, per n)
        a_batch = m * k if _batch(a.desc.shape) > 1 else 0
        b_batch = k * n if _batch(b.desc.shape) > 1 else 0
        total = _batch(c.desc.shape) * m * -(-n // 4)  # 4 output columns per invocation
        if len(self.inputs) == 3:
            bias = self.bind(self.inputs[2])
        else:
            bias = self.upload(np.zeros(4), self.backend.tensor_dtype)  # read as a tensor: tensor storage type
        values = (m, n, k, total, a_batch, *a_stride, int(len(self.inputs) == 3), b_batch, *b_stride, 0)
        self.dispatch("matmul", [self.bind(a), self.bind(b), bias], [self.bind(c)], "12i", values, total)
