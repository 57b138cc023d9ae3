"""Raster: materialise a tensor from regions (and index gathers) in the logical index space (MNN: CPURaster)."""

from __future__ import annotations

import math

import numpy as np
from mnnpy.backends.cpu.layout import pack_into, unpack
from mnnpy.backends.cpu.ops._common import ANY, CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.geometry.raster import region_view
from mnnpy.core.ir import NC4HW4, NHWC
from mnnpy.core.pipeline import RasterSpec
from mnnpy.core.registry import cpu_kernel


def _identity(spec: RasterSpec, size: int) -> bool:
    regs = spec.regions
    if spec.gathers or len(regs) != 1:
        return False
    r = regs[0]
    return r.count == size and r.src.offset == 0 and r.dst.offset == 0 and r.src.stride == r.dst.stride and \
        r.dst.stride[2] == 1 and (r.size[1] == 1 or r.dst.stride[1] == r.size[2]) and \
        (r.size[0] == 1 or r.dst.stride[0] == r.size[1] * r.size[2])


def _same_bytes(packed_shape: tuple[int, ...]) -> bool:
    """An NC4HW4 tensor of this logical shape has the bytes of its plain (NCHW) layout: whole 4-channel packs and
    one pixel (MatMuls converted to 1x1 convolutions: [M, K, 1, 1])."""
    return len(packed_shape) >= 2 and packed_shape[1] % 4 == 0 and math.prod(packed_shape[2:]) == 1


@cpu_kernel(fb.OpType.Raster, formats=ANY)
class Raster(CPUExecution):
    """Copies regions; layout conversions NCHW<->NC4HW4 of a whole tensor take the packed fast path."""

    def _mode(self) -> str:
        """copy (one flat copy), pack / unpack (a whole-tensor layout change) or regions, from the descriptors."""
        if len(self.inputs) != 1 or not _identity(self.op, self.y.desc.size):
            return "regions"
        x, y = self.inputs[0].desc, self.y.desc
        if x.size != y.size or NHWC in (x.fmt, y.fmt):
            return "regions"
        if x.fmt == y.fmt and (x.fmt != NC4HW4 or x.shape == y.shape):
            return "copy"
        if all(_same_bytes(d.shape) for d in (x, y) if d.fmt == NC4HW4):
            return "copy"  # NC4HW4 [N, C, 1, 1] with C % 4 == 0 is the row-major [N, C] matrix
        if x.fmt != NC4HW4 and y.fmt == NC4HW4:
            return "pack"
        if x.fmt == NC4HW4 and y.fmt != NC4HW4:  # convert, possibly followed by a reshape: same logical order
            return "unpack"
        return "regions"

    def alias_input(self) -> int | None:
        """A flat copy of one input of the same dtype repeats its bytes: the schedule may share them (MatMuls
        converted to 1x1 convolutions are wrapped in such NCHW <-> NC4HW4 [N, C%4==0, 1, 1] copies)."""
        if self._mode() != "copy":
            return None
        x, y = self.inputs[0].desc, self.y.desc
        return 0 if x.dtype == y.dtype and x.nbytes == y.nbytes else None

    def on_resize(self) -> None:
        spec = self.op
        y = self.y
        self.mode = self._mode()
        self.algorithm = f"raster-{self.mode}"
        # a whole-tensor NCHW -> NC4HW4 pack: its consumer may read the source itself (`Convolution.fuse_after`)
        self.feeds_one = self.mode == "pack"
        if self.mode != "regions":
            return
        self.src_tmp = []
        flats = []
        for r in self.inputs:
            if r.desc.fmt == NC4HW4:
                tmp = np.empty(r.desc.shape, dtype=r.desc.dtype)
                self.src_tmp.append((r, tmp))
                flats.append(tmp.reshape(-1))
            else:
                flats.append(np.asarray(r.array).reshape(-1))
        self.dst_tmp: np.ndarray | None = None
        if y.desc.fmt == NC4HW4:
            self.dst_tmp = np.zeros(y.desc.shape, dtype=y.desc.dtype)
            out = self.dst_tmp.reshape(-1)
        else:
            out = y.array.reshape(-1)
        self.out_flat = out
        self.copies = [(region_view(out, g.dst.offset, g.dst.stride, g.size),
                        region_view(flats[g.origin], g.src.offset, g.src.stride, g.size)) for g in spec.regions]
        self.gathers = [(flats[g.origin], g.src_idx, g.dst_idx, np.empty(g.src_idx.size, dtype=y.desc.dtype))
                        for g in spec.gathers]
        self.zero = not spec.full

    def on_execute(self) -> None:
        y = self.y
        if self.mode == "copy":
            np.copyto(y.array.reshape(-1), self.x.array.reshape(-1), casting="unsafe")
            return
        if self.mode == "pack":
            pack_into(self.x.array.reshape(y.desc.shape), y.array)
            return
        if self.mode == "unpack":
            unpack(self.x.array, self.x.desc.shape, out=y.array.reshape(self.x.desc.shape))
            return
        for r, tmp in self.src_tmp:
            unpack(r.array, r.desc.shape, out=tmp)
        if self.zero:
            self.out_flat.fill(0)
        for dst, src in self.copies:
            np.copyto(dst, src, casting="unsafe")
        for src, sidx, didx, tmp in self.gathers:
            np.take(src, sidx, out=tmp)
            self.out_flat[didx] = tmp
        if self.dst_tmp is not None:
            pack_into(self.dst_tmp, y.array)

    def info(self) -> dict:
        return {"algorithm": self.algorithm, "regions": len(self.op.regions), "gathers": len(self.op.gathers)}
