"""Resize and Upsample -> Interp (scales or sizes as input 1), with MNN's resizeType / ctm encoding."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
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
        elif nearest_mode == "round_prefer_floor":  # MNN's round: halves go down
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
    """Resize -> Interp with input 1 = scales (float) or sizes (int32); `axes` and keep_aspect_ratio_policy are
    expanded to full-rank scales / sizes (at run time when they are not constants)."""
    if antialias or exclude_outside:
        raise UseFunctionBody(f"{node.label()}: antialias / exclude_outside are not supported")
    if ctx.opset < 11:
        _interp(ctx, node, mode, "asymmetric", "round_prefer_floor", cubic_coeff_a, node.inputs[1])
        return
    scales, sizes = node.input(2), node.input(3)
    scales_value = ctx.value(scales)
    use_scales = bool(scales) and (scales_value is None or scales_value.size > 0)
    if not use_scales and not sizes:
        raise UseFunctionBody(f"{node.label()}: needs scales or sizes")
    target = scales if use_scales else sizes
    shape = ctx.shape(node.inputs[0])
    if coordinate_transformation_mode == "align_corners" and use_scales and scales_value is not None \
            and shape is not None and None not in shape:
        # ONNX maps align_corners by (in - 1) / (in * scale - 1), MNN by (in - 1) / (out - 1) with out = floor(in *
        # scale): the two differ unless in * scale is whole (a 4-wide input at scale 0.6 samples 0 and 2.14, not 3).
        # Refused where the constants show it; run-time scales are MNN's rule.
        full = np.ones(len(shape))
        full[[a % len(shape) for a in (axes if axes is not None else range(len(shape)))]] = scales_value
        products = np.asarray(shape, np.float64) * full
        if not np.allclose(products, np.round(products), rtol=0, atol=1e-6):
            raise UseFunctionBody(f"{node.label()}: align_corners with scales that do not give whole sizes is not "
                                  f"supported")
    if axes is not None or (not use_scales and keep_aspect_ratio_policy != "stretch"):
        rank = ctx.need_rank(node, node.inputs[0])
        axes = [a % rank for a in (axes if axes is not None else range(rank))]
        if use_scales:
            target = _full_scales(ctx, target, axes, rank)
        else:
            target = _full_sizes(ctx, node.inputs[0], target, axes, rank, keep_aspect_ratio_policy)
    _interp(ctx, node, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, target)


def _scatter(ctx: Context, axes: list[int], values: str, rank: int) -> str:
    """A [rank] vector with `values` at `axes` and zeros elsewhere (ScatterNd)."""
    indices = ctx.const(np.asarray(axes, np.int32).reshape(-1, 1), "axes")
    return ctx.out(OP.ScatterNd, [indices, values, ctx.const(np.int32([rank]))], name="ScatterNd")


def _full_scales(ctx: Context, scales: str, axes: list[int], rank: int) -> str:
    """1 everywhere, `scales` at `axes`."""
    shifted = ctx.binary(BIN.SUB, scales, ctx.const(np.float32(1)))
    return ctx.binary(BIN.ADD, _scatter(ctx, axes, shifted, rank), ctx.const(np.float32(1)))


def _full_sizes(ctx: Context, x: str, sizes: str, axes: list[int], rank: int, policy: str) -> str:
    """Shape(x) with `sizes` at `axes`; not_larger / not_smaller rescale all axes by one ratio (ONNX's rule)."""
    shape = ctx.shape_of(x)
    picked = ctx.out(OP.GatherV2, [shape, ctx.const(np.int32(axes)), ctx.const(np.int32(0))], name="GatherV2")
    sizes_i = ctx.out(OP.Cast, [sizes], None, PARAM.CastParam, _cast(fb.DataType.DT_INT32), name="Cast")
    if policy in ("not_larger", "not_smaller"):
        as_float = [ctx.out(OP.Cast, [t], None, PARAM.CastParam, _cast(fb.DataType.DT_FLOAT), name="Cast")
                    for t in (sizes_i, picked)]
        ratio = ctx.binary(BIN.REALDIV, as_float[0], as_float[1])
        reduce = fb.ReductionParamT()
        reduce.operation = fb.ReductionType.MINIMUM if policy == "not_larger" else fb.ReductionType.MAXIMUM
        reduce.dim = [0]
        scale = ctx.out(OP.Reduction, [ratio], None, PARAM.ReductionParam, reduce, name="Reduction")
        scaled = ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, as_float[1], scale), ctx.const(np.float32(0.5)))
        sizes_i = ctx.out(OP.Cast, [ctx.unary(UN.FLOOR, scaled)], None, PARAM.CastParam,
                          _cast(fb.DataType.DT_INT32), name="Cast")
    keep = ctx.binary(BIN.SUB, ctx.const(np.ones(rank, np.int32)),
                      _scatter(ctx, axes, ctx.const(np.ones(len(axes), np.int32)), rank))
    return ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, shape, keep), _scatter(ctx, axes, sizes_i, rank))


def _cast(dtype: int) -> fb.CastParamT:
    param = fb.CastParamT()
    param.dstT = dtype
    return param
