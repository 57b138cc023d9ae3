"""SSD's PriorBox and DetectionOutput -> MNN's PriorBox / DetectionOutput ops (run on mnnpy's CPU by
backends/cpu/ops/ssd.py)."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError
from ..context import OP, PARAM, Context, Layer
from ..registry import caffe_layer


@caffe_layer("PriorBox")
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
    steps = (float(p.step_w or p.step), float(p.step_h or p.step))
    if any(step != int(step) for step in steps):
        raise ConvertError(f"{layer.label()}: step {steps} is not whole; MNN's PriorBox stores integer steps")
    param.stepWidth, param.stepHeight = int(steps[0]), int(steps[1])
    param.offset = float(p.offset)
    inputs = ctx.bottoms(layer)
    ctx.emit(OP.PriorBox, inputs, [ctx.top(layer)], PARAM.PriorBox, param, name=layer.name)


@caffe_layer("DetectionOutput")
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
    inputs = ctx.bottoms(layer)
    ctx.emit(OP.DetectionOutput, inputs, [ctx.top(layer)], PARAM.DetectionOutput, param, name=layer.name)

