"""Raster: the general region copy every geometry op lowers to (MNN: RasterExecution).

Each region copies `size[3]` elements between two Views in logical index space; the kernel maps logical indices to
each buffer's layout (plain or NC4HW4). The output is zero-filled first unless the regions cover it exactly and it
has no padded channel lanes. Plain-to-plain regions with unit x strides take a 4-wide fast path.
"""

from __future__ import annotations

import math
from typing import Any

from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, int4, tensor_desc


def command_regions(op: Any) -> list[Any]:
    """The regions of a Raster command: `op` is a Command (with `.regions`), a list of Regions, or an OpT whose
    `main` holds them."""
    if isinstance(op, (list, tuple)):
        return list(op)
    regions = getattr(op, "regions", None)
    if regions is None and getattr(op, "main", None) is not None:
        regions = getattr(op.main, "regions", None)
    return list(regions or [])


def origin_ref(region: Any, inputs: list[TensorRef]) -> TensorRef | None:
    """The input a region reads: matched by tensor index first, else taken as an input position."""
    origin = int(region.origin)
    for ref in inputs:
        if ref.index == origin:
            return ref
    if 0 <= origin < len(inputs):
        return inputs[origin]
    return None


@opencl_kernel(fb.OpType.Raster, formats=("NC4HW4", "NCHW", "NHWC"))
class RasterExecution(CLExecution):
    """One launch per region (after an optional zero fill)."""

    algorithm = "raster"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        regions = command_regions(op)
        return len(outputs) == 1 and all(origin_ref(r, inputs) is not None for r in regions)

    def encode(self) -> None:
        y = self.outputs[0]
        regions = command_regions(self.op)
        covered = sum(math.prod(r.size) for r in regions)
        if covered != math.prod(y.desc.shape) or has_channel_tail(y):
            self.fill_zero(y)
        ydesc = tensor_desc(y)
        for region in regions:
            x = origin_ref(region, self.inputs)
            xdesc = tensor_desc(x)
            sv = int4(region.src.offset, *region.src.stride)
            dv = int4(region.dst.offset, *region.dst.stride)
            z, yy, xx = (int(s) for s in region.size)
            size = int4(z, yy, xx)
            plain = x.desc.fmt != NC4HW4 and y.desc.fmt != NC4HW4
            if plain and region.src.stride[2] == 1 and region.dst.stride[2] == 1 and xx >= 4:
                args = [self.buf(x), self.buf(y), sv, dv, size]
                self.launch("raster", "raster_plain", args, (-(-xx // 4), yy, z))
            else:
                args = [self.buf(x), self.buf(y), xdesc, ydesc, sv, dv, size]
                self.launch("raster", "raster", args, (xx, yy, z))

