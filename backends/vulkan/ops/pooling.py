"""Pooling (max / average, global, CAFFE / VALID / SAME padding) on NC4HW4 tensors (MNN: `VulkanPool`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mnnpy.backends.vulkan.ops._base import VulkanExecution, op_param, vulkan_kernel
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NC4HW4

COUNT_DEFAULT, COUNT_INCLUDE = 0, 1


def pool_geometry(pool: Any, in_hw: tuple[int, int], out_hw: tuple[int, int]) -> tuple[int, ...]:
    """(kw, kh, sx, sy, pad_x, pad_y, include_pad) for one input/output size, resolved as MNN's CPUPool does."""
    h, w = in_hw
    oh, ow = out_hw
    if pool.isGlobal:
        return w, h, 1, 1, 0, 0, 0
    kw, kh = max(int(pool.kernelX), 1), max(int(pool.kernelY), 1)
    sx, sy = max(int(pool.strideX), 1), max(int(pool.strideY), 1)
    pad_type = int(pool.padType)
    has_pads = pool.pads is not None and len(pool.pads) >= 2
    if pad_type == fb.PoolPadType.SAME:
        px = max(0, (ow - 1) * sx + kw - w) // 2
        py = max(0, (oh - 1) * sy + kh - h) // 2
    elif pad_type == fb.PoolPadType.VALID:
        px = py = 0
    elif has_pads:
        py, px = int(pool.pads[0]), int(pool.pads[1])
    else:
        px, py = int(pool.padX), int(pool.padY)
    count = int(pool.countType)
    if count == COUNT_DEFAULT:
        caffe = pad_type == fb.PoolPadType.CAFFE and not has_pads
        count = COUNT_INCLUDE if caffe else 2
    return kw, kh, sx, sy, px, py, int(count == COUNT_INCLUDE)


@vulkan_kernel(fb.OpType.Pooling, fb.OpType.Pooling3D, formats=("NC4HW4",))
class VulkanPooling(VulkanExecution):
    """One invocation per output texel (4 channels). Pooling3D runs only as a global pool (as MNN's converter emits
    it for GlobalAveragePool / GlobalMaxPool): the spatial dims are flattened into one row."""

    algorithm = "pooling"

    @classmethod
    def supports(cls, op: Any, inputs: Sequence[TensorRef], outputs: Sequence[TensorRef]) -> bool:
        if len(inputs) != 1 or len(outputs) != 1 or op_param(op) is None:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        if x.fmt != NC4HW4 or y.fmt != NC4HW4 or int(op_param(op).type) not in (0, 1):
            return False
        if int(op.type) == fb.OpType.Pooling3D:
            return len(x.shape) >= 3 and math.prod(y.shape[2:]) == 1 and y.shape[:2] == x.shape[:2]
        return len(x.shape) == len(y.shape) == 4

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        pool = op_param(self.op)
        if int(self.op.type) == fb.OpType.Pooling3D:
            n, c = x.desc.shape[:2]
            h, w, oh, ow = 1, math.prod(x.desc.shape[2:]), 1, 1
            kw, kh, sx, sy, px, py, include = w, 1, 1, 1, 0, 0, 0
        else:
            n, c, h, w = x.desc.shape
            oh, ow = y.desc.shape[2:]
            kw, kh, sx, sy, px, py, include = pool_geometry(pool, (h, w), (oh, ow))
        planes = n * ((c + 3) // 4)
        total = planes * oh * ow
        values = (w, h, planes, 0, ow, oh, total, int(pool.type), kw, kh, sx, sy, px, py, include, 0)
        self.dispatch("pooling", [self.bind(x)], [self.bind(y)], "16i", values, total)
