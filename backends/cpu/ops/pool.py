"""Pooling (max/average, global, ceil mode, count-include-pad) on NC4HW4 arrays; Pooling3D is in pool3d.py."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from mnnpy.backends.cpu.compute.blas import run_lanes
from mnnpy.backends.cpu.compute.common import copy_pixels
from mnnpy.backends.cpu.compute.global_pool import GlobalPool
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError
from numpy.lib.stride_tricks import sliding_window_view

from mnnpy.core import memory
from mnnpy.core.registry import cpu_kernel

OT = fb.OpType
POOL_LANE_BYTES = 1 << 20  # input bytes per lane of a windowed pooling
POOL_BAND_BYTES = 512 << 10  # padded input bytes per band a lane pools in one go (about one L2)


POOL_COMPILED = True  # max pooling by the compiled kernel where it runs (see Pooling._compiled)


def _call(run: Callable[[], None]) -> None:
    """A bound compiled call as a ``partial`` task (worker-process lanes record partials, not closures)."""
    run()


@cpu_kernel(OT.Pooling, formats=("NC4HW4",))
class Pooling(CPUExecution):
    """Windows over the spatial axes of `[N, C4, H, W, 4]`; the average divisor map is built in on_resize."""

    def on_resize(self) -> None:
        p = self.op.main
        self.is_max = p is not None and p.type == 0
        self.is_global = p is None or p.isGlobal
        self.algorithm = f"{'max' if self.is_max else 'avg'}-{'global' if self.is_global else 'window'}"
        if self.is_global:
            self.global_pool = GlobalPool(self.x.desc.physical_shape, self.x.desc.dtype, self.is_max)
            return
        n, c4, h, w, _ = self.x.desc.physical_shape
        oh, ow = self.y.desc.shape[2:]
        kh, kw, sh, sw = p.kernelY, p.kernelX, p.strideY, p.strideX
        pads = list(p.pads) if p.pads is not None and len(p.pads) == 4 else [p.padY, p.padX, p.padY, p.padX]
        if p.padType == 2:  # SAME
            th = max(0, (oh - 1) * sh + kh - h)
            tw = max(0, (ow - 1) * sw + kw - w)
            pads = [th // 2, tw // 2, th - th // 2, tw - tw // 2]
        elif p.padType == 1:
            pads = [0, 0, 0, 0]
        top, left = int(pads[0]), int(pads[1])
        bottom = max(int(pads[2]), (oh - 1) * sh + kh - h - top)
        right = max(int(pads[3]), (ow - 1) * sw + kw - w - left)
        self.geom = (top, left, bottom, right, kh, kw, sh, sw, oh, ow)
        dtype = self.x.desc.dtype
        self.compiled = self._compiled(dtype, (kh, kw, sh, sw), (top, left))
        if self.compiled is not None:
            self.algorithm += "-llvm"
            return
        if dtype.kind != "f" and not self.is_max:
            raise ModelError(f"op {self.op.name!r}: average pooling needs a float input, got {dtype}")
        fill = (-np.inf if dtype.kind == "f" else np.iinfo(dtype).min) if self.is_max else 0.0
        # Zero/-inf-bordered input with its columns split into sw phases ([.., Hp, sw, Wp/sw, 4]), filled from x by
        # sw strided 16-byte-pixel copies; then the window is separable: kw column taps (unit-stride views of one
        # phase) into a column buffer, kh row taps of that into y. Every numpy call has a long contiguous inner
        # (ow, 4) loop: ResNet-18's 3x3/2 max pool 4.2 -> 0.6 ms (9 taps with a 4-float inner loop before).
        hp, wp = h + top + bottom, w + left + right
        # in huge pages (memory.SCRATCH): ResNet-18's max pool in the model 1.87-2.09 -> 1.60-1.90 ms
        self.phases = memory.SCRATCH.zeros((n, c4, hp, sw, -(-wp // sw), 4), dtype)
        self.phases[...] = fill
        self.fills = []
        for q in range(sw):
            t0 = (q - left) % sw
            count = len(range(t0, w, sw))
            if count:
                k0 = (left + t0) // sw
                self.fills.append((self.phases[:, :, top: top + h, q, k0: k0 + count], slice(t0, None, sw)))
        self.columns = memory.SCRATCH.zeros((n, c4, hp, ow, 4), dtype)
        col_taps = [self.phases[:, :, :, j % sw, j // sw: j // sw + ow] for j in range(kw)]
        row_taps = [self.columns[:, :, i: i + (oh - 1) * sh + 1: sh] for i in range(kh)]
        # numThread lanes take bands of channel blocks (each its own fills, column and row taps) when the input is
        # large enough to pay for waking a lane (~0.1 ms): ResNet-18's 3x3/2 max pool reads 3.2 MB.
        # Each lane runs its channel blocks in bands of at most POOL_BAND_BYTES of padded input, so a band's phases,
        # columns and output stay in L2 between the passes (ResNet-18's pool in the model: 2.87-3.05 -> 2.37-2.41 ms).
        lanes = self._lanes(c4)
        step = -(-c4 // lanes)
        band = max(1, POOL_BAND_BYTES // (n * hp * wp * 4 * dtype.itemsize))
        spans = [[(b, min(b + band, j + step, c4)) for b in range(j, min(j + step, c4), band)]
                 for j in range(0, c4, step)]
        self.lanes = [[(slice(b0, b1), [(dst[:, b0:b1], cols) for dst, cols in self.fills],
                        [tap[:, b0:b1] for tap in col_taps], self.columns[:, b0:b1],
                        [tap[:, b0:b1] for tap in row_taps]) for b0, b1 in lane] for lane in spans]
        if not self.is_max:
            include = p.countType == 1
            ones = np.zeros((h + top + bottom, w + left + right), dtype=np.float32)
            if include:  # the explicit pads count, ceil-mode overhang does not
                ones[: h + top + int(pads[2]), : w + left + int(pads[3])] = 1
            else:
                ones[top: top + h, left: left + w] = 1
            win = sliding_window_view(ones, (kh, kw))[::sh, ::sw][:oh, :ow]
            self.divisor = (1.0 / np.maximum(win.sum(axis=(-1, -2)), 1)).astype(np.float32)[..., None]

    def _compiled(self, dtype: np.dtype, window: tuple[int, int, int, int], pads: tuple[int, int]
                  ) -> list[partial] | None:
        """Float32 max pooling as the compiled one-pass kernel (``packed_gemm.bind_max_pool``: ResNet-18's 3x3/2
        pool 0.60 -> 0.46 ms hot, one read of the input instead of the passes below), its channel blocks split over
        the lanes; None where it does not run."""
        from mnnpy.backends.cpu.compute import packed_gemm

        x, y = self.x.array, self.y.array
        if not (POOL_COMPILED and self.is_max and dtype == np.float32 and x.flags.c_contiguous
                and y.flags.c_contiguous and packed_gemm.available()):
            return None
        c4 = x.shape[1]
        step = -(-c4 // self._lanes(c4))
        try:
            return [partial(_call, packed_gemm.bind_max_pool(x[:, c: c + step], y[:, c: c + step], window, pads))
                    for c in range(0, c4, step)]
        except ValueError:
            return None

    def _lanes(self, c4: int) -> int:
        """Lanes over the channel blocks: ``numThread``, where the input pays for waking one (POOL_LANE_BYTES each)."""
        threads = int(self.backend.config.get("numThread", 1) or 1)
        return max(1, min(threads, c4, self.x.array.nbytes // POOL_LANE_BYTES))

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        if self.is_global:
            self.global_pool.run(x, y)
            return
        if self.compiled is not None:
            if len(self.compiled) == 1:
                self.compiled[0]()
            else:
                run_lanes(self.compiled, len(self.compiled), True)
            return
        if len(self.lanes) == 1:
            self._run_bands(x, y, self.lanes[0])
        else:
            # each lane fills and reads its own channel blocks of the phase buffers: worker-process lanes may run it
            run_lanes([partial(self._run_bands, x, y, lane) for lane in self.lanes], len(self.lanes), True)

    def _run_bands(self, x: np.ndarray, y: np.ndarray, bands: list[tuple]) -> None:
        for band in bands:
            self._run_band(x, y, *band)

    def _run_band(self, x: np.ndarray, y: np.ndarray, blocks: slice, fills: list, col_taps: list,
                  columns: np.ndarray, row_taps: list) -> None:
        """Pool the channel blocks ``blocks``: fill their phases, then column taps and row taps."""
        for dst, cols in fills:
            copy_pixels(dst, x[:, blocks, :, cols], (0, 1, 2, 3))
        combine = np.maximum if self.is_max else np.add
        out = y[:, blocks]
        for taps, acc in ((col_taps, columns), (row_taps, out)):
            np.copyto(acc, taps[0])
            for tap in taps[1:]:
                combine(acc, tap, out=acc)
        if not self.is_max:
            out *= self.divisor
