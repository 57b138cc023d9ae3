"""Region fusion does bounded work: a slice -> reshape -> gather -> gather chain (what mnnpy.cv builds to pad an
image by gathering border rows and columns) used to re-resolve the whole chain below every region, ~4000 nested
fuse calls and millions of indexed elements for a 38x48 image. The work is counted, not timed."""

from __future__ import annotations

import numpy as np
import pytest

from mnnpy.core.geometry import fuse as fuse_mod
from mnnpy.core.geometry._regions import full_copy, strided_regions
from mnnpy.core.geometry.raster import raster
from mnnpy.core.ir import Region

H, W = 38, 48


def _gather_regions(outer: int, dim: int, inner: int, idx: np.ndarray, origin: int) -> list[Region]:
    """The geometry of a constant-index GatherV2: one region per index (as mnnpy.core.geometry.gather)."""
    regions: list[Region] = []
    for j, i in enumerate(idx.tolist()):
        regions += strided_regions([outer, inner], [dim * inner, 1], [idx.size * inner, 1], i * inner, j * inner,
                                   origin)
    return regions


def _chain(rows: np.ndarray, cols: np.ndarray) -> tuple[list[Region], dict[int, list[Region]], dict[int, int]]:
    """t1 = t0[1:37, 1:47]; t2 = reshape(t1, [36, 46, 1]); t3 = t2[rows]; t4 = t3[:, cols] (t0 is real)."""
    sh, sw = H - 2, W - 2
    virtual = {
        1: strided_regions([sh, sw], [W, 1], [sw, 1], W + 1, 0, 0),
        2: full_copy(sh * sw, 1),
        3: _gather_regions(1, sh, sw, rows, 2),
    }
    top = _gather_regions(rows.size, sw, 1, cols, 3)
    sizes = {0: H * W, 1: sh * sw, 2: sh * sw, 3: rows.size * sw, 4: rows.size * cols.size}
    return top, virtual, sizes


def _apply(regions: list[Region], gathers: list, x: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    out = raster(regions, [x], shape).reshape(-1)
    for g in gathers:
        assert g.origin == 0
        out[g.dst_idx] = x.reshape(-1)[g.src_idx]
    return out.reshape(shape)


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    work = {"elements": 0}
    real = fuse_mod.region_indices

    def counting(offset: int, stride: tuple, size: tuple) -> np.ndarray:
        idx = real(offset, stride, size)
        work["elements"] += idx.size
        return idx

    monkeypatch.setattr(fuse_mod, "region_indices", counting)
    return work


def test_clamped_border_gather_chain_is_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = np.clip(np.arange(-2, H), 0, H - 3)  # replicate-border row/column tables
    cols = np.clip(np.arange(-2, W), 0, W - 3)
    top, virtual, sizes = _chain(rows, cols)
    work = _counted(monkeypatch)
    regions, gathers = fuse_mod.fuse(top, virtual, sizes.__getitem__)
    # every tensor of the chain is indexed a small constant number of times (quadratic fusion: > 2 million)
    assert work["elements"] <= 8 * sum(sizes.values())
    assert {r.origin for r in regions} | {g.origin for g in gathers} == {0}
    assert len(gathers) <= 1 and len(regions) <= fuse_mod.MAX_REGIONS
    x = np.random.default_rng(0).standard_normal((H, W)).astype(np.float32)
    want = x[1:H - 1, 1:W - 1][rows][:, cols]
    np.testing.assert_array_equal(_apply(regions, gathers, x, want.shape), want)


def test_crowded_composition_folds_into_one_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = np.arange(0, H - 2, 2)  # affine: every column composes into one fitted region (44 of them)
    cols = np.arange(W - 3, -1, -1)
    top, virtual, sizes = _chain(rows, cols)
    x = np.random.default_rng(1).standard_normal((H, W)).astype(np.float32)
    want = x[1:H - 1, 1:W - 1][rows][:, cols]
    regions, gathers = fuse_mod.fuse(top, virtual, sizes.__getitem__)
    assert not gathers and len(regions) == cols.size
    np.testing.assert_array_equal(_apply(regions, gathers, x, want.shape), want)
    monkeypatch.setattr(fuse_mod, "MAX_REGIONS", 16)
    regions, gathers = fuse_mod.fuse(top, virtual, sizes.__getitem__)
    assert not regions and len(gathers) == 1 and gathers[0].dst_idx.size == want.size
    np.testing.assert_array_equal(_apply(regions, gathers, x, want.shape), want)


def test_materialised_and_real_sources_pass_through() -> None:
    rows = np.arange(5)
    cols = np.arange(7)
    top, virtual, sizes = _chain(rows, cols)
    regions, gathers = fuse_mod.fuse(top, virtual, sizes.__getitem__, materialised={3})
    assert regions == top and not gathers
