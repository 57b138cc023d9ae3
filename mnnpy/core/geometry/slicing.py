"""Concat, Slice, SliceTf, StridedSlice and constant Padding as regions."""

from __future__ import annotations

from typing import Any

from mnnpy.core.geometry._regions import strided_regions, strides_of
from mnnpy.core.ir import Region, TensorDesc
from mnnpy.core.registry import geometry_fn
from mnnpy.core.shape._slicing import slice_tf, split_points, strided_slice
from mnnpy.core.shape._util import ints, norm_axis
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType


@geometry_fn(OT.Concat)
def concat(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    out = outs[0]
    axis = norm_axis(op.main.axis if op.main else 0, len(out.shape), op.name)
    dst_st = strides_of(out.shape)
    regions: list[Region] = []
    used = 0
    for i, d in enumerate(ins):
        regions += strided_regions(d.shape, strides_of(d.shape), dst_st, 0, used * dst_st[axis], i)
        used += d.shape[axis]
    return [regions]


def box_regions(shape: tuple[int, ...], spec: list[tuple[int, int, int]], origin: int = 0) -> list[Region]:
    """Regions of a strided box (per dim start, count, step) of a tensor, written contiguously."""
    src_st = strides_of(shape)
    counts = [c for _, c, _ in spec]
    offset = sum(s * st for (s, _, _), st in zip(spec, src_st, strict=True))
    return strided_regions(counts, [step * st for (_, _, step), st in zip(spec, src_st, strict=True)],
                           strides_of(counts), offset, 0, origin)


@geometry_fn(OT.Slice)
def slice_(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    shape = ins[0].shape
    axis, pts = split_points(op, shape, len(outs), values)
    result = []
    for i in range(len(outs)):
        spec = [(0, d, 1) for d in shape]
        spec[axis] = (pts[i], pts[i + 1] - pts[i], 1)
        result.append(box_regions(shape, spec))
    return result


@geometry_fn(OT.SliceTf)
def slicetf(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]] | None:
    if values[1] is None:
        return None  # runtime begin: the SliceTf kernel
    return [box_regions(ins[0].shape, slice_tf(ins[0].shape, values))]


@geometry_fn(OT.StridedSlice)
def stridedslice(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    return [box_regions(ins[0].shape, strided_slice(op, ins[0].shape, values)[0])]


@geometry_fn(OT.Padding)
def padding(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]] | None:
    mode = op.main.mode if op.main is not None else 0
    pads = ints(values[1])
    has_value = len(values) > 2 and values[2] is not None and float(values[2].ravel()[0]) != 0.0
    if mode != 0 or has_value or (len(values) > 2 and values[2] is None) or min(pads, default=0) < 0:
        return None  # reflect/edge/nonzero value: the Padding kernel
    shape, out = ins[0].shape, outs[0].shape
    dst_st = strides_of(out)
    offset = sum(pads[2 * i] * st for i, st in enumerate(dst_st))
    return [strided_regions(shape, strides_of(shape), dst_st, 0, offset, 0)]
