"""LayerNorm / RMSNorm over the innermost `len(axis)` dims with optional gamma and beta."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc


@opencl_kernel(fb.OpType.LayerNorm, formats=("NCHW", "NC4HW4", "NHWC"))
class LayerNormExecution(CLExecution):
    """One work item per normalised row (MNN: LayerNorm)."""

    algorithm = "layernorm"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        p = op.main
        if p is None or int(p.group or 1) > 1 or len(inputs) != 1 or len(outputs) != 1:
            return False
        return inputs[0].desc.shape == outputs[0].desc.shape and inputs[0].desc.fmt == outputs[0].desc.fmt

    def encode(self) -> None:
        p = self.op.main
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape
        n_axes = len(p.axis) if p.axis is not None and len(p.axis) else 1
        inner = math.prod(shape[len(shape) - n_axes:])
        rows = math.prod(shape[:len(shape) - n_axes])
        flags = 4 if getattr(p, "useRmsnorm", False) else 0
        gamma = np.ones(1, np.float32)
        beta = np.zeros(1, np.float32)
        if p.gamma is not None and len(p.gamma):
            gamma, flags = np.asarray(p.gamma, np.float32).reshape(-1), flags | 1
        if p.beta is not None and len(p.beta):
            beta, flags = np.asarray(p.beta, np.float32).reshape(-1), flags | 2
        self.algorithm = "rmsnorm" if flags & 4 else "layernorm"
        if has_channel_tail(y):
            self.fill_zero(y)
        args = [self.buf(x), self.buf(y), self.constant(gamma), self.constant(beta), tensor_desc(x), tensor_desc(y),
                np.int32(rows), np.int32(inner), np.float32(p.epsilon), np.int32(flags)]
        self.launch("norm", "layernorm", args, (rows,))
