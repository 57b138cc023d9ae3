"""im2col + GEMM convolution for any stride, dilation, groups and pads.

At make time the kernel allocates a zero-bordered NHWC input buffer, a window view over it (the im2col "index
table" expressed as strides, so gathering is one strided copy), the packed weights ``[G, kh*kw*icg, ocg]`` and a
column buffer for one tile of output rows. Tiles bound the column buffer to ``TILE_BYTES`` (MNN tiles im2col the
same way) so it stays in cache and large images do not need a huge scratch. ``run`` copies the input in and, per
tile, gathers the columns and runs one GEMM batched over the groups; then bias and activation are fused into the
store.

Ungrouped convolutions whose channel count is not a multiple of 4 (a 3-channel image stem) gather unpadded: the
buffer holds ``C`` channels, so the GEMM's K is ``kh*kw*C`` (147 instead of 196 for ResNet's 7x7 stem), and the bias
is one more weight row against a constant-1 column of the column buffer, so the GEMM adds it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mnnpy.core.strategy import DIRECT_LANE_WEIGHT, IM2COL_LANE_WEIGHT, IM2COL_TILE_BYTES, ConvPlan, output_tiles

from . import ir_binds, packed_gemm
from .blas import lane_count, new_claim, run_lanes, run_phases
from .common import (
    COUNTERS,
    PACK,
    Conv2DKernel,
    Conv2DParams,
    add_residual,
    array_place,
    ceil4,
    copy_channels,
    copy_input_rows,
    copy_pixels,
    in_turn,
    input_rows,
    nhwc_view,
    runs,
    scratch_buffer,
    shared_zeros,
)
from .packed_gemm import PackedWeights

TILE_BYTES = IM2COL_TILE_BYTES  # the strategy costs the tiles it makes
IMPLICIT_MIN_OW = 64  # output rows this wide run the implicit-im2col GEMM (see Im2ColKernel.__init__)


class Im2ColKernel(Conv2DKernel):
    """im2col + batched GEMM (over groups) convolution; see the module docstring."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray, scratch: dict | None = None) -> None:
        super().__init__(params, plan, in_shape, bias)
        n, c, h, w = self.in_shape
        _, oc, oh, ow = self.out_shape
        (kh, kw), (sh, sw), (dh, dw), (pt, pl, _, _) = params.kernel, params.stride, params.dilation, params.pads
        g = params.group
        cp, ocp = ceil4(c), ceil4(oc)
        icg, ocg = c // g, oc // g
        kc, on = (cp, ocp) if g == 1 else (icg, ocg)  # group 1 keeps padded channels (zero weights)...
        self.fold_bias = g == 1 and c != cp  # ...unless that pads K: then C channels, the bias as a weight row
        kc = c if self.fold_bias else kc
        taps_len = kh * kw * kc
        k_len = taps_len + int(self.fold_bias)
        hp = max(pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
        wp = max(pl + w, (ow - 1) * sw + (kw - 1) * dw + 1)
        self.xp = shared_zeros(scratch, (n, hp, wp, c if self.fold_bias else cp), (pt, pl, h, w))
        self.interior = self.xp[:, pt:pt + h, pl:pl + w] if self.fold_bias else \
            nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))
        s_n, s_h, s_w, s_c = self.xp.strides
        windows = as_strided(self.xp, shape=(g, n, oh, ow, kh, kw, kc),
                             strides=(kc * s_c, s_n, sh * s_h, sw * s_w, dh * s_h, dw * s_w, s_c), writeable=False)
        # Ungrouped, the GEMM writes every column of Y and of each tile's columns: both may come from the session's
        # scratch pool (warm buffers). Grouped Y keeps zero padded channels; folded-bias columns keep their 1s.
        pool = scratch if g == 1 else None
        # Worker-process lanes (procs.py) may run the lanes when what they exchange is in the shared pool: the tile
        # lanes copy their own input rows, write Y's rows and their tiles of ``out``; the bands read lane 0's columns
        # (pooled unless the bias is folded) and Y; the tap lanes' partial products are pooled.
        self.shared = bool(pool and pool.get("shared"))
        self.y = scratch_buffer(pool, 0, "y", n * oh * ow * ocp).reshape(n, oh, ow, ocp)
        if pool is None:
            self.y[:] = 0.0
        lanes = lane_count(plan.threads, 2.0 * n * oh * ow * k_len * on * g * IM2COL_LANE_WEIGHT)
        tiles = output_tiles(n, oh, g * ow * k_len * 4, TILE_BYTES, lanes)
        # Weight-heavy (deep layers, few pixels: ResNet-18's 512ch 7x7): the lanes split the output channels of the
        # one tile, so each streams only its share of the weights (row halves would each stream all of them).
        self.bands = _bands(ocp, lanes) if lanes > 1 and g == 1 and len(tiles) == 1 and ocp > n * oh * ow else None
        if self.bands is not None:
            lanes = 1
        if len(tiles) < lanes:  # smaller tiles, so that every lane has one
            tiles = output_tiles(n, oh, g * ow * k_len * 4, max(1, n * oh * g * ow * k_len * 4 // lanes), lanes)
        biggest = max((n1 - n0) * (r1 - r0) * ow for n0, n1, r0, r1 in tiles)
        self.lanes = []  # every tile's step on each lane's own column buffer; lanes claim tiles one by one at run time
        for lane in range(min(lanes, len(tiles))):
            cols = scratch_buffer(None if self.fold_bias else pool, lane, "cols", g * biggest * k_len)
            cols.reshape(-1, k_len)[:, taps_len:] = 1.0  # the bias column (when folded); the gathers skip it
            grouped = np.empty((g, biggest, on), dtype=np.float32) if g > 1 else None
            steps: list[tuple[Any, ...]] = []
            for n0, n1, r0, r1 in tiles:
                m = (n1 - n0) * (r1 - r0) * ow
                src = windows[:, n0:n1, r0:r1]
                mat = cols[: g * m * k_len].reshape(g, m, k_len)
                dst = mat[:, :, :taps_len].reshape(src.shape)
                y_rows = self.y[n0:n1, r0:r1].reshape(m, ocp)
                y_tile = self.y[n0:n1, r0:r1]
                tile = (n0, n1, r0, r1, y_tile, y_tile.reshape(n1 - n0, r1 - r0, ow, ocp // PACK, PACK))
                gather = runs(dst, src)
                if lane == 0 and not steps:  # the tap lanes' gathers are pieces of lane 0's first (only) tile
                    first = (dst, src)
                if grouped is None:
                    steps.append((gather, mat[0], y_rows, None, tile))
                else:
                    scatter = y_rows[:, :oc].reshape(m, g, ocg).transpose(1, 0, 2)
                    steps.append((gather, mat, grouped[:, :m], scatter, tile))
            self.lanes.append(steps)
        self.steps = self.lanes[0]
        # with lanes, each tile's lane copies the input rows the tile reads (the input copy runs in parallel too)
        self.in_rows = [input_rows((n0, n1), (r0 * sh, (r1 - 1) * sh + (kh - 1) * dh + 1), pt, h)
                        for n0, n1, r0, r1 in tiles]
        packed = np.zeros((g, k_len, on), dtype=np.float32)
        taps = packed[:, :taps_len].reshape(g, kh, kw, kc, on)
        taps[:, :, :, :icg, :ocg] = weight.reshape(g, ocg, icg, kh, kw).transpose(0, 3, 4, 2, 1)
        if self.fold_bias:
            packed[0, taps_len] = self.bias_row
        self.weight = packed[0] if g == 1 else packed
        # ungrouped: the weights packed once for the compiled GEMM (``packed_gemm``), which adds the bias (unless it
        # is folded into the weights) and clamps (the activation) as it stores the tile
        self.packed = PackedWeights(self.weight, self.bias_row) if g == 1 and packed_gemm.available() else None
        self.bounds = self.clamp_bounds()
        self.direct = self._direct_lanes(2.0 * n * oh * ow * cp * ocp) if self.packed is not None and kh == kw == 1 \
            and not any(params.pads) and not self.fold_bias else None
        # With the packed GEMM and taps one pixel apart, no column matrix: the GEMM reads each kernel row's kw x C
        # floats in place from the padded input (``PackedWeights.bind_implicit``), one call per tile and image, a
        # product per output row (cold caches, ms: ResNet-18's stem 3.18 -> 2.78, MobileNetV2's 0.58 -> 0.39). Rows
        # of IMPLICIT_MIN_OW pixels at least: a product is one output row, and short ones run the kernel's one-row
        # tiles (ResNet-18's 3 x 3 stride-2 convolutions, 7-28 pixels a row: 1.2 -> 1.6-2.4 ms)
        self.implicit = None
        if self.packed is not None and dw == 1 and self.bands is None and ow >= IMPLICIT_MIN_OW and not self.direct:
            ch, row = self.xp.shape[3], self.xp.shape[2] * self.xp.shape[3]
            base = self.xp.reshape(-1)
            self.implicit = []
            for n0, n1, r0, r1 in tiles:
                calls = [self.packed.bind_implicit(base, (i * self.xp.shape[1] + r0 * sh) * row,
                                                   (sh * row, sw * ch, ow), (kh, kw * ch, dh * row),
                                                   self.y[i, r0:r1], *self.bounds) for i in range(n0, n1)]
                self.implicit.append(calls[0] if len(calls) == 1 else partial(in_turn, tuple(calls)))
        # Weight-heavy single tile: the lanes split K (taps x channels) instead of the output channels, so each gathers
        # only its share of the columns (the gather no longer runs before the hand-off) and streams its rows of the
        # weights into a partial product; the partials are summed after (a [pixels, OCp] add). K is split evenly at
        # channel granularity (whole taps split ResNet-18's nine 5 / 4: lane 0 did 56% of the work).
        self.tap_lanes = self.tap_phases = None
        if self.bands is not None and not self.fold_bias and not self.direct:
            dst, src = first
            cols_mat, y_rows = self.steps[0][1:3]
            self.tap_lanes = []
            for i, (k0, k1, pieces) in enumerate(_k_ranges(kh, kw, kc, len(self.bands))):
                product = y_rows if i == 0 else scratch_buffer(pool, i, "product", y_rows.size).reshape(y_rows.shape)
                gathers = [runs(dst[..., ky, x0:x1, c0:c1], src[..., ky, x0:x1, c0:c1])
                           for ky, x0, x1, c0, c1 in pieces]
                multiply = self._multiply(k0, k1, cols_mat[:, k0:k1], product, i == 0)
                self.tap_lanes.append((gathers, multiply, product))
            # Two lanes with the packed GEMM hand off in three phases (``run_phases``): each lane copies half the
            # input rows, then its taps, then sums and stores half the output rows (compiled store): nothing serial.
            n, h = self.in_shape[0], self.in_shape[2]
            r0, r1 = self.steps[0][4][2:4]
            if self.packed is not None and len(self.tap_lanes) == 2:
                self.tap_phases = [((0, n, a, b), rows) for (a, b), rows in zip(_halves(0, h), _halves(r0, r1),
                                                                               strict=True)]
        COUNTERS["weight_transforms"] += 1

    def _direct_lanes(self, flops: float) -> list[list[tuple[Any, ...]]]:
        """A 1 x 1 unpadded convolution on channels a multiple of 4 (ResNet's stride-2 shortcuts): the packed GEMM
        reads A straight from the NC4HW4 input, K as C/4 runs of 4 floats one channel plane apart
        (``bind_implicit``): no input copy, no gather, so the work splits over the lanes with nothing serial but the
        hand-off. Per lane its products ``(weights, image, r0, r1, c0, c1)``: rows of the output, or (weight-heavy:
        more output channels than pixels) whole panels of output channels, each lane streaming only its weights.
        ResNet-18's three shortcuts at 2 threads (ms): see tools/PERF.md, fifteenth session."""
        n, _, oh, ow = self.out_shape
        ocp = self.y.shape[3]
        lanes = lane_count(self.plan.threads, flops * DIRECT_LANE_WEIGHT)
        if lanes > 1 and ocp > n * oh * ow:
            step = -(-ocp // packed_gemm.panel_width() // lanes) * packed_gemm.panel_width()
            bands = [(c0, min(c0 + step, ocp)) for c0 in range(0, ocp, step)]  # (each lane's panels, no copy)
            return [[(self.packed.columns(c0, c1), i, 0, oh, c0, c1) for i in range(n)] for c0, c1 in bands]
        rows = n * oh
        step = -(-rows // lanes)
        return [[(self.packed, i, max(r0, i * oh) - i * oh, min(r0 + step, (i + 1) * oh) - i * oh, 0, ocp)
                 for i in range(r0 // oh, (min(r0 + step, rows) - 1) // oh + 1)] for r0 in range(0, rows, step)]

    def _run_direct(self, lane: int, x: np.ndarray, out: np.ndarray | None, residual: np.ndarray | None = None,
                    relu: bool = False) -> None:
        """One lane of the direct 1 x 1 path (``_direct_lanes``): its products from NC4HW4 ``x``, then (``out`` not
        None) its stores."""
        self.bound_call(("direct", lane, array_place(x)), partial(self._bind_direct, self.direct[lane], x))()
        if out is not None:
            self._store_direct(lane, out, residual, relu)

    def _store_direct(self, lane: int, out: np.ndarray, residual: np.ndarray | None = None, relu: bool = False) -> None:
        for _, i, r0, r1, c0, c1 in self.direct[lane]:  # type: ignore[index]
            self._store(out, residual, relu, (slice(i, i + 1), slice(c0 // PACK, c1 // PACK), slice(r0, r1)),
                        self.y[i:i + 1, r0:r1, :, c0:c1].reshape(1, r1 - r0, -1, (c1 - c0) // PACK, PACK))

    def _bind_direct(self, products: list[tuple[Any, ...]], x: np.ndarray) -> Callable[[], None]:
        _, cb, h, w, _ = x.shape
        (sh, sw), plane = self.params.stride, h * w * PACK
        base = x.reshape(-1)  # a view (C-contiguous, checked by the caller)
        calls = tuple(weights.bind_implicit(base, i * cb * plane + r0 * sh * w * PACK, (sh * w * PACK, sw * PACK,
                                            self.out_shape[3]), (cb, PACK, plane), self.y[i, r0:r1, :, c0:c1],
                                            *self.bounds)
                      for weights, i, r0, r1, c0, c1 in products)
        return calls[0] if len(calls) == 1 else partial(in_turn, calls)

    def _multiply(self, k0: int, k1: int, cols: np.ndarray, product: np.ndarray, bias: bool) -> Callable[[], None]:
        """``product = cols @ weight[k0:k1]`` (+ the bias with ``bias`` and the packed GEMM): a K lane's partial
        product, bound once."""
        if self.packed is not None:
            return self.packed.bind(cols, product, rows=k1 - k0, first=k0, bias=bias)
        return partial(np.matmul, cols, self.weight[k0:k1], out=product)

    def run(self, x: np.ndarray, out: np.ndarray, residual: np.ndarray | None = None, relu: bool = False) -> None:
        """Convolve NC4HW4 ``x`` into NC4HW4 ``out`` (tiles claimed by ``numThread`` lanes). ``residual`` (NC4HW4
        like ``out``, or ``out`` itself): each tile (channel band) adds it to the rows it stored, then ReLU with
        ``relu`` (a residual Add fused in: ``common.add_residual``)."""
        phases = self.lane_phases(x, out, residual, relu)
        if phases is not None:  # (one hand-off with worker-process lanes: ``run_phases``)
            run_phases(phases, self.plan.threads, self.shared)
            return
        if self.input_copied_first:
            self._copy_input(x)
        if self.tap_lanes is not None:
            # (each lane copying the whole input itself instead: 0.036 -> 0.065 ms a copy, the two cores writing the
            # same cache lines; the conv at 2 threads 0.65 -> 0.67 ms)
            run_lanes([partial(self._run_taps, *lane) for lane in self.tap_lanes], self.plan.threads, self.shared)
            _, _, y_rows, _, (n0, n1, r0, r1, y_tile, y_pixels) = self.steps[0]
            region = (slice(n0, n1), slice(None), slice(r0, r1))
            if self.packed is not None and len(self.tap_lanes) == 2:  # (lane 0's product has the bias)
                # the partials' sum, the activation, the layout and the residual in one compiled pass
                key = ("taps", array_place(out), residual is not None and array_place(residual), relu)
                self.bound_call(key, partial(self._bind_store, out, residual, relu, region, y_pixels,
                                             self.tap_lanes[1][2], self.bounds))()
                return
            for lane in self.tap_lanes[1:]:
                np.add(y_rows, lane[2], out=y_rows)
            if self.packed is None:  # (the packed GEMM added it to lane 0's product)
                self._add_bias(y_tile)
            self._activate(y_tile)
            self._store(out, residual, relu, region, y_pixels)
            return
        if self.bands is not None:
            np.copyto(*self.steps[0][0])
            run_lanes([partial(self._run_band, c0, c1, out, residual, relu) for c0, c1 in self.bands],
                      self.plan.threads, self.shared and not self.fold_bias)
            return
        self._run_steps(self.steps, out, itertools.count().__next__, None, residual, relu)

    def lane_phases(self, x: np.ndarray | None, out: np.ndarray, residual: np.ndarray | None = None,
                    relu: bool = False, claim: Callable[[], int] | None = None) -> list[list[Callable]] | None:
        """``run``'s work as phases of lane tasks (``blas.run_phases``) where that is all of it (no input copy or
        store outside the lanes), else None; ``claim``: the tiles' work counter (default ``new_claim()``; a lane
        group gives each member its own, ``lane_groups``). The same arguments always take the same path."""
        if self.direct and x is not None and x.ndim == 5 and x.flags.c_contiguous:
            lanes = range(len(self.direct))
            if len(lanes) > 1 and np.may_share_memory(out, x):  # (a fused residual Add's output over x)
                return [[partial(self._run_direct, lane, x, None) for lane in lanes],  # all reads before any store
                        [partial(self._store_direct, lane, out, residual, relu) for lane in lanes]]
            return [[partial(self._run_direct, lane, x, out, residual, relu) for lane in lanes]]
        if self.tap_phases is not None and x is not None:
            return [[partial(copy_input_rows, self.interior, x, rows) for rows, _ in self.tap_phases],
                    [partial(self._run_taps, *lane) for lane in self.tap_lanes],  # type: ignore[union-attr]
                    [partial(self._store_taps, rows, out, residual, relu) for _, rows in self.tap_phases]]
        if self.input_copied_first or self.tap_lanes is not None or self.bands is not None or len(self.lanes) == 1:
            return None
        if all(len(lane) == len(self.lanes) for lane in self.lanes):  # one tile a lane: lane i tile i
            return [[partial(self._run_steps, lane, out, i, x, residual, relu) for i, lane in enumerate(self.lanes)]]
        claim = new_claim() if claim is None else claim
        return [[partial(self._run_steps, lane, out, claim, x, residual, relu) for lane in self.lanes]]

    def _store(self, out: np.ndarray, residual: np.ndarray | None, relu: bool, region: tuple[slice, ...],
               y_pixels: np.ndarray, y2: np.ndarray | None = None, clamp: tuple[float, float] | None = None) -> None:
        """NHWC ``y_pixels`` [N, R, W, B, 4] into ``region`` of NC4HW4 ``out``, plus ``residual`` there (then ReLU)
        if given: one compiled pass (``ir_binds.bind_store_nc4``, bound once per arrays) where it runs, which
        can also add ``y2`` (a second partial product, [N * R * W, 4B] rows like ``y_pixels``'s) and clamp to
        ``clamp`` first (only given with the compiled store); else numpy's copy, add and clip."""
        if packed_gemm.available():
            key = ("store", array_place(out[region]), array_place(y_pixels), residual is not None and
                   array_place(residual[region]), relu, y2 is not None and array_place(y2), clamp)
            self.bound_call(key, partial(self._bind_store, out, residual, relu, region, y_pixels, y2, clamp))()
            return
        self._store_numpy(out[region], None if residual is None else residual[region], relu, y_pixels)

    def _bind_store(self, out: np.ndarray, residual: np.ndarray | None, relu: bool, region: tuple[slice, ...],
                    y_pixels: np.ndarray, y2: np.ndarray | None, clamp: tuple[float, float] | None
                    ) -> Callable[[], None]:
        """``_store``'s compiled pass bound to these arrays, or numpy's passes where it does not apply."""
        dst, res = out[region], None if residual is None else residual[region]
        y = y_pixels.reshape(*y_pixels.shape[:3], -1)
        return ir_binds.bind_store_nc4(y, dst, None if y2 is None else y2.reshape(y.shape), res,
                                          clamp or (-np.inf, np.inf), (0.0 if relu else -np.inf, np.inf)) \
            or partial(self._store_numpy, dst, res, relu, y_pixels, y2, clamp)

    @staticmethod
    def _store_numpy(dst: np.ndarray, res: np.ndarray | None, relu: bool, y_pixels: np.ndarray,
                     y2: np.ndarray | None = None, clamp: tuple[float, float] | None = None) -> None:
        if y2 is not None:
            np.add(y_pixels, y2.reshape(y_pixels.shape), out=y_pixels)
        if clamp is not None:
            np.clip(y_pixels, *clamp, out=y_pixels)
        copy_pixels(dst, y_pixels, (0, 3, 1, 2))
        if res is not None:
            add_residual(dst, res, relu)

    @property
    def input_copied_first(self) -> bool:
        """Whether ``run`` copies all of ``x`` in before it stores any output (else each lane copies the rows of
        its tiles as it goes)."""
        if self.direct:  # all products read x before any store (two hand-offs where ``out`` overlaps x)
            return True
        return self.bands is not None or len(self.lanes) == 1

    @property
    def reads_nchw(self) -> bool:
        """Whether ``run`` also takes an NCHW ``x`` [N, C, H, W] (a C-channel buffer, copied channel by channel:
        ``common.copy_channels``; tiles, with lanes or not)."""
        return self.fold_bias and self.bands is None and not self.direct

    @property
    def chains(self) -> bool:
        """Whether ``run_to_nhwc`` applies (one lane, ungrouped): the producer end of an NHWC chain."""
        return self.bands is None and self.tap_lanes is None and len(self.lanes) == 1 and self.params.group == 1 \
            and not self.direct

    def run_to_nhwc(self, x: np.ndarray) -> None:
        """NC4HW4 ``x`` convolved into ``self.y`` [N, OH, OW, OCp] (bias, activation), without the output copy."""
        self._copy_input(x)
        self._run_steps(self.steps, None, itertools.count().__next__)

    def _copy_input(self, x: np.ndarray) -> None:
        """NC4HW4 ``x`` into the zero-bordered NHWC input (C channels when the bias is folded, else Cp)."""
        if self.fold_bias:
            copy_channels(self.interior, x)
        else:
            copy_pixels(self.interior, x, (0, 2, 3, 1))

    def _run_steps(self, steps: list[tuple[Any, ...]], out: np.ndarray | None, claim: Callable[[], int] | int,
                   x: np.ndarray | None = None, residual: np.ndarray | None = None, relu: bool = False) -> None:
        """Claim the next unclaimed tile until none is left (the steps use this lane's column buffer), or run tile
        ``claim`` alone (an int: one tile per lane, lane i tile i, as ``WinogradKernel._items``); with ``x``, copy
        the input rows of each tile first."""
        k = claim if isinstance(claim, int) else claim()
        while k < len(steps):
            if x is not None:
                copy_input_rows(self.interior, x, self.in_rows[k], self.fold_bias)
            gather, cols_mat, y_rows, scatter, (n0, n1, r0, r1, y_tile, y_pixels) = steps[k]
            if self.implicit is not None:  # GEMM (in place of the gathered columns), bias and activation
                self.implicit[k]()
            elif self.packed is not None:  # gather; GEMM, bias and activation in one call
                np.copyto(*gather)
                self.bound_call(("step", id(cols_mat), id(y_rows)), lambda a=cols_mat, y=y_rows: self.packed.bind(
                    a, y, *self.bounds, bias=not self.fold_bias))()
            else:
                np.copyto(*gather)
                np.matmul(cols_mat, self.weight, out=y_rows)
                if scatter is not None:
                    np.copyto(scatter, y_rows)
                if not self.fold_bias:
                    self._add_bias(y_tile)
                self._activate(y_tile)
            if out is not None:
                self._store(out, residual, relu, (slice(n0, n1), slice(None), slice(r0, r1)), y_pixels)
            k = len(steps) if isinstance(claim, int) else claim()

    def _store_taps(self, rows: tuple[int, int], out: np.ndarray, residual: np.ndarray | None, relu: bool) -> None:
        """Output rows [rows) of the K lanes' single tile: both partial products summed, clamped and stored (plus
        the residual) in one compiled pass."""
        a, b = rows
        n0, n1, r0, _, _, y_pixels = self.steps[0][4]
        key = ("taps", a, array_place(out), residual is not None and array_place(residual), relu)
        y2 = self.tap_lanes[1][2].reshape(y_pixels.shape)[:, a - r0:b - r0]  # type: ignore[index]
        self.bound_call(key, partial(self._bind_store, out, residual, relu, (slice(n0, n1), slice(None), slice(a, b)),
                                     y_pixels[:, a - r0:b - r0], y2, self.bounds))()

    @staticmethod
    def _run_taps(gathers: list[tuple[np.ndarray, np.ndarray]], multiply: Callable[[], None],
                  product: np.ndarray) -> None:
        """Gather one lane's share of K of the single tile and multiply it by its rows of the weights (into
        ``product``, which the caller sums)."""
        for dst, src in gathers:
            np.copyto(dst, src)
        multiply()

    def _run_band(self, c0: int, c1: int, out: np.ndarray, residual: np.ndarray | None = None,
                  relu: bool = False) -> None:
        """GEMM and epilogue of output channels [c0, c1) (multiples of 4) of the single tile, gathered already."""
        _, cols_mat, y_rows, _, (_, _, _, _, y_tile, y_pixels) = self.steps[0]
        np.matmul(cols_mat, self.weight[:, c0:c1], out=y_rows[:, c0:c1])
        band = y_tile[..., c0:c1]
        if not self.fold_bias:
            band += self.bias_row[c0:c1]
        self._activate(band)
        self._store(out, residual, relu, (slice(None), slice(c0 // PACK, c1 // PACK)),
                    y_pixels[..., c0 // PACK: c1 // PACK, :])


def _halves(start: int, end: int) -> list[tuple[int, int]]:
    mid = (start + end + 1) // 2
    return [(start, mid), (mid, end)]


def _bands(size: int, lanes: int) -> list[tuple[int, int]]:
    """``range(size)`` (a multiple of 4) in ``lanes`` bands of whole 4-channel blocks."""
    step = PACK * -(-size // PACK // lanes)
    return [(c, min(c + step, size)) for c in range(0, size, step)]


def _k_ranges(kh: int, kw: int, kc: int, lanes: int) -> list[tuple[int, int, list[tuple[int, int, int, int, int]]]]:
    """K = kh*kw*kc (the column buffer's [ky, kx, channel] order) in at most ``lanes`` contiguous ranges of about
    equal size (multiples of 8 but the last), each ``(k0, k1, pieces)``: a piece ``(ky, x0, x1, c0, c1)`` is the
    block of taps ky, [x0, x1) and channels [c0, c1) it covers (whole taps run together up to the end of a kernel
    row, a tap split between two ranges is a channel range of it)."""
    total = kh * kw * kc
    step = -(-total // max(1, lanes))
    step = min(total, -(-step // 8) * 8)
    ranges = []
    for k0 in range(0, total, step):
        k1, k, pieces = min(k0 + step, total), k0, []
        while k < k1:
            tap, c = divmod(k, kc)
            ky, kx = divmod(tap, kw)
            if c or k1 - k < kc:  # a channel range of one tap
                c1 = min(kc, c + k1 - k)
                pieces.append((ky, kx, kx + 1, c, c1))
                k += c1 - c
            else:  # whole taps, to the end of this kernel row or of the range
                taps = min(kw - kx, (k1 - k) // kc)
                pieces.append((ky, kx, kx + taps, 0, kc))
                k += taps * kc
        ranges.append((k0, k1, pieces))
    return ranges
