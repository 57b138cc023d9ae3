"""MatMul and BatchMatMul (transposes, batch broadcasting, optional bias input)."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


@cpu_kernel(OT.MatMul, OT.BatchMatMul)
class MatMul(CPUExecution):
    """np.matmul into the output array; a constant B is transposed once in on_resize."""

    def on_resize(self) -> None:
        p = self.op.main
        mm = self.op.type == OT.MatMul
        self.ta = bool(p.transposeA if mm else p.adjX) if p is not None else False
        self.tb = bool(p.transposeB if mm else p.adjY) if p is not None else False
        b = self.inputs[1]
        self.b_const = np.ascontiguousarray(np.swapaxes(b.array, -1, -2)) if b.const and self.tb else None
        self.bias = self.inputs[2] if len(self.inputs) > 2 else None
        self.algorithm = "matmul"

    def on_execute(self) -> None:
        a = self.inputs[0].array
        if self.ta:
            a = np.swapaxes(a, -1, -2)
        b = self.b_const
        if b is None:
            b = self.inputs[1].array
            if self.tb:
                b = np.swapaxes(b, -1, -2)
        np.matmul(a, b, out=self.y.array)
        if self.bias is not None:
            self.y.array += self.bias.array
