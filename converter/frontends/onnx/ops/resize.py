"""Resize and Upsample -> Interp (scales or sizes as input 1), with MNN's resizeType / ctm encoding."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .matmul import matmul_op

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
    expanded to full-rank scales / sizes (at run time when they are not constants). What Interp cannot express
    becomes constant per-axis tables (``_resize_by_tables``)."""
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
    why = ""
    if antialias or exclude_outside:
        why = "antialias / exclude_outside are not supported by MNN's Interp"
    elif coordinate_transformation_mode not in _CTM:
        why = f"coordinate_transformation_mode '{coordinate_transformation_mode}' is not supported by MNN's Interp"
    elif mode == "nearest" and nearest_mode not in ("floor", "round_prefer_floor"):
        why = f"nearest_mode '{nearest_mode}' is not supported by MNN's Interp"
    if coordinate_transformation_mode == "align_corners" and use_scales and scales_value is not None \
            and shape is not None and None not in shape:
        full = np.ones(len(shape))
        full[[a % len(shape) for a in (axes if axes is not None else range(len(shape)))]] = scales_value
        if not _whole_sizes(shape, full):
            raise UseFunctionBody(f"{node.label()}: align_corners with scales that do not give whole sizes is not "
                                  f"supported (onnxruntime and MNN map by (in - 1) / (out - 1), the ONNX reference by "
                                  f"(in - 1) / (in * scale - 1))")
    if why:
        _resize_by_tables(ctx, node, why, mode=mode, ctm=coordinate_transformation_mode, nearest_mode=nearest_mode,
                          cubic_coeff_a=cubic_coeff_a, antialias=bool(antialias),
                          exclude_outside=bool(exclude_outside), extrapolation_value=extrapolation_value, axes=axes,
                          policy=keep_aspect_ratio_policy)
        return
    if axes is not None or (not use_scales and keep_aspect_ratio_policy != "stretch"):
        rank = ctx.need_rank(node, node.inputs[0])
        axes = [a % rank for a in (axes if axes is not None else range(rank))]
        if use_scales:
            target = _full_scales(ctx, target, axes, rank)
        else:
            target = _full_sizes(ctx, node.inputs[0], target, axes, rank, keep_aspect_ratio_policy)
    _interp(ctx, node, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, target)


def _whole_sizes(shape: list[int], scales: np.ndarray) -> bool:
    """Whether every in * scale is whole: only then do the two align_corners rules agree (a 4-wide input at scale
    0.6 samples 0 and 3 by onnxruntime's and MNN's rule, 0 and 2.14 by the ONNX reference's)."""
    products = np.asarray(shape, np.float64) * np.asarray(scales, np.float64)
    return bool(np.allclose(products, np.round(products), rtol=0, atol=1e-6))


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


# *** Resize modes Interp cannot express: per-axis tables at convert time ***
#
# Resize is separable: along each resized axis every output is a fixed combination of input positions, set by the
# input length, the output length, the scale and the attributes alone. With a static input shape and constant
# scales / sizes (/ roi), each axis is a constant table: nearest -> an index vector (GatherV2, exact), linear /
# cubic -> an [O, L] matrix (MatMul, the axis moved last by Permute around it). That covers what MNN's Interp has no
# encoding for: antialias, exclude_outside, nearest_mode ceil / round_prefer_ceil, half_pixel_symmetric and
# tf_crop_and_resize (positions outside the roi get extrapolation_value: a constant added after the tables).


def _source_coords(ctm: str, out_len: int, in_len: int, scale: float, roi: tuple[float, float]) -> np.ndarray:
    """Input coordinate of each output position along one axis (ONNX's coordinate_transformation_mode)."""
    y = np.arange(out_len, dtype=np.float64)
    virtual = scale * in_len  # the output length before rounding
    if ctm == "align_corners":
        return np.zeros(out_len) if virtual == 1 else y * (in_len - 1) / (virtual - 1)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_crop_and_resize":
        start, end = roi
        if virtual == 1:
            return np.full(out_len, (end - start) * (in_len - 1) / 2 + start * (in_len - 1))
        return y * (end - start) * (in_len - 1) / (virtual - 1) + start * (in_len - 1)
    if ctm == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    if ctm == "pytorch_half_pixel" and virtual == 1:
        return np.full(out_len, -0.5)
    if ctm == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / virtual)  # the output canvas centred on the input's
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5  # half_pixel, pytorch_half_pixel


