"""Svd (thin singular value decomposition of a float matrix) and Det (MNN: CPUSvd, CPUDet)."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

from mnnpy.core.ir import NCHW
from mnnpy.core.registry import cpu_kernel


@cpu_kernel(fb.OpType.Svd, formats=(NCHW,))
class Svd(CPUExecution):
    """w, u, vt with a = u @ diag(w) @ vt; singular values descending, computed in float64 (LAPACK gesdd)."""

    def on_execute(self) -> None:
        a = np.asarray(self.x.array, np.float64)
        if not np.isfinite(a).all():
            raise ModelError(f"op {self.op.name!r} (Svd): input holds NaN or infinity")
        u, w, vt = np.linalg.svd(a, full_matrices=False)
        # a deterministic sign per singular pair: the largest-magnitude entry of each u column is positive
        flip = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(u.shape[1])])
        flip[flip == 0] = 1
        self.outputs[0].array[...] = w
        self.outputs[1].array[...] = u * flip
        self.outputs[2].array[...] = vt * flip[:, None]


@cpu_kernel(fb.OpType.Det, formats=(NCHW,))
class Det(CPUExecution):
    """Determinant of each [M, M] matrix of [..., M, M], by LU in float64 (LAPACK getrf), rounded once to float32."""

    def on_execute(self) -> None:
        self.y.array[...] = np.linalg.det(np.asarray(self.x.array, np.float64))
