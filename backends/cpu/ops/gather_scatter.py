"""GatherND, GatherElements, ScatterNd, OneHot and CumSum with numpy indexing."""

from __future__ import annotations

import numpy as np
from mnnpy.backends.cpu.ops._common import CPUExecution
from mnnpy.schema import mnn_generated as fb

from mnnpy.core.registry import cpu_kernel
from mnnpy.core.shape._util import ints, norm_axis

OT = fb.OpType


def _wrap(idx: np.ndarray, dims: np.ndarray | int) -> np.ndarray:
    return np.where(idx < 0, idx + dims, idx)


@cpu_kernel(OT.GatherND)
class GatherND(CPUExecution):
    """out[i] = params[indices[i, 0], ..., indices[i, k-1]]."""

    algorithm = "gather-nd"

    def on_execute(self) -> None:
        params, idx = self.x.array, self.inputs[1].array
        k = idx.shape[-1]
        idx = _wrap(idx, np.array(params.shape[:k]))
        np.copyto(self.y.array, params[tuple(np.moveaxis(idx, -1, 0))])


@cpu_kernel(OT.GatherElements)
class GatherElements(CPUExecution):
    """np.take_along_axis."""

    def on_resize(self) -> None:
        axis = ints(self.inputs[2].array)[0] if len(self.inputs) > 2 else 0
        self.axis = norm_axis(axis, len(self.x.desc.shape), self.op.name)
        self.algorithm = "gather-elements"

    def on_execute(self) -> None:
        idx = _wrap(self.inputs[1].array, self.x.desc.shape[self.axis])
        np.copyto(self.y.array, np.take_along_axis(self.x.array, idx, axis=self.axis))


@cpu_kernel(OT.ScatterNd)
class ScatterNd(CPUExecution):
    """Start from `data` (input 3) or zeros, then write (or accumulate) `updates` at `indices`."""

    def on_resize(self) -> None:
        p = self.op.main
        self.reduce = getattr(p, "opType", None) if p is not None else None
        self.algorithm = "scatter-nd"

    def on_execute(self) -> None:
        y = self.y.array
        if len(self.inputs) > 3:
            np.copyto(y, self.inputs[3].array)
        else:
            y.fill(0)
        idx, upd = self.inputs[0].array, self.inputs[1].array
        k = idx.shape[-1]
        where = tuple(np.moveaxis(_wrap(idx, np.array(y.shape[:k])), -1, 0))
        if self.reduce == 0:
            np.add.at(y, where, upd)
        elif self.reduce == 2:
            np.multiply.at(y, where, upd)
        elif self.reduce == 9:
            np.maximum.at(y, where, upd)
        elif self.reduce == 8:
            np.minimum.at(y, where, upd)
        else:
            y[where] = upd


@cpu_kernel(OT.OneHot)
class OneHot(CPUExecution):
    """out = on where index == position along the new axis, else off."""

    def on_resize(self) -> None:
        axis = self.op.main.axis if self.op.main is not None else -1
        self.axis = norm_axis(axis, len(self.y.desc.shape), self.op.name)
        self.depth = self.y.desc.shape[self.axis]
        self.algorithm = "one-hot"

    def on_execute(self) -> None:
        idx = _wrap(self.x.array, self.depth)
        on = np.asarray(self.inputs[2].array).ravel()[0]
        off = np.asarray(self.inputs[3].array).ravel()[0]
        shape = [1] * len(self.y.desc.shape)
        shape[self.axis] = self.depth
        hit = np.expand_dims(idx, self.axis) == np.arange(self.depth).reshape(shape)
        np.copyto(self.y.array, np.where(hit, on, off), casting="unsafe")


@cpu_kernel(OT.CumSum)
class CumSum(CPUExecution):
    """Cumulative sum along input 1's axis, optionally exclusive and/or reversed."""

    def on_resize(self) -> None:
        p = self.op.main
        self.exclusive = bool(p.exclusive) if p is not None else False
        self.reverse = bool(p.reverse) if p is not None else False
        self.algorithm = "cumsum"

    def on_execute(self) -> None:
        axis = norm_axis(ints(self.inputs[1].array)[0], len(self.x.desc.shape), self.op.name)  # may be data
        x = np.flip(self.x.array, axis) if self.reverse else self.x.array
        out = np.cumsum(x, axis=axis)
        if self.exclusive:
            out = out - x
        np.copyto(self.y.array, np.flip(out, axis) if self.reverse else out, casting="unsafe")


