"""Softmax over one axis (plain layout: the axis is logical)."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape._util import norm_axis


@cpu_kernel(fb.OpType.Softmax)
class Softmax(CPUExecution):
    """y = exp(x - max) / sum, computed into the output array."""

    def on_resize(self) -> None:
        axis = self.op.main.axis if self.op.main is not None else 1
        self.axis = norm_axis(axis, len(self.x.desc.shape), self.op.name)
        self.algorithm = "softmax"

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        np.subtract(x, np.max(x, axis=self.axis, keepdims=True), out=y)
        np.exp(y, out=y)
        y /= np.sum(y, axis=self.axis, keepdims=True)
