"""Raster: materialise a virtual tensor from its regions and index gathers (MNN: `VulkanRaster`).

The output is zero-filled first when the regions do not cover it; regions run one dispatch each, in order, then
gathers (`dst[dst_idx] = origin[src_idx]`, indices uploaded once per resize).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mnnpy.backends.vulkan.layout import shader_format
from mnnpy.backends.vulkan.ops._base import VulkanExecution, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.geometry.raster import is_full
from mnnpy.core.ir import NHWC, Region

RASTER_CHUNK = 16  # elements of a row per invocation (CHUNK in raster.comp)


def regions_of(op: Any) -> list[Region]:
    """The regions of a Raster command: `op` is a RasterSpec / Command (with `.regions`) or a sequence of Regions."""
    regions = getattr(op, "regions", op)
    return list(regions or [])


def origin_position(region: Region, inputs: Sequence[TensorRef]) -> int:
    """Input position of a region's origin: a position when in range, else a session tensor index."""
    if 0 <= region.origin < len(inputs):
        return region.origin
    for i, t in enumerate(inputs):
        if t.index == region.origin:
            return i
    raise ValueError(f"raster region origin {region.origin} is not an input")


def in_bounds(view_offset: int, stride: Sequence[int], size: Sequence[int], count: int) -> bool:
    """Whether every index a view touches lies in [0, count) (shaders have no bounds checks)."""
    lo = hi = view_offset
    for st, n in zip(stride, size, strict=True):
        reach = st * (n - 1)
        lo, hi = lo + min(reach, 0), hi + max(reach, 0)
    return lo >= 0 and hi < count


@vulkan_kernel(fb.OpType.Raster, formats=("NC4HW4", "NCHW"))
class VulkanRaster(VulkanExecution):
    """One dispatch per region (regions apply in list order; overlapping writes get a barrier)."""

    algorithm = "raster"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(outputs) != 1 or outputs[0].desc.fmt == NHWC or any(t.desc.fmt == NHWC for t in inputs):
            return False
        for g in getattr(op, "gathers", None) or []:
            if not 0 <= g.origin < len(inputs) or g.src_idx.size != g.dst_idx.size:
                return False
            if g.src_idx.size and not (g.src_idx.min() >= 0 and g.src_idx.max() < inputs[g.origin].desc.size
                                       and g.dst_idx.min() >= 0 and g.dst_idx.max() < outputs[0].desc.size):
                return False
        out_count = math.prod(outputs[0].desc.shape)
        try:
            for r in regions_of(op):
                src = inputs[origin_position(r, inputs)].desc
                if min(r.size) <= 0:
                    continue
                if not (in_bounds(r.src.offset, r.src.stride, r.size, math.prod(src.shape))
                        and in_bounds(r.dst.offset, r.dst.stride, r.size, out_count)):
                    return False
        except ValueError:
            return False
        return True

    def encode(self) -> None:
        out = self.outputs[0]
        dst = self.bind(out)
        regions = regions_of(self.op)
        full = getattr(self.op, "full", None)
        if not (full if full is not None else is_full(regions, math.prod(out.desc.shape))):
            count = out.desc.nbytes // 4
            self.dispatch("fill", [], [dst], "if", (count, 0.0), count)
        dst_fmt = shader_format(out.desc)
        for r in regions:
            if min(r.size) <= 0:
                continue
            src_ref = self.inputs[origin_position(r, self.inputs)]
            items = r.size[0] * r.size[1] * -(-r.size[2] // RASTER_CHUNK)
            values = (r.src.offset, *r.src.stride, r.dst.offset, *r.dst.stride, *r.size, items,
                      *shader_format(src_ref.desc), *dst_fmt)
            self.dispatch("raster", [self.bind(src_ref)], [dst], "16i", values, items)
        for g in getattr(self.op, "gathers", None) or []:
            count = int(g.src_idx.size)
            if count == 0:
                continue
            src_ref = self.inputs[g.origin]
            pairs = self.upload(np.stack([g.src_idx, g.dst_idx], axis=1).astype(np.int32))
            values = (count, *shader_format(src_ref.desc), *dst_fmt)
            self.dispatch("gather", [self.bind(src_ref), pairs], [dst], "5i", values, count)
