"""GatherV2 with constant indices: one region per index (MNN uses plain regions for small constant gathers)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mnnpy.core.geometry._regions import strided_regions
from mnnpy.core.ir import Region, TensorDesc
from mnnpy.core.registry import geometry_fn
from mnnpy.core.shape.tensor_ops import gather_axis
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
MAX_INDICES = 64


@geometry_fn(OT.GatherV2, OT.Gather)
def gather(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]] | None:
    if values[1] is None or values[1].size > MAX_INDICES:
        return None
    params = ins[0].shape
    axis = gather_axis(op, ins[0], values)
    outer, dim, inner = math.prod(params[:axis]), params[axis], math.prod(params[axis + 1:])
    idx = np.asarray(values[1]).astype(np.int64).ravel()
    idx = np.where(idx < 0, idx + dim, idx)
    count = idx.size
    regions: list[Region] = []
    for j, i in enumerate(idx.tolist()):
        regions += strided_regions([outer, inner], [dim * inner, 1], [count * inner, 1], i * inner, j * inner, 0)
    return [regions]
