"""im2col + GEMM convolution for any stride, dilation, groups and pads.

At make time the kernel allocates a zero-bordered NHWC input buffer, a window view over it (the im2col "index
table" expressed as strides: one view per shape, so gathering is a single strided copy), the column buffer, the
GEMM output and the packed weights ``[G, kh*kw*icg, ocg]``. ``run`` copies the input in, gathers the columns,
runs one batched GEMM over the groups and stores with bias and activation fused.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mnnpy.core.strategy import ConvPlan

from .common import COUNTERS, Conv2DKernel, Conv2DParams, ceil4, from_nc4hw4, nhwc_view, scatter_groups


class Im2ColKernel(Conv2DKernel):
    """im2col + batched GEMM (over groups) convolution; see the module docstring."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray) -> None:
        super().__init__(params, plan, in_shape, bias)
        n, c, h, w = self.in_shape
        _, oc, oh, ow = self.out_shape
        (kh, kw), (sh, sw), (dh, dw), (pt, pl, _, _) = params.kernel, params.stride, params.dilation, params.pads
        g = params.group
        cp, ocp = ceil4(c), ceil4(oc)
        icg, ocg = c // g, oc // g
        kc, on = (cp, ocp) if g == 1 else (icg, ocg)  # group 1 keeps padded channels (zero weights)
        hp = max(pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
        wp = max(pl + w, (ow - 1) * sw + (kw - 1) * dw + 1)
        self.xp = np.zeros((n, hp, wp, cp), dtype=np.float32)
        self.interior = nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))
        s_n, s_h, s_w, s_c = self.xp.strides
        self.windows = as_strided(self.xp, shape=(g, n, oh, ow, kh, kw, kc),
                                  strides=(kc * s_c, s_n, sh * s_h, sw * s_w, dh * s_h, dw * s_w, s_c),
                                  writeable=False)
        m = n * oh * ow
        self.cols = np.empty((g, n, oh, ow, kh, kw, kc), dtype=np.float32)
        self.cols_mat = self.cols.reshape(g, m, kh * kw * kc)
        self.y = np.zeros((n, oh, ow, ocp), dtype=np.float32)
        self.y_groups = self.y.reshape(1, m, ocp) if g == 1 else np.empty((g, m, on), dtype=np.float32)
        packed = np.zeros((g, kh, kw, kc, on), dtype=np.float32)
        wg = weight.reshape(g, ocg, icg, kh, kw)
        packed[:, :, :, :icg, :ocg] = wg.transpose(0, 3, 4, 2, 1)
        self.weight = packed.reshape(g, kh * kw * kc, on)
        COUNTERS["weight_transforms"] += 1

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        np.copyto(self.interior, from_nc4hw4(x))
        np.copyto(self.cols, self.windows)
        np.matmul(self.cols_mat, self.weight, out=self.y_groups)
        if self.params.group > 1:
            scatter_groups(self.y_groups, self.y.reshape(-1, self.y.shape[-1]), self.params.out_channels)
        self._store_nhwc(self.y, out)
