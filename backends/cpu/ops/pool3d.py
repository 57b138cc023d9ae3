"""Pooling3D (max/average, global or windowed) on NC4HW4 arrays `[N, C4, *spatial, 4]`.

Windows are taken as one strided view per kernel tap over a zero/-inf-bordered copy of the input, built in
on_resize; the average divides by the in-image element count of each window (padding excluded, as MNN's Pool3D).
"""

from __future__ import annotations

import itertools

import numpy as np
from mnnpy.backends.cpu.compute.global_pool import GlobalPool
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape.conv import pool3d_geometry

OT = fb.OpType


@cpu_kernel(OT.Pooling3D, formats=("NC4HW4",))
class Pooling3D(CPUExecution):
    """Global: one reduction over the spatial axes. Windowed: kd*kh*kw tap views combined in place."""

    def on_resize(self) -> None:
        p = self.op.main
        self.is_max = p is not None and p.type == 0
        phys = self.x.desc.physical_shape
        self.is_global = p is None or p.isGlobal
        self.algorithm = f"{'max' if self.is_max else 'avg'}-{'global' if self.is_global else 'window'}-3d"
        if self.is_global:
            self.global_pool = GlobalPool(self.x.desc.physical_shape, self.x.desc.dtype, self.is_max)
            return
        geometry = pool3d_geometry(self.op, tuple(self.x.desc.shape[2:]))
        spatial = [size + 2 * pad + s for size, (_, s, pad, _) in zip(phys[2:-1], geometry, strict=True)]
        fill = -np.inf if self.is_max else 0.0
        self.padded = np.full((*phys[:2], *spatial, 4), fill, dtype=np.float32)
        self.inner = self.padded[(slice(None), slice(None),
                                  *(slice(pad, pad + size) for size, (_, _, pad, _) in zip(phys[2:-1], geometry,
                                                                                           strict=True)))]
        windows = [range(k) for k, _, _, _ in geometry]
        self.taps = [self.padded[(slice(None), slice(None),
                                  *(slice(o, o + (n - 1) * s + 1, s) for o, (_, s, _, n) in zip(offs, geometry,
                                                                                                strict=True)))]
                     for offs in itertools.product(*windows)]
        if not self.is_max:
            ones = np.zeros(spatial, dtype=np.float32)
            ones[tuple(slice(pad, pad + size) for size, (_, _, pad, _) in zip(phys[2:-1], geometry, strict=True))] = 1
            count = np.zeros(tuple(n for _, _, _, n in geometry), dtype=np.float32)
            for offs in itertools.product(*windows):
                count += ones[tuple(slice(o, o + (n - 1) * s + 1, s) for o, (_, s, _, n) in zip(offs, geometry,
                                                                                                  strict=True))]
            self.divisor = (1.0 / np.maximum(count, 1)).astype(np.float32)[..., None]

    def on_execute(self) -> None:
        x, y = self.x.array, self.y.array
        if self.is_global:
            self.global_pool.run(x, y)
            return
        np.copyto(self.inner, x)
        combine = np.maximum if self.is_max else np.add
        np.copyto(y, self.taps[0])
        for tap in self.taps[1:]:
            combine(y, tap, out=y)
        if not self.is_max:
            y *= self.divisor
