"""Region fusion: a region reading a virtual tensor is rewritten to read that tensor's own sources.

MNN composes View algebra (`TensorUtils::FuseWrap`). Here a copy-shift fuse handles the common reshape chain, and
the general case composes element index tables at resize time and fits the result back into 3-D regions; what
does not fit stays an index gather (still one Raster command per materialised tensor).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from mnnpy.core.geometry.raster import region_indices
from mnnpy.core.ir import Region, View


@dataclass
class Gather:
    """An index copy `dst[dst_idx] = origin[src_idx]` for mappings no 3-D region expresses."""

    origin: int
    src_idx: np.ndarray
    dst_idx: np.ndarray


def _is_shift_copy(r: Region, size: int) -> bool:
    """A region that copies a whole tensor contiguously with equal src/dst strides (an index shift)."""
    if r.count != size or r.src.stride != r.dst.stride or r.dst.offset != 0:
        return False
    want = (r.size[1] * r.size[2], r.size[2], 1)
    return all(n == 1 or s == w for n, s, w in zip(r.size, r.dst.stride, want, strict=True))


def fit_regions(dst: np.ndarray, src: np.ndarray, origin: int) -> list[Region] | None:
    """Express `dst[d_i] = origin[s_i]` as one region (up to 3 nested affine levels), or None."""
    if dst.size == 0:
        return []
    order = np.argsort(dst, kind="stable")
    cur_d, cur_s = dst[order].astype(np.int64), src[order].astype(np.int64)
    sizes: list[int] = []
    sst: list[int] = []
    dstst: list[int] = []
    for _ in range(3):
        m = cur_d.size
        if m == 1:
            break
        dd, ds = int(cur_d[1] - cur_d[0]), int(cur_s[1] - cur_s[0])
        ok = (np.diff(cur_d) == dd) & (np.diff(cur_s) == ds)
        run = m if ok.all() else int(np.argmin(ok)) + 1
        if m % run:
            return None
        bd, bs = cur_d.reshape(-1, run), cur_s.reshape(-1, run)
        step = np.arange(run)
        if not ((bd - bd[:, :1] == dd * step).all() and (bs - bs[:, :1] == ds * step).all()):
            return None
        sizes.insert(0, run)
        sst.insert(0, ds)
        dstst.insert(0, dd)
        cur_d, cur_s = bd[:, 0], bs[:, 0]
    if cur_d.size != 1:
        return None
    while len(sizes) < 3:
        sizes.insert(0, 1)
        sst.insert(0, 0)
        dstst.insert(0, 0)
    src_view = View(int(cur_s[0]), (sst[0], sst[1], sst[2]))
    dst_view = View(int(cur_d[0]), (dstst[0], dstst[1], dstst[2]))
    return [Region(src_view, dst_view, (sizes[0], sizes[1], sizes[2]), origin)]


MAX_REGIONS = 64  # composed regions per origin above this become one index gather (bounded command size)


class _Resolver:
    """Resolves virtual tensors to materialised sources, each tensor once per `fuse` call (memoised).

    A region reading a virtual tensor is composed with that tensor's element lookup table (origin, source index),
    built once from its resolved regions; the work is linear in the elements of the tensors in the chain instead of
    re-resolving the whole chain below every region (which was quadratic per level of slice/reshape/gather).
    """

    def __init__(self, virtual: dict[int, list[Region]], size_of: Callable[[int], int],
                 materialised: set[int] | frozenset[int]) -> None:
        self.virtual, self.size_of, self.materialised = virtual, size_of, materialised
        self.resolved: dict[int, tuple[list[Region], list[Gather]]] = {}
        self.luts: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def resolve(self, t: int) -> tuple[list[Region], list[Gather]]:
        if t not in self.resolved:
            self.resolved[t] = self.compose(self.virtual[t])
        return self.resolved[t]

    def lut(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(origin, source index) of every element of virtual tensor `t`; origin -1 where nothing writes."""
        if t not in self.luts:
            regions, gathers = self.resolve(t)
            n = self.size_of(t)
            lut_o = np.full(n, -1, dtype=np.int64)
            lut_s = np.zeros(n, dtype=np.int64)
            for ir in regions:
                d = region_indices(ir.dst.offset, ir.dst.stride, ir.size)
                lut_o[d] = ir.origin
                lut_s[d] = region_indices(ir.src.offset, ir.src.stride, ir.size)
            for g in gathers:
                lut_o[g.dst_idx] = g.origin
                lut_s[g.dst_idx] = g.src_idx
            self.luts[t] = (lut_o, lut_s)
        return self.luts[t]

    def compose(self, regions: list[Region]) -> tuple[list[Region], list[Gather]]:
        out: list[Region] = []
        composed: list[Region] = []
        pieces: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for r in regions:
            if r.origin not in self.virtual or r.origin in self.materialised:
                out.append(r)
                continue
            inner, inner_g = self.resolve(r.origin)
            if not inner_g and len(inner) == 1 and _is_shift_copy(inner[0], self.size_of(r.origin)):
                shift = inner[0].src.offset - inner[0].dst.offset
                composed.append(replace(r, origin=inner[0].origin, src=View(r.src.offset + shift, r.src.stride)))
                continue
            lut_o, lut_s = self.lut(r.origin)
            src_idx = region_indices(r.src.offset, r.src.stride, r.size)
            dst_idx = region_indices(r.dst.offset, r.dst.stride, r.size)
            origins, srcs = lut_o[src_idx], lut_s[src_idx]
            for o in np.unique(origins[origins >= 0]).tolist():
                mask = origins == o
                fitted = fit_regions(dst_idx[mask], srcs[mask], int(o))
                if fitted is None:
                    pieces.setdefault(int(o), []).append((srcs[mask], dst_idx[mask]))
                else:
                    composed += fitted
        kept, gathers = _bounded(composed, pieces)
        return out + kept, gathers


