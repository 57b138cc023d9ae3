"""Resize and Upsample -> Interp (scales or sizes as input 1), with MNN's resizeType / ctm encoding."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op

CTM = fb.CoordinateTransformationMode
_CTM = {"half_pixel": CTM.HalfPixels, "pytorch_half_pixel": CTM.PytorchHalfPixels,
        "align_corners": CTM.AlignCorners, "asymmetric": CTM.Asymmetric,
        "tf_half_pixel_for_nn": CTM.TensorflowHalfPixels}


def _interp(ctx: Context, node: OnnxNode, mode: str, ctm: str, nearest_mode: str, cubic_coeff_a: float,
            size_input: str) -> None:
    if ctm not in _CTM:
        raise UseFunctionBody(f"{node.label()}: coordinate_transformation_mode '{ctm}' is not supported")
    param = fb.InterpT()
    if mode == "nearest":
        if nearest_mode == "floor":
            param.resizeType = 1
        elif nearest_mode in ("round_prefer_floor", "round_prefer_ceil"):
            param.resizeType = 4
        else:
            raise UseFunctionBody(f"{node.label()}: nearest_mode '{nearest_mode}' is not supported")
    elif mode in ("linear", "bilinear"):
        param.resizeType = 2
    elif mode in ("cubic", "bicubic"):
        param.resizeType = 3
    else:
        raise UseFunctionBody(f"{node.label()}: resize mode '{mode}' is not supported")
    param.ctm = _CTM[ctm]
    param.alignCorners = ctm == "align_corners"
    param.halfPixelCenters = ctm in ("half_pixel", "pytorch_half_pixel")
    param.cubicCoeffA = float(cubic_coeff_a)
    ctx.emit(OP.Interp, [node.inputs[0], size_input], node.outputs, PARAM.Interp, param, name=node.name,
             default_format=fb.MNN_DATA_FORMAT.NCHW)


@onnx_op("Upsample")
def upsample(ctx: Context, node: OnnxNode, *, mode: str = "nearest", scales: list[float] | None = None,
             height_scale: float | None = None, width_scale: float | None = None) -> None:
    """Upsample (asymmetric coordinates, floor nearest) -> Interp(x, scales)."""
    if scales is not None:
        scale_name = ctx.const(np.asarray(scales, np.float32), "scales")
    elif height_scale is not None:
        scale_name = ctx.const(np.asarray([1, 1, height_scale, width_scale or 1], np.float32), "scales")
    else:
        scale_name = node.inputs[1]
    _interp(ctx, node, mode, "asymmetric", "floor", -0.75, scale_name)


@onnx_op("Resize", since=10)
def resize(ctx: Context, node: OnnxNode, *, antialias: int = 0, axes: list[int] | None = None,
           coordinate_transformation_mode: str = "half_pixel", cubic_coeff_a: float = -0.75,
           exclude_outside: int = 0, extrapolation_value: float = 0.0, keep_aspect_ratio_policy: str = "stretch",
           mode: str = "nearest", nearest_mode: str = "round_prefer_floor") -> None:
    """Resize -> Interp with input 1 = scales (float) or sizes (int32)."""
    if antialias or exclude_outside or axes is not None or keep_aspect_ratio_policy != "stretch":
        raise UseFunctionBody(f"{node.label()}: antialias / exclude_outside / axes / keep_aspect_ratio_policy "
                           "are not supported")
    if ctx.opset < 11:
        _interp(ctx, node, mode, "asymmetric", "round_prefer_floor", cubic_coeff_a, node.inputs[1])
        return
    scales, sizes = node.input(2), node.input(3)
    scales_value = ctx.value(scales)
    if scales and (scales_value is None or scales_value.size):
        _interp(ctx, node, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, scales)
    elif sizes:
        _interp(ctx, node, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, sizes)
    else:
        raise UseFunctionBody(f"{node.label()}: needs scales or sizes")
