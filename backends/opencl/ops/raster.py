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


def raster_spec(op: Any) -> tuple[list[Any], list[Any], bool | None]:
    """(regions, gathers, full) of a Raster command: `op` is the pipeline's RasterSpec or a plain list of Regions
    (then `full` is None: decided by counting the covered elements)."""
    if isinstance(op, (list, tuple)):
        return list(op), [], None
    full = getattr(op, "full", None)
    return list(getattr(op, "regions", None) or []), list(getattr(op, "gathers", None) or []), full


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
