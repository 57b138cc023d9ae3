"""Shapes of ops that keep their input's shape, and of broadcasting ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import ValueNeeded, broadcast, np_dtype, same
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
COMPARE = {10, 11, 12, 15, 16, 21, 22, 26}  # GREATER .. NOTEQUAL, LOGICALOR/XOR: int32 results in MNN


@shape_fn(OT.ReLU, OT.ReLU6, OT.PReLU, OT.ELU, OT.Selu, OT.UnaryOp, OT.Sigmoid, OT.TanH, OT.Softmax, OT.Scale,
          OT.LayerNorm, OT.GroupNorm, OT.InstanceNorm, OT.Dropout, OT.Identity, OT.BatchNorm, OT.CumSum, OT.LRN)
def same_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [descs[0]]


@shape_fn(OT.Cast)
def cast(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [descs[0].with_(dtype=np_dtype(op.main.dstT))]


@shape_fn(OT.BinaryOp)
def binary(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    shape = broadcast([d.shape for d in descs], op.name)
    kind = op.main.opType if op.main is not None else 0
    dtype = np.dtype(np.int32) if kind in COMPARE else np.result_type(descs[0].dtype, descs[1].dtype)
    main = descs[0] if descs[0].shape == shape else descs[1] if descs[1].shape == shape else descs[0]
    return [TensorDesc(shape, dtype, main.fmt)]


@shape_fn(OT.Eltwise)
def eltwise(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [same(descs[0], broadcast([d.shape for d in descs], op.name))]


@shape_fn(OT.Select, OT.Where)
def select(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    if len(descs) == 1:  # Where(cond) (TF's where): int32 [true elements, rank] coordinates, a shape from the values
        if values[0] is None:
            raise ValueNeeded(0)
        count = int(np.count_nonzero(values[0]))
        return [TensorDesc((count, len(descs[0].shape)), np.dtype(np.int32), NCHW)]
    shape = broadcast([d.shape for d in descs], op.name)
    return [TensorDesc(shape, descs[1].dtype, descs[1].fmt)]
