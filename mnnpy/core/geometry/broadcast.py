"""BroadcastTo, Tile, DepthToSpace and SpaceToDepth as regions."""

from __future__ import annotations

from typing import Any

from mnnpy.core.geometry._regions import strided_regions, strides_of
from mnnpy.core.ir import Region, TensorDesc
from mnnpy.core.registry import geometry_fn
from mnnpy.core.shape._util import ints
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType


def broadcast_regions(shape: tuple[int, ...], out: tuple[int, ...], origin: int = 0) -> list[Region]:
    """Regions of `np.broadcast_to(x, out)`: stride 0 on broadcast dims (MNN: ConvertUtils::broadcastto)."""
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    st = strides_of(padded)
    src = [0 if n == 1 and o != 1 else s for n, o, s in zip(padded, out, st, strict=True)]
    return strided_regions(out, src, strides_of(out), 0, 0, origin)


@geometry_fn(OT.BroadcastTo)
def broadcast_to(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    return [broadcast_regions(ins[0].shape, outs[0].shape)]


@geometry_fn(OT.Tile)
def tile(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    shape = ins[0].shape
    reps = ints(values[1])
    src_st, dst_st = strides_of(shape), strides_of(outs[0].shape)
    sizes, ss, ds = [], [], []
    for n, r, s, d in zip(shape, reps, src_st, dst_st, strict=True):
        sizes += [r, n]
        ss += [0, s]
        ds += [d * n, d]
    return [strided_regions(sizes, ss, ds, 0, 0, 0)]


@geometry_fn(OT.DepthToSpace, OT.SpaceToDepth)
def depth_space(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    b = op.main.blockSize
    crd = op.main.mode == 1
    if op.type == OT.DepthToSpace:
        n, c, h, w = ins[0].shape
        co = c // (b * b)
        view = (n, co, b, b, h, w) if crd else (n, b, b, co, h, w)
        perm = [0, 1, 4, 2, 5, 3] if crd else [0, 3, 4, 1, 5, 2]
    else:
        n, c, h, w = ins[0].shape
        view = (n, c, h // b, b, w // b, b)
        perm = [0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4]
    st = strides_of(view)
    out_view = [view[p] for p in perm]
    return [strided_regions(out_view, [st[p] for p in perm], strides_of(out_view), 0, 0, 0)]
