"""Convolution strategy: MNN's analytic cost models, as pure functions over shapes (mnn-facts §2.5, §5, §6).

``plan_conv2d`` chooses, per convolution and input shape, between 1x1 GEMM (optionally Strassen), Winograd
F(u, k), im2col GEMM, the depthwise kernel and the deconvolution kernel. It needs no arrays, so the session can
call it at resize time and report the costs it compared (``session.info()``).

Departures from MNN, measured: Winograd and im2col are compared by a numpy time model (``winograd_time``,
``im2col_cost``) instead of MNN's flop rate: GEMMs of few rows run below the BLAS peak (``gemm_cost``), each numpy
pass costs per float moved (MNN's 2 alpha³ transform flops undercount those passes ~8x here), and the weights are
streamed per run (``weight_traffic``), which makes small units (or im2col) win on deep layers with few pixels.
A Strassen level must also pass ``strassen_pays`` (saved BLAS flops vs numpy's addition passes).

Winograd memory (issue 12): each candidate unit's footprint, transformed weights (alpha² x ic x oc: 1.8x / 4x /
7.1x the k² x ic x oc weights for F(2,3) / F(4,3) / F(6,3)) plus the intermediates the kernel allocates (the padded
input and one block of tile buffers per lane), is part of its cost (``WINOGRAD_MEMORY_COST`` per byte) and is
reported as ``winograd:U:bytes``. A memory budget (``memory_limit``, config ``winogradMemoryLimit`` in bytes) rules
out the units whose footprint exceeds it, so a tight budget picks a smaller tile, or im2col when none fits.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

ALGORITHMS = ("gemm1x1", "strassen", "winograd", "im2col", "depthwise", "deconv")
WINOGRAD_ALPHAS = (4, 6, 8)  # alpha = u + k - 1 values with MNN destination-transform kernels
WINOGRAD_MAX_FORCED_ALPHA = 10  # forcing may go beyond MNN's set; numerical error grows with alpha
# Cost units per weight element streamed per run: alpha² x ic x oc for Winograd vs k² x ic x oc for im2col (one
# float from memory ~25 flops of BLAS time).
WINOGRAD_WEIGHT_COST = 25.0
# GEMMs of M rows run at ~peak * M / (M + GEMM_HALF_ROWS) (OpenBLAS AVX-512, 1 thread, N = K = 512, GFLOP/s: M = 16
# 82, 49 155, 100 181, 196 196, 400 204); a numpy pass costs PASS_FLOAT_COST per float moved (~14 G floats/s in
# cache). Per-layer check (1 thread, ms): 64ch 56² F(4,3) 1.17 < F(6,3) 1.36 < F(2,3) 1.94; 128ch 28² F(4,3) 0.95
# < F(6,3) 1.03; 256ch 14² F(2,3) 1.13 < F(4,3) 1.42 < im2col 1.53; 512ch 7² im2col 1.98 < F(2,3) 2.13; UNet 64ch
# 256² F(6,3) 18.3 < F(4,3) 21.2: the model orders them all the same way (the flop rate took F(2,3) at 512ch 7²).
GEMM_HALF_ROWS = 20.0
PASS_FLOAT_COST = 15.0
IM2COL_TILE_BYTES = 1 << 20  # im2col column tile (~L2): ResNet-18 stem 2.56 (4 MB) -> 2.46 ms, strided 3x3 same
# Cost units per byte of footprint (transformed weights + intermediates) held for the session's life (cache/TLB
# pressure, first-touch faults): a tiebreaker between units within a few percent; the hard budget is memory_limit.
WINOGRAD_MEMORY_COST = 1.0


class GemmModel(NamedTuple):
    """What the GEMM the kernels call costs: its few-row penalty (``gemm_cost``), the cost per weight element
    streamed (``weight_traffic``) and per Winograd transform flop (the alpha x alpha matmuls; 0: counted as passes)."""

    half_rows: float
    weight_cost: float
    transform_flop_cost: float


# numpy's matmul (OpenBLAS): the constants above
BLAS_GEMM = GemmModel(GEMM_HALF_ROWS, WINOGRAD_WEIGHT_COST, 0.0)
# The packed GEMM (``backends/cpu/compute/packed_gemm``: weights packed at resize, MR-row register tiles) has no
# per-call packing, so few rows cost little, and its flops are cheaper against the transforms' numpy passes, whose
# alpha x alpha matmuls then count per flop (more for bigger tiles). Fitted to the per-layer times on the Zen 4 host
# (1 thread, ms, im2col / F(2,3) / F(4,3) / F(6,3)): 64ch 56² 2.45 / 1.60 / 1.00 / 1.06; 128ch 28² 2.25 / 1.28 /
# 0.86 / 0.94; 256ch 14² 2.20 / 1.19 / 1.03 / 1.27; 512ch 7² 2.22 / 1.49 / 2.50 / 4.40 (with numpy's GEMM im2col won
# at 7² and F(2,3) at 14²); the UNet block keeps F(6,3). Every constant within 2x of these picks the same units.
PACKED_GEMM = GemmModel(4.0, 10.0, 2.0)


def l2_cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """The per-core level-2 cache (data or unified) of CPU 0 as Linux reports it; None where it does not."""
    with contextlib.suppress(OSError, ValueError):
        for entry in sorted(os.listdir(root)):
            if not entry.startswith("index"):
                continue
            path = os.path.join(root, entry)
            with open(os.path.join(path, "level")) as f:
                level = int(f.read())
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            if level == 2 and kind in ("Data", "Unified"):
                with open(os.path.join(path, "size")) as f:
                    text = f.read().strip().upper()
                scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
                return int(text.rstrip("KM")) * scale
    return None


def winograd_block_bytes(l2: int | None) -> int:
    """Target scratch of one Winograd block of tiles: twice the core's L2 (its V, M and the block's input and
    output then move between L2 and L3 in a few large streams), 2 MB where the L2 is not known, within 0.5-4 MB.
    The 2 MB constant was tuned on the AVX-512 host (a Zen 5 EPYC: 1 MB of L2 per core by AMD's specification, not
    read off that machine). On an AVX2 host with 512 KB, 1 MB blocks ran the UNet block 0.963-0.965x and ResNet-18
    0.965-0.974x the time of 2 MB blocks at 1 thread (ABBA session order, tools/PERF.md, seventh session)."""
    return min(max(2 * l2, 512 << 10), 4 << 20) if l2 else 2 << 20


WINOGRAD_BLOCK_BYTES = winograd_block_bytes(l2_cache_bytes())  # the kernel's blocking (scratch kept in L2/L3)
# A weight-heavy single Winograd block splits its weights over the lanes (bands / positions, ``winograd_layout``) only
# when its transformed weights exceed this; smaller ones stay in L3, so every lane streaming all of them costs less
# than the lanes sharing one transformed input across the cores. ResNet-18 at 2 threads, paired, the sixteenth
# session: its 128ch 28² F(4,3) (2.4 MB) in blocks 0.960-0.999 against bands, and with this limit (the model then
# keeps F(4,3); at 3 MB it took F(6,3), 4.2 MB, in bands: 0.994) 0.969-1.014; the 256ch 14² F(4,3) (9.4 MB) and 512ch
# 7² F(2,3) (16.8 MB) in blocks 1.013-1.055.
WINOGRAD_SPLIT_WEIGHT_BYTES = 8 << 20
# Per lane: waking a sleeping lane thread (and its vCPU) costs ~0.1 ms, so each lane gets >= ~0.25 ms of work.
# Same-process A/B, 2 threads (p10 ms at 5e7 / 2.5e7 / 1.2e7): BERT-4L 11.0 / 9.6 / 9.3, ViT-tiny 34.5 / 31.5 /
# 30.6, ResNet-18 23.5 / 22.9 / 23.2 (1 thread: 11.2, 34.6, 33.4); medians favoured 2.5e7 over 1.2e7 on ResNet-18.
LANE_MIN_FLOPS = 2.5e7
# Weight of an im2col convolution's flops toward LANE_MIN_FLOPS. The thirteenth session split them from 5e6 flops
# (weight 5: ResNet-18's three 1x1 stride-2 convolutions, 12.8 MFLOP, on two lanes: paired 0.980 at 2 threads with
# OpenBLAS); with the packed GEMM those take ~0.22 ms and two lanes made them slower (0.245 ms): weight 1 again,
# paired 0.975 / 0.988 at 2 threads (Zen 4 host, process lanes).
IM2COL_LANE_WEIGHT = 1.0
# The same for a 1 x 1 convolution whose packed GEMM reads the NC4HW4 input in place (im2col.Im2ColKernel's direct
# path): nothing runs before or after its lanes' products, so 2 lanes pay from ~5 MFLOP (ResNet-18's shortcuts).
DIRECT_LANE_WEIGHT = 5.0
STRASSEN_MAX_DEPTH = 5
# numpy's Strassen adds are separate passes over memory while its GEMM is a fast BLAS: a level pays only when the
# GEMM flops it saves take longer than streaming its 15 block additions (3 floats of traffic per element).
# Measured (1 thread): 197x768x192 plain 0.59 ms vs one level 0.63; 128x1024x256 0.64 vs 0.74; 1024^3 about even.
STRASSEN_FLOPS_PER_BYTE = 10.0  # ~100 GFLOP/s BLAS over ~10 GB/s for numpy's elementwise passes
STRASSEN_PENALTY = 1.5
# Generic MNN matmul packing (eP, lP, hP) and the NC4HW4 pack P; they enter Strassen's recursion test.
E_PACK, L_PACK, H_PACK, PACK = 16, 1, 4, 4


class ConvShape(Protocol):
    """What the planner reads from ``backends.cpu.compute.conv.Conv2DParams`` (read-only)."""

    @property
    def kernel(self) -> tuple[int, int]: ...
    @property
    def stride(self) -> tuple[int, int]: ...
    @property
    def dilation(self) -> tuple[int, int]: ...
    @property
    def group(self) -> int: ...
    @property
    def in_channels(self) -> int: ...
    @property
    def out_channels(self) -> int: ...
    @property
    def transposed(self) -> bool: ...


@dataclass(frozen=True)
class ConvPlan:
    """The algorithm chosen for one convolution and why.

    Attributes:
        algorithm: one of ``ALGORITHMS``.
        unit: Winograd output tile u for F(u, k), else None.
        costs: the costs compared (name -> number), for reports.
        reason: one line explaining the choice.
        strassen_depth: recursion depth of the Strassen GEMM (0 = plain GEMM).
        threads: ``numThread``: lanes of independent blocks the kernel may run at once (BLAS stays at 1 thread).
        memory_bytes: estimated footprint of the chosen algorithm's transformed weights and intermediates (Winograd;
            0 when not estimated).
    """

    algorithm: str
    unit: int | None = None
    costs: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    strassen_depth: int = 0
    threads: int = 1
    memory_bytes: int = 0


def strassen_should_recurse(e: int, l_dim: int, h: int) -> bool:
    """MNN's one-level test: recurse when the saved sub-multiply traffic beats 1.5x the extra additions.

    Args:
        e: rows of A and C (plane size for a 1x1 conv).
        l_dim: the reduced dimension (input channels).
        h: columns of B and C (output channels).

    Returns:
        True when one more Strassen level is worth it.
    """
    e_sub, h_sub, l_sub = strassen_split(e, l_dim, h)
    if e_sub == 0 or h_sub == 0 or l_dim % (2 * PACK) != 0 or l_dim % (2 * L_PACK) != 0:
        return False
    save_matmul = (e / E_PACK) * (E_PACK * h_sub + l_sub * E_PACK + l_sub * h_sub)
    extra = 4 * e_sub * l_sub + 4 * l_sub * h_sub + 7 * e_sub * h_sub
    return save_matmul - extra * STRASSEN_PENALTY > 0


def strassen_pays(e: int, l_dim: int, h: int) -> bool:
    """numpy's test for one Strassen level: saved GEMM flops vs the traffic of the 15 block additions."""
    e_sub, h_sub, l_sub = strassen_split(e, l_dim, h)
    if e_sub == 0 or h_sub == 0 or l_dim % 2:
        return False
    saved_flops = 2.0 * e_sub * l_sub * h_sub
    added_bytes = 12.0 * (4 * e_sub * l_sub + 4 * l_sub * h_sub + 7 * e_sub * h_sub)
    return saved_flops > STRASSEN_FLOPS_PER_BYTE * added_bytes


