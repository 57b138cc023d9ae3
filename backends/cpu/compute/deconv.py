"""Deconvolution (transposed convolution): GEMM to per-tap columns, then col2im scatter-add.

Each kernel tap (i, j) maps the input grid onto a strided sub-grid of the uncropped output, so the col2im
"index table" is one precomputed strided view per tap; the scatter-add is kh*kw vectorised adds. Groups run as
one batched GEMM; output padding and pads are handled by cropping a preallocated full-size buffer.
"""

from __future__ import annotations

import numpy as np

from mnnpy.core.strategy import ConvPlan

from .common import COUNTERS, Conv2DKernel, Conv2DParams, ceil4, copy_pixels, gather_groups


class DeconvKernel(Conv2DKernel):
    """Transposed convolution with groups, dilation, stride, pads and output padding."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray) -> None:
        super().__init__(params, plan, in_shape, bias)
        n, c, h, w = self.in_shape
        _, oc, oh, ow = self.out_shape
        (kh, kw), (sh, sw), (dh, dw), (pt, pl, _, _) = params.kernel, params.stride, params.dilation, params.pads
        g = params.group
        cp, ocp = ceil4(c), ceil4(oc)
        icg, ocg = c // g, oc // g
        kc, on = (cp, ocp) if g == 1 else (icg, ocg)
        m = n * h * w
        self.x_nhwc = np.empty((n, h, w, cp // 4, 4), dtype=np.float32)
        x_mat = self.x_nhwc.reshape(m, cp)
        self.x_groups = x_mat.reshape(1, m, cp) if g == 1 else gather_groups(x_mat, c, g)
        packed = np.zeros((g, kc, kh, kw, on), dtype=np.float32)
        packed[:, :icg, :, :, :ocg] = weight.reshape(g, icg, ocg, kh, kw).transpose(0, 1, 3, 4, 2)
        self.weight = packed.reshape(g, kc, kh * kw * on)
        self.cols = np.empty((g, m, kh * kw * on), dtype=np.float32)
        hf = max((h - 1) * sh + (kh - 1) * dh + 1, pt + oh)
        wf = max((w - 1) * sw + (kw - 1) * dw + 1, pl + ow)
        self.full = np.zeros((n, hf, wf, ocp), dtype=np.float32)
        self.cropped = self.full[:, pt : pt + oh, pl : pl + ow, :]
        cols = self.cols.reshape(g, n, h, w, kh, kw, on)
        self.pairs = []
        for i in range(kh):
            for j in range(kw):
                dst = self.full[:, i * dh : i * dh + (h - 1) * sh + 1 : sh, j * dw : j * dw + (w - 1) * sw + 1 : sw]
                if g == 1:
                    self.pairs.append((dst, cols[0, :, :, :, i, j]))
                else:
                    dst = dst[..., :oc].reshape(n, h, w, g, ocg)
                    self.pairs.append((dst, np.moveaxis(cols[:, :, :, :, i, j], 0, 3)))
        COUNTERS["weight_transforms"] += 1

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Transposed-convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        copy_pixels(self.x_nhwc, x, (0, 2, 3, 1))
        np.matmul(self.x_groups, self.weight, out=self.cols)
        self.full.fill(0.0)
        for dst, src in self.pairs:
            dst += src
        self._store_nhwc(self.cropped, out)
