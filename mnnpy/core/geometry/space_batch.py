"""SpaceToBatchND and BatchToSpaceND (NCHW logical order, as MNN computes them) as regions."""

from __future__ import annotations

from typing import Any

from mnnpy.core.geometry._regions import strided_regions, strides_of
from mnnpy.core.ir import Region, TensorDesc
from mnnpy.core.registry import geometry_fn
from mnnpy.core.shape.space_batch import space_batch_params
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType


def _axis_range(out_len: int, in_len: int, block: int, offset: int, pos: int) -> tuple[int, int]:
    """Output indices o with 0 <= o*block + pos - offset < in_len: (first, count)."""
    first = 0
    while first < out_len and first * block + pos - offset < 0:
        first += 1
    last = first
    while last < out_len and last * block + pos - offset < in_len:
        last += 1
    return first, last - first


@geometry_fn(OT.SpaceToBatchND, OT.BatchToSpaceND)
def space_batch(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    (bh, bw), (pt, _, pl, _) = space_batch_params(op, values)
    to_batch = op.type == OT.SpaceToBatchND
    small, big = (outs[0].shape, ins[0].shape) if to_batch else (ins[0].shape, outs[0].shape)
    n, c, h, w = big
    _, _, sh, sw = small
    big_st, small_st = strides_of(big), strides_of(small)
    regions: list[Region] = []
    for by in range(bh):
        for bx in range(bw):
            y0, ny = _axis_range(sh, h, bh, pt, by)
            x0, nx = _axis_range(sw, w, bw, pl, bx)
            if ny == 0 or nx == 0:
                continue
            small_off = (by * bw + bx) * n * small_st[0] + y0 * small_st[2] + x0
            big_off = (y0 * bh + by - pt) * big_st[2] + (x0 * bw + bx - pl)
            sizes = [n, c, ny, nx]
            big_strides = [big_st[0], big_st[1], bh * big_st[2], bw]
            if to_batch:
                regions += strided_regions(sizes, big_strides, small_st, big_off, small_off, 0)
            else:
                regions += strided_regions(sizes, small_st, big_strides, small_off, big_off, 0)
    return [regions]
