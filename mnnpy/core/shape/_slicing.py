"""Slice specifications shared by shape inference and geometry: per dim (start, count, step)."""

from __future__ import annotations

from typing import Any

from mnnpy.core.shape._util import ints
from mnnpy.schema.errors import ModelError

BIG = 2**31 - 1


def _clamp_onnx(start: int, end: int, step: int, dim: int) -> tuple[int, int, int]:
    """ONNX Slice clamping rules; returns (start, count, step)."""
    if step == 0:
        raise ModelError("slice step 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        count = max(0, (end - start + step - 1) // step)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        count = max(0, (start - end + (-step) - 1) // (-step))
    return start, count, step


def strided_slice(op: Any, shape: tuple[int, ...], values: list) -> tuple[list[tuple[int, int, int]], list[int]]:
    """StridedSlice (ONNX fromType=1 or TF fromType=0 with begin/end/shrink masks).

    Returns:
        per input dim (start, count, step), and the output shape (shrunk dims removed).
    """
    p = op.main
    rank = len(shape)
    spec = [(0, d, 1) for d in shape]
    begin, end = ints(values[1]), ints(values[2])
    if p is not None and p.fromType == 1:
        axes = ints(values[3]) if len(values) > 3 and values[3] is not None else list(range(len(begin)))
        steps = ints(values[4]) if len(values) > 4 and values[4] is not None else [1] * len(begin)
        for b, e, a, s in zip(begin, end, axes, steps, strict=False):
            ax = a + rank if a < 0 else a
            spec[ax] = _clamp_onnx(b, e, s, shape[ax])
        return spec, [c for _, c, _ in spec]
    strides = ints(values[3]) if len(values) > 3 and values[3] is not None else [1] * len(begin)
    bmask = p.beginMask if p is not None else 0
    emask = p.endMask if p is not None else 0
    smask = p.shrinkAxisMask if p is not None else 0
    if p is not None and (p.ellipsisMask or p.newAxisMask):
        raise ModelError(f"op {op.name!r}: StridedSlice ellipsis/new-axis masks are not supported")
    out = []
    for i in range(rank):
        if i >= len(begin):
            out.append(shape[i])
            continue
        s = strides[i]
        b = (0 if s > 0 else BIG) if bmask >> i & 1 else begin[i]
        e = (BIG if s > 0 else -BIG) if emask >> i & 1 else end[i]
        if smask >> i & 1:
            b = b + shape[i] if b < 0 else b
            spec[i] = (b, 1, 1)
            continue
        spec[i] = _clamp_onnx(b, e, s, shape[i])
        out.append(spec[i][1])
    return spec, out


def slice_tf(shape: tuple[int, ...], values: list) -> list[tuple[int, int, int]]:
    """SliceTf: begin and size (-1 = to the end)."""
    begin, size = ints(values[1]), ints(values[2])
    spec = []
    for i, d in enumerate(shape):
        b = begin[i] if i < len(begin) else 0
        n = size[i] if i < len(size) else -1
        spec.append((b, d - b if n < 0 else n, 1))
    return spec


def split_points(op: Any, shape: tuple[int, ...], n_out: int, values: list | None = None) -> tuple[int, list[int]]:
    """Slice (Caffe/ONNX Split): the axis and the start of every output along it (plus the end).

    Sizes come from input 1 when present (ONNX Split opset 13), else from `slicePoints` (Caffe: boundaries,
    TF/ONNX: sizes).
    """
    p = op.main
    axis = p.axis + len(shape) if p.axis < 0 else p.axis
    dim = shape[axis]
    if values is not None and len(values) > 1 and values[1] is not None:
        starts = [0]
        for s in ints(values[1])[: n_out - 1]:
            starts.append(starts[-1] + s)
        return axis, [*starts, dim]
    pts = ints(p.slicePoints)
    if p.sourceType == 1 and len(pts) == 1 and pts[0] == n_out and n_out > 1:  # TF Split: num_split
        pts = []
    if not pts:
        step = dim // n_out
        return axis, [i * step for i in range(n_out)] + [dim]
    if p.sourceType == 1 or len(pts) == n_out:  # TF / ONNX: sizes
        starts = [0]
        for s in pts[: n_out - 1]:
            starts.append(starts[-1] + s)
        last = dim if pts[-1] < 0 or len(pts) < n_out else starts[-1] + pts[n_out - 1]
        return axis, [*starts, last]
    return axis, [0, *pts, dim]
