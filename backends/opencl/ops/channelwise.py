"""Scale (per-channel multiply-add, e.g. folded BatchNorm) and PReLU (per-channel or shared slope)."""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef
from mnnpy.core.ir import NHWC

from ..backend import opencl_kernel
from ..execution import CLExecution, tensor_desc
from ..layout import nc_area

SCALE, PRELU = 0, 1


def _vectors(op: Any, channels: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale or slope, bias) per channel, or None when the sizes do not fit the channel count."""
    p = op.main
    if op.type == fb.OpType.PReLU:
        slope = np.asarray(p.slope if p.slope is not None else [], np.float32).reshape(-1)
        if slope.size == 1:
            slope = np.full(channels, slope[0], np.float32)
        return (slope, np.zeros(channels, np.float32)) if slope.size == channels else None
    scale = np.asarray(p.scaleData if p.scaleData is not None else [], np.float32).reshape(-1)
    bias = np.asarray(p.biasData, np.float32).reshape(-1) if p.biasData is not None and len(p.biasData) else \
        np.zeros(scale.size, np.float32)
    return (scale, bias) if scale.size == bias.size == channels else None


@opencl_kernel(fb.OpType.Scale, fb.OpType.PReLU, formats=("NC4HW4", "NCHW"))
class ChannelwiseExecution(CLExecution):
    """`y = x * s[c] + b[c]` or `y = x > 0 ? x : s[c] * x` (MNN: Scale, PReLU)."""

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        if op.main is None or len(inputs) != 1 or len(outputs) != 1 or inputs[0].desc != outputs[0].desc:
            return False
        if inputs[0].desc.fmt == NHWC or len(inputs[0].desc.shape) < 2:
            return False
        return _vectors(op, nc_area(inputs[0].desc.shape)[1]) is not None

    def encode(self) -> None:
        x, y = self.inputs[0], self.outputs[0]
        scale, bias = _vectors(self.op, nc_area(x.desc.shape)[1])
        mode = PRELU if self.op.type == fb.OpType.PReLU else SCALE
        self.algorithm = "prelu" if mode == PRELU else "scale"
        count = y.array.elements
        args = [self.buf(x), self.buf(y), self.constant(scale), self.constant(bias), tensor_desc(y), np.int32(mode),
                np.int32(count)]
        self.launch("channel", "channelwise", args, (count,))
