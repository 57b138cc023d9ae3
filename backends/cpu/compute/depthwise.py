"""Depthwise convolution: a sum over kh*kw shifted strided views, vectorised over channels, pixels and batch.

Two layouts, chosen at make time so that numpy's innermost loop stays long and contiguous:

* stride-x 1: work directly on NC4HW4 (no transposes); the (ow, 4) axes of each tap coalesce, and the tap
  weights are pre-broadcast along ow so they coalesce too.
* stride-x > 1: work on a zero-bordered NHWC copy, where the innermost loop runs over the channels.

Padded lanes carry zero weights and zero bias, so padded output channels stay zero.
"""

from __future__ import annotations

import numpy as np

from mnnpy.core.strategy import ConvPlan

from .common import COUNTERS, PACK, Conv2DKernel, Conv2DParams, ceil4, copy_pixels, nhwc_view


class DepthwiseKernel(Conv2DKernel):
    """Depthwise (group == in == out channels) convolution; see the module docstring."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray) -> None:
        super().__init__(params, plan, in_shape, bias)
        n, c, h, w = self.in_shape
        _, _, oh, ow = self.out_shape
        (kh, kw), (sh, sw), (dh, dw), (pt, pl, _, _) = params.kernel, params.stride, params.dilation, params.pads
        cp = ceil4(c)
        c4 = cp // PACK
        hp = max(pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
        wp = max(pl + w, (ow - 1) * sw + (kw - 1) * dw + 1)
        packed = np.zeros((kh * kw, cp), dtype=np.float32)
        packed[:, :c] = weight.reshape(c, kh * kw).T
        rows = [(i * dh, i * dh + (oh - 1) * sh + 1) for i in range(kh)]
        cols = [(j * dw, j * dw + (ow - 1) * sw + 1) for j in range(kw)]
        self.nc4 = sw == 1
        if self.nc4:
            self.xp = np.zeros((n, c4, hp, wp, PACK), dtype=np.float32)
            self.interior = self.xp[:, :, pt : pt + h, pl : pl + w, :]
            self.taps = [self.xp[:, :, r0:r1:sh, c0:c1:sw] for r0, r1 in rows for c0, c1 in cols]
            expanded = np.broadcast_to(packed.reshape(kh * kw, 1, c4, 1, 1, PACK), (kh * kw, 1, c4, 1, ow, PACK))
            self.weights = np.ascontiguousarray(expanded)
            self.bias_view = np.ascontiguousarray(np.broadcast_to(self.bias_row.reshape(1, c4, 1, 1, PACK),
                                                                  (1, c4, 1, ow, PACK)))
            self.acc = None
            self.tmp = np.empty((n, c4, oh, ow, PACK), dtype=np.float32)
        else:
            self.xp = np.zeros((n, hp, wp, cp), dtype=np.float32)
            self.interior = nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))
            self.taps = [self.xp[:, r0:r1:sh, c0:c1:sw] for r0, r1 in rows for c0, c1 in cols]
            self.weights = packed
            self.acc = np.empty((n, oh, ow, cp), dtype=np.float32)
            self.tmp = np.empty_like(self.acc)
        COUNTERS["weight_transforms"] += 1

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        if self.acc is None:
            np.copyto(self.interior, x)
            acc = out
        else:
            copy_pixels(self.interior, x, (0, 2, 3, 1))
            acc = self.acc
        np.multiply(self.taps[0], self.weights[0], out=acc)
        for tap, wt in zip(self.taps[1:], self.weights[1:], strict=True):
            np.multiply(tap, wt, out=self.tmp)
            acc += self.tmp
        if self.acc is None:
            out += self.bias_view
            self._activate(out)
        else:
            self._store_nhwc(acc, out)
