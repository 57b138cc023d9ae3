"""ReLU (leaky), ReLU6 (clip), PReLU, ELU and Selu on packed or plain arrays."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.compute.common import relu
from mnnpy.backends.cpu.layout import zero_tail
from mnnpy.backends.cpu.ops._common import CF, CPUExecution, channel_vector
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


@cpu_kernel(OT.ReLU, OT.ReLU6, OT.PReLU, OT.ELU, OT.Selu, formats=CF)
class Activation(CPUExecution):
    """Elementwise activations; PReLU's slope is laid out per channel once in on_resize."""

    def on_resize(self) -> None:
        t, p = self.op.type, self.op.main
        self.kind = t
        if t == OT.ReLU:
            self.slope = float(p.slope) if p is not None else 0.0
        elif t == OT.ReLU6:
            self.lo = float(p.minValue) if p is not None else 0.0
            self.hi = float(p.maxValue) if p is not None else 6.0
        elif t == OT.PReLU:
            slope = np.asarray(p.slope, dtype=np.float32)
            self.slope_arr = slope.reshape(1) if slope.size == 1 else channel_vector(slope, self.x)
        elif t == OT.ELU:
            self.alpha = float(p.alpha) if p is not None else 1.0
        else:
            self.alpha = float(p.alpha) if p is not None else 1.6732632
            self.scale = float(p.scale) if p is not None else 1.0507010
        self.algorithm = "activation"

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        t = self.kind
        if t == OT.ReLU:
            if self.slope == 0.0:
                relu(x, y)
            else:
                np.multiply(x, np.where(x > 0, 1.0, self.slope).astype(x.dtype), out=y)
        elif t == OT.ReLU6:
            np.clip(x, self.lo, self.hi, out=y)
        elif t == OT.PReLU:
            np.multiply(x, np.where(x > 0, np.float32(1), self.slope_arr), out=y)
        elif t == OT.ELU:
            np.copyto(y, np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0))))
        else:
            np.copyto(y, self.scale * np.where(x > 0, x, self.alpha * np.expm1(np.minimum(x, 0))))
        zero_tail(self.y)
