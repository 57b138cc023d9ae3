"""Permute/Transpose, the reshape family and ConvertTensor as regions."""

from __future__ import annotations

from typing import Any

from mnnpy.core.geometry._regions import full_copy, strided_regions, strides_of
from mnnpy.core.ir import NHWC, Region, TensorDesc
from mnnpy.core.registry import geometry_fn
from mnnpy.core.shape.tensor_ops import channel_move, permutation
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType


def permute_regions(shape: tuple[int, ...], perm: list[int], origin: int = 0) -> list[Region]:
    """Regions of `np.transpose(x, perm)` for x of `shape` (MNN: ComputePermuteRegion)."""
    src_st = strides_of(shape)
    out_shape = [shape[p] for p in perm]
    return strided_regions(out_shape, [src_st[p] for p in perm], strides_of(out_shape), 0, 0, origin)


@geometry_fn(OT.Permute, OT.Transpose)
def permute(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    return [permute_regions(ins[0].shape, permutation(op, ins[0], values))]


@geometry_fn(OT.Reshape, OT.Squeeze, OT.Unsqueeze, OT.ExpandDims, OT.Flatten, OT.Identity, OT.Dropout)
def full_ref(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    return [full_copy(outs[0].size, 0)]


@geometry_fn(OT.ConvertTensor)
def convert(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    src, dst = ins[0], outs[0]
    perm = channel_move(len(src.shape), src.fmt == NHWC, dst.fmt == NHWC)
    if perm is not None:
        return [permute_regions(src.shape, perm)]
    return [full_copy(dst.size, 0)]
