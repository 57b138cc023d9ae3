"""Depthwise convolution: a sum over kh*kw shifted strided views, vectorised over channels, pixels and batch.

Two layouts, chosen at make time so that numpy's innermost loop stays long and contiguous:

* stride-x 1, or output rows of at least ``PHASE_MIN_OW`` pixels: work on NC4HW4 (no transposes, the result
  written straight into the output); the (ow, 4) axes of each tap coalesce, and the tap weights are
  pre-broadcast along ow so they coalesce too. With stride-x s > 1 the zero-bordered copy of the input is kept
  as s column phases (padded columns b, b+s, b+2s, ...), so every tap is a contiguous slice of one phase.
* otherwise (stride-x > 1, short rows): work on a zero-bordered NHWC copy, where the innermost loop runs over
  the channels.

Padded lanes carry zero weights and zero bias, so padded output channels stay zero. With ``numThread`` > 1 the
output rows are split into that many bands run concurrently, each with its own scratch.

Where numba is installed (``jit.py``), the taps, bias and activation of a band run as one compiled loop over the
same zero-bordered buffers (``jit_kernels.depthwise_nc4`` / ``depthwise_nhwc``) instead of ~2 x kh x kw numpy
passes: MobileNetV2's depthwise layers 3 -> 7 GFLOP/s in the model (10-17 alone, hot).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from mnnpy.core.strategy import ConvPlan

from . import jit, packed_gemm
from .blas import lane_count, run_lanes
from .common import (
    COUNTERS,
    PACK,
    Conv2DKernel,
    Conv2DParams,
    ceil4,
    copy_pixels,
    nhwc_view,
    scratch_buffer,
)

# Stride-x > 1: NC4HW4 column phases from this output width on. Measured (1 thread, 3x3/2, copies included):
# 112² x 96 2.15 -> 1.77 ms, 56² x 144 0.58 -> 0.51 ms; at 28² x 192 0.18 -> 0.21 and 14² x 576 0.12 -> 0.22 the
# NHWC layout is faster.
PHASE_MIN_OW = 28
# 3 x 3 NHWC taps (``jit_kernels.depthwise3x3_nhwc``): output floats per flat chunk; its nine weight rows repeated
# along the chunk take 9 x 32 KB at most per layer. Whole rows of MobileNetV2's layers (up to 56 x 144 = 8064
# floats) beat 4096-float chunks there (56² x 144: 0.25 against 0.29 ms; 112² x 32: 0.31 against 0.32).
DW3_CHUNK_FLOATS = 8192


def phase_columns(sw: int, pl: int, w: int) -> list[tuple[int, int, int, int]]:
    """Input columns of a zero-bordered row of ``pl`` + ``w`` columns kept as ``sw`` column phases (padded column p
    in phase p % sw at p // sw): per phase that holds any, (phase, its first interior column, first input column,
    count); input column q0 + k * sw is that phase's column d0 + k."""
    return [(b, (pl + q0) // sw, q0, len(range(q0, w, sw))) for b in range(sw) if (q0 := (b - pl) % sw) < w]


def _chain_input(pool: dict, shape: tuple[int, ...]) -> np.ndarray:
    """A chain depthwise's padded input: the head of the pool's one "dw-chain-in" buffer. The chains run one at a
    time, so all share it (MobileNetV2: 14 MB of per-shape buffers -> 6.6 MB touched per run, the model 2-3% faster
    on a 32 MB L3); each run rewrites the border it reads (``border_rows`` / ``border_columns``)."""
    return scratch_buffer(pool, 0, "dw-chain-in", int(np.prod(shape))).reshape(shape)


def _border_columns(rows: np.ndarray, phases: list[tuple[int, int, int, int]]) -> list[np.ndarray]:
    """The border columns of a chain's input rows ``rows`` [S, N, H, Wq, Cp]: per column phase, those left and right
    of its interior (``phase_columns``), or the whole phase where it holds no input column."""
    inside = {b: (d0, d0 + count) for b, d0, _, count in phases}
    views = []
    for b in range(rows.shape[0]):
        d0, d1 = inside.get(b, (0, 0))
        views += [rows[b, :, :, :d0], rows[b, :, :, d1:]] if b in inside else [rows[b]]
    return [v for v in views if v.size]


class DepthwiseKernel(Conv2DKernel):
    """Depthwise (group == in == out channels) convolution; see the module docstring."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray, chain: dict | None = None) -> None:
        """``chain``: a scratch pool (``common.scratch_buffer``); given, the kernel is the NHWC middle of a 1x1 ->
        depthwise -> 1x1 chain (``run_nhwc``), its buffers shared through the pool, one band."""
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
        # numThread > 1: lanes of contiguous output rows, each with its own scratch
        lanes = 1 if chain is not None else max(1, min(lane_count(plan.threads, 2.0 * n * c * oh * ow * kh * kw), oh))
        step = -(-oh // lanes)
        self.row_bands = [(r, min(r + step, oh)) for r in range(0, oh, step)]
        rows = [(i * dh, i * dh + (oh - 1) * sh + 1) for i in range(kh)]
        cols = [(j * dw, j * dw + (ow - 1) * sw + 1) for j in range(kw)]
        self.nc4 = (sw == 1 or ow >= PHASE_MIN_OW) and chain is None
        if self.nc4:
            self.xp = np.zeros((sw, n, c4, hp, -(-wp // sw), PACK), dtype=np.float32)  # padded column p: [p % sw]
            # (phase region, input columns) pairs
            self.copies = [(self.xp[b, :, :, pt:pt + h, d0:d0 + count], slice(q0, None, sw))
                           for b, d0, q0, count in phase_columns(sw, pl, w)]
            self.taps = [self.xp[c0 % sw][:, :, r0:r1:sh, c0 // sw : c0 // sw + ow] for r0, r1 in rows
                         for c0, _ in cols]
            expanded = np.broadcast_to(packed.reshape(kh * kw, 1, c4, 1, 1, PACK), (kh * kw, 1, c4, 1, ow, PACK))
            self.weights = np.ascontiguousarray(expanded)
            self.bias_view = np.ascontiguousarray(np.broadcast_to(self.bias_row.reshape(1, c4, 1, 1, PACK),
                                                                  (1, c4, 1, ow, PACK)))
            self.acc = None
            self.tmp = np.empty((n, c4, oh, ow, PACK), dtype=np.float32)
        else:
            if chain is not None and sw > 1:
                # a chain's stride-x > 1: NHWC column phases (padded column p in phase p % sw), so that every tap
                # is a contiguous (ow, Cp) slice; run_nhwc copies x's columns into their phases
                self.xp = _chain_input(chain, (sw, n, hp, -(-wp // sw), cp))
                self.taps = [self.xp[c0 % sw][:, r0:r1:sh, c0 // sw: c0 // sw + ow] for r0, r1 in rows
                             for c0, _ in cols]
            else:
                self.xp = _chain_input(chain, (n, hp, wp, cp)) if chain is not None else \
                    np.zeros((n, hp, wp, cp), dtype=np.float32)
                self.interior = nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))  # run's NC4HW4 input
                self.taps = [self.xp[:, r0:r1:sh, c0:c1:sw] for r0, r1 in rows for c0, c1 in cols]
            # a chain's padded input as column phases [sw, N, Hp, Wq, Cp] (one phase at stride-x 1), its first
            # interior row and, per phase that holds input columns, (phase, first interior column, first input
            # column, count): where run_nhwc copies x's columns, or the producer writes its GEMM rows itself
            # (``Gemm1x1Kernel.into_padded``)
            self.phases = None if chain is None else self.xp if sw > 1 else self.xp[None]
            self.chain_rows = pt
            self.chain_phases = phase_columns(sw, pl, w) if chain is not None else []
            self.chain_copies = [(self.phases[b][:, pt:pt + h, d0:d0 + count], slice(q0, None, sw))
                                 for b, d0, q0, count in self.chain_phases]
            # the chain's padded input is one buffer shared by every chain's depthwise (``_chain_input``), so each
            # run zeroes its own border: the rows above and below the input (``border_rows``; its producer writes
            # every column of the input rows, border columns as GEMM rows of zeros) and, where run_nhwc copies the
            # input in, the border columns of the input rows (``border_columns``)
            self.border_rows = [] if self.phases is None else \
                [v for v in (self.phases[:, :, :pt], self.phases[:, :, pt + h:]) if v.size]
            self.border_columns = [] if self.phases is None else _border_columns(self.phases[:, :, pt:pt + h],
                                                                                 self.chain_phases)
            # in a chain, tap weights pre-broadcast along ow: each tap's (ow, Cp) axes then coalesce into one long
            # inner loop (a weight row broadcast over ow caps numpy's inner loop at Cp); the unchained NHWC layout
            # has strided taps (stride-x > 1), where that cannot happen
            self.weights = packed if chain is None else \
                np.ascontiguousarray(np.broadcast_to(packed[:, None, :], (kh * kw, ow, cp)))
            size = n * oh * ow * cp
            self.acc = np.empty((n, oh, ow, cp), dtype=np.float32) if chain is None else \
                scratch_buffer(chain, 0, "dw-chain-out", size).reshape(n, oh, ow, cp)
            self.tmp = np.empty((n, oh, ow, cp), dtype=np.float32) if chain is None else \
                scratch_buffer(chain, 0, "dw-chain-tmp", size).reshape(n, oh, ow, cp)
        self.bands = []  # (r0, r1, tap views of those rows, own scratch) per lane
        for r0, r1 in self.row_bands:
            if self.nc4:
                taps = [t[:, :, r0:r1] for t in self.taps]
                tmp = self.tmp[:, :, : r1 - r0] if len(self.row_bands) == 1 else np.empty_like(self.tmp[:, :, r0:r1])
            else:
                taps = [t[:, r0:r1] for t in self.taps]
                tmp = self.tmp[:, : r1 - r0] if len(self.row_bands) == 1 else np.empty_like(self.tmp[:, r0:r1])
            self.bands.append((r0, r1, taps, tmp))
        self.jit = jit.kernels() if jit.enabled() else None
        self.dw_llvm: Callable[[], None] | None = None  # the LLVM-IR 3 x 3 chain kernel (``_jit_setup``)
        if self.jit is not None:
            self._jit_setup(kh, kw, sh, dh, dw)
        COUNTERS["weight_transforms"] += 1

    def _jit_setup(self, kh: int, kw: int, sh: int, dh: int, dw: int) -> None:
        """Arguments of the compiled kernel: buffers seen as its contiguous layouts (views, no copies)."""
        lo, hi = self.clamp_bounds()
        if self.nc4:
            s, n, c4, hp, wq, _ = self.xp.shape
            ow = self.out_shape[3]
            args = (self.xp.reshape(s, n, c4, hp, wq * PACK), self.weights.reshape(kh * kw, c4, ow * PACK),
                    self.bias_view.reshape(c4, ow * PACK))
            self.jit_geometry = (kh, kw, sh, dh, dw)
        else:
            phases = self.phases if self.phases is not None else self.xp[None]
            weights = self.weights if self.weights.ndim == 2 else np.ascontiguousarray(self.weights[:, 0])  # [taps, Cp]
            args = (phases, weights, self.bias_row.reshape(-1))
            self.jit_geometry = (phases.shape[0], kh, kw, sh, self.params.stride[1], dh, dw)
            self.jit_nhwc = self.jit.depthwise_nhwc  # type: ignore[union-attr]
            if (kh, kw) == (3, 3) and phases.shape[0] == self.params.stride[1]:  # contiguous taps: one pass per chunk
                cp, ow = weights.shape[1], self.out_shape[3]
                chunk = max(1, min(ow, DW3_CHUNK_FLOATS // cp))  # output pixels whose taps run as flat rows
                args = (phases, np.tile(weights, (1, chunk)), np.tile(self.bias_row.reshape(-1), chunk))
                self.jit_geometry = (sh, dh, dw)
                self.jit_nhwc = self.jit.depthwise3x3_nhwc  # type: ignore[union-attr]
                if self.acc is not None and len(self.bands) == 1 and packed_gemm.available():
                    # the LLVM-IR kernel: nine weight vectors in registers per block of channels (numba's loop
                    # reloads them with every output vector); None where it does not apply
                    self.dw_weights = np.ascontiguousarray(weights, dtype=np.float32)
                    self.dw_llvm = packed_gemm.bind_depthwise3x3(phases, self.dw_weights, self.bias_row, self.acc,
                                                                 (sh, dh, dw), self.bands[0][:2], (lo, hi))
        # the padded input stays writable (an NHWC chain may clamp it in place: ``clamp_input``)
        self.jit_args = (args[0] if not self.nc4 else jit.readonly(args[0]), *(jit.readonly(a) for a in args[1:]))
        self.jit_act = (np.float32(lo), np.float32(hi))
        self.jit_input = (False, np.float32(0.0), np.float32(0.0))

    def clamp_input(self, lo: float, hi: float) -> bool:
        """A chain's producer leaves its activation (a clamp keeping 0) to this kernel, which applies it to each
        input row just before the row's first use (compiled NHWC kernels only). Returns whether it will."""
        if self.jit is None or self.nc4 or self.acc is None or not lo <= 0.0 <= hi or self.dw_llvm is not None:
            return False  # (the LLVM-IR kernel does not: the producer's packed GEMM clamps as it stores anyway)
        self.jit_input = (True, np.float32(lo), np.float32(hi))
        return True

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        if self.acc is None:
            for region, columns in self.copies:
                copy_pixels(region, x[:, :, :, columns], (0, 1, 2, 3))
        else:
            copy_pixels(self.interior, x, (0, 2, 3, 1))
        if len(self.bands) == 1:
            self._rows(out, *self.bands[0])
        else:
            run_lanes([partial(self._rows, out, *band) for band in self.bands], self.plan.threads)
        if self.acc is not None:
            n, oh, ow, cp = self.acc.shape
            copy_pixels(out, self.acc.reshape(n, oh, ow, cp // PACK, PACK), (0, 3, 1, 2))

    def run_nhwc(self, x: np.ndarray) -> np.ndarray:
        """The middle of a chain (a kernel made with ``chain``): ``x`` [N, H, W, Cp] (the producing 1x1
        convolution's output rows) into the zero-bordered input, then taps, bias and activation into ``self.acc``
        [N, OH, OW, Cp], which the consuming 1x1 convolution reads: no NC4HW4 round trip on either side."""
        for view in self.border_columns:
            view.fill(0.0)
        for dst, columns in self.chain_copies:
            np.copyto(dst, x[:, :, columns])
        return self.run_filled()

    def run_filled(self) -> np.ndarray:
        """``run_nhwc`` once the producer has written the zero-bordered input itself (``Gemm1x1Kernel.into_padded``)."""
        for view in self.border_rows:
            view.fill(0.0)
        self._rows(None, *self.bands[0])
        return self.acc

    def _rows(self, out: np.ndarray | None, r0: int, r1: int, taps: list[np.ndarray], tmp: np.ndarray) -> None:
        """Output rows r0..r1: taps, bias and activation (in NC4HW4 ``out``, or the NHWC accumulator)."""
        if self.dw_llvm is not None and out is None:  # the chain's one band
            self.dw_llvm()
            return
        if self.jit is not None and (self.acc is not None or out.flags.c_contiguous):  # type: ignore[union-attr]
            if self.acc is None:
                n, c4, oh, ow, _ = out.shape  # type: ignore[union-attr]
                self.jit.depthwise_nc4(*self.jit_args, out.reshape(n, c4, oh, ow * PACK),  # type: ignore[union-attr]
                                       *self.jit_geometry, r0, r1, *self.jit_act)
            else:
                self.jit_nhwc(*self.jit_args, self.acc, *self.jit_geometry, r0, r1, *self.jit_act, *self.jit_input)
            return
        acc = out[:, :, r0:r1] if self.acc is None else self.acc[:, r0:r1]  # type: ignore[index]
        np.multiply(taps[0], self.weights[0], out=acc)
        for tap, wt in zip(taps[1:], self.weights[1:], strict=True):
            np.multiply(tap, wt, out=tmp)
            acc += tmp
        if self.acc is None:
            acc += self.bias_view
        else:
            self._add_bias(acc)
        self._activate(acc)
