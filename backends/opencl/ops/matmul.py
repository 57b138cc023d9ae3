"""MatMul / BatchMatMul on plain buffers: transposes by strides, broadcast batches, optional bias input."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, int4


def _flags(op: Any) -> tuple[bool, bool]:
    main = op.main
    if main is None:
        return False, False
    if op.type == fb.OpType.BatchMatMul:
        return bool(main.adjX), bool(main.adjY)
    return bool(main.transposeA), bool(main.transposeB)


def plan(op: Any, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, int, int, int, int, int] | None:
    """(M, N, K, batch, a batch stride, b batch stride) of a product, or None when unsupported."""
    if len(a) < 2 or len(b) < 2:
        return None
    ta, tb = _flags(op)
    m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if k != kb:
        return None
    try:
        batch_shape = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return None
    batch = math.prod(batch_shape)
    strides = []
    for shape in (a, b):
        own = math.prod(shape[:-2])
        if own == 1:
            strides.append(0)
        elif tuple(shape[:-2]) == tuple(batch_shape) or (len(shape) - 2 < len(batch_shape) and own == batch):
            strides.append(shape[-1] * shape[-2])
        else:
            return None
    return m, n, k, batch, strides[0], strides[1]


@opencl_kernel(fb.OpType.MatMul, fb.OpType.BatchMatMul, formats=("NCHW",))
class MatMulExecution(CLExecution):
    """`C = A @ B (+ bias)` with transposes (MNN: MatMul, BatchMatMul)."""

    algorithm = "matmul_4x4"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if len(inputs) not in (2, 3) or len(outputs) != 1:
            return False
        if any(t.desc.fmt == NC4HW4 for t in (*inputs, *outputs)):
            return False
        p = plan(op, inputs[0].desc.shape, inputs[1].desc.shape)
        if p is None or math.prod(outputs[0].desc.shape) != p[0] * p[1] * p[3]:
            return False
        return len(inputs) == 2 or inputs[2].desc.size == p[1]

    def encode(self) -> None:
        a, b = self.inputs[:2]
        y = self.outputs[0]
        m, n, k, batch, sba, sbb = plan(self.op, a.desc.shape, b.desc.shape)
        ta, tb = _flags(self.op)
        sa = int4(sba, 1 if ta else k, m if ta else 1, batch)
        sb = int4(sbb, 1 if tb else n, k if tb else 1)
        has_bias = len(self.inputs) == 3
        bias = self.buf(self.inputs[2]) if has_bias else self.constant(np.zeros(1, np.float32))
        args = [self.buf(a), self.buf(b), bias, self.buf(y), int4(m, n, k, int(has_bias)), sa, sb]
        self.launch("matmul", "matmul", args, (-(-n // 4), -(-m // 4), batch))
