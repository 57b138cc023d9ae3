"""Shapes of region-of-interest ops: ROIPooling, ROIAlign, CropAndResize and NonMaxSuppressionV2 (MNN: ShapeROIPooling,
ShapeROIAlign, ShapeCropAndResize, ShapeNonMaxSuppressionV2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.core.ir import NC4HW4, NCHW, NHWC, TensorDesc
from mnnpy.core.nms import select_boxes
from mnnpy.core.registry import shape_fn
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType


def _rois(op: Any, descs: list[TensorDesc], kind: str) -> int:
    """Number of ROIs: roi [n, 5] (batch, x1, y1, x2, y2), or roi [n, 4] plus batch indices [n] (ONNX form).

    In backward mode (outputGrad) the last input is the gradient of the pooled output.
    """
    if op.main is not None and op.main.outputGrad:
        descs = descs[:-1]
    x, roi = descs[0], descs[1]
    if len(x.shape) != 4:
        raise ModelError(f"op {op.name!r} ({kind}): input must be 4-D [N, C, H, W], got {list(x.shape)}")
    want = 4 if len(descs) > 2 else 5
    if len(roi.shape) != 2 or roi.shape[1] != want:
        raise ModelError(f"op {op.name!r} ({kind}): roi must be [num_rois, {want}], got {list(roi.shape)}")
    if len(descs) > 2 and descs[2].shape not in ((roi.shape[0],), (roi.shape[0], 1)):
        raise ModelError(f"op {op.name!r} ({kind}): batch indices {list(descs[2].shape)} do not match "
                         f"{roi.shape[0]} rois")
    return roi.shape[0]


@shape_fn(OT.ROIPooling, OT.ROIAlign)
def roi(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """[num_rois, C, pooledHeight, pooledWidth], NC4HW4 as MNN; in backward mode the input's gradient (its shape)."""
    kind = "ROIPooling" if op.type == OT.ROIPooling else "ROIAlign"
    p = op.main
    if p is None or p.pooledHeight <= 0 or p.pooledWidth <= 0:
        raise ModelError(f"op {op.name!r} ({kind}): pooled size must be positive")
    n = _rois(op, descs, kind)
    pooled = (n, descs[0].shape[1], p.pooledHeight, p.pooledWidth)
    if p.outputGrad:
        if descs[-1].shape != pooled:
            raise ModelError(f"op {op.name!r} ({kind}): backward diff must be {list(pooled)}, got "
                             f"{list(descs[-1].shape)}")
        return [TensorDesc(descs[0].shape, descs[0].dtype, NC4HW4)]
    return [TensorDesc(pooled, descs[0].dtype, NC4HW4)]


@shape_fn(OT.CropAndResize, needs_values=(3,))
def crop_and_resize(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """image [N, H, W, C] (NHWC), boxes [n, 4], box_ind [n], crop_size [2] -> [n, crop_h, crop_w, C] NHWC."""
    x, boxes, ind = descs[0], descs[1], descs[2]
    if len(x.shape) != 4:
        raise ModelError(f"op {op.name!r} (CropAndResize): image must be 4-D NHWC, got {list(x.shape)}")
    if len(boxes.shape) != 2 or boxes.shape[1] != 4:
        raise ModelError(f"op {op.name!r} (CropAndResize): boxes must be [num_boxes, 4], got {list(boxes.shape)}")
    if ind.shape != (boxes.shape[0],):
        raise ModelError(f"op {op.name!r} (CropAndResize): box_ind must be [{boxes.shape[0]}], got {list(ind.shape)}")
    size = [int(v) for v in values[3].ravel()]
    if len(size) != 2 or min(size) <= 0:
        raise ModelError(f"op {op.name!r} (CropAndResize): crop_size must be two positive ints, got {size}")
    # the image is NHWC by contract (mnnpy.expr converts first); folded constants lose their format label
    return [TensorDesc((boxes.shape[0], size[0], size[1], x.shape[3]), x.dtype, NHWC)]


@shape_fn(OT.NonMaxSuppressionV2, needs_values=(0, 1, 2, 3, 4))
def non_max_suppression(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """NonMaxSuppressionV2 (boxes [n, 4], scores [n], max_output_size, iou_threshold[, score_threshold]) -> int32
    [kept]: the count is the selection's, so the shape is computed by selecting (MNN does the same)."""
    if len(descs) < 4:
        raise ModelError(f"op {op.name!r} (NonMaxSuppressionV2): needs boxes, scores, max_output_size and "
                         f"iou_threshold, got {len(descs)} inputs")
    return [TensorDesc((int(nms_selection(values).size),), np.dtype(np.int32), NCHW)]


def nms_selection(values: list) -> np.ndarray:
    """NonMaxSuppressionV2's kept indices from its input values (`mnnpy.core.nms.select_boxes`)."""
    boxes, scores, limit, iou = values[:4]
    threshold = float(np.asarray(values[4]).reshape(-1)[0]) if len(values) > 4 else None
    return select_boxes(boxes, scores, int(np.asarray(limit).reshape(-1)[0]), float(np.asarray(iou).reshape(-1)[0]),
                        threshold)
