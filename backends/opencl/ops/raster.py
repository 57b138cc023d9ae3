"""Raster: the general region copy every geometry op lowers to (MNN: RasterExecution).

Each region copies `size[3]` elements between two Views in logical index space; the kernel maps logical indices
to each buffer's layout (plain or NC4HW4). Region origins are positions in the command's inputs. Index gathers
(mappings no region expresses) run as one gather launch each. The output is zero-filled first unless the regions
cover it exactly and it has no padded channel lanes. Plain-to-plain regions with unit x strides take a 4-wide path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, int4, tensor_desc
from ..layout import nc_area


def raster_spec(op: Any) -> tuple[list[Any], list[Any], bool | None]:
    """(regions, gathers, full) of a Raster command: `op` is the pipeline's RasterSpec or a plain list of Regions
    (then `full` is None: decided by counting the covered elements)."""
    if isinstance(op, (list, tuple)):
        return list(op), [], None
    full = getattr(op, "full", None)
    return list(getattr(op, "regions", None) or []), list(getattr(op, "gathers", None) or []), full


def is_identity(region: Any, size: int) -> bool:
    """Whether a region copies a whole tensor element i to element i (a pure layout conversion)."""
    if region.count != size or region.src.offset != 0 or region.dst.offset != 0:
        return False
    inner = 1
    for dim in (2, 1, 0):
        extent = int(region.size[dim])
        if extent > 1 and (region.src.stride[dim] != inner or region.dst.stride[dim] != inner):
            return False
        inner *= extent
    return True


@opencl_kernel(fb.OpType.Raster, formats=("NC4HW4", "NCHW", "NHWC"))
class RasterExecution(CLExecution):
    """One launch per region (after an optional zero fill)."""

    algorithm = "raster"
    dtypes = (np.dtype(np.float32), np.dtype(np.int32))

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        regions, gathers, _ = raster_spec(op)
        if len(outputs) != 1 or any(t.desc.dtype != outputs[0].desc.dtype for t in inputs):
            return False
        return all(0 <= int(r.origin) < len(inputs) for r in (*regions, *gathers))

    def encode(self) -> None:
        y = self.outputs[0]
        regions, gathers, full = raster_spec(self.op)
        if self._convert_layout(regions, gathers):
            return
        if full is None:
            full = not gathers and sum(math.prod(r.size) for r in regions) == math.prod(y.desc.shape)
        if not full or has_channel_tail(y):
            self.fill_zero(y)
        ydesc = tensor_desc(y)
        options = "-DT=int" if y.desc.dtype == np.int32 else ""
        for region in regions:
            x = self.inputs[int(region.origin)]
            xdesc = tensor_desc(x)
            sv = int4(region.src.offset, *region.src.stride)
            dv = int4(region.dst.offset, *region.dst.stride)
            z, yy, xx = (int(s) for s in region.size)
            size = int4(z, yy, xx)
            plain = x.desc.fmt != NC4HW4 and y.desc.fmt != NC4HW4
            if plain and region.src.stride[2] == 1 and region.dst.stride[2] == 1 and xx >= 4:
                args = [self.buf(x), self.buf(y), sv, dv, size]
                self.launch("raster", "raster_plain", args, (-(-xx // 4), yy, z), options=options)
            else:
                args = [self.buf(x), self.buf(y), xdesc, ydesc, sv, dv, size]
                self.launch("raster", "raster", args, (xx, yy, z), options=options)

        for gather in gathers:
            x = self.inputs[int(gather.origin)]
            count = int(np.asarray(gather.dst_idx).size)
            src_idx = self.constant(np.asarray(gather.src_idx, dtype=np.int32).reshape(-1))
            dst_idx = self.constant(np.asarray(gather.dst_idx, dtype=np.int32).reshape(-1))
            args = [self.buf(x), self.buf(y), tensor_desc(x), ydesc, src_idx, dst_idx, np.int32(count)]
            self.launch("raster", "gather", args, (count,), options=options)

    def _convert_layout(self, regions: list[Any], gathers: list[Any]) -> bool:
        """Record the vectorised pack / unpack kernel for a whole-tensor NCHW <-> NC4HW4 conversion, if it is one."""
        y = self.outputs[0]
        if gathers or len(regions) != 1 or not is_identity(regions[0], y.desc.size):
            return False
        x = self.inputs[int(regions[0].origin)]
        fmts = (x.desc.fmt, y.desc.fmt)
        if x.desc.shape != y.desc.shape or fmts not in (("NCHW", NC4HW4), (NC4HW4, "NCHW")):
            return False
        n, c, area = nc_area(y.desc.shape)
        name = "pack_nc4hw4" if fmts[1] == NC4HW4 else "unpack_nc4hw4"
        self.algorithm = f"raster-{name.split('_')[0]}"
        options = "-DT=int" if y.desc.dtype == np.int32 else ""
        args = [self.buf(x), self.buf(y), np.int32(n), np.int32(c), np.int32(area)]
        self.launch("raster", name, args, (area, -(-c // 4) * n), options=options)
        return True
