"""Pooling (max / average / global) on NC4HW4 feature maps."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.conv_geometry import pool2d_pads
from mnnpy.core.ir import NC4HW4

from ..backend import opencl_kernel
from ..execution import CLExecution, int4

INCLUDE_PADDING, EXCLUDE_PADDING = 1, 2


@opencl_kernel(fb.OpType.Pooling, fb.OpType.Pooling3D, formats=("NC4HW4",))
class PoolingExecution(CLExecution):
    """2-D max / average pooling, Caffe-style windows (MNN: Pooling); Pooling3D only as global pooling of a 4-D
    map (what MNN's converter emits for ONNX GlobalAveragePool)."""

    algorithm = "pool"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if op.main is None or len(inputs) != 1 or len(outputs) != 1 or op.main.type not in (0, 1):
            return False
        if op.type == fb.OpType.Pooling3D and not op.main.isGlobal:
            return False
        x, y = inputs[0].desc, outputs[0].desc
        return x.fmt == y.fmt == NC4HW4 and len(x.shape) == len(y.shape) == 4 and x.shape[:2] == y.shape[:2]

    def encode(self) -> None:
        p = self.op.main
        x, y = self.inputs[0], self.outputs[0]
        n, c, h, w = x.desc.shape
        oh, ow = y.desc.shape[2:]
        if p.isGlobal or self.op.type == fb.OpType.Pooling3D:
            kernel, stride, pads = (h, w), (1, 1), (0, 0, 0, 0)
        else:
            kernel = (int(p.kernelY) or 1, int(p.kernelX) or 1)
            stride = (int(p.strideY) or 1, int(p.strideX) or 1)
            pads = pool2d_pads(p, (h, w), (oh, ow))
        # As the CPU backend: only INCLUDE_PADDING counts the explicit pads; DEFAULT and EXCLUDE_PADDING do not.
        count = INCLUDE_PADDING if int(getattr(p, "countType", 0)) == INCLUDE_PADDING else EXCLUDE_PADDING
        c4 = -(-c // 4)
        args = [self.buf(x), self.buf(y), int4(n, h, w, c4), int4(oh, ow), int4(*kernel, *stride), int4(*pads),
                np.int32(p.type), np.int32(count)]
        self.launch("pooling", "pool", args, (ow, oh, c4 * n))
