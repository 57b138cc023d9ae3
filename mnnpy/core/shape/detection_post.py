"""Shapes of DetectionPostProcess (TFLite's SSD post-processing; MNN: ShapeDetectionPostProcess).
The settings are the op's DetectionPostProcessParam table (maxDetections, maxClassesPerDetection,
detectionsPerClass, nmsScoreThreshold, iouThreshold, numClasses, useRegularNMS, centerSizeEncoding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mnnpy.core.ir import NCHW, TensorDesc
from mnnpy.core.registry import shape_fn
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.errors import ModelError

OT = fb.OpType
F32 = np.dtype(np.float32)


@dataclass(frozen=True)
class PostProcessParams:
    """DetectionPostProcess settings (TFLite names in MNN's spelling)."""

    max_detections: int
    max_classes_per_detection: int
    detections_per_class: int
    nms_score_threshold: float
    iou_threshold: float
    num_classes: int
    use_regular_nms: bool
    center_size_encoding: tuple[float, float, float, float]

    @property
    def outputs(self) -> int:
        """Detection rows: max_detections (regular NMS) or max_detections x classes per box (fast NMS)."""
        if self.use_regular_nms:
            return self.max_detections
        return self.max_detections * min(self.max_classes_per_detection, self.num_classes)


def params_of(op: Any) -> PostProcessParams:
    """The op's settings from its DetectionPostProcessParam table (ModelError naming the op when they are bad)."""
    kind = f"op {op.name!r} (DetectionPostProcess)"
    if op.mainType != fb.OpParameter.DetectionPostProcessParam or op.main is None:
        raise ModelError(f"{kind}: needs a DetectionPostProcessParam parameter, got union member {op.mainType}")
    t = op.main
    scales = [float(v) for v in t.centerSizeEncoding] if t.centerSizeEncoding is not None else []
    if len(scales) != 4 or min(scales) <= 0:
        raise ModelError(f"{kind}: centerSizeEncoding must be 4 positive scales (y, x, h, w), got {scales}")
    p = PostProcessParams(int(t.maxDetections), int(t.maxClassesPerDetection), int(t.detectionsPerClass),
                          float(t.nmsScoreThreshold), float(t.iouThreshold), int(t.numClasses), bool(t.useRegularNms),
                          (scales[0], scales[1], scales[2], scales[3]))
    if min(p.max_detections, p.max_classes_per_detection, p.num_classes) <= 0 or p.detections_per_class <= 0:
        raise ModelError(f"{kind}: maxDetections, maxClassesPerDetection, detectionsPerClass and numClasses must be "
                         f"positive")
    return p


@shape_fn(OT.DetectionPostProcess)
def detection_post_process(op: Any, descs: list[TensorDesc], values: list) -> list[TensorDesc]:
    """boxes [1, n, 4], classes [1, n], scores [1, n], num_detections [1] (all float32)."""
    p = params_of(op)
    kind = f"op {op.name!r} (DetectionPostProcess)"
    if len(descs) != 3:
        raise ModelError(f"{kind}: needs 3 inputs (box encodings, class predictions, anchors), got {len(descs)}")
    enc, cls, anchors = (d.shape for d in descs)
    if len(enc) != 3 or enc[0] != 1 or enc[2] < 4:
        raise ModelError(f"{kind}: box encodings must be [1, num_anchors, >=4], got {list(enc)}")
    if len(cls) != 3 or cls[:2] != enc[:2] or cls[2] not in (p.num_classes, p.num_classes + 1):
        raise ModelError(f"{kind}: class predictions must be [1, {enc[1]}, {p.num_classes + 1}], got {list(cls)}")
    if len(anchors) != 2 or anchors != (enc[1], 4):
        raise ModelError(f"{kind}: anchors must be [{enc[1]}, 4], got {list(anchors)}")
    n = p.outputs
    return [TensorDesc((1, n, 4), F32, NCHW), TensorDesc((1, n), F32, NCHW), TensorDesc((1, n), F32, NCHW),
            TensorDesc((1,), F32, NCHW)]