def _nearest_index(x: np.ndarray, in_len: int, nearest_mode: str) -> np.ndarray:
    """Nearest input position per output (clamped to the input)."""
    low = np.floor(x)
    frac = x - low
    up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5, "floor": np.zeros_like(x, bool),
          "ceil": frac > 0}[nearest_mode]
    return np.clip(low + up, 0, in_len - 1).astype(np.int32)


def _cubic(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with coefficient ``a`` at distances ``d``."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _weight_matrix(x: np.ndarray, in_len: int, mode: str, scale: float, antialias: bool, exclude_outside: bool,
                   cubic_a: float) -> np.ndarray:
    """[O, L] interpolation weights (float64) for source coordinates ``x``.

    The taps of an output are the n input positions nearest its coordinate (ties to the lower one): n = 2 (linear) or
    4 (cubic), or, antialiased when downsampling, enough to cover the kernel stretched by 1 / scale (weights then
    normalised to sum 1). Taps past an edge take the edge's value, or with exclude_outside are dropped and the rest
    renormalised."""
    radius = 1.0 if mode == "linear" else 2.0
    stretch = min(scale, 1.0) if antialias else 1.0
    first = int(np.floor(-radius / stretch)) + 1  # the first tap's offset from the position left of x
    taps = 2 - 2 * first
    low = np.floor(x)
    left = np.where(x == low, low - 1, low)  # an exact position counts as the right one of its pair
    index = left[:, None] + np.arange(first, first + taps)[None, :]
    dist = (index - x[:, None]) * stretch
    w = np.clip(1 - np.abs(dist), 0, 1) if mode == "linear" else _cubic(dist, cubic_a)
    if antialias:
        w = w / w.sum(axis=1, keepdims=True)
    if exclude_outside:
        w = np.where((index < 0) | (index >= in_len), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    matrix = np.zeros((len(x), in_len))
    rows = np.repeat(np.arange(len(x)), taps)
    np.add.at(matrix, (rows, np.clip(index, 0, in_len - 1).astype(np.int64).ravel()), w.ravel())
    return matrix


def _table_plan(shape: list[int], axes: list[int], scales: np.ndarray | None, sizes: np.ndarray | None,
                policy: str) -> tuple[list[float], list[int]]:
    """Full-rank (scales, output lengths) from constant scales or sizes over ``axes`` (ONNX's rules: floor(scale *
    length); sizes with keep_aspect_ratio_policy rescale every axis by one ratio, rounded half up)."""
    rank = len(shape)
    if scales is not None:
        full = [1.0] * rank
        for a, s in zip(axes, scales.ravel(), strict=True):
            full[a] = float(s)
        return full, [int(np.floor(s * n)) for s, n in zip(full, shape, strict=True)]
    out = list(shape)
    for a, s in zip(axes, np.asarray(sizes).ravel(), strict=True):
        out[a] = int(s)
    full = [o / n for o, n in zip(out, shape, strict=True)]
    if policy in ("not_larger", "not_smaller"):
        pick = min if policy == "not_larger" else max
        ratio = pick(full[a] for a in axes)
        full = [ratio if a in axes else 1.0 for a in range(rank)]
        out = [int(ratio * shape[a] + 0.5) if a in axes else shape[a] for a in range(rank)]
    return full, out


def _resize_by_tables(ctx: Context, node: OnnxNode, why: str, *, mode: str, ctm: str, nearest_mode: str,
                      cubic_coeff_a: float, antialias: bool, exclude_outside: bool, extrapolation_value: float,
                      axes: list[int] | None, policy: str) -> None:
    """Resize as constant per-axis tables (see above); refused (``why``) without a static input shape and constant
    scales / sizes / roi, or on a non-float input."""
    shape = ctx.shape(node.inputs[0])
    scales, sizes, roi = (ctx.value(node.input(i)) if node.input(i) else None for i in (2, 3, 1))
    if scales is not None and scales.size == 0:
        scales = None
    if shape is None or None in shape or (scales is None and sizes is None) or not ctx.is_float(node.inputs[0]) \
            or (ctm == "tf_crop_and_resize" and (roi is None or roi.size == 0)) or mode not in ("nearest", "linear",
                                                                                               "cubic"):
        raise UseFunctionBody(f"{node.label()}: {why} (it converts only with a static float input and constant "
                              f"scales / sizes / roi)")
    rank = len(shape)
    axes = [a % rank for a in (axes if axes is not None else range(rank))]
    scale, out_len = _table_plan([int(n) for n in shape], axes, scales, sizes, policy)
    if min(out_len) < 1 or min(scale) <= 0 or 0 in shape:
        raise UseFunctionBody(f"{node.label()}: output shape {out_len} from scales {scale} is empty or invalid")
    bounds = {a: (0.0, 1.0) for a in range(rank)}
    if ctm == "tf_crop_and_resize":
        flat = np.asarray(roi, np.float64).ravel()
        bounds.update({a: (flat[k], flat[k + len(axes)]) for k, a in enumerate(axes)})
    resized = [a for a in axes if not (np.isclose(scale[a], 1.0) and out_len[a] == shape[a] and bounds[a] == (0, 1))]
    coords = {a: _source_coords(ctm, out_len[a], int(shape[a]), scale[a], bounds[a]) for a in resized}
    outside = {a: (c < 0) | (c > shape[a] - 1) if ctm == "tf_crop_and_resize" else np.zeros(len(c), bool)
               for a, c in coords.items()}
    fill = extrapolation_value != 0 and any(o.any() for o in outside.values())
    x = node.inputs[0]
    for step, a in enumerate(resized):
        n = int(shape[a])
        last = node.outputs[0] if step == len(resized) - 1 and not fill else None
        if mode == "nearest" and not outside[a].any():
            index = ctx.const(_nearest_index(coords[a], n, nearest_mode), "resize_index")
            x = ctx.out(OP.GatherV2, [x, index, ctx.const(np.int32(a))], None if last is None else [last],
                        name="GatherV2" if last is None else node.name)
            continue
        if mode == "nearest":
            matrix = np.zeros((out_len[a], n))
            matrix[np.arange(out_len[a]), _nearest_index(coords[a], n, nearest_mode)] = 1.0
        else:
            matrix = _weight_matrix(coords[a], n, mode, scale[a], antialias, exclude_outside, cubic_coeff_a)
        matrix[outside[a]] = 0.0
        weights = ctx.const(np.ascontiguousarray(matrix.T).astype(np.float32), "resize_weights")
        if a == rank - 1:
            x = matmul_op(ctx, x, weights, last, name=None if last is None else node.name)
            continue
        perm = [d for d in range(rank) if d != a] + [a]
        y = matmul_op(ctx, ctx.permute(x, perm), weights)
        x = ctx.permute(y, [int(p) for p in np.argsort(perm)], last)
    if fill:
        # extrapolated positions: 0 from the tables, then extrapolation_value added where any axis is outside
        mask = np.zeros([1] * rank)
        for a in resized:
            shape_a = [1] * rank
            shape_a[a] = out_len[a]
            mask = np.maximum(mask, outside[a].reshape(shape_a))
        ctx.binary(BIN.ADD, x, ctx.const((mask * extrapolation_value).astype(np.float32), "resize_fill"),
                   node.outputs[0])
    elif not resized:
        ctx.alias(x, node.outputs[0])
