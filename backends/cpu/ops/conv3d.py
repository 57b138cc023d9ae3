"""Convolution3D (MNN: `CPUConvolution3D`) on plain NCDHW arrays: windows of the padded input x weights (tensordot)."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from numpy.lib.stride_tricks import sliding_window_view

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape._util import ints


@cpu_kernel(fb.OpType.Convolution3D)
class Convolution3D(CPUExecution):
    """Weights [oc, ic, kd, kh, kw] from the op; output = sum over (ic, kd, kh, kw) of strided input windows."""

    def on_resize(self) -> None:
        c = self.op.main.common
        self.kernels = ints(c.kernels)
        self.strides = ints(c.strides) or [1, 1, 1]
        self.dilates = ints(c.dilates) or [1, 1, 1]
        self.pads = ints(c.pads) or [0, 0, 0]
        oc, ic = c.outputCount, c.inputCount
        self.weight = np.asarray(self.op.main.weight, np.float32).reshape(oc, ic, *self.kernels)
        bias = self.op.main.bias
        self.bias = np.zeros(oc, np.float32) if bias is None else np.asarray(bias, np.float32).reshape(oc)
        self.relu, self.relu6 = bool(c.relu), bool(c.relu6)
        self.algorithm = f"conv3d-window {self.kernels}"

    def on_execute(self) -> None:
        x = np.asarray(self.x.array, np.float32)
        pd, ph, pw = self.pads
        x = np.pad(x, ((0, 0), (0, 0), (pd, pd), (ph, ph), (pw, pw)))
        span = [d * (k - 1) + 1 for k, d in zip(self.kernels, self.dilates, strict=True)]
        win = sliding_window_view(x, span, axis=(2, 3, 4))
        win = win[:, :, ::self.strides[0], ::self.strides[1], ::self.strides[2],
                  ::self.dilates[0], ::self.dilates[1], ::self.dilates[2]]
        out = np.tensordot(win, self.weight, axes=([1, 5, 6, 7], [1, 2, 3, 4]))  # [N, D, H, W, oc]
        out = np.moveaxis(out, -1, 1) + self.bias[None, :, None, None, None]
        if self.relu or self.relu6:
            out = np.clip(out, 0.0, 6.0 if self.relu6 else None)
        self.y.array[...] = out.reshape(self.y.desc.shape)