def _bounded(regions: list[Region], pieces: dict[int, list[tuple[np.ndarray, np.ndarray]]]
             ) -> tuple[list[Region], list[Gather]]:
    """Composed regions: an origin with more than MAX_REGIONS of them reads through its gather instead; one
    gather per origin."""
    per_origin: dict[int, int] = {}
    for r in regions:
        per_origin[r.origin] = per_origin.get(r.origin, 0) + 1
    crowded = {o for o, k in per_origin.items() if k > MAX_REGIONS}
    kept = []
    for r in regions:
        if r.origin in crowded:
            pieces.setdefault(r.origin, []).append((region_indices(r.src.offset, r.src.stride, r.size),
                                                    region_indices(r.dst.offset, r.dst.stride, r.size)))
        else:
            kept.append(r)
    gathers = [Gather(o, np.concatenate([s for s, _ in ps]), np.concatenate([d for _, d in ps]))
               for o, ps in pieces.items()]
    return kept, gathers


def fuse(regions: list[Region], virtual: dict[int, list[Region]], size_of: Callable[[int], int],
         materialised: set[int] | frozenset[int] = frozenset()) -> tuple[list[Region], list[Gather]]:
    """Rewrite regions so that no origin is virtual.

    Args:
        regions: regions of the tensor being materialised (origins are tensor indices).
        virtual: tensor index -> its regions, for every virtual tensor.
        size_of: tensor index -> element count.
        materialised: virtual tensors already written by an earlier Raster; they are read as they are (a
            DenseNet-style concat chain then costs one region per input instead of re-deriving every source).

    Returns:
        regions and index gathers reading only materialised tensors: at most MAX_REGIONS regions and one gather
        per source tensor for composed chains. Each virtual tensor in the chain is resolved once, so the work is
        linear in the sizes of the tensors involved.
    """
    return _Resolver(virtual, size_of, materialised).compose(regions)