def numpy_strassen_depth(e: int, l_dim: int, h: int, max_depth: int = STRASSEN_MAX_DEPTH) -> int:
    """Levels where both MNN's rule and numpy's cost (``strassen_pays``) say recursing wins."""
    depth = 0
    while depth < max_depth and strassen_should_recurse(e, l_dim, h) and strassen_pays(e, l_dim, h):
        e, h, l_dim = strassen_split(e, l_dim, h)
        depth += 1
    return depth


def strassen_split(e: int, l_dim: int, h: int) -> tuple[int, int, int]:
    """Sub-block sizes (eSub, hSub, lSub) of one Strassen level, aligned as MNN aligns them."""
    hp = max(H_PACK, PACK)
    return (e // E_PACK // 2) * E_PACK, (h // hp // 2) * hp, l_dim // 2


def strassen_depth(e: int, l_dim: int, h: int, max_depth: int = STRASSEN_MAX_DEPTH) -> int:
    """Number of Strassen levels MNN's recursion rule takes for an (e x l_dim) @ (l_dim x h) product."""
    depth = 0
    while depth < max_depth and strassen_should_recurse(e, l_dim, h):
        e, h, l_dim = strassen_split(e, l_dim, h)
        depth += 1
    return depth


def winograd_cost(ic: int, oc: int, oh: int, ow: int, k: int, unit: int) -> float:
    """MNN's Winograd cost: input transform + batched GEMM over alpha^2 + output transform, all tiles."""
    a = unit + k - 1
    tiles = math.ceil(ow / unit) * math.ceil(oh / unit)
    return float((2 * a * a * a * ic + 2 * a * a * ic * oc + (a + unit) * unit * 2 * a * oc) * tiles)


def gemm_cost(flops: float, rows: float, model: GemmModel = BLAS_GEMM) -> float:
    """Time cost of GEMMs of ``flops`` made in calls of ``rows`` rows (few rows: below the BLAS peak)."""
    return flops * (1.0 + model.half_rows / max(rows, 1.0))


def im2col_cost(params: ConvShape, in_shape: tuple[int, ...], out_hw: tuple[int, int],
                model: GemmModel = BLAS_GEMM) -> float:
    """Time cost of ``backends/cpu/compute/im2col``: GEMMs over its tiles of rows, its passes, streamed weights."""
    (kh, kw), g = params.kernel, params.group
    icg, ocg = params.in_channels // g, params.out_channels // g
    n, _, h, w = in_shape
    pixels = n * out_hw[0] * out_hw[1]
    cp, ocp = (PACK * math.ceil(c / PACK) for c in (params.in_channels, params.out_channels))
    k_len = kh * kw * (cp if g == 1 else icg)
    tiles = output_tiles(n, out_hw[0], g * out_hw[1] * k_len * 4, IM2COL_TILE_BYTES)
    floats = 2 * n * h * w * cp + 2 * pixels * k_len * g + 6 * pixels * ocp
    flops = 2.0 * pixels * icg * ocg * kh * kw * g
    return gemm_cost(flops, pixels / len(tiles), model) + PASS_FLOAT_COST * floats \
        + weight_traffic(icg, ocg, kh * kw, model) * g


def winograd_time(ic: int, oc: int, in_shape: tuple[int, ...], out_hw: tuple[int, int], k: int, unit: int,
                  group: int = 1, threads: int = 1, model: GemmModel = BLAS_GEMM) -> float:
    """Time cost of ``WinogradKernel`` F(unit, k) without the weights: the alpha² GEMMs over its blocks of tiles
    and its passes (input copy; gather, Bᵀ, B over alpha² x Cp; Aᵀ, A, bias/clamp and store over OCp per tile),
    plus the transforms' flops where the model counts them (2 alpha per float each of Bᵀ., .B, Aᵀ., .A)."""
    a = unit + k - 1
    n, _, h, w = in_shape
    cp, ocp = PACK * math.ceil(ic / PACK), PACK * math.ceil(oc / PACK)
    th, tw = math.ceil(out_hw[0] / unit), math.ceil(out_hw[1] / unit)
    lanes = lane_count(threads, 2.0 * n * out_hw[0] * out_hw[1] * oc * (ic // group) * k * k)
    blocks, _, _ = winograd_layout(n, (th, tw), a, cp, ocp, ic * oc // group, lanes)
    tiles = n * th * tw
    floats = 2 * n * h * w * cp + tiles * (6 * a * a * cp + (a * a + 2 * unit * a + 5 * unit * unit) * ocp)
    flops = 2.0 * a * a * tiles * ic * oc / group
    transforms = tiles * (4 * a ** 3 * cp + 2 * a * unit * (a + unit) * ocp)
    return gemm_cost(flops, tiles / len(blocks), model) + PASS_FLOAT_COST * floats \
        + model.transform_flop_cost * transforms


def weight_traffic(ic: int, oc: int, taps: int, model: GemmModel = BLAS_GEMM) -> float:
    """Cost of streaming ``taps`` x ic x oc weights once per run (``model.weight_cost`` per element)."""
    return model.weight_cost * taps * ic * oc


class WinogradMemory(NamedTuple):
    """Float32 bytes a Winograd F(u, k) kernel holds: transformed weights and intermediates (padded input, tiles)."""

    weights: int
    intermediate: int

    @property
    def total(self) -> int:
        return self.weights + self.intermediate


def lane_count(threads: int, flops: float, min_flops: float = LANE_MIN_FLOPS) -> int:
    """How many lanes a kernel of ``flops`` work should use with ``threads`` threads (1: run inline)."""
    return max(1, min(int(threads), int(flops // min_flops)))


def output_tiles(n: int, rows: int, row_bytes: int, limit: int, lanes: int = 1) -> list[tuple[int, int, int, int]]:
    """Split ``n`` images of ``rows`` rows into ``(n0, n1, r0, r1)`` tiles of at most ~``limit`` scratch bytes.

    Whole images (several per tile) when one fits, else bands of rows of one image (at least one row). With
    ``lanes`` > 1 the bands of an image are as many as before rounded up to a multiple of ``lanes`` (at most one per
    row) and differ by one row at most: lanes claiming them then finish together (ResNet-18's stride-2 3 x 3 at 28²
    had bands of 16 and 12 rows on 2 lanes, its stem 7 x 15 rows and 7: lane 0 ran 0.16 ms longer in each).
    """
    per_tile = max(1, limit // max(row_bytes, 1))
    if per_tile >= rows:
        images = max(1, per_tile // rows)
        return [(i, min(i + images, n), 0, rows) for i in range(0, n, images)]
    count = -(-rows // per_tile)
    if lanes > 1:
        count = min(rows, -(-count // lanes) * lanes)
    edges = [rows * j // count for j in range(count + 1)]
    return [(i, i + 1, r0, r1) for i in range(n) for r0, r1 in itertools.pairwise(edges)]


def winograd_layout(n: int, tiles_hw: tuple[int, int], alpha: int, cp: int, ocp: int, weight_elems: int,
                    lanes: int, block_bytes: int = WINOGRAD_BLOCK_BYTES) -> tuple[list[tuple[int, int, int, int]],
                                                                                 int, bool]:
    """How the Winograd kernel splits its work: (blocks of tile rows, lanes over blocks, split by positions).

    Blocks of about ``block_bytes`` of scratch; with ``lanes`` > 1, one block whose weights outweigh its tiles
    (deep layers, few pixels) and do not fit L3 comfortably (WINOGRAD_SPLIT_WEIGHT_BYTES) is split by alpha² positions
    instead (one lane of blocks), and fewer blocks than lanes are made smaller so that every lane has one.
    """
    th, tw = tiles_hw
    row_bytes = alpha * alpha * tw * max(cp, ocp) * 4
    blocks = output_tiles(n, th, row_bytes, block_bytes, lanes)
    if lanes > 1 and len(blocks) == 1 and weight_elems > n * th * tw * (cp + ocp) \
            and 4 * alpha * alpha * weight_elems > WINOGRAD_SPLIT_WEIGHT_BYTES:
        return blocks, 1, True
    if len(blocks) < lanes:
        blocks = output_tiles(n, th, row_bytes, max(1, n * th * row_bytes // lanes), lanes)
    return blocks, min(lanes, len(blocks)), False


def winograd_channel_bands(by_positions: bool, group: int) -> bool:
    """Whether ``winograd_layout``'s weight-heavy single block is split by bands of output channels (every lane
    transforms the whole input block and runs its band's GEMMs, output transform and stores) rather than by alpha²
    positions (transforms on one core). Measured with 2 lanes, interleaved: 128ch 28² F(4,3) 0.58 -> 0.50 ms and
    0.86 -> 0.69. With OpenBLAS GEMMs 256ch 14² F(2,3) lost (0.77 -> 0.83, 0.95 -> 0.93, 0.87 -> 0.88: the input
    transform is done twice); with the packed GEMM the positions' serial transforms weigh more: ResNet-18's three
    512ch 7² F(2,3) in bands, paired whole-model runs at 2 threads 0.973 and 0.989. Ungrouped only."""
    return by_positions and group == 1


def winograd_memory(ic: int, oc: int, in_shape: tuple[int, ...], out_hw: tuple[int, int], k: int, unit: int,
                    group: int = 1, threads: int = 1, pads: tuple[int, ...] = (0, 0, 0, 0)) -> WinogradMemory:
    """Footprint of ``backends/cpu/compute/winograd_conv.WinogradKernel`` for these shapes (its allocations).

    Weights: alpha² x ic x oc transformed (channels padded to 4 when ungrouped). Intermediates: the zero-bordered
    NHWC input copy, plus per lane (``winograd_layout``) the buffers of its largest block of T tiles: D and BᵀD
    (alpha² x T x Cp each; V reuses D), M (alpha² x T x OCp; Y reuses it) and AᵀM (u x alpha x T x OCp); grouped,
    V, Y (u² x T x OCp) and a second M too. A session's ungrouped kernels share these buffers.
    """
    a = unit + k - 1
    n, _, h, w = in_shape
    oh, ow = out_hw
    cp, ocp = 4 * math.ceil(ic / 4), 4 * math.ceil(oc / 4)
    th, tw = math.ceil(oh / unit), math.ceil(ow / unit)
    weights = a * a * (cp * ocp if group == 1 else ic * oc // group)
    padded = n * max(pads[0] + h, th * unit + k - 1) * max(pads[1] + w, tw * unit + k - 1) * cp
    lanes = lane_count(threads, 2.0 * n * oh * ow * oc * (ic // group) * k * k)
    blocks, block_lanes, by_positions = winograd_layout(n, (th, tw), a, cp, ocp, ic * oc // group, lanes)
    if winograd_channel_bands(by_positions, group):  # every lane holds M and AᵀM of its band of channels
        band = -(-ocp // 4 // min(lanes, ocp // 4)) * 4
        lanes = -(-ocp // band)
    else:
        band, lanes = ocp, block_lanes
    block = max((n1 - n0) * (r1 - r0) * tw for n0, n1, r0, r1 in blocks)
    g2 = 1 + (group > 1)  # ungrouped: V reuses D's buffer and Y reuses M's
    per_tile = (1 + g2) * a * a * cp + g2 * a * a * band + unit * a * band + (g2 - 1) * unit * unit * ocp
    return WinogradMemory(4 * weights, 4 * (padded + lanes * block * per_tile))


def winograd_units(k: int, oh: int, ow: int, threads: int = 1) -> list[int]:
    """Candidate output tiles u for a k x k kernel: MNN's 2..maxUnit with alpha in {4, 6, 8}."""
    max_unit = min(max(math.isqrt(math.ceil(ow * oh / max(threads, 1))), 2), 8)
    return [u for u in range(2, max_unit + 1) if u + k - 1 in WINOGRAD_ALPHAS]


def _out_hw(params: ConvShape, in_shape: tuple[int, ...], pads: tuple[int, int, int, int]) -> tuple[int, int]:
    (kh, kw), (sh, sw), (dh, dw) = params.kernel, params.stride, params.dilation
    h, w = in_shape[2], in_shape[3]
    oh = (h + pads[0] + pads[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (w + pads[1] + pads[3] - (kw - 1) * dw - 1) // sw + 1
    return oh, ow


def plan_conv2d(params: ConvShape, in_shape: tuple[int, ...], threads: int = 1, force: str | None = None,
                memory_limit: int | None = None, gemm: GemmModel = BLAS_GEMM) -> ConvPlan:
    """Choose the convolution algorithm with MNN's cost model.

    Args:
        params: resolved convolution parameters (``Conv2DParams``; needs ``pads`` for the output size).
        in_shape: NCHW input shape.
        threads: thread count (affects Winograd's maxUnit).
        force: optional override: "im2col", "gemm1x1", "strassen", "depthwise", "deconv", "winograd" or
            "winograd:U".
        memory_limit: bytes a Winograd kernel may hold (weights + intermediates); larger units are ruled out.
        gemm: the cost of the GEMM the kernels will call (``BLAS_GEMM`` or ``PACKED_GEMM``).

    Returns:
        The plan.

    Raises:
        ValueError: when ``force`` names an unknown algorithm or one that cannot run this convolution.
    """
    kh, kw = params.kernel
    g, ic, oc = params.group, params.in_channels, params.out_channels
    pads = getattr(params, "pads", (0, 0, 0, 0))
    if params.transposed:
        if force not in (None, "deconv"):
            raise ValueError(f"transposed convolution runs only as 'deconv', not {force!r}")
        return ConvPlan("deconv", reason="Deconvolution: GEMM then col2im scatter-add")
    oh, ow = _out_hw(params, in_shape, pads)
    icg, ocg = ic // g, oc // g
    origin = float(ow * oh * 2 * icg * ocg * kh * kw * g)
    costs: dict[str, float] = {"direct": im2col_cost(params, in_shape, (oh, ow), gemm), "direct:flops": origin}
    if memory_limit is not None:
        costs["memory_limit"] = float(memory_limit)
    depthwise_ok = g == ic == oc and (g > 1 or (kh, kw) != (1, 1))  # 1 channel: direct taps beat GEMMs
    is_1x1 = (kh, kw) == (1, 1) and params.stride == (1, 1) and pads == (0, 0, 0, 0)
    winograd_ok = kh == kw and kh > 1 and params.stride == (1, 1) and params.dilation == (1, 1)
    if force is not None:
        return _forced(force, params, in_shape, costs, depthwise_ok, is_1x1, winograd_ok, (oh, ow), threads, gemm)
    if depthwise_ok:
        return ConvPlan("depthwise", costs=costs, reason="group == in == out channels: per-channel taps")
    if is_1x1:
        e = in_shape[0] * oh * ow
        depth = numpy_strassen_depth(e, icg, ocg) if g == 1 else 0
        costs["strassen_depth"] = float(depth)
        costs["strassen_depth:mnn"] = float(strassen_depth(e, icg, ocg) if g == 1 else 0)
        if depth:
            return ConvPlan("strassen", costs=costs, strassen_depth=depth,
                            reason=f"1x1 s1: Strassen saves traffic for {depth} level(s)")
        return ConvPlan("gemm1x1", costs=costs, reason="1x1 s1 no pad: plain GEMM (Strassen test says no)")
    if winograd_ok:
        return _plan_winograd(params, in_shape, (oh, ow), threads, memory_limit, costs, gemm)
    return ConvPlan("im2col", costs=costs, reason="not 1x1 s1 and not Winograd-eligible (stride/dilation/shape)")


def _plan_winograd(params: ConvShape, in_shape: tuple[int, ...], out_hw: tuple[int, int], threads: int,
                   memory_limit: int | None, costs: dict[str, float], gemm: GemmModel = BLAS_GEMM) -> ConvPlan:
    """Best Winograd unit by time cost + memory term within the budget, else im2col (MNN's rate test)."""
    k, g = params.kernel[0], params.group
    icg, ocg = params.in_channels // g, params.out_channels // g
    best, best_rate, best_bytes, over = 0, 0.0, 0, []
    for u in winograd_units(k, *out_hw, threads):
        flops = winograd_cost(icg, ocg, *out_hw, k, u) * g
        mem = winograd_memory(params.in_channels, params.out_channels, in_shape, out_hw, k, u, g, threads,
                              getattr(params, "pads", (0, 0, 0, 0)))
        time = winograd_time(params.in_channels, params.out_channels, in_shape, out_hw, k, u, g, threads, gemm)
        cost = time + weight_traffic(icg, ocg, (u + k - 1) ** 2, gemm) * g + WINOGRAD_MEMORY_COST * mem.total
        costs.update({f"winograd:{u}": cost, f"winograd:{u}:flops": flops, f"winograd:{u}:time": time,
                      f"winograd:{u}:bytes": float(mem.total), f"winograd:{u}:weight_bytes": float(mem.weights)})
        if memory_limit is not None and mem.total > memory_limit:
            over.append(u)
            continue
        if costs["direct"] / cost > best_rate:
            best, best_rate, best_bytes = u, costs["direct"] / cost, mem.total
    note = f"; F({','.join(map(str, over))}) over the {memory_limit}-byte budget" if over else ""
    if best and best_rate > 1.0:
        return ConvPlan("winograd", unit=best, costs=costs, memory_bytes=best_bytes,
                        reason=f"F({best},{k}): direct/winograd cost rate {best_rate:.2f} > 1{note}")
    return ConvPlan("im2col", costs=costs, reason=f"best Winograd rate {best_rate:.2f} <= 1{note}")


def _forced(force: str, params: ConvShape, in_shape: tuple[int, ...], costs: dict[str, float], depthwise_ok: bool,
            is_1x1: bool, winograd_ok: bool, out_hw: tuple[int, int], threads: int = 1,
            gemm: GemmModel = BLAS_GEMM) -> ConvPlan:
    name, _, arg = force.partition(":")
    reason = f"forced {force!r}"
    if name == "im2col" and not arg:
        return ConvPlan("im2col", costs=costs, reason=reason)
    if name == "depthwise" and not arg and depthwise_ok:
        return ConvPlan("depthwise", costs=costs, reason=reason)
    if name in ("gemm1x1", "strassen") and is_1x1:
        if name == "gemm1x1" and not arg:
            return ConvPlan("gemm1x1", costs=costs, reason=reason)
        if params.group == 1:
            if arg and not arg.isdigit():
                raise ValueError(f"bad Strassen depth in {force!r}")
            depth = int(arg) if arg else max(1, strassen_depth(in_shape[0] * out_hw[0] * out_hw[1],
                                                              params.in_channels, params.out_channels))
            return ConvPlan("strassen", costs=costs, reason=reason, strassen_depth=min(depth, STRASSEN_MAX_DEPTH))
    if name == "winograd" and winograd_ok:
        k = params.kernel[0]
        if not arg:
            units = winograd_units(k, *out_hw) or [2]
            ic, oc = params.in_channels, params.out_channels
            totals = {u: winograd_time(ic, oc, in_shape, out_hw, k, u, params.group, threads, gemm)
                      + weight_traffic(ic, oc, (u + k - 1) ** 2, gemm) / params.group for u in units}
            unit = min(units, key=totals.__getitem__)
        elif arg.isdigit():
            unit = int(arg)
        else:
            raise ValueError(f"bad Winograd unit in {force!r}")
        if unit < 1 or unit + k - 1 > WINOGRAD_MAX_FORCED_ALPHA:
            raise ValueError(f"Winograd F({unit},{k}) needs alpha = u + k - 1 <= {WINOGRAD_MAX_FORCED_ALPHA}")
        mem = winograd_memory(params.in_channels, params.out_channels, in_shape, out_hw, k, unit, params.group,
                              threads, getattr(params, "pads", (0, 0, 0, 0)))
        return ConvPlan("winograd", unit=unit, costs=costs, reason=reason, memory_bytes=mem.total)
    raise ValueError(f"cannot force {force!r} for this convolution (kernel {params.kernel}, stride {params.stride}, "
                     f"dilation {params.dilation}, group {params.group})")
