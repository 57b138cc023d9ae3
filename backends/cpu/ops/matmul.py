"""MatMul and BatchMatMul (transposes, batch broadcasting, optional bias input)."""

from __future__ import annotations

from functools import partial

import numpy as np
from mnnpy.backends.cpu.compute.blas import lane_count, run_lanes
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel

OT = fb.OpType


@cpu_kernel(OT.MatMul, OT.BatchMatMul)
class MatMul(CPUExecution):
    """np.matmul into the output array; a constant B is transposed once in on_resize. With ``numThread`` > 1 a
    large product is split by output rows over that many lanes (BLAS itself stays at 1 thread, see blas.py)."""

    def on_resize(self) -> None:
        p = self.op.main
        mm = self.op.type == OT.MatMul
        self.ta = bool(p.transposeA if mm else p.adjX) if p is not None else False
        self.tb = bool(p.transposeB if mm else p.adjY) if p is not None else False
        b = self.inputs[1]
        self.b_const = np.ascontiguousarray(np.swapaxes(b.array, -1, -2)) if b.const and self.tb else None
        self.bias = self.inputs[2] if len(self.inputs) > 2 else None
        self.algorithm = "matmul"
        y = self.y.desc.shape
        k = self.inputs[0].desc.shape[-2 if self.ta else -1] if len(self.inputs[0].desc.shape) else 1
        threads = int(self.backend.config.get("numThread", 1) or 1)
        matrices = len(y) >= 2 and min(len(self.inputs[0].desc.shape), len(self.inputs[1].desc.shape)) >= 2
        rows = y[-2] if matrices else 1
        lanes = min(lane_count(threads, 2.0 * float(np.prod(y, dtype=np.float64)) * k), rows)
        step = -(-rows // max(lanes, 1))
        self.chunks = [(r, min(r + step, rows)) for r in range(0, rows, step)] if lanes > 1 else []
        self.threads = threads
        if self.chunks:
            self.algorithm = f"matmul:{len(self.chunks)}-lanes"

    def on_execute(self) -> None:
        a = self.inputs[0].array
        if self.ta:
            a = np.swapaxes(a, -1, -2)
        b = self.b_const
        if b is None:
            b = self.inputs[1].array
            if self.tb:
                b = np.swapaxes(b, -1, -2)
        if self.chunks:
            run_lanes([partial(self._rows, a, b, r0, r1) for r0, r1 in self.chunks], self.threads)
        else:
            np.matmul(a, b, out=self.y.array)
        if self.bias is not None:
            self.y.array += self.bias.array

    def _rows(self, a: np.ndarray, b: np.ndarray, r0: int, r1: int) -> None:
        np.matmul(a[..., r0:r1, :], b, out=self.y.array[..., r0:r1, :])
