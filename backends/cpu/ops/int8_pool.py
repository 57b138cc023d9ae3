"""QuantizedMaxPool (op 58) and global QuantizedAvgPool (op 52) as mnnpy's int8 pooling: the window maximum of the
int8 codes, or the mean of each plane as MNN's x86 int8 average pooling computes it (``MNNAvgPoolUint8``: the sum of
``x + 128`` times ``2**24 // count`` in uint32, shifted right by 24, minus 128; a mean that is a whole number comes
out one lower). Input and output share scale
and zero point, so nothing is requantised. In mnnpy's lowered nets they carry the float op's Pool / Pool3D table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import cpu_kernel, shape_fn
from mnnpy.core.shape import conv as conv_shapes
from mnnpy.core.shape._util import ints

OT = fb.OpType


@shape_fn(OT.QuantizedMaxPool)
def max_pool_int8_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Same geometry as Pooling; int8 output in plain NCHW."""
    if not isinstance(op.main, fb.PoolT):
        raise ModelError(f"op {op.name!r}: int8 max pooling needs a Pool table")
    out = conv_shapes.pool(op, [descs[0].with_(dtype=np.float32)], values)[0]
    return [TensorDesc(out.shape, np.dtype(np.int8), NCHW)]


def _pads(p: Any, size: int, out: int, k: int, s: int, axis: int) -> tuple[int, int]:
    """Leading and trailing padding of one axis so that ``out`` windows fit (SAME/VALID/explicit/ceil mode)."""
    if p.padType == 2:
        total = max((out - 1) * s + k - size, 0)
        return total // 2, total - total // 2
    if p.padType == 1:
        return 0, max((out - 1) * s + k - size, 0)
    pads = ints(p.pads)
    lead = pads[axis] if len(pads) == 4 else (p.padY if axis == 0 else p.padX)
    return lead, max((out - 1) * s + k - size - lead, 0)


@cpu_kernel(OT.QuantizedMaxPool, formats=(NCHW,))
class MaxPoolInt8(CPUExecution):
    """Max over strided views of the input padded with the lowest code."""

    def on_resize(self) -> None:
        p = self.op.main
        n, c, h, w = self.x.desc.shape
        oh, ow = self.y.desc.shape[2:]
        if p.isGlobal:
            self.k, self.s, self.pad = (h, w), (1, 1), ((0, 0), (0, 0))
        else:
            self.k, self.s = (p.kernelY, p.kernelX), (p.strideY, p.strideX)
            self.pad = (_pads(p, h, oh, p.kernelY, p.strideY, 0), _pads(p, w, ow, p.kernelX, p.strideX, 1))
        (t, b), (left, r) = self.pad
        self.buf = np.full((n, c, h + t + b, w + left + r), -128, np.int8) if t or b or left or r else None
        self.oh, self.ow = oh, ow

    def on_execute(self) -> None:
        x = self.x.array
        if self.op.main.isGlobal:
            np.max(x, axis=(2, 3), keepdims=True, out=self.y.array)
            return
        if self.buf is not None:
            (t, _), (left, _) = self.pad
            self.buf[:, :, t:t + x.shape[2], left:left + x.shape[3]] = x
            x = self.buf
        out = self.y.array
        (ky, kx), (sy, sx) = self.k, self.s
        first = True
        for dy in range(ky):
            for dx in range(kx):
                view = x[:, :, dy:dy + (self.oh - 1) * sy + 1:sy, dx:dx + (self.ow - 1) * sx + 1:sx]
                if first:
                    out[...] = view
                    first = False
                else:
                    np.maximum(out, view, out=out)

    def info(self) -> dict[str, Any]:
        return {"algorithm": "int8-maxpool"}


@shape_fn(OT.QuantizedAvgPool)
def avg_pool_int8_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Global average pooling only: [N, C, 1, ...], int8."""
    if not getattr(op.main, "isGlobal", False):
        raise ModelError(f"op {op.name!r}: int8 average pooling is implemented for global pools only")
    x = descs[0]
    return [TensorDesc((x.shape[0], x.shape[1]) + (1,) * (len(x.shape) - 2), np.dtype(np.int8), NCHW)]


@cpu_kernel(OT.QuantizedAvgPool, formats=(NCHW,))
class GlobalAvgPoolInt8(CPUExecution):
    """MNN's fixed-point mean of the int8 codes per channel (see the module docstring)."""

    def on_resize(self) -> None:
        shape = self.x.desc.shape
        self.axes = tuple(range(2, len(shape)))
        self.count = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        self.factor = np.uint64((1 << 24) // self.count)

    def on_execute(self) -> None:
        total = np.sum(self.x.array, axis=self.axes, dtype=np.int64, keepdims=True) + 128 * self.count
        scaled = (total.astype(np.uint64) * self.factor) & np.uint64(0xFFFFFFFF)  # uint32 product, as MNN
        self.y.array[...] = ((scaled >> np.uint64(24)) & np.uint64(0xFF)).astype(np.int64) - 128

    def info(self) -> dict[str, Any]:
        return {"algorithm": "int8-global-avgpool"}
