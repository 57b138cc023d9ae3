"""SSD's PriorBox and DetectionOutput -> MNN's PriorBox / DetectionOutput ops.

They are registered only when our schema carries MNN's parameter tables for them (`schema/MNN.fbs` declares both
tables empty today); until then a net using them fails with the "unsupported layer" error listing every such layer.
"""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..context import OP, PARAM, Context, Layer
from ..registry import caffe_layer

_PRIOR_FIELDS = ("minSizes", "maxSizes", "aspectRatios", "variances", "flip", "clip", "imageWidth", "imageHeight",
                 "stepWidth", "stepHeight", "offset")
_DETECTION_FIELDS = ("classCount", "nmsThresholdold", "nmsTopK", "keepTopK", "confidenceThreshold", "shareLocation",
                     "backgroundLable", "varianceEncodedTarget", "codeType")


def _schema_has(table: type, fields: tuple[str, ...]) -> bool:
    return all(hasattr(table(), name) for name in fields)


def prior_box(ctx: Context, layer: Layer) -> None:
    """PriorBox(feature, image) -> PriorBox (sizes, ratios, variances, image size / step when given)."""
    p = layer.proto.prior_box_param
    param = fb.PriorBoxT()
    param.minSizes = [float(v) for v in p.min_size]
    param.maxSizes = [float(v) for v in p.max_size]
    param.aspectRatios = [float(v) for v in p.aspect_ratio]
    variances = [float(v) for v in p.variance] or [0.1]
    param.variances = variances * 4 if len(variances) == 1 else variances
    param.flip, param.clip = bool(p.flip), bool(p.clip)
    param.imageWidth = int(p.img_w or p.img_size)
    param.imageHeight = int(p.img_h or p.img_size)
    param.stepWidth = int(p.step_w or p.step)
    param.stepHeight = int(p.step_h or p.step)
    param.offset = float(p.offset)
    inputs = [ctx.x(layer, i) for i in range(len(layer.bottoms))]
    ctx.emit(OP.PriorBox, inputs, [ctx.top(layer)], PARAM.PriorBox, param, name=layer.name)


def detection_output(ctx: Context, layer: Layer) -> None:
    """DetectionOutput(loc, conf, priors) -> DetectionOutput (NMS and top-k settings)."""
    p = layer.proto.detection_output_param
    param = fb.DetectionOutputT()
    param.classCount = int(p.num_classes)
    param.nmsThresholdold = float(p.nms_param.nms_threshold)
    param.nmsTopK = int(p.nms_param.top_k) if p.nms_param.HasField("top_k") else -1
    param.keepTopK = int(p.keep_top_k)
    param.confidenceThreshold = float(p.confidence_threshold)
    param.shareLocation = int(p.share_location)
    param.backgroundLable = int(p.background_label_id)
    param.varianceEncodedTarget = int(p.variance_encoded_in_target)
    param.codeType = int(p.code_type)
    inputs = [ctx.x(layer, i) for i in range(len(layer.bottoms))]
    ctx.emit(OP.DetectionOutput, inputs, [ctx.top(layer)], PARAM.DetectionOutput, param, name=layer.name)


if _schema_has(fb.PriorBoxT, _PRIOR_FIELDS):
    caffe_layer("PriorBox")(prior_box)
if _schema_has(fb.DetectionOutputT, _DETECTION_FIELDS):
    caffe_layer("DetectionOutput")(detection_output)
