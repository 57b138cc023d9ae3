"""MNN's GroupNorm on OpenCL: one work item per (group, batch), any layout (kernels/groupnorm.cl)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.backend import TensorRef

from ..backend import opencl_kernel
from ..execution import CLExecution, has_channel_tail, tensor_desc


@opencl_kernel(fb.OpType.GroupNorm, formats=("NC4HW4", "NCHW"))
class GroupNormExecution(CLExecution):
    """Normalise over channel groups and the spatial area, then gamma/beta per channel, optional swish."""

    algorithm = "groupnorm"

    @classmethod
    def supports(cls, op: Any, inputs: list[TensorRef], outputs: list[TensorRef]) -> bool:
        p = op.main
        shape = inputs[0].desc.shape
        if p is None or len(inputs) != 1 or len(shape) < 2 or shape[1] % max(int(p.group or 1), 1):
            return False
        return shape == outputs[0].desc.shape

    def encode(self) -> None:
        p = self.op.main
        x, y = self.inputs[0], self.outputs[0]
        shape = x.desc.shape
        groups = max(int(p.group or 1), 1)
        flags = 4 if getattr(p, "bSwish", 0) else 0
        gamma, beta = np.ones(1, np.float32), np.zeros(1, np.float32)
        if p.gamma is not None and len(p.gamma):
            gamma, flags = np.asarray(p.gamma, np.float32).reshape(-1), flags | 1
        if p.beta is not None and len(p.beta):
            beta, flags = np.asarray(p.beta, np.float32).reshape(-1), flags | 2
        if has_channel_tail(y):
            self.fill_zero(y)
        args = [self.buf(x), self.buf(y), self.constant(gamma), self.constant(beta), tensor_desc(x), tensor_desc(y),
                np.int32(shape[1]), np.int32(groups), np.int32(math.prod(shape[2:])), np.float32(p.epsilon),
                np.int32(flags)]
        self.launch("groupnorm", "groupnorm", args, (groups, shape[0]))
