"""Caffe's Crop as regions: a box of input 0 (offsets from `axis` on, sizes of input 1) copied out contiguously."""

from __future__ import annotations

from typing import Any

from mnnpy.core.geometry.slicing import box_regions
from mnnpy.core.ir import Region, TensorDesc
from mnnpy.core.registry import geometry_fn
from mnnpy.core.shape.ssd import crop_box
from mnnpy.schema import mnn_generated as fb


@geometry_fn(fb.OpType.Crop)
def crop(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    box = crop_box(op, ins[0].shape, ins[1].shape)
    return [box_regions(ins[0].shape, [(start, size, 1) for start, size in box])]
