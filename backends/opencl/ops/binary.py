"""BinaryOp with numpy broadcasting and a fused ReLU; same-shape operands take a physical-element fast path."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NHWC

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc

_B = fb.BinaryOpOperation
SUPPORTED = {_B.ADD, _B.SUB, _B.MUL, _B.DIV, _B.MAX_TEMP, _B.MIN_TEMP, _B.POW, _B.REALDIV, _B.MINIMUM,
             _B.MAXIMUM, _B.FLOORDIV, _B.SquaredDifference, _B.FLOORMOD, _B.MOD, _B.ATAN2}
ACTIVATIONS = {0: 0, 1: 1, 2: 2}  # BinaryOp.activationType -> kernel activation (none, ReLU, ReLU6)


def broadcast_meta(out_shape: tuple[int, ...], a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> np.ndarray:
    """Int table for `binary_bcast`: output dims, then a's and b's logical strides per output dim (0 = broadcast)."""
    rank = max(len(out_shape), 1)
    dims = list(out_shape) or [1]
    table = [dims]
    for shape in (a_shape, b_shape):
        padded = [1] * (rank - len(shape)) + list(shape)
        strides, step = [0] * rank, 1
        for i in range(rank - 1, -1, -1):
            strides[i] = step if padded[i] != 1 else 0
            step *= padded[i]
        table.append(strides)
    return np.asarray(table, dtype=np.int32).reshape(-1)


def same_order(refs: list[TensorRef]) -> bool:
    """Whether all tensors share one logical order (NHWC tensors cannot mix with NCHW/NC4HW4 ones)."""
    return len({r.desc.fmt == NHWC for r in refs}) == 1


@opencl_kernel(fb.OpType.BinaryOp, formats=("NC4HW4", "NCHW", "NHWC"))
class BinaryExecution(CLExecution):
    """`y = act(a op b)` with broadcasting (MNN: BinaryOp)."""

    algorithm = "binary"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        main = op.main
        if len(inputs) != 2 or len(outputs) != 1 or main is None:
            return False
        if main.opType not in SUPPORTED or main.activationType not in ACTIVATIONS:
            return False
        try:
            shape = np.broadcast_shapes(inputs[0].desc.shape, inputs[1].desc.shape)
        except ValueError:
            return False
        return tuple(shape) == outputs[0].desc.shape and same_order([*inputs, *outputs])

    def encode(self) -> None:
        a, b = self.inputs
        y = self.outputs[0]
        op = np.int32(self.op.main.opType)
        act = np.int32(ACTIVATIONS[self.op.main.activationType])
        if a.desc == y.desc and b.desc == y.desc:
            count = y.array.elements
            args = [self.buf(a), self.buf(b), self.buf(y), tensor_desc(y), op, act, np.int32(count)]
            self.launch("binary", "binary_same", args, (count,), options=f"-DBINARY_OP={int(op)}")
            return
        if has_channel_tail(y):
            self.fill_zero(y)
        meta = broadcast_meta(y.desc.shape, a.desc.shape, b.desc.shape)
        rank = max(len(y.desc.shape), 1)
        count = max(math.prod(y.desc.shape), 1)
        args = [self.buf(a), self.buf(b), self.buf(y), tensor_desc(a), tensor_desc(b), tensor_desc(y), op, act,
                np.int32(rank), self.constant(meta), np.int32(count)]
        self.launch("binary", "binary_bcast", args, (count,), options=f"-DBINARY_OP={int(op)}")
