"""BinaryOp with numpy broadcasting, computed in the logical index space (inputs and output in any formats)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import FLT_MAX, VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NHWC

SUPPORTED = frozenset({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20, 22, 29})
MAX_RANK = 4


def broadcast_plan(out_shape: tuple[int, ...], a_shape: tuple[int, ...],
                   b_shape: tuple[int, ...]) -> tuple[list[int], list[int], list[int]] | None:
    """Output dims and per-input element strides (0 = broadcast), merged to at most 4 dims; None if impossible."""
    rank = max(len(out_shape), 1)
    dims = [1] * (rank - len(out_shape)) + list(out_shape)
    strides = []
    for shape in (a_shape, b_shape):
        padded = [1] * (rank - len(shape)) + list(shape)
        if len(shape) > rank or any(s not in (1, d) for s, d in zip(padded, dims, strict=True)):
            return None
        row, acc = [0] * rank, 1
        for i in range(rank - 1, -1, -1):
            row[i] = 0 if padded[i] == 1 else acc
            acc *= padded[i]
        strides.append(row)
    m_dims, m_a, m_b = [dims[0]], [strides[0][0]], [strides[1][0]]
    for d, sa, sb in zip(dims[1:], strides[0][1:], strides[1][1:], strict=True):
        if m_a[-1] == sa * d and m_b[-1] == sb * d:
            m_dims[-1] *= d
            m_a[-1], m_b[-1] = sa, sb
        else:
            m_dims.append(d)
            m_a.append(sa)
            m_b.append(sb)
    if len(m_dims) > MAX_RANK:
        return None
    pad = MAX_RANK - len(m_dims)
    return [1] * pad + m_dims, [0] * pad + m_a, [0] * pad + m_b


@vulkan_kernel(fb.OpType.BinaryOp, formats=("NC4HW4", "NCHW", "NHWC"))
class VulkanBinary(VulkanExecution):
    """out = a (op) b with broadcasting; optional fused ReLU (`activationType == 1`)."""

    algorithm = "binary"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) != 2 or len(outputs) != 1:
            return False
        nhwc = {t.desc.fmt == NHWC for t in (*inputs, *outputs)}
        if len(nhwc) != 1 or int(getattr(op_param(op), "opType", -1)) not in SUPPORTED:
            return False
        return broadcast_plan(outputs[0].desc.shape, inputs[0].desc.shape, inputs[1].desc.shape) is not None

    def encode(self) -> None:
        a, b, out = self.inputs[0], self.inputs[1], self.outputs[0]
        param = op_param(self.op)
        plan = broadcast_plan(out.desc.shape, a.desc.shape, b.desc.shape)
        assert plan is not None
        dims, sa, sb = plan
        total = math.prod(out.desc.shape)
        fmts = (*shader_format(a.desc), *shader_format(b.desc), *shader_format(out.desc))
        if a.desc == b.desc == out.desc:  # same layout, no broadcast: run over the physical elements directly
            total = math.prod(out.desc.physical_shape)
            dims, sa, sb, fmts = [1, 1, 1, total], [0, 0, 0, 1], [0, 0, 0, 1], (0,) * 6
        rank = MAX_RANK - next((i for i, d in enumerate(dims) if d != 1), MAX_RANK - 1)
        lo = 0.0 if int(getattr(param, "activationType", 0) or 0) == 1 else -FLT_MAX
        values = (*dims, *sa, *sb, *fmts, total, 0, lo, FLT_MAX)
        self.dispatch("binary", [self.bind(a), self.bind(b)], [self.bind(out)], "20iff", values, total,
                      spec=(int(param.opType), rank))
