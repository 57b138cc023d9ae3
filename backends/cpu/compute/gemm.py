"""GEMM kernels: numpy/BLAS matmul and a Strassen-Winograd GEMM with scratch preallocated at make time.

The Strassen schedule is the 7-multiply, 15-addition Strassen-Winograd variant, written so that the four
quadrants of C serve as accumulators and each level needs only three temporaries (mnn-facts §6). Block sizes
and the recursion depth come from ``mnnpy.core.strategy`` (MNN's traffic test), so the sub-blocks are the ones
MNN would use; leftover rows/columns that do not fit the even split are computed by plain GEMMs.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from mnnpy.core.memory import static_zeros
from mnnpy.core.strategy import ConvPlan, strassen_split

from . import ir_binds, packed_gemm
from .blas import lane_count, run_lanes
from .common import (
    COUNTERS,
    PACK,
    Conv2DKernel,
    Conv2DParams,
    array_place,
    ceil4,
    copy_pixels,
    gather_groups,
    in_turn,
    pixel_copy,
    scatter_groups,
    scratch_buffer,
)
from .packed_gemm import PackedWeights


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = a @ b`` through BLAS, without allocating the result."""
    np.matmul(a, b, out=out)


class StrassenGemm:
    """A fixed-shape ``(e x l) @ (l x h)`` Strassen GEMM; all scratch is allocated in ``__init__``.

    Args:
        e: rows of A and C.
        l_dim: columns of A, rows of B.
        h: columns of B and C.
        depth: number of Strassen levels (0 = plain GEMM); levels that cannot split stop early.
        dtype: element type of the scratch buffers.
    """

    def __init__(self, e: int, l_dim: int, h: int, depth: int, dtype: np.dtype | type = np.float32) -> None:
        self.shape = (e, l_dim, h)
        self.levels: list[tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray]] = []
        for _ in range(depth):
            e_sub, h_sub, l_sub = strassen_split(e, l_dim, h)
            if e_sub == 0 or h_sub == 0 or l_sub == 0 or l_dim % 2:
                break
            scratch_a = np.empty((e_sub, l_sub), dtype)
            scratch_b = np.empty((l_sub, h_sub), dtype)
            scratch_c = np.empty((e_sub, h_sub), dtype)
            self.levels.append((e_sub, l_sub, h_sub, scratch_a, scratch_b, scratch_c))
            e, l_dim, h = e_sub, l_sub, h_sub

    @property
    def depth(self) -> int:
        """Levels of recursion actually used."""
        return len(self.levels)

    def __call__(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        """Compute ``out[...] = a @ b`` (2-D operands of the shape given at construction)."""
        if a.shape[0] != self.shape[0] or a.shape[1] != self.shape[1] or b.shape[1] != self.shape[2]:
            raise ValueError(f"StrassenGemm{self.shape} called with {a.shape} @ {b.shape}")
        self._level(0, a, b, out)

    def _level(self, level: int, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        if level >= len(self.levels):
            np.matmul(a, b, out=c)
            return
        es, ls, hs, sa, tb, m = self.levels[level]
        a11, a12, a21, a22 = a[:es, :ls], a[:es, ls:], a[es : 2 * es, :ls], a[es : 2 * es, ls:]
        b11, b12, b21, b22 = b[:ls, :hs], b[:ls, hs : 2 * hs], b[ls:, :hs], b[ls:, hs : 2 * hs]
        c11, c12, c21, c22 = c[:es, :hs], c[:es, hs : 2 * hs], c[es : 2 * es, :hs], c[es : 2 * es, hs : 2 * hs]
        nxt = level + 1
        self._level(nxt, a11, b11, m)  # P1
        self._level(nxt, a12, b21, c11)  # P2
        c11 += m  # C11 = P1 + P2
        np.subtract(a11, a21, out=sa)  # S3
        np.subtract(b22, b12, out=tb)  # T3
        self._level(nxt, sa, tb, c21)  # P7
        np.add(a21, a22, out=sa)  # S1
        np.subtract(b12, b11, out=tb)  # T1
        self._level(nxt, sa, tb, c22)  # P5
        sa -= a11  # S2 = S1 - A11
        np.subtract(b22, tb, out=tb)  # T2 = B22 - T1
        self._level(nxt, sa, tb, c12)  # P6
        c12 += m  # U2 = P1 + P6
        c21 += c12  # U3 = U2 + P7
        c12 += c22  # U4 = U2 + P5
        c22 += c21  # C22 = U3 + P5
        np.subtract(a12, sa, out=sa)  # S4 = A12 - S2
        self._level(nxt, sa, b22, m)  # P3
        c12 += m  # C12 = U4 + P3
        tb -= b21  # T4 = T2 - B21
        self._level(nxt, a22, tb, m)  # P4
        c21 -= m  # C21 = U3 - P4
        e, h = c.shape
        if e > 2 * es:
            np.matmul(a[2 * es :], b, out=c[2 * es :])
        if h > 2 * hs:
            np.matmul(a[: 2 * es], b[:, 2 * hs :], out=c[: 2 * es, 2 * hs :])


def _bias_calls(y: np.ndarray, tile: np.ndarray) -> list[partial]:
    """``common.add_row_bias(y, tile)`` for one fixed C-contiguous ``y`` [M, C], as bound numpy calls (its block and
    tail views made once, not per run)."""
    rows, c = tile.shape
    whole = y.shape[0] // rows * rows
    calls = []
    if whole:
        block = y[:whole].reshape(-1, rows * c)
        calls.append(partial(np.add, block, tile.reshape(-1), out=block))
    if whole < y.shape[0]:
        tail = y[whole:]
        calls.append(partial(np.add, tail, tile[0], out=tail))
    return calls


FLAT_BAND_MAX_ROWS = 8  # a flat GEMM of at most this many rows and ...
FLAT_BAND_MIN_BYTES = 1 << 20  # ... this many bytes of weights splits its output columns over the lanes


class Gemm1x1Kernel(Conv2DKernel):
    """1x1, stride-1, unpadded convolution: one (Strassen) GEMM ``[N*H*W, Cp] @ [Cp, OCp]`` (batched over groups)."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray, scratch: dict | None = None) -> None:
        super().__init__(params, plan, in_shape, bias)
        n, c, h, w = self.in_shape
        oc, g = params.out_channels, params.group
        cp, ocp = ceil4(c), ceil4(oc)
        icg, ocg = c // g, oc // g
        m = n * h * w
        # Plain ungrouped GEMM behind layout copies: the bias rides in the GEMM as one more row of the weights
        # against a constant-1 column of x: no separate pass over the output ([12544, 16] @ [16, 96]: 0.50 -> 0.37
        # ms with the bias; 3-20% on MobileNetV2's other 1x1 shapes). One column, not a 4-column block: K = Cp + 1
        # (odd row strides are fine for OpenBLAS's packing), so the few-column GEMMs (bound by their K) do 1/K more
        # work, not 4/K: MobileNetV2's expand GEMMs 3.43 -> 3.23 ms hot (12768 x 17 x 96: 0.59 -> 0.52).
        self.folded = g == 1 and h * w != 1 and plan.algorithm != "strassen"
        self.x_gemm = np.zeros((m, cp + 1 if self.folded else cp), dtype=np.float32)
        if self.folded:
            self.x_gemm[:, cp] = 1.0
        self.x_mat = self.x_gemm[:, :cp]
        self.x_nhwc = np.reshape(self.x_mat, (n, h, w, cp // 4, 4), copy=False)  # a view (raises otherwise)
        # Ungrouped, the GEMM writes every column of Y, and Y lives only within one command (or a chain's, whose
        # producer's Y is consumed before its consumer writes its own): the session's 1x1 kernels share one
        # (MobileNetV2: max RSS 177 -> 168 MB; 0.977-1.006 ABBA). Grouped Y keeps zero padded channels: private.
        self.y = scratch_buffer(scratch, 0, "gemm-y", n * h * w * ocp).reshape(n, h, w, ocp) \
            if g == 1 and scratch is not None else np.zeros((n, h, w, ocp), dtype=np.float32)
        self.y_mat = self.y.reshape(m, ocp)
        wg = weight.reshape(g, ocg, icg)
        if g == 1:
            # one weight array: the folded GEMM's [Cp + 1, OCp] (bias row at Cp) or just [Cp, OCp]; `weight` is its
            # first Cp rows (a contiguous view). A second copy doubled the weights in memory (BERT-4L: +12.6 MB).
            self.w_gemm = static_zeros((cp + 1 if self.folded else cp, ocp), np.float32)  # huge pages
            self.w_gemm[:c, :oc] = wg[0].T
            if self.folded:
                self.w_gemm[cp] = self.bias_row
            self.weight = self.w_gemm[:cp]
            self.x_groups = self.y_groups = None
        else:
            self.weight = np.ascontiguousarray(wg.transpose(0, 2, 1), dtype=np.float32)
            self.x_groups = gather_groups(self.x_mat, c, g)
            self.y_groups = np.empty((g, m, ocg), dtype=np.float32)
        self.strassen = StrassenGemm(m, cp, ocp, plan.strassen_depth) if plan.algorithm == "strassen" else None
        # the weights (bias row included where folded) packed once for the compiled GEMM (``packed_gemm``), which
        # also adds the bias and clamps (the activation) as it stores: no bias column or passes needed then
        self.packed = PackedWeights(self.w_gemm, self.bias_row) if g == 1 and self.strassen is None \
            and packed_gemm.available() else None
        self.bounds = self.clamp_bounds()
        # 1x1 spatial (MatMul converted to a 1x1 convolution: [M, K, 1, 1]): NC4HW4 [M, K/4, 1, 1, 4] already is
        # the row-major [M, Kp] GEMM operand, and the output likewise, so no layout copies are needed.
        self.flat = (m, cp, ocp) if h * w == 1 and g == 1 else None
        # numThread > 1: a plain GEMM is split by rows over lanes (bias and activation fused per lane)
        lanes = lane_count(plan.threads, 2.0 * m * cp * ocp) if g == 1 and self.strassen is None else 1
        step = -(-m // lanes)
        self.row_chunks = [(r, min(r + step, m)) for r in range(0, m, step)]
        # A flat GEMM of few rows and many weights (a classifier's [1, K] x [K, N]) is bound by streaming the weights,
        # not by its flops: with threads, each lane takes whole panels of output columns (``PackedWeights.columns``),
        # streaming its share of them (ResNet-18's [1, 512] x [512, 1000] at 2 threads: see tools/PERF.md).
        self.col_bands = None
        if self.flat is not None and self.packed is not None and plan.threads > 1 and m <= FLAT_BAND_MAX_ROWS \
                and cp * ocp * 4 >= FLAT_BAND_MIN_BYTES:
            nr = packed_gemm.panel_width()
            width = -(-ocp // nr // plan.threads) * nr
            self.col_bands = [(c, min(c + width, ocp)) for c in range(0, ocp, width)]
        self._bound: tuple[np.ndarray, np.ndarray, list[partial]] | None = None
        COUNTERS["weight_transforms"] += 1

    def _flat_calls(self, x: np.ndarray, out: np.ndarray) -> list[partial] | None:
        """The flat one-lane path (a MatMul as [M, K, 1, 1]: GEMM, bias, activation on the arrays themselves) as
        one task of numpy calls bound to ``x`` / ``out``, made on the first run with these arrays (the convolution
        passes the same views every run): the per-call views and checks off BERT-4L's 24 and ViT-tiny's 73 GEMMs."""
        if self._bound is not None and self._bound[0] is x and self._bound[1] is out:
            return self._bound[2]
        if self.flat is None or len(self.row_chunks) > 1 or self.strassen is not None or self.x_groups is not None \
                or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        m, cp, ocp = self.flat
        y_mat = out.reshape(m, ocp)
        if self.col_bands is not None and self.packed is not None:  # a lane per band of output columns
            self._bound = (x, out, [partial(in_turn, (self.packed.columns(c0, c1).bind(
                x.reshape(m, cp), y_mat[:, c0:c1], *self.bounds, cp),)) for c0, c1 in self.col_bands])
            return self._bound[2]
        if self.packed is not None:  # GEMM, bias and activation in one call
            self._bound = (x, out, [self.packed.bind(x.reshape(m, cp), y_mat, *self.bounds, cp)])
            return self._bound[2]
        calls = [partial(np.matmul, x.reshape(m, cp), self.weight, out=y_mat)]
        if np.any(self.bias_row):
            calls += _bias_calls(y_mat, self.bias_tile)
        if self.params.relu or self.params.relu6:
            calls.append(partial(self._activate, y_mat))
        self._bound = (x, out, [partial(in_turn, calls)])
        return self._bound[2]

    def flat_gemm(self, x: np.ndarray, out: np.ndarray) -> partial | None:
        """The flat one-lane GEMM alone, no bias or activation (a consumer adds them: ``Binary.fuse_after``), bound
        to ``x`` / ``out``; None where the flat path does not apply to these arrays."""
        if self.flat is None or len(self.row_chunks) > 1 or self.strassen is not None or self.x_groups is not None \
                or not (x.flags.c_contiguous and out.flags.c_contiguous):
            return None
        m, cp, ocp = self.flat
        if self.packed is not None:
            return self.packed.bind(x.reshape(m, cp), out.reshape(m, ocp), rows=cp, bias=False)
        gemm = partial(np.matmul, x.reshape(m, cp), self.weight, out=out.reshape(m, ocp))
        return partial(run_lanes, [gemm], 1)  # run_lanes: BLAS held at 1 thread, as on every path

    def _gemm_rows(self, x_mat: np.ndarray, y_mat: np.ndarray, r0: int, r1: int) -> None:
        y = y_mat[r0:r1]
        if self.packed is not None:  # the first Cp columns of x (not the bias column), bias and activation inside
            cp = self.x_mat.shape[1]
            # keyed by memory, not id: the flat path passes reshapes made per run
            self.bound_call(("rows", array_place(x_mat), array_place(y_mat), r0, r1),
                            lambda: self.packed.bind(x_mat[r0:r1, :cp], y, *self.bounds, cp))()
            return
        if self.folded and x_mat is self.x_gemm:
            np.matmul(x_mat[r0:r1], self.w_gemm, out=y)
        else:
            np.matmul(x_mat[r0:r1], self.weight, out=y)
            self._add_bias(y)
        self._activate(y)

    def _pixels(self, x4: np.ndarray, out4: np.ndarray, r0: int, r1: int) -> None:
        """One lane of one image, layout copies included: pixels r0..r1 of ``[C4, H*W, 4]`` in, GEMM, out."""
        copy_pixels(self.x_mat[r0:r1].reshape(r1 - r0, -1, PACK), x4[:, r0:r1], (1, 0))
        self._gemm_rows(self.x_gemm, self.y_mat, r0, r1)
        copy_pixels(out4[:, r0:r1], self.y_mat[r0:r1].reshape(r1 - r0, -1, PACK), (1, 0))

    @property
    def chains(self) -> bool:
        """Whether the NHWC chain methods apply: one lane, ungrouped, not flat, no Strassen (its GEMM reads
        ``x_gemm`` and writes ``y`` in NHWC, with layout copies on either side)."""
        return self.flat is None and self.strassen is None and self.x_groups is None and len(self.row_chunks) == 1

    def run_to_nhwc(self, x: np.ndarray) -> None:
        """NC4HW4 ``x`` through the GEMM (bias, activation) into ``self.y`` [N, H, W, OCp], no output copy."""
        copy_pixels(self.x_nhwc, x, (0, 2, 3, 1))
        self._gemm_rows(self.x_gemm, self.y_mat, 0, self.y_mat.shape[0])

    def into_padded(self, x: np.ndarray, phases: np.ndarray, top: int, columns: list[tuple[int, int, int, int]],
                    stride_x: int, activate: bool = True) -> partial:
        """The chain's producer end when its consumer is a depthwise convolution: the GEMM writes the depthwise's
        zero-bordered input (``phases`` [S, N, Hp, Wq, OCp]: S column phases of stride-x S, one at stride 1) itself,
        instead of writing ``self.y`` for the depthwise to copy in (MobileNetV2's 112² x 96 stride-2 block: a
        1.2 ms copy of 4.8 MB into two phases gone).

        The GEMM's input rows are laid out like the padded rows ``top .. top + H`` of each phase: one row per padded
        column, zeros (the bias column too) where a column is border, so those rows come out exactly 0 and the
        activation keeps them 0. Each (phase, image) is then one GEMM whose output is a contiguous block of the
        phase; border columns cost one GEMM row each (2 of 114 at 112²). ``columns``: per phase that holds input
        columns, (phase, its first interior column, first input column, count): input column q0 + k * S lands in
        that phase's column d0 + k. Returns the bound run for the NC4HW4 input ``x`` (the same array every run).
        ``activate`` False: the consumer applies this convolution's activation (``DepthwiseKernel.clamp_input``).
        """
        n, _, h, _ = self.in_shape
        cp, k = self.x_mat.shape[1], self.x_gemm.shape[1]
        wq, ocp = phases.shape[3], phases.shape[4]
        rows = np.zeros((phases.shape[0], n, h, wq, k), dtype=np.float32)
        copies, gemms = [], []
        for b, d0, q0, count in columns:
            rows[b, :, :, d0:d0 + count, cp] = 1.0
            dst = np.reshape(rows[b, :, :, d0:d0 + count, :cp], (n, h, count, cp // PACK, PACK), copy=False)
            copies.append(pixel_copy(dst, x[:, :, :, q0::stride_x], (0, 2, 3, 1)))
            gemms += [(rows[b, i].reshape(h * wq, k), phases[b, i, top:top + h].reshape(h * wq, ocp))
                      for i in range(n)]
        return partial(self._run_padded, copies, gemms, activate)

    def _run_padded(self, copies: list[tuple[np.ndarray, np.ndarray]], gemms: list[tuple[np.ndarray, np.ndarray]],
                    activate: bool = True) -> None:
        for dst, src in copies:
            np.copyto(dst, src)
        if self.packed is not None:  # the bias column kept (border rows stay 0), no bias vector; the clamp inside
            lo, hi = self.bounds if activate else (-np.inf, np.inf)
            for a, out in gemms:
                self.bound_call(("padded", id(a), id(out), activate),
                                lambda a=a, out=out: self.packed.bind(a, out, lo, hi, bias=False))()
            return
        for a, out in gemms:
            np.matmul(a, self.w_gemm, out=out)
            if activate:
                self._activate(out)

    def run_from_nhwc(self, x: np.ndarray, out: np.ndarray, residual: np.ndarray | None = None,
                      relu: bool = False) -> None:
        """The GEMM (bias, activation) on a producer's contiguous NHWC rows ``x`` [N, H, W, Cp], into NC4HW4
        ``out``: no input layout copy. ``residual`` (NC4HW4 like ``out``): added as the rows are stored, then ReLU
        with ``relu`` (a residual Add fused in: ``Convolution.residual_run``; the packed GEMM only)."""
        if self.packed is not None:
            key = ("nhwc", id(x), array_place(out), residual is not None and array_place(residual), relu)
            self.bound_call(key, partial(self._bind_from_nhwc, x, out, residual, relu))()
            return
        np.matmul(x.reshape(self.y_mat.shape[0], -1), self.weight, out=self.y_mat)
        self._store_nhwc(self.y, out)

    def _bind_from_nhwc(self, x: np.ndarray, out: np.ndarray, residual: np.ndarray | None, relu: bool) -> partial:
        """``run_from_nhwc`` as two foreign calls: the packed GEMM with its bias and clamp, then the compiled store
        (``ir_binds.bind_store_nc4``: NC4HW4 layout and residual in one pass; ~2x numba's bias + layout store on
        MobileNetV2's shapes, e.g. [3136, 24] 37 -> 15 us hot)."""
        assert self.packed is not None
        gemm = self.packed.bind(x.reshape(self.y_mat.shape[0], -1), self.y_mat, *self.clamp_bounds(),
                                rows=self.weight.shape[0])
        store = ir_binds.bind_store_nc4(self.y, out, residual=residual, rclamp=(0.0 if relu else -np.inf, np.inf))
        if store is None:
            raise ValueError(f"no compiled store from {self.y.shape} into {out.shape}")
        return partial(in_turn, (gemm, store))

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out``."""
        calls = self._flat_calls(x, out)
        if calls is not None:  # (several: column bands, whose arrays are the arena's: worker processes may run them)
            run_lanes(calls, self.plan.threads, len(calls) > 1)  # BLAS held at 1 thread, as on every path
            return
        if (len(self.row_chunks) > 1 and self.flat is None and x.shape[0] == 1 and self.x_groups is None
                and x.flags.c_contiguous and out.flags.c_contiguous):
            x4 = x.reshape(x.shape[1], -1, PACK)
            out4 = out.reshape(out.shape[1], -1, PACK)
            # each lane copies, multiplies and stores its own rows (the buffers between are lane-local): worker-process
            # lanes may run them
            run_lanes([partial(self._pixels, x4, out4, r0, r1) for r0, r1 in self.row_chunks], self.plan.threads,
                      True)
            return
        flat = self.flat is not None and x.flags.c_contiguous and out.flags.c_contiguous
        if flat and self.flat is not None:
            m, cp, ocp = self.flat
            x_mat, y_mat = x.reshape(m, cp), out.reshape(m, ocp)
        else:
            copy_pixels(self.x_nhwc, x, (0, 2, 3, 1))
            x_mat, y_mat = self.x_gemm, self.y_mat
        if self.x_groups is not None and self.y_groups is not None:
            np.matmul(self.x_groups, self.weight, out=self.y_groups)
            scatter_groups(self.y_groups, self.y_mat, self.params.out_channels)
            self._store_nhwc(self.y, out)
            return
        if self.strassen is not None:
            run_lanes([partial(self.strassen, x_mat, self.weight, y_mat)], self.plan.threads)
            self._add_bias(y_mat)
            self._activate(y_mat)
        else:
            run_lanes([partial(self._gemm_rows, x_mat, y_mat, r0, r1) for r0, r1 in self.row_chunks],
                      self.plan.threads)
        if not flat:
            n, h, w, ocp = self.y.shape
            copy_pixels(out, self.y.reshape(n, h, w, ocp // PACK, PACK), (0, 3, 1, 2))


# Transposed FFN hand-off (`transposed_ffn`): measured whole-block A/B (GEMM, bias, GELU, GEMM, bias; one thread,
# OpenBLAS SkylakeX kernels), transposed / plain, for [M, K] -> [M, 4K] -> [M, K]: K = 256 wins at every M up to 128
# (M = 1: 0.95x, 16: 0.71x, 32: 0.96x, 64: 0.90x, 128: 0.92-0.97x) and is neutral above (256: 0.99x, 384: 1.00x);
# K = 384 and 512 at M = 128: 0.99x; K = 192 (ViT-tiny) and 128 lose (M = 64-197: 1.01-1.04x). So blocks with at
# most FFN_MAX_ROWS rows and at least FFN_MIN_CHANNELS input channels are handed over transposed.
FFN_MAX_ROWS = 128
FFN_MIN_CHANNELS = 256


def _plain_flat(kernel: object) -> tuple[int, int, int] | None:
    """The ``(M, Kp, Np)`` of a one-lane flat gemm1x1 kernel without activation or channel padding, else None."""
    if not isinstance(kernel, Gemm1x1Kernel) or kernel.flat is None or kernel.strassen is not None \
            or kernel.x_groups is not None or len(kernel.row_chunks) > 1 or kernel.params.relu \
            or kernel.params.relu6 or kernel.params.out_channels != kernel.flat[2]:
        return None
    return kernel.flat


def transposed_ffn(first: object, x: np.ndarray, h: np.ndarray, second: object, g: np.ndarray,
                   y: np.ndarray) -> tuple[partial, partial] | None:
    """Runs for ``h = x W1 + b1`` and ``y = g W2 + b2`` (two flat gemm1x1 kernels around an elementwise op that
    maps ``h`` to ``g`` and is their only link) with ``h`` and ``g`` held transposed: the first GEMM writes
    ``h^T = W1^T x^T`` into h's bytes (W1^T a contiguous copy, the bias per row), the elementwise op runs on the
    bytes as they are, and the second GEMM reads ``g^T`` as the transposed operand. Only for the measured winning
    shapes (above); None otherwise. The tensors h and g then hold transposed values: the session uses these runs only
    when no callback can look at them."""
    one, two = _plain_flat(first), _plain_flat(second)
    if one is None or two is None or not all(a.flags.c_contiguous for a in (x, h, g, y)):
        return None
    m, kp, np_ = one
    if two[:2] != (m, np_) or m > FFN_MAX_ROWS or kp < FFN_MIN_CHANNELS or x.size != m * kp or h.size != m * np_ \
            or g.size != m * np_ or y.size != m * two[2]:
        return None
    assert isinstance(first, Gemm1x1Kernel) and isinstance(second, Gemm1x1Kernel)
    w1t = static_zeros(first.weight.shape[::-1], np.float32)
    w1t[...] = first.weight.T
    h_t = h.reshape(np_, m)
    calls = [partial(np.matmul, w1t, x.reshape(m, kp).T, out=h_t)]
    if np.any(first.bias_row):
        calls.append(partial(np.add, h_t, first.bias_row[:, None].copy(), out=h_t))
    y_mat = y.reshape(m, two[2])
    tail = [partial(np.matmul, g.reshape(np_, m).T, second.weight, out=y_mat)]
    if np.any(second.bias_row):
        tail += _bias_calls(y_mat, second.bias_tile)
    return (partial(run_lanes, [partial(in_turn, calls)], 1),  # run_lanes: BLAS held at 1 thread, as on every path
            partial(run_lanes, [partial(in_turn, tail)], 1))
