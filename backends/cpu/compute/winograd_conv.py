"""Winograd F(u, k) convolution kernel: blocks of tiles, batched GEMM over the alpha^2 positions.

Per block of tile rows (sized so its scratch stays near ``WINOGRAD_BLOCK_BYTES``, i.e. in cache; ungrouped kernels of
one session share their scratch, lane by lane, so consecutive layers reuse warm buffers):

1. gather the block's alpha x alpha input tiles from a zero-bordered NHWC copy of the input (one strided copy, each
   pixel's Cp channels moved as one element) into ``D[alpha, alpha, T, Cp]``;
2. ``V = Bᵀ D B`` as two matmuls with the small transform matrix on the left;
3. ``M = V @ U``, one GEMM batched over the alpha^2 positions (and groups);
4. ``Y = Aᵀ M A`` as two matmuls, bias and activation on ``Y``;
5. copies of whole NC4HW4 pixels straight into the output: one when the tiles cover it exactly, else up to four
   (full tiles, and the clipped last tile row / column where the tiles overhang the edge); as the first of a
   Winograd -> Winograd pair, whole NHWC pixels into the second kernel's zero-bordered input (``chain_input``).

The input goes into the zero-bordered copy all at once before the blocks, or, above ``ROW_COPY_FROM`` bytes and
always with lanes, block by block (each block's input rows just before its gather, which then reads them from L2).
All buffers and per-block views are built at make time; ``run`` is a loop over a few blocks of numpy calls. With
``numThread`` > 1 that many lanes (each with its own scratch) claim the blocks one by one, concurrently. A single
weight-heavy block (deep layers, few pixels) is split either by alpha² positions (the lanes share the GEMMs, the
transforms run on one core) or, where the transforms are a large share (``strategy.winograd_channel_bands``), by
bands of output channels: every lane transforms the whole input block and runs the GEMMs, the output transform and
the stores of its band, so only the input copy runs on one core.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mnnpy.core.strategy import WINOGRAD_BLOCK_BYTES, ConvPlan, winograd_channel_bands, winograd_layout

from . import ir_binds, packed_gemm
from .blas import lane_count, new_claim, run_lanes, run_phases
from .common import (
    COUNTERS,
    PACK,
    Conv2DKernel,
    Conv2DParams,
    add_residual,
    add_row_bias,
    array_place,
    ceil4,
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
from .winograd import default_interp, transform_weights, transform_weights_into_panels, winograd_matrices
from .winograd_stores import block_residual, block_stores, fused_stores

BLOCK_BYTES = WINOGRAD_BLOCK_BYTES
# A padded input above this many bytes is copied block by block (each block's rows just before its tiles are
# gathered: they are then read from L2, not L3/DRAM) at one lane too; lanes always do. The UNet block's 17 MB input:
# 0.936x the run time (in-process A/B); ResNet-18's inputs (<= 0.9 MB) stay in cache either way: neutral.
ROW_COPY_FROM = 4 << 20


class _Block(NamedTuple):
    d: np.ndarray
    gather: tuple[np.ndarray, np.ndarray]  # (D, its source tiles in the padded input), each pixel one element (runs)
    d_mat: np.ndarray
    e: np.ndarray
    e_3d: np.ndarray
    v: np.ndarray
    v_groups: np.ndarray
    m_groups: np.ndarray
    m_scatter: np.ndarray | None
    m_mat: np.ndarray
    m_bias: np.ndarray | None  # [t, ocp] GEMM result at the position whose output transform is all ones
    f: np.ndarray
    f_3d: np.ndarray
    y: np.ndarray
    y_rows: np.ndarray
    tiles: np.ndarray
    rows: tuple[int, int, int, int]  # n0, n1, first output row, last output row (exclusive)
    in_rows: tuple[int, ...]  # n0, n1, first and end input row its tiles read (copied in by its lane with lanes)
    oc4: tuple[int, int]  # the band of output channel blocks (of PACK) it computes
    weight: np.ndarray  # the transformed weights of that band
    bias_tile: np.ndarray  # bias rows of that band (see common.add_row_bias)


class WinogradKernel(Conv2DKernel):
    """Winograd F(u, k) convolution (stride 1, dilation 1, square kernel); see the module docstring."""

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], weight: np.ndarray,
                 bias: np.ndarray, scratch: dict | None = None) -> None:
        super().__init__(params, plan, in_shape, bias)
        k, u = params.kernel[0], int(plan.unit or 2)
        if params.kernel != (k, k) or params.stride != (1, 1) or params.dilation != (1, 1):
            raise ValueError("Winograd needs a square kernel, stride 1 and dilation 1")
        n, c, h, w = self.in_shape
        _, oc, oh, ow = self.out_shape
        pt, pl = params.pads[0], params.pads[1]
        g, a = params.group, u + k - 1
        cp, ocp = ceil4(c), ceil4(oc)
        icg, ocg = c // g, oc // g
        th, tw = -(-oh // u), -(-ow // u)
        self.unit, self.alpha, self.tiles = u, a, (n, th, tw)
        # Worker-process lanes (procs.py) may run the lanes: what they exchange is in the shared pool (the padded
        # input, lane 0's V and M for the position GEMMs, ungrouped), and grouped lanes' private buffers are
        # written and read by one lane.
        self.shared = bool(scratch and scratch.get("shared"))
        self.xp = shared_zeros(scratch, (n, max(pt + h, th * u + k - 1), max(pl + w, tw * u + k - 1), cp),
                               (pt, pl, h, w))
        self.interior = nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))
        windows = self._windows()
        mat_a, mat_b, _ = winograd_matrices(u, k, default_interp(a))
        self.bt = np.ascontiguousarray(mat_b.T, dtype=np.float32)
        self.at = np.ascontiguousarray(mat_a.T, dtype=np.float32)
        wg = weight.reshape(g, ocg, icg, k, k)
        lanes = lane_count(plan.threads, 2.0 * n * oh * ow * oc * (c // g) * k * k)
        # One block whose weights outweigh its tiles (deep layers, few pixels: weight-bandwidth bound): the lanes
        # share the alpha² GEMMs or the output channels instead of the tiles, so each lane streams only its share of
        # the weights. (Splitting both transforms by rows of positions / outputs, one more hand-off: no better.)
        blocks, block_lanes, by_positions = winograd_layout(n, (th, tw), a, cp, ocp, g * icg * ocg, lanes,
                                                            BLOCK_BYTES)
        by_channels = winograd_channel_bands(by_positions, g)
        self.positions = _bands(a * a, lanes) if by_positions and not by_channels else None
        # (blocks x output channel bands) are the work items the lanes claim; bands only for the weight-heavy block
        bands = _bands(ocp // PACK, lanes) if by_channels else [(0, ocp // PACK)]
        self.by_channels = len(bands) > 1
        lanes = len(bands) if self.by_channels else block_lanes
        nr = packed_gemm.panel_width() if packed_gemm.available() else 0
        if g == 1 and nr and all(b0 * PACK % nr == 0 for b0, _ in bands):
            # the transformed weights straight into the packed GEMM's panels (the alpha² position GEMMs of a block in
            # one call), the only copy kept; channel bands are bands of its panels (``PackedWeights.columns``: the
            # numpy transform and a packed copy per band took ResNet-18's createSession at 2 threads to ~250 ms)
            whole = PackedWeights(None, shape=(a * a, cp, ocp))
            transform_weights_into_panels(wg, u, whole.panels)
            parts = [whole.columns(b0 * PACK, b1 * PACK) for b0, b1 in bands] if self.by_channels else [whole]
            self.weights = [part.panels for part in parts]
            self.packed = {id(part.panels): part for part in parts}
        else:
            if g == 1:
                weights = transform_weights(wg, u, cp, ocp)[0]
            else:
                weights = np.ascontiguousarray(transform_weights(wg, u, icg, ocg).transpose(1, 0, 2, 3))
            # each band's weights contiguous (as column views of the whole the GEMMs ran ~12% slower); the kernel
            # keeps only the bands, each packed once for the compiled GEMM where it runs
            self.weights = [weights] if not self.by_channels else \
                [np.ascontiguousarray(weights[:, :, b0 * PACK: b1 * PACK]) for b0, b1 in bands]
            self.packed = {id(w): PackedWeights(w) for w in self.weights} if g == 1 and packed_gemm.available() \
                else {}
        band_bias = [self.bias_tile if not self.by_channels else
                     np.ascontiguousarray(self.bias_tile[:, b0 * PACK: b1 * PACK]) for b0, b1 in bands]
        items = [(blk, i) for blk in blocks for i in range(len(bands))]
        band_max = max(b1 - b0 for b0, b1 in bands) * PACK
        t_max = max((n1 - n0) * (r1 - r0) * tw for n0, n1, r0, r1 in blocks)
        ones = [x for x in range(a) if np.all(mat_a[x] == 1.0)]  # Aᵀ e_x = 1: bias added to M there reaches all of Y
        self.bias_position = ones[0] * a + ones[0] if ones else None
        dims = (a, u, tw, cp, ocp, g, c, oc, oh, k, pt, h)
        # Each lane owns scratch and a view of every block on it; at run time the lanes claim blocks one by one, so
        # a lane whose core is taken by another process leaves its share to the others instead of stalling the run.
        self.lanes = []
        self.memory_bytes = sum(w.nbytes for w in self.weights) + self.xp.nbytes  # held, reported beside the estimate
        for lane in range(min(lanes, len(items))):
            sizes = {"d": a * a * t_max * cp, "e": a * a * t_max * cp, "m": a * a * t_max * band_max,
                     "f": u * a * t_max * band_max}
            if g > 1:  # M's padded output channels must stay zero: private buffers, Y not in M's
                sizes |= {"v": a * a * t_max * cp, "y": u * u * t_max * ocp, "mg": a * a * t_max * ocp}
            bufs = {name: scratch_buffer(scratch if g == 1 else None, lane, name, size) for name, size in sizes.items()}
            if g > 1:
                bufs["m"][:] = 0.0
            self.memory_bytes += 4 * sum(sizes.values())
            bufs.setdefault("v", bufs["d"])  # D is dead once BᵀD is formed, M once AᵀM is: V and Y reuse them
            bufs.setdefault("y", bufs["m"])
            self.lanes.append([self._block(bufs, windows, blk, (*dims[:4], (b1 - b0) * PACK, *dims[5:]),
                                           self.bias_position, (b0, b1), self.weights[i], band_bias[i])
                               for blk, i in items for b0, b1 in [bands[i]]])
        self.blocks = self.lanes[0]
        # The transforms as compiled kernels (``llvm_winograd``) where they exist: ungrouped, this (u, k), channel
        # counts (and bands) a multiple of the vector width. See tools/PERF.md, fifteenth session.
        self.compiled = g == 1 and packed_gemm.available() and (u, k) in packed_gemm.WINOGRAD_UNITS \
            and all(w % packed_gemm.vector_width() == 0 for w in (cp, *((b1 - b0) * PACK for b0, b1 in bands)))
        # Channel bands of one image's block run in two phases: the lanes first transform the input by ranges of
        # tile rows (each copying the input rows its tiles read) into lane 0's V, then each runs its bands' GEMMs
        # from that V, the output transform and the stores. One more hand-off, but the input side no longer runs
        # serially before the lanes (the copy) and again on every lane (the transform). ResNet-18 at 2 threads: see
        # tools/PERF.md, fifteenth session.
        self.phases: list[tuple] | None = None
        if self.by_channels and n == 1 and len(blocks) == 1 and len(self.lanes) > 1:
            v = self.lanes[0][0].v_groups
            self.lanes = [[b._replace(v_groups=v) for b in lane] for lane in self.lanes]
            self.blocks = self.lanes[0]
            self._make_phases(windows)
        self._stores: dict[tuple, list[list[list[tuple[np.ndarray, np.ndarray]]]]] = {}  # see _stores_for
        COUNTERS["weight_transforms"] += 1

    def _make_phases(self, windows: np.ndarray) -> None:
        """The first phase's parts (``__init__``): per range of tile rows its input rows, gather and transform views
        on lane 0's first block (a single block at tile row 0)."""
        b, tw = self.blocks[0], self.tiles[2]
        cp, k, u, (pt, h) = self.xp.shape[3], self.params.kernel[0], self.unit, (self.params.pads[0], self.in_shape[2])
        self.phases = []
        for r0, r1 in _bands(self.tiles[1], len(self.lanes)):
            x0, x1 = r0 * tw * cp, r1 * tw * cp
            self.phases.append((input_rows((0, 1), (r0 * u, r1 * u + k - 1), pt, h),
                                runs(b.d[:, :, :, r0:r1], windows[:, :, 0:1, r0:r1]),
                                (b.d_mat[..., x0:x1], b.e[..., x0:x1]), (b.e_3d[..., x0:x1], b.v[..., x0:x1]),
                                (r0, r1)))

    @staticmethod
    def _block(scratch: dict[str, np.ndarray], windows: np.ndarray, blk: tuple[int, int, int, int],
               dims: tuple[int, ...], bias_position: int | None, oc4: tuple[int, int], weight: np.ndarray,
               bias_tile: np.ndarray) -> _Block:
        a, u, tw, cp, ocp, g, c, oc, oh, k, pt, h = dims
        n0, n1, r0, r1 = blk
        nb, rb = n1 - n0, r1 - r0
        t = nb * rb * tw
        d = scratch["d"][: a * a * t * cp].reshape(a, a, nb, rb, tw, cp)
        e = scratch["e"][: a * a * t * cp].reshape(a, a * t * cp)
        v = scratch["v"][: a * a * t * cp].reshape(a, a, t * cp)
        m = scratch["m"][: a * a * t * ocp].reshape(a * a, t, ocp)
        v_groups: np.ndarray
        m_groups: np.ndarray
        if g == 1:
            v_groups, m_groups, m_scatter = v.reshape(a * a, t, cp), m, None
        else:
            icg, ocg = c // g, oc // g
            v_groups = v.reshape(a * a, t, cp)[:, :, :c].reshape(a * a, t, g, icg).transpose(0, 2, 1, 3)
            m_groups = scratch["mg"][: a * a * t * ocg * g].reshape(a * a, g, t, ocg)
            m_scatter = m[:, :, :oc].reshape(a * a, t, g, ocg)
        f = scratch["f"][: u * a * t * ocp].reshape(u, a * t * ocp)
        y = scratch["y"][: u * u * t * ocp].reshape(u, u, t * ocp)
        tiles = y.reshape(u, u, nb, rb, tw, ocp // PACK, PACK)
        row_end = min(r1 * u, oh)
        m_bias = None if bias_position is None else m[bias_position]
        # The first pass of each transform contracts the leading axis of [alpha, alpha, T*C]: as one GEMM of N =
        # alpha*T*C columns OpenBLAS takes 2-6x longer than as alpha GEMMs of T*C columns (M = 6 or 8 rows), so
        # both sides are batched over the second axis (transposed views, no copies).
        return _Block(d, runs(d, windows[:, :, n0:n1, r0:r1]), _by_columns(d, a), _by_columns(e, a),
                      e.reshape(a, a, -1), v, v_groups, m_groups, m_scatter, _by_columns(m.reshape(a, -1), a),
                      m_bias, _by_columns(f, a), f.reshape(u, a, -1), y, y.reshape(u, u, t, ocp), tiles,
                      (n0, n1, r0 * u, row_end), input_rows((n0, n1), (r0 * u, r1 * u + k - 1), pt, h), oc4, weight,
                      bias_tile)

    def _windows(self) -> np.ndarray:
        """The alpha x alpha input tiles [alpha, alpha, N, TH, TW, Cp] as a view of the padded input."""
        a, u, (n, th, tw) = self.alpha, self.unit, self.tiles
        s_n, s_h, s_w, s_c = self.xp.strides
        return as_strided(self.xp, shape=(a, a, n, th, tw, self.xp.shape[3]),
                          strides=(s_h, s_w, s_n, u * s_h, u * s_w, s_c), writeable=False)

    @property
    def input_copied_first(self) -> bool:
        """Whether ``run`` copies all of ``x`` in before it stores any output (else each lane copies the input rows
        of its blocks as it goes; channel bands share them: copied once, first)."""
        return self.positions is not None or self.by_channels or (len(self.lanes) == 1
                                                                   and self.xp.nbytes <= ROW_COPY_FROM)

    @property
    def chains(self) -> bool:
        """Whether this kernel can be either end of a Winograd -> Winograd chain (ungrouped: no private M/Y)."""
        return self.params.group == 1

    def chain_input(self, pool: dict | None) -> np.ndarray:
        """Move the zero-bordered input to the pool's buffer for chain ends of this geometry (never the one plain
        kernels share: the producer may be reading that very buffer while it writes this one) and return its
        interior [N, H, W, Cp], which the producing kernel's ``run`` fills in place of the NC4HW4 tensor."""
        h, w = self.in_shape[2:]
        pt, pl = self.params.pads[0], self.params.pads[1]
        self.xp = shared_zeros(pool, self.xp.shape, (pt, pl, h, w), tag="chain")
        self.interior = nhwc_view(self.xp, slice(pt, pt + h), slice(pl, pl + w))
        windows = self._windows()
        self.lanes = [[b._replace(gather=runs(b.d, windows[:, :, b.rows[0]:b.rows[1], r0:r0 + b.d.shape[3]]))
                       for b in lane for r0 in [b.rows[2] // self.unit]] for lane in self.lanes]
        self.blocks = self.lanes[0]
        if self.phases is not None:
            self._make_phases(windows)
        return self.xp[:, pt:pt + h, pl:pl + w]

    def run(self, x: np.ndarray | None, out: np.ndarray, residual: np.ndarray | None = None,
            relu: bool = False) -> None:
        """Convolve NC4HW4 ``x`` into ``out`` (blocks, or the GEMM positions, spread over lanes): NC4HW4, or an
        NHWC [N, OH, OW, OCp] view (a chained consumer's ``chain_input``). ``x`` None: the zero-bordered input holds
        it already (a chained producer wrote it). ``residual`` (NC4HW4 like ``out``, or ``out`` itself): each block
        adds it to the rows it stored, then ReLU with ``relu`` (a residual Add fused in: ``common.add_residual``)."""
        phases = self.lane_phases(x, out, residual, relu)
        if phases is not None:  # (one hand-off with worker-process lanes: ``run_phases``)
            run_phases(phases, self.plan.threads, self.shared)
            return
        stores = self._stores_for(out, residual, relu)
        if x is not None:
            copy_pixels(self.interior, x, (0, 2, 3, 1))
        if self.positions is None:
            claim = new_claim()
            run_lanes([partial(self._run_blocks, lane, stores[i], claim) for i, lane in enumerate(self.lanes)],
                      self.plan.threads, self.shared)
            return
        b = self.blocks[0]
        self._transform_in(b)
        run_lanes([partial(self._gemm, b, p0, p1) for p0, p1 in self.positions], self.plan.threads,
                  self.shared and self.params.group == 1)
        self._transform_out(b, stores[0][0])

    def lane_phases(self, x: np.ndarray | None, out: np.ndarray, residual: np.ndarray | None = None,
                    relu: bool = False, claim: Callable[[], int] | None = None) -> list[list[Callable]] | None:
        """``run``'s work as phases of lane tasks (``blas.run_phases``) where that is all of it (no copy or transform
        before the hand-off), else None; ``claim``: the blocks' work counter (default ``new_claim()``; a lane group
        gives each member its own, ``lane_groups``). The same arguments always take the same path."""
        split = x is not None and not self.input_copied_first
        if self.phases is None and (self.positions is not None or not (x is None or split)):
            return None
        stores = self._stores_for(out, residual, relu)
        claims = self._items(claim)
        if self.phases is not None:  # the channel bands' two phases (``_make_phases``)
            return [[partial(self._transform_part, part, x) for part in self.phases],
                    [partial(self._run_blocks, lane, stores[i], claims[i], None, True)
                     for i, lane in enumerate(self.lanes)]]
        return [[partial(self._run_blocks, lane, stores[i], claims[i], x if split else None)
                 for i, lane in enumerate(self.lanes)]]

    def _items(self, claim: Callable[[], int] | None) -> list[Callable[[], int] | int]:
        """Per lane what ``_run_blocks`` runs: with one work item (block or channel band) per lane, lane i item i,
        so that consecutive layers split alike find their rows in their own core's cache (claimed, whichever lane
        left the barrier first took the first block: ResNet-18 at 2 threads paired 0.951-0.988); else the items
        claimed one by one from one counter (default ``new_claim()``)."""
        if len(self.lanes) > 1 and all(len(lane) == len(self.lanes) for lane in self.lanes):
            return list(range(len(self.lanes)))
        claim = new_claim() if claim is None else claim
        return [claim] * len(self.lanes)

    def _stores_for(self, out: np.ndarray, residual: np.ndarray | None = None, relu: bool = False
                    ) -> list[list[list[tuple]]]:
        """Per lane, per block: the (destination, source) pixel copies of its tiles into ``out``, then with a
        ``residual`` one (rows of ``out``, the same rows of ``residual``, relu) entry; built on the first run into
        these arrays and kept (a run then makes no views: less Python per block, so the lanes hold the GIL less)."""
        key = (array_place(out), None if residual is None else (array_place(residual), relu))
        if key not in self._stores:  # a chain's producer also runs plainly (callbacks): a few keys at most
            fused = fused_stores(self, out, residual, relu) if self.compiled else None
            self._stores[key] = fused or [[block_stores(self, b, out) + block_residual(b, out, residual, relu)
                                           for b in lane] for lane in self.lanes]
        return self._stores[key]

    def _transform_in(self, b: _Block) -> None:
        if self.compiled:
            n0, n1, row0, _ = b.rows
            self.bound_call(("in", id(b), id(self.xp)), partial(self._bind_in, b, n0, n1, row0 // self.unit))()
            return
        np.copyto(*b.gather)
        np.matmul(self.bt, b.d_mat, out=b.e)
        np.matmul(self.bt, b.e_3d, out=b.v)

    def _bind_in(self, b: _Block, n0: int, n1: int, r0: int, r1: int | None = None) -> Callable[[], None]:
        """The compiled input transform (``ir_binds.bind_winograd_in``) of images n0..n1, tile rows r0..r1 (None:
        the block's) into ``b``'s V, one call per image."""
        a, u, tw = self.alpha, self.unit, self.tiles[2]
        rb = b.d.shape[3]
        r1 = r0 + rb if r1 is None else r1
        v = b.v.reshape(a * a, -1, self.xp.shape[3])
        calls = tuple(ir_binds.bind_winograd_in(u, self.params.kernel[0], self.xp[i, r0 * u:],
                                                   v[:, ((i - n0) * rb + r0 - b.rows[2] // u) * tw:], r1 - r0, tw)
                      for i in range(n0, n1))
        return calls[0] if len(calls) == 1 else partial(in_turn, calls)

    def _gemm(self, b: _Block, p0: int, p1: int) -> None:
        packed = self.packed.get(id(b.weight))
        if packed is not None:
            self.bound_call(("gemm", id(b.v_groups), id(b.m_groups), id(b.weight), p0, p1),  # arrays the blocks keep
                            lambda: packed.bind(b.v_groups[p0:p1], b.m_groups[p0:p1], start=p0))()
        else:
            np.matmul(b.v_groups[p0:p1], b.weight[p0:p1], out=b.m_groups[p0:p1])

    def _transform_part(self, part: tuple, x: np.ndarray | None) -> None:
        """One lane's share of the first phase (``_make_phases``): with ``x``, copy the input rows its tiles read,
        then gather them and transform them into lane 0's V."""
        rows, gather, (d, e), (e3, v), (r0, r1) = part
        if x is not None:
            copy_input_rows(self.interior, x, rows)
        if self.compiled:
            b = self.blocks[0]
            self.bound_call(("part", r0, id(self.xp)), partial(self._bind_in, b, 0, 1, r0, r1))()
            return
        np.copyto(*gather)
        np.matmul(self.bt, d, out=e)
        np.matmul(self.bt, e3, out=v)

    def _run_blocks(self, blocks: list[_Block], stores: list[list[tuple[np.ndarray, np.ndarray]]],
                    claim: Callable[[], int] | int, x: np.ndarray | None = None, transformed_in: bool = False) -> None:
        """Claim the next unclaimed block until none is left (the blocks are views on this lane's scratch), or run
        block ``claim`` alone (an int: ``_items``); with ``x``, copy the input rows each block reads first (lanes:
        the input copy runs in parallel too). ``transformed_in``: V holds the input transformed already (the two
        phases)."""
        transformed = blocks[0].rows if transformed_in else None  # channel bands of one block: V is kept
        k = claim if isinstance(claim, int) else claim()
        while k < len(blocks):
            b = blocks[k]
            if x is not None:
                copy_input_rows(self.interior, x, b.in_rows)
            if b.rows != transformed:
                self._transform_in(b)
                transformed = b.rows if self.by_channels else None
            self._gemm(b, 0, len(b.weight))
            self._transform_out(b, stores[k])
            k = len(blocks) if isinstance(claim, int) else claim()

    def _transform_out(self, b: _Block, stores: list[tuple[np.ndarray, np.ndarray]]) -> None:
        if stores and len(stores[0]) == 1:  # the compiled transform stores into the output itself
            for (call,) in stores:
                call()
            return
        if self.compiled:  # Aᵀ M A, bias and activation in one compiled pass (``ir_binds.bind_winograd_out``)
            uu, ch = self.unit * self.unit, b.m_groups.shape[2]
            self.bound_call(("out", id(b)), lambda: ir_binds.bind_winograd_out(
                self.unit, self.params.kernel[0], b.m_groups, b.y.reshape(uu, -1, ch), b.bias_tile[0],
                self.clamp_bounds()))()
        else:
            self._transform_out_numpy(b)
        for store in stores:
            if len(store) == 2:
                np.copyto(*store)
            else:
                add_residual(*store)

    def _transform_out_numpy(self, b: _Block) -> None:
        if b.m_scatter is not None:
            np.copyto(b.m_scatter, b.m_groups.transpose(0, 2, 1, 3))
        if b.m_bias is not None:
            add_row_bias(b.m_bias, b.bias_tile)  # 1/u² of the work of adding it to Y
        np.matmul(self.at, b.m_mat, out=b.f)
        np.matmul(self.at, b.f_3d, out=b.y)
        if b.m_bias is None:
            add_row_bias(b.y_rows, b.bias_tile)
        self._activate(b.y_rows)


def _by_columns(buf: np.ndarray, alpha: int) -> np.ndarray:
    """``[R, alpha * K]`` scratch seen as ``[alpha, R, K]``: a stack of alpha BLAS-able matrices (strided rows)."""
    rows = buf.shape[0]
    return buf.reshape(rows, alpha, -1).transpose(1, 0, 2)


def _bands(size: int, lanes: int) -> list[tuple[int, int]]:
    """``range(size)`` in at most ``lanes`` contiguous bands."""
    step = -(-size // max(1, min(lanes, size)))
    return [(r, min(r + step, size)) for r in range(0, size, step)]
