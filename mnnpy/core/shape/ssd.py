"""Shapes of the Caffe SSD ops: PriorBox, DetectionOutput, Normalize and Crop (MNN: ShapePriorBox.cpp, ...).

`aspect_ratios` and `detection_rows` are shared with the CPU kernels (backends/cpu/ops/ssd.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, NHWC, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.core.shape._util import norm_axis, same
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
F32 = np.dtype(np.float32)


def _floats(values: Any) -> list[float]:
    return [] if values is None else [float(v) for v in np.asarray(values).ravel()]


def aspect_ratios(p: Any) -> list[float]:
    """SSD's ratio list: 1, then each given ratio not seen yet (and its inverse when `flip`)."""
    ratios = [1.0]
    for ar in _floats(p.aspectRatios):
        if any(abs(ar - r) < 1e-6 for r in ratios):
            continue
        ratios.append(ar)
        if p.flip:
            ratios.append(1.0 / ar)
    return ratios


def prior_count(p: Any) -> int:
    """Priors per feature-map cell: every ratio for every min size, plus one per max size."""
    return len(aspect_ratios(p)) * len(_floats(p.minSizes)) + len(_floats(p.maxSizes))


def spatial(desc: TensorDesc) -> tuple[int, int]:
    """(H, W) of a 4-D feature map in its own format."""
    if len(desc.shape) != 4:
        raise ValueError(f"expects a 4-D feature map, got shape {desc.shape}")
    return (desc.shape[1], desc.shape[2]) if desc.fmt == NHWC else (desc.shape[2], desc.shape[3])


@shape_fn(OT.PriorBox)
def prior_box(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    p = op.main
    if p is None or not _floats(p.minSizes):
        raise ModelError(f"op {op.name!r} (PriorBox): needs at least one min size")
    h, w = spatial(descs[0])
    return [TensorDesc((1, 2, h * w * prior_count(p) * 4, 1), F32, NCHW)]


def detection_rows(op: Any, priors: int) -> int:
    """Rows of DetectionOutput's [1, 1, rows, 6] output: keepTopK, else every (prior, class) candidate."""
    p = op.main
    if p.keepTopK > 0:
        return int(p.keepTopK)
    classes = int(p.classCount) - (1 if 0 <= p.backgroundLable < p.classCount else 0)
    return priors * max(classes, 1)


@shape_fn(OT.DetectionOutput)
def detection_output(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    p = op.main
    if p is None or len(descs) != 3:
        raise ModelError(f"op {op.name!r} (DetectionOutput): expects 3 inputs (loc, conf, priors), got {len(descs)} "
                         f"(the objectness-score variant is not supported)")
    loc, conf, prior = descs
    if loc.shape[0] != 1 or conf.shape[0] != 1:
        raise ModelError(f"op {op.name!r} (DetectionOutput): batch {loc.shape[0]} is not supported, only 1")
    priors = prior.size // 8
    loc_classes = 1 if p.shareLocation else int(p.classCount)
    if prior.size != priors * 8 or loc.size != priors * loc_classes * 4 or conf.size != priors * p.classCount:
        raise ModelError(f"op {op.name!r} (DetectionOutput): loc {loc.shape}, conf {conf.shape} and priors "
                         f"{prior.shape} do not agree with {p.classCount} classes")
    return [TensorDesc((1, 1, detection_rows(op, priors), 6), F32, NCHW)]


@shape_fn(OT.Normalize)
def normalize(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    if len(descs[0].shape) < 2:
        raise ModelError(f"op {op.name!r} (Normalize): needs a [N, C, ...] input, got shape {descs[0].shape}")
    return [descs[0]]


def crop_box(op: Any, shape: tuple[int, ...], like: tuple[int, ...]) -> list[tuple[int, int]]:
    """Per dim (offset, size) of Caffe's Crop: dims from `axis` on take `like`'s size at the given offsets."""
    p = op.main
    axis = norm_axis(p.axis if p is not None else 2, len(shape), op.name)
    offsets = [int(v) for v in np.asarray(p.offset if p is not None and p.offset is not None else [0]).ravel()]
    if len(like) != len(shape) or len(offsets) not in (1, len(shape) - axis):
        raise ModelError(f"op {op.name!r} (Crop): cannot crop {shape} like {like} from axis {axis} with offsets "
                         f"{offsets}")
    box = []
    for i, d in enumerate(shape):
        if i < axis:
            box.append((0, d))
            continue
        start = offsets[0] if len(offsets) == 1 else offsets[i - axis]
        if start < 0 or start + like[i] > d:
            raise ModelError(f"op {op.name!r} (Crop): offset {start} + size {like[i]} exceeds dim {i} ({d})")
        box.append((start, like[i]))
    return box


@shape_fn(OT.Crop)
def crop(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    box = crop_box(op, descs[0].shape, descs[1].shape)
    return [same(descs[0], [n for _, n in box])]
