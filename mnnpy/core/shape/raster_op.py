"""The Raster op as it appears in a net or an expression (MNN: `_Raster`, ShapeRaster): shape and regions.

The op's Extra parameter carries `shape` (output dims) and `region` (11 ints per input: src offset, src strides,
dst offset, dst strides, sizes, in each tensor's logical order). Its geometry is the regions themselves, so the op
never reaches a backend as itself: the pipeline fuses and materialises it like any other region producer.
"""

from __future__ import annotations

from typing import Any

from mnnpy.core.ir import NCHW, Region, TensorDesc, View
from mnnpy.core.registry import geometry_fn, shape_fn
from mnnpy.core.shape._util import np_dtype
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
REGION_INTS = 11


def extra_attrs(op: Any) -> dict[str, Any]:
    """An op's Extra-parameter attributes by key (empty when its parameter is not an Extra)."""
    if op.mainType != fb.OpParameter.Extra or op.main is None:
        return {}
    return {(a.key.decode() if isinstance(a.key, bytes) else str(a.key)): a for a in op.main.attr or []}


def _attrs(op: Any) -> dict[str, Any]:
    attrs = extra_attrs(op)
    if not attrs:
        raise ModelError(f"op {op.name!r} (Raster): needs an Extra parameter with 'shape' and 'region' attributes")
    return attrs


def _ints(attrs: dict[str, Any], key: str, op: Any) -> list[int]:
    a = attrs.get(key)
    if a is None or a.list is None or a.list.i is None:
        raise ModelError(f"op {op.name!r} (Raster): attribute {key!r} is missing")
    return [int(v) for v in a.list.i]


def _end(offset: int, stride: tuple[int, ...], size: tuple[int, ...]) -> tuple[int, int]:
    """Lowest and highest element a view touches."""
    lo = offset + sum(min(0, s * (n - 1)) for s, n in zip(stride, size, strict=True))
    hi = offset + sum(max(0, s * (n - 1)) for s, n in zip(stride, size, strict=True))
    return lo, hi


def regions_of(op: Any, ins: list[TensorDesc], out: TensorDesc) -> list[Region]:
    """The op's regions, checked against the input and output sizes."""
    regs = _ints(_attrs(op), "region", op)
    if len(regs) != REGION_INTS * len(ins):
        raise ModelError(f"op {op.name!r} (Raster): {len(regs)} region ints for {len(ins)} inputs "
                         f"(expected {REGION_INTS} per input)")
    out_regions = []
    for k, desc in enumerate(ins):
        r = regs[REGION_INTS * k: REGION_INTS * (k + 1)]
        size = (r[8], r[9], r[10])
        if min(size) < 0:
            raise ModelError(f"op {op.name!r} (Raster): region {k} has a negative size {list(size)}")
        if min(size) == 0:
            continue
        src, dst = View(r[0], (r[1], r[2], r[3])), View(r[4], (r[5], r[6], r[7]))
        for what, view, limit in (("source", src, desc.size), ("destination", dst, out.size)):
            lo, hi = _end(view.offset, view.stride, size)
            if lo < 0 or hi >= limit:
                raise ModelError(f"op {op.name!r} (Raster): region {k} reads/writes {what} elements [{lo}, {hi}] "
                                 f"outside a tensor of {limit} elements")
        out_regions.append(Region(src, dst, size, k))
    return out_regions


@shape_fn(OT.Raster)
def raster_shape(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """Output dims from the `shape` attribute; dtype from `code` when given, else the first input's."""
    attrs = _attrs(op)
    shape = tuple(_ints(attrs, "shape", op))
    if any(d < 0 for d in shape):
        raise ModelError(f"op {op.name!r} (Raster): negative output shape {list(shape)}")
    code = attrs.get("code")
    dtype = np_dtype(code.i) if code is not None and code.i else descs[0].dtype
    return [TensorDesc(shape, dtype, NCHW)]


@geometry_fn(OT.Raster)
def raster_geometry(op: Any, ins: list[TensorDesc], outs: list[TensorDesc], values: list) -> list[list[Region]]:
    return [regions_of(op, ins, outs[0])]