@cpu_kernel(OT.ScatterElements)
class ScatterElements(CPUExecution):
    """y = data, then y[..., indices[i], ...] = updates[i] along `axis` (or reduced with add/mul/max/min)."""

    def on_resize(self) -> None:
        p = self.op.main
        self.reduce = getattr(p, "opType", None) if p is not None else None
        self.algorithm = "scatter-elements"

    def on_execute(self) -> None:
        y = self.y.array
        np.copyto(y, self.x.array)
        axis = norm_axis(ints(self.inputs[3].array)[0], y.ndim, self.op.name) if len(self.inputs) > 3 else 0
        idx = _wrap(self.inputs[1].array, y.shape[axis]).astype(np.intp)
        upd = self.inputs[2].array
        grids: list[np.ndarray] = list(np.indices(idx.shape, sparse=True))
        grids[axis] = idx
        where = tuple(grids)
        ufunc = {0: np.add, 2: np.multiply, 9: np.maximum, 8: np.minimum}.get(int(self.reduce)) \
            if self.reduce is not None else None
        if ufunc is None:
            y[where] = upd
        else:
            ufunc.at(y, where, upd)


@cpu_kernel(OT.GridSample)
class GridSample(CPUExecution):
    """Sample x [N, C, *S] (S: H, W or D, H, W) at grid [N, *O, k] (k = len(S) coordinates in [-1, 1], ordered x, y
    (, z): the last spatial axis first); bilinear / trilinear (every corner of the cell) or nearest; zeros, border
    (CLAMP) or reflection padding; align corners or not."""

    def on_resize(self) -> None:
        p = self.op.main
        self.nearest = p is not None and p.mode == 1
        self.padding = p.paddingMode if p is not None else 0  # 0 zeros, 1 border, 2 reflection
        self.align = bool(p.alignCorners) if p is not None else False
        self.algorithm = "grid-nearest" if self.nearest else "grid-bilinear"

    def _unnormalise(self, coord: np.ndarray, size: int) -> np.ndarray:
        pos = (coord + 1) / 2 * (size - 1) if self.align else ((coord + 1) * size - 1) / 2
        if self.padding == 1:
            return np.clip(pos, 0, size - 1)
        if self.padding == 2:
            lo, hi = (0.0, size - 1.0) if self.align else (-0.5, size - 0.5)
            span = hi - lo
            if span <= 0:
                return np.zeros_like(pos)
            t = np.abs(pos - lo) % (2 * span)
            pos = lo + np.where(t > span, 2 * span - t, t)
            return np.clip(pos, 0, size - 1) if not self.align else pos
        return pos

    def on_execute(self) -> None:
        x, grid = self.x.array, self.inputs[1].array
        sizes = x.shape[2:]
        k = len(sizes)
        # per spatial axis (D, H, W order), its coordinate: grid component k-1-axis
        pos = [self._unnormalise(grid[..., k - 1 - axis].astype(np.float64), size) for axis, size in enumerate(sizes)]
        batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))

        def tap(index: list[np.ndarray]) -> np.ndarray:
            inside = np.logical_and.reduce([(i >= 0) & (i < size) for i, size in zip(index, sizes, strict=True)])
            clipped = tuple(np.clip(i, 0, size - 1) for i, size in zip(index, sizes, strict=True))
            return np.where(inside[..., None], x[(batch, slice(None), *clipped)], 0.0)  # [N, *O, C]

        if self.nearest:
            out = tap([np.rint(p).astype(np.intp) for p in pos])
        else:
            low = [np.floor(p).astype(np.intp) for p in pos]
            frac = [(p - lo)[..., None] for p, lo in zip(pos, low, strict=True)]
            out = 0.0
            for corner in np.ndindex(*(2,) * k):
                weight = np.prod([f if c else 1 - f for f, c in zip(frac, corner, strict=True)], axis=0)
                out = out + tap([lo + c for lo, c in zip(low, corner, strict=True)]) * weight
        np.copyto(self.y.array, np.moveaxis(out, -1, 1), casting="unsafe")
