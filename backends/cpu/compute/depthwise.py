"""Depthwise convolution computed directly on NC4HW4: a sum over kh*kw shifted strided views.

Channels stay in their NC4HW4 lanes, so the input copy is layout-preserving and every tap is one vectorised
multiply-add over all channels, pixels and batches; padded lanes carry zero weights and zero bias.
"""

from __future__ import annotations

import numpy as np

from mnnpy.core.strategy import ConvPlan

from .common import COUNTERS, PACK, Conv2DKernel, Conv2DParams, ceil4


class DepthwiseKernel(Conv2DKernel):
    """Depthwise (group == in == out channels) convolution; see the module docstring."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray) -> None:
        super().__init__(params, plan, in_shape, bias)
        n, c, h, w = self.in_shape
        _, _, oh, ow = self.out_shape
        (kh, kw), (sh, sw), (dh, dw), (pt, pl, _, _) = params.kernel, params.stride, params.dilation, params.pads
        c4 = ceil4(c) // PACK
        hp = max(pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
        wp = max(pl + w, (ow - 1) * sw + (kw - 1) * dw + 1)
        self.xp = np.zeros((n, c4, hp, wp, PACK), dtype=np.float32)
        self.interior = self.xp[:, :, pt : pt + h, pl : pl + w, :]
        self.taps = [self.xp[:, :, i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw]
                     for i in range(kh) for j in range(kw)]
        packed = np.zeros((kh * kw, ceil4(c)), dtype=np.float32)
        packed[:, :c] = weight.reshape(c, kh * kw).T
        self.weights = packed.reshape(kh * kw, 1, c4, 1, 1, PACK)
        self.bias4 = self.bias_row.reshape(1, c4, 1, 1, PACK)
        self.tmp = np.empty((n, c4, oh, ow, PACK), dtype=np.float32)
        COUNTERS["weight_transforms"] += 1

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        np.copyto(self.interior, x)
        np.multiply(self.taps[0], self.weights[0], out=out)
        for tap, wt in zip(self.taps[1:], self.weights[1:], strict=True):
            np.multiply(tap, wt, out=self.tmp)
            out += self.tmp
        out += self.bias4
        self._activate(out)
