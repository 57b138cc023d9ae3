"""Shared pieces of the CPU convolution kernels: resolved parameters, output shapes, work counters, epilogue."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mnnpy.core import memory
from mnnpy.core.conv_geometry import Conv2DParams, conv2d_output_shape, conv2d_params
from mnnpy.core.strategy import ConvPlan, output_tiles

from . import jit

__all__ = ["COUNTERS", "PACK", "Conv2DKernel", "Conv2DParams", "conv2d_output_shape", "conv2d_params", "copy_channels",
           "output_tiles"]

PACK = 4
BIAS_TILE_FLOATS = 16384  # floats in a conv kernel's pre-tiled bias block (64 KiB: stays in L1/L2)

# Work counters: the session asserts that a second run transforms no weights.
COUNTERS: dict[str, int] = {"weight_transforms": 0, "kernels_made": 0, "runs": 0}


def ceil4(value: int) -> int:
    """Round a channel count up to the NC4HW4 pack."""
    return (value + PACK - 1) // PACK * PACK


class Conv2DKernel:
    """Base class: a convolution prepared for one input shape. Subclasses implement ``run``.

    Attributes:
        params: resolved parameters.
        plan: the strategy's ``ConvPlan``.
        in_shape: NCHW input shape.
        out_shape: NCHW output shape.
    """

    def __init__(self, params: Conv2DParams, plan: ConvPlan, in_shape: tuple[int, ...], bias: np.ndarray) -> None:
        self.params, self.plan = params, plan
        self.in_shape = tuple(int(v) for v in in_shape)
        self.out_shape = conv2d_output_shape(params, self.in_shape)
        self.bias_row = np.zeros(ceil4(params.out_channels), dtype=np.float32)
        self.bias_row[: params.out_channels] = bias
        self.bias_tile = np.tile(self.bias_row, (max(16, BIAS_TILE_FLOATS // self.bias_row.size), 1))
        self.store_jit = None  # see compiled_store
        self._calls: dict[tuple, Callable[[], None]] = {}  # see bound_call
        COUNTERS["kernels_made"] += 1

    def bound_call(self, key: tuple, make: Callable[[], Callable[[], None]]) -> Callable[[], None]:
        """The call ``make()`` returned the first time ``key`` was asked for (a packed GEMM bound to arrays this
        kernel keeps: ``PackedWeights.bind``, checked and addressed once instead of every run)."""
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = make()
        return call

    def compiled_store(self) -> None:
        """Let ``_store_nhwc`` run as one compiled pass (bias, activation and layout together) where JIT kernels
        are on. Opt-in, by callers that already use compiled kernels: numba's import and first load (~0.5-1 s) must
        not land on a session that has none (ResNet-18's createSession)."""
        self.store_jit = jit.kernels() if jit.enabled() else None
        self.bias_ro = jit.readonly(self.bias_row)
        self.clamp = tuple(np.float32(v) for v in self.clamp_bounds())

    def clamp_bounds(self) -> tuple[float, float]:
        """This convolution's activation as the clamp the compiled kernels apply: ReLU6 (0, 6), ReLU (0, inf), none
        (-inf, inf)."""
        return (0.0, 6.0) if self.params.relu6 else (0.0, np.inf) if self.params.relu else (-np.inf, np.inf)

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """Convolve NC4HW4 ``x`` into the preallocated NC4HW4 ``out`` (bias and activation fused)."""
        raise NotImplementedError

    def _add_bias(self, y: np.ndarray) -> None:
        """``y += bias`` over the last axis, in blocks of ``bias_tile`` rows (see ``add_row_bias``)."""
        add_row_bias(y, self.bias_tile)

    def _activate(self, y: np.ndarray) -> None:
        if self.params.relu6:
            np.clip(y, 0.0, 6.0, out=y)
        elif self.params.relu:
            relu(y, y)

    def _store_nhwc(self, y: np.ndarray, out: np.ndarray) -> None:
        """Add bias, activate and copy an ``[N, OH, OW, OCp]`` result (any strides) into NC4HW4 ``out``: one
        compiled pass for a contiguous ``y`` where JIT kernels are on (``jit_kernels.store_nc4``), else three."""
        if self.store_jit is not None and y.flags.c_contiguous:
            self.store_jit.store_nc4(y.reshape(-1, y.shape[-1]), self.bias_ro, out, *self.clamp)
            return
        self._add_bias(y)
        self._activate(y)
        n, oh, ow, ocp = y.shape
        copy_pixels(out, y.reshape(n, oh, ow, ocp // PACK, PACK), (0, 3, 1, 2))


def in_turn(calls: Sequence[Callable[[], None]]) -> None:
    """Run ``calls`` one after another (several bound calls as one task or run)."""
    for call in calls:
        call()


def array_place(a: np.ndarray) -> tuple:
    """An array's memory and geometry (data address, shape, strides), as a cache key that a new array over the
    same bytes matches and a reused ``id`` cannot fake."""
    return a.__array_interface__["data"][0], a.shape, a.strides


def add_residual(region: np.ndarray, residual: np.ndarray, relu_after: bool) -> None:
    """``region += residual`` and, with ``relu_after``, ReLU: a residual Add (ResNet's block output) done by the
    convolution that stored ``region`` just before, while the rows are in its cache (and on its lane)."""
    np.add(region, residual, out=region)
    if relu_after:
        relu(region, region)


def add_row_bias(y: np.ndarray, tile: np.ndarray) -> None:
    """``y += tile[0]`` over y's last axis. A broadcast add runs numpy's inner loop once per row (short rows: slow);
    adding a pre-tiled ``[R, C]`` block to whole groups of R rows is one long contiguous loop: [12544, 96] 216 ->
    103 us, [3136, 144] 66 -> 35 us."""
    rows, c = tile.shape
    if not y.flags.c_contiguous or y.shape[-1] != c:
        y += tile[0]
        return
    flat = y.reshape(-1, c)
    whole = flat.shape[0] // rows * rows
    if whole:
        block = flat[:whole].reshape(-1, rows * c)
        np.add(block, tile.reshape(-1), out=block)
    rest = flat[whole:]
    if rest.size:  # the remaining rows against as many tile rows: one loop too (a Winograd block's [43, 64]: 2.5x)
        np.add(rest, tile[: rest.shape[0]], out=rest)


def relu(x: np.ndarray, out: np.ndarray) -> None:
    """``out = max(x, 0)``. For floats as ``clip(x, 0, inf)``: numpy's maximum with a scalar takes a slow loop
    (measured 3.6x slower than clip on 200k float32: 69 vs 19 us); same values (NaN and inf kept; -0.0 stays -0.0,
    which compares equal to 0)."""
    if out.dtype.kind == "f":
        np.clip(x, 0.0, np.inf, out=out)
    else:
        np.maximum(x, 0, out=out)


def nhwc_view(buffer: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
    """``[N, h, w, C4, 4]`` view of a region of an ``[N, H, W, Cp]`` buffer, to receive a transposed NC4HW4 input."""
    region = buffer[:, rows, cols, :]
    n, h, w, cp = region.shape
    return region.reshape(n, h, w, cp // PACK, PACK)


def from_nc4hw4(x: np.ndarray) -> np.ndarray:
    """``[N, H, W, C4, 4]`` transposed view of an NC4HW4 array (no copy)."""
    return x.transpose(0, 2, 3, 1, 4)


_LANE = np.dtype("V16")  # one NC4HW4 pixel: 4 float32 lanes moved as a single 16-byte element


def _lanes(a: np.ndarray) -> np.ndarray | None:
    if a.dtype != np.float32 or a.shape[-1] != PACK or a.strides[-1] != a.itemsize:
        return None
    return a.view(_LANE)[..., 0]


def runs(dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (destination, source) pair for ``np.copyto(dst, src)`` with the trailing axes that are contiguous in both
    (float32, the same shape) seen as one void element each: a strided copy of such elements moves every run with
    one memcpy where numpy would run an inner loop of floats. Winograd's tile gather (256-byte runs): 8.6 -> 5.7 ms
    per 64ch 256² layer. Views only; the arrays themselves where nothing is contiguous."""
    if dst.dtype != np.float32 or src.dtype != np.float32 or dst.shape != src.shape or not dst.ndim:
        return dst, src
    size, axis = 1, dst.ndim
    while axis and all(a.strides[axis - 1] == size * 4 for a in (dst, src)):
        axis -= 1
        size *= dst.shape[axis]
    if axis == dst.ndim or size == 0:
        return dst, src
    shape = dst.shape[:axis]
    return tuple(as_strided(a, shape=(*shape, size), strides=(*a.strides[:axis], 4),
                            writeable=a.flags.writeable).view(f"V{4 * size}")[..., 0]  # type: ignore[misc]
                 for a in (dst, src))


def copy_pixels(dst: np.ndarray, src: np.ndarray, axes: tuple[int, ...]) -> None:
    """``dst[...] = src.transpose(*axes, last)`` for ``[..., 4]`` float32 arrays, moving 16-byte pixels.

    Transposing NC4HW4 <-> NHWC with the 4 lanes as one element is 5-10x faster in numpy than with an inner loop
    of 4 floats. Falls back to a plain strided copy when the lanes are not contiguous.
    """
    np.copyto(*pixel_copy(dst, src, axes))


def pixel_copy(dst: np.ndarray, src: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The (destination, source) pair ``copy_pixels`` hands to ``np.copyto``: built once, a kernel can keep it and
    copy with one call per run (no views made per run)."""
    dst_l, src_l = _lanes(dst), _lanes(src)
    if dst_l is None or src_l is None:
        return dst, src.transpose(*axes, src.ndim - 1)
    return dst_l, src_l.transpose(*axes)


def scratch_buffer(pool: dict | None, lane: int, name: str, size: int) -> np.ndarray:
    """``size`` float32 scratch: the head of lane ``lane``'s shared ``name`` buffer in ``pool`` (one
    session's conv kernels run one at a time, so they may share scratch; a larger request replaces the pool's
    buffer for later kernels), else a new one."""
    if pool is None:
        return np.empty(size, dtype=np.float32)
    buf = pool.get((lane, name))
    if buf is None or buf.size < size:
        buf = pool[(lane, name)] = _pool_empty(pool, (size,))
    return buf[:size]


def _pool_empty(pool: dict, shape: tuple[int, ...]) -> np.ndarray:
    """A new zero-filled float32 buffer for ``pool``: in shared memory when its "shared" entry says so (worker-process
    lanes read and write it too), else carved from the huge-page scratch pool (``memory.SCRATCH``: 2 MB pages, no
    per-buffer rounding; see ``memory.allocate`` for what it measured)."""
    if pool.get("shared"):
        return memory.shared_empty(shape)
    return memory.SCRATCH.zeros(shape, np.float32)


def shared_zeros(pool: dict | None, shape: tuple[int, ...], region: tuple[int, ...], tag: str = "zeros"
                 ) -> np.ndarray:
    """A zero float32 array of ``shape``, shared through ``pool`` by the kernels that ask for the same shape,
    ``region`` (a padded input buffer and the interior it receives: each run writes exactly that region, so the
    zero border stays zero for all of them) and ``tag`` (another tag: another buffer)."""
    if pool is None:
        return np.zeros(shape, dtype=np.float32)
    key = (tag, tuple(shape), tuple(region))
    if key not in pool:
        pool[key] = _pool_empty(pool, tuple(shape))
    return pool[key]


def copy_channels(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[n, h, w, :C] = src`` from NC4HW4 ``src`` ``[N, C4, H, W, 4]`` into an NHWC ``dst`` of C channels (any
    row strides, contiguous pixels), dropping the padded lanes: per channel block one copy of whole 4*l-byte runs
    (a 3-channel image: 12-byte elements, 2x faster than a copy with an inner loop of 3 floats). An NCHW ``src``
    ``[N, C, H, W]`` (a model's input, not packed first: ``Convolution.fuse_after``) goes channel by channel."""
    c = dst.shape[-1]
    if src.ndim == 4:  # [1, 3, 224, 224]: 0.048 ms, against 0.21 to pack it to NC4HW4 and copy that
        for j in range(c):
            np.copyto(dst[..., j], src[:, j])
        return
    for j in range(src.shape[1]):
        lanes = min(PACK, c - PACK * j)
        d, s = dst[..., PACK * j: PACK * j + lanes], src[:, j, ..., :lanes]
        if d.dtype == s.dtype == np.float32 and d.strides[-1] == s.strides[-1] == 4:
            d, s = d.view(f"V{4 * lanes}"), s.view(f"V{4 * lanes}")
        np.copyto(d, s)


def input_rows(images: tuple[int, int], padded_rows: tuple[int, int], pad_top: int, height: int) -> tuple[int, ...]:
    """(n0, n1, first, end): the input rows behind padded-buffer rows ``[padded_rows)`` of images ``[images)``."""
    return (*images, max(0, padded_rows[0] - pad_top), min(height, padded_rows[1] - pad_top))


def copy_input_rows(interior: np.ndarray, x: np.ndarray, rows: tuple[int, ...], channels_only: bool = False) -> None:
    """Copy rows ``(n0, n1, first, end)`` of NC4HW4 ``x`` into the NHWC ``interior`` view of a padded input buffer
    (``copy_pixels``, or ``copy_channels`` for an unpadded C-channel buffer). With lanes, each lane copies the rows
    its own block reads; neighbouring blocks' halo rows are written twice with the same values."""
    n0, n1, first, end = rows
    if end <= first:
        return
    if channels_only:
        copy_channels(interior[n0:n1, first:end], x[n0:n1, :, first:end])
    else:
        copy_pixels(interior[n0:n1, first:end], x[n0:n1, :, first:end], (0, 2, 3, 1))


def scatter_groups(y_groups: np.ndarray, y_flat: np.ndarray, channels: int) -> None:
    """Copy a ``[G, M, ocg]`` grouped GEMM result into the first ``channels`` columns of ``[M, OCp]``."""
    g, m, ocg = y_groups.shape
    np.copyto(y_flat[:, :channels].reshape(m, g, ocg), y_groups.transpose(1, 0, 2))


def gather_groups(x_flat: np.ndarray, channels: int, group: int) -> np.ndarray:
    """``[G, M, icg]`` strided view of the first ``channels`` columns of an ``[M, Cp]`` matrix."""
    m = x_flat.shape[0]
    return x_flat[:, :channels].reshape(m, group, channels // group).transpose(1, 0, 2)
