"""Shapes of GatherND, GatherElements, ScatterNd, OneHot."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import ints, norm_axis, np_dtype
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


@shape_fn(OT.GatherND)
def gather_nd(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    params, indices = descs[0].shape, descs[1].shape
    k = indices[-1]
    if k > len(params):
        raise ModelError(f"op {op.name!r}: GatherND index depth {k} > rank {len(params)}")
    return [TensorDesc((*indices[:-1], *params[k:]), descs[0].dtype, NCHW)]


@shape_fn(OT.GatherElements)
def gather_elements(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc(descs[1].shape, descs[0].dtype, NCHW)]


@shape_fn(OT.ScatterNd, needs_values=(2,))
def scatter_nd(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc(tuple(ints(values[2])), descs[1].dtype, NCHW)]


@shape_fn(OT.OneHot, needs_values=(1,))
def one_hot(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    depth = ints(values[1])[0]
    shape = list(descs[0].shape)
    axis = op.main.axis if op.main is not None else -1
    shape.insert(norm_axis(axis, len(shape) + 1, op.name), depth)
    dtype = np_dtype(op.main.dType) if op.main is not None else \
        descs[2].dtype if len(descs) > 2 else np.dtype(np.float32)
    return [TensorDesc(tuple(shape), dtype, NCHW)]


@shape_fn(OT.ScatterElements)
def scatter_elements(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    return [TensorDesc(descs[0].shape, descs[0].dtype, NCHW)]


@shape_fn(OT.GridSample)
def grid_sample(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    x, grid = descs[0].shape, descs[1].shape
    if len(x) not in (4, 5) or len(grid) != len(x) or grid[-1] != len(x) - 2 or grid[0] != x[0]:
        raise ModelError(f"op {op.name!r}: GridSample needs x [N, C, (D,) H, W] and grid [N, (Do,) Ho, Wo, 2 or 3], "
                         f"got {list(x)} and {list(grid)}")
    return [TensorDesc((x[0], x[1], *grid[1:-1]), descs[0].dtype, descs[0].fmt)]
