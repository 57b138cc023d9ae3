"""Less common ops: Round, IsNaN, IsInf, Trilu, OneHot, Hardmax, LpNormalization, LRN, GridSample, RoiAlign, EyeLike,
Swish, Shrink, Det, ReverseSequence, DFT."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, UN, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .matmul import matmul_op
from .reduce import reduction


def round_half_even(ctx: Context, x: str, output: str | None = None) -> str:
    """r = floor(x + 0.5), minus 1 where x was a tie and r is odd (MNN's ROUND rounds ties away from zero)."""
    r = ctx.unary(UN.FLOOR, ctx.binary(BIN.ADD, x, ctx.const(np.float32(0.5))))
    tie = ctx.binary(BIN.EQUAL, ctx.binary(BIN.SUB, r, x), ctx.const(np.float32(0.5)))
    odd = ctx.binary(BIN.EQUAL, ctx.binary(BIN.FLOORMOD, r, ctx.const(np.float32(2))), ctx.const(np.float32(1)))
    fix = ctx.binary(BIN.MUL, tie, odd)
    return ctx.out(OP.Select, [fix, ctx.binary(BIN.SUB, r, ctx.const(np.float32(1))), r],
                   None if output is None else [output], name=None if output is not None else "Select")


@onnx_op("Round")
def round_op(ctx: Context, node: OnnxNode) -> None:
    """Round (half to even)."""
    round_half_even(ctx, node.inputs[0], node.outputs[0])


@onnx_op("IsNaN")
def is_nan(ctx: Context, node: OnnxNode) -> None:
    """IsNaN -> x != x."""
    ctx.binary(BIN.NOTEQUAL, node.inputs[0], node.inputs[0], node.outputs[0])


@onnx_op("IsInf")
def is_inf(ctx: Context, node: OnnxNode, *, detect_negative: int = 1, detect_positive: int = 1) -> None:
    """IsInf -> x == +inf and/or x == -inf."""
    x = node.inputs[0]
    if detect_positive and detect_negative:
        ctx.binary(BIN.EQUAL, ctx.unary(UN.ABS, x), ctx.const(np.float32(np.inf)), node.outputs[0])
    elif detect_positive:
        ctx.binary(BIN.EQUAL, x, ctx.const(np.float32(np.inf)), node.outputs[0])
    elif detect_negative:
        ctx.binary(BIN.EQUAL, x, ctx.const(np.float32(-np.inf)), node.outputs[0])
    else:
        raise UseFunctionBody(f"{node.label()}: detecting neither sign is not supported")


def _dim(ctx: Context, shape: str, axis: int) -> str:
    """Size of `axis` (negative allowed) from a Shape tensor, as an int32 scalar."""
    return ctx.out(OP.GatherV2, [shape, ctx.const(np.int32(axis)), ctx.const(np.int32(0))], name="GatherV2")


@onnx_op("Trilu", since=14)
def trilu(ctx: Context, node: OnnxNode, *, upper: int = 1) -> None:
    """Trilu -> Select(col - row >= k (upper) / <= k (lower), x, 0) with rows/cols from Range over the shape."""
    x = node.inputs[0]
    shape = ctx.shape_of(x)
    rank = ctx.need_rank(node, x)  # MNN's GatherV2 takes no negative indices
    zero, one = ctx.const(np.int32(0)), ctx.const(np.int32(1))
    rows = ctx.out(OP.Range, [zero, _dim(ctx, shape, rank - 2), one], name="Range")
    cols = ctx.out(OP.Range, [zero, _dim(ctx, shape, rank - 1), one], name="Range")
    diff = ctx.binary(BIN.SUB, ctx.squeeze(cols, [0], unsqueeze=True), ctx.squeeze(rows, [1], unsqueeze=True))
    k = node.input(1)
    k_name = ctx.const(np.int32(0)) if not k else ctx.reshape(k, [])
    mask = ctx.binary(BIN.GREATER_EQUAL if upper else BIN.LESS_EQUAL, diff, k_name)
    zeros = ctx.out(OP.ZerosLike, [x], name="ZerosLike")
    ctx.emit(OP.Select, [mask, x, zeros], node.outputs)


def _cast_param(dtype: int) -> fb.CastParamT:
    param = fb.CastParamT()
    param.dstT = dtype
    return param


@onnx_op("OneHot", since=9)
def one_hot(ctx: Context, node: OnnxNode, *, axis: int = -1) -> None:
    """OneHot -> OneHot(indices (negative wrapped), depth, on, off) with values split from input 2."""
    indices, depth, values = node.inputs[0], node.inputs[1], node.inputs[2]
    depth_i = ctx.out(OP.Cast, [ctx.reshape(depth, [])], None, PARAM.CastParam, _cast_param(fb.DataType.DT_INT32),
                      name="Cast")
    idx = ctx.out(OP.Cast, [indices], None, PARAM.CastParam, _cast_param(fb.DataType.DT_INT32), name="Cast")
    idx = ctx.binary(BIN.MOD, ctx.binary(BIN.ADD, idx, depth_i), depth_i)  # int MOD is Python mod in MNN
    off = ctx.out(OP.GatherV2, [values, ctx.const(np.int32(0)), ctx.const(np.int32(0))], name="GatherV2")
    on = ctx.out(OP.GatherV2, [values, ctx.const(np.int32(1)), ctx.const(np.int32(0))], name="GatherV2")
    param = fb.OneHotParamT()
    param.axis = axis
    param.dType = fb.DataType.DT_FLOAT if ctx.is_float(values) else fb.DataType.DT_INT32
    ctx.emit(OP.OneHot, [idx, depth_i, on, off], node.outputs, PARAM.OneHotParam, param, name=node.name)


@onnx_op("Hardmax", since=13)
def hardmax(ctx: Context, node: OnnxNode, *, axis: int = -1) -> None:
    """Hardmax -> OneHot(ArgMax(x, axis), size of axis) (first maximum wins, as ONNX)."""
    x = node.inputs[0]
    rank = ctx.need_rank(node, x)
    axis = axis % rank
    param = fb.ArgMaxT()
    param.axis = axis
    param.topK = 1
    index = ctx.out(OP.ArgMax, [x], None, PARAM.ArgMax, param, name="ArgMax")
    depth = _dim(ctx, ctx.shape_of(x), axis)
    onehot = fb.OneHotParamT()
    onehot.axis = axis
    ctx.emit(OP.OneHot, [index, depth, ctx.const(np.float32(1)), ctx.const(np.float32(0))], node.outputs,
             PARAM.OneHotParam, onehot, name=node.name)


@onnx_op("LpNormalization")
def lp_normalization(ctx: Context, node: OnnxNode, *, axis: int = -1, p: int = 2) -> None:
    """LpNormalization -> x / norm_p(x, axis) (p = 1 or 2); a zero norm divides by 1 (its x are all 0, and ONNX's
    result there is 0, not 0 / 0)."""
    x = node.inputs[0]
    if p == 1:
        norm = reduction(ctx, ctx.unary(UN.ABS, x), fb.ReductionType.SUM, [axis], True)
    elif p == 2:
        norm = ctx.unary(UN.SQRT, reduction(ctx, ctx.unary(UN.SQUARE, x), fb.ReductionType.SUM, [axis], True))
    else:
        raise UseFunctionBody(f"{node.label()}: p={p} is not supported")
    zero = ctx.binary(BIN.EQUAL, norm, ctx.const(np.float32(0)))
    safe = ctx.out(OP.Select, [zero, ctx.const(np.float32(1)), norm], name="Select")
    ctx.binary(BIN.REALDIV, x, safe, node.outputs[0])


@onnx_op("LRN")
def lrn(ctx: Context, node: OnnxNode, *, size: int = 1, alpha: float = 0.0001, beta: float = 0.75,
        bias: float = 1.0) -> None:
    """LRN across channels -> LRN(regionType 0, localSize, alpha, beta, bias) (an NC4HW4 op)."""
    param = fb.LRNT()
    param.regionType = 0
    param.localSize = size
    param.alpha = float(alpha)
    param.beta = float(beta)
    param.bias = float(bias)
    ctx.emit(OP.LRN, [node.inputs[0]], node.outputs, PARAM.LRN, param, name=node.name)


@onnx_op("GridSample", since=16)
def grid_sample(ctx: Context, node: OnnxNode, *, align_corners: int = 0, mode: str = "bilinear",
                padding_mode: str = "zeros") -> None:
    """GridSample (2-D or 3-D) -> GridSample(mode, paddingMode, alignCorners)."""
    modes = {"bilinear": fb.SampleMode.BILINEAR, "linear": fb.SampleMode.BILINEAR,
             "nearest": fb.SampleMode.NEAREST}
    pads = {"zeros": fb.BorderMode.ZEROS, "border": fb.BorderMode.CLAMP, "reflection": fb.BorderMode.REFLECTION}
    if mode in ("cubic", "bicubic") and padding_mode in ("zeros", "border") and ctx.rank(node.inputs[0]) == 4:
        _bicubic_grid_sample(ctx, node, bool(align_corners), padding_mode)
        return
    if mode not in modes or padding_mode not in pads or ctx.rank(node.inputs[0]) not in (None, 4, 5):
        raise UseFunctionBody(f"{node.label()}: mode '{mode}' / padding '{padding_mode}' / rank is not supported")
    param = fb.GridSampleT()
    param.mode = modes[mode]
    param.paddingMode = pads[padding_mode]
    param.alignCorners = bool(align_corners)
    ctx.emit(OP.GridSample, [node.inputs[0], node.inputs[1]], node.outputs, PARAM.GridSample, param, name=node.name)


def _bicubic_grid_sample(ctx: Context, node: OnnxNode, align_corners: bool, padding_mode: str) -> None:
    """2-D bicubic GridSample (MNN's GridSample has no cubic mode): the sample's 4 x 4 neighbourhood read by 16
    nearest-mode GridSamples at whole pixel positions (zeros outside the input, or positions clamped into it for
    padding 'border'), weighted by the cubic convolution coefficients (a = -0.75) of the sample's fractional
    position. With 'border' only the taps are clamped, as onnxruntime and PyTorch do; the ONNX reference also clamps
    a sample position outside the border first (the node suite has no such case)."""
    x, grid = node.inputs[0], node.inputs[1]
    shape = ctx.shape(x)
    if shape is None or shape[2] is None or shape[3] is None:
        raise UseFunctionBody(f"{node.label()}: bicubic GridSample needs the input's height and width")
    sizes = {"x": int(shape[3]), "y": int(shape[2])}

    def const(v: float) -> str:
        return ctx.const(np.float32(v))

    def coord(axis: int) -> str:
        """The sample position in pixels along grid component `axis` (0: x, 1: y), [N, Ho, Wo]."""
        size = sizes["xy"[axis]]
        g = ctx.out(OP.GatherV2, [grid, ctx.const(np.int32(axis)), ctx.const(np.int32(3))], name="GatherV2")
        if align_corners:
            pos = ctx.binary(BIN.MUL, ctx.binary(BIN.ADD, g, const(1)), const((size - 1) / 2))
        else:
            pos = ctx.binary(BIN.MUL, ctx.binary(BIN.SUB, ctx.binary(BIN.MUL, ctx.binary(BIN.ADD, g, const(1)),
                                                                     const(size)), const(1)), const(0.5))
        return pos

    def weights(frac: str) -> list[str]:
        """Cubic coefficients of the taps at -1, 0, 1, 2 from the sample, [N, 1, Ho, Wo] each."""
        a = -0.75
        out = []
        for offset in (-1, 0, 1, 2):
            d = ctx.unary(UN.ABS, ctx.binary(BIN.SUB, frac, const(offset)))
            d2 = ctx.binary(BIN.MUL, d, d)
            d3 = ctx.binary(BIN.MUL, d2, d)
            if offset in (0, 1):  # (a + 2) d^3 - (a + 3) d^2 + 1
                w = ctx.binary(BIN.ADD, ctx.binary(BIN.SUB, ctx.binary(BIN.MUL, d3, const(a + 2)),
                                                   ctx.binary(BIN.MUL, d2, const(a + 3))), const(1))
            else:  # a d^3 - 5a d^2 + 8a d - 4a
                w = ctx.binary(BIN.SUB, ctx.binary(BIN.ADD, ctx.binary(BIN.SUB, ctx.binary(BIN.MUL, d3, const(a)),
                                                                       ctx.binary(BIN.MUL, d2, const(5 * a))),
                                                   ctx.binary(BIN.MUL, d, const(8 * a))), const(4 * a))
            out.append(ctx.squeeze(w, [1], unsqueeze=True))
        return out

    def normalised(index: str, size: int) -> str:
        """The grid value of a whole pixel position (border: clamped into the input first)."""
        if padding_mode == "border":
            index = ctx.binary(BIN.MINIMUM, ctx.binary(BIN.MAXIMUM, index, const(0)), const(size - 1))
        if align_corners:
            return ctx.binary(BIN.SUB, ctx.binary(BIN.MUL, index, const(2 / (size - 1) if size > 1 else 0)),
                              const(1))
        return ctx.binary(BIN.SUB, ctx.binary(BIN.MUL, ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, index, const(2)),
                                                                  const(1)), const(1 / size)), const(1))

    px, py = coord(0), coord(1)
    x0, y0 = ctx.unary(UN.FLOOR, px), ctx.unary(UN.FLOOR, py)
    wx, wy = weights(ctx.binary(BIN.SUB, px, x0)), weights(ctx.binary(BIN.SUB, py, y0))
    param = fb.GridSampleT()
    param.mode = fb.SampleMode.NEAREST
    param.paddingMode = fb.BorderMode.ZEROS
    param.alignCorners = align_corners
    total = ""
    for j in range(4):
        gy = ctx.squeeze(normalised(ctx.binary(BIN.ADD, y0, const(j - 1)), sizes["y"]), [3], unsqueeze=True)
        row = ""
        for i in range(4):
            gx = ctx.squeeze(normalised(ctx.binary(BIN.ADD, x0, const(i - 1)), sizes["x"]), [3], unsqueeze=True)
            tap_grid = ctx.out(OP.Concat, [gx, gy], None, PARAM.Axis, _axis(3), name="Concat")
            tap = ctx.out(OP.GridSample, [x, tap_grid], None, PARAM.GridSample, param, name="GridSample")
            tap = ctx.binary(BIN.MUL, tap, wx[i])
            row = tap if not row else ctx.binary(BIN.ADD, row, tap)
        row = ctx.binary(BIN.MUL, row, wy[j])
        last = node.outputs[0] if j == 3 else None
        total = row if not total else ctx.binary(BIN.ADD, total, row, last)


def _axis(axis: int) -> fb.AxisT:
    param = fb.AxisT()
    param.axis = axis
    return param


@onnx_op("RoiAlign", since=10)
def roi_align(ctx: Context, node: OnnxNode, *, coordinate_transformation_mode: str | None = None, mode: str = "avg",
              output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
              spatial_scale: float = 1.0) -> None:
    """RoiAlign (X, rois [n, 4], batch_indices [n]) -> ROIAlign with RoiParameters (MNN's CPUROIAlign takes the ONNX
    inputs as they are). The coordinate mode is "output_half_pixel" before opset 16 and "half_pixel" (aligned) by
    default from it."""
    if coordinate_transformation_mode is None:
        coordinate_transformation_mode = "half_pixel" if ctx.opset >= 16 else "output_half_pixel"
    # mode "max": ONNX (onnxruntime's kernel, the node tests' data) takes the largest of each sample's four weighted
    # corner terms, MNN's MAXPOOL the largest interpolated sample; the two disagree, so it is refused, not guessed
    if mode != "avg" or coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise UseFunctionBody(f"{node.label()}: mode '{mode}' / coordinate_transformation_mode "
                              f"'{coordinate_transformation_mode}' is not supported")
    param = fb.RoiParametersT()
    param.pooledHeight, param.pooledWidth = int(output_height), int(output_width)
    param.spatialScale, param.samplingRatio = float(spatial_scale), int(sampling_ratio)
    param.aligned = coordinate_transformation_mode == "half_pixel"
    param.poolType = fb.PoolType.AVEPOOL
    ctx.emit(OP.ROIAlign, list(node.inputs[:3]), node.outputs, PARAM.RoiParameters, param, name=node.name)


@onnx_op("EyeLike")
def eye_like(ctx: Context, node: OnnxNode, *, dtype: int | None = None, k: int = 0) -> None:
    """EyeLike of a statically shaped 2-D input -> a constant (Identity so the output has a producer)."""
    shape = ctx.shape(node.inputs[0])
    if shape is None or len(shape) != 2 or None in shape:
        raise UseFunctionBody(f"{node.label()}: needs a static 2-D input shape")
    is_float = ctx.is_float(node.inputs[0]) if dtype is None else dtype in (1, 10, 11, 16)
    value = np.eye(int(shape[0]), int(shape[1]), k=k, dtype=np.float32 if is_float else np.int32)
    ctx.alias(ctx.const(value, "eye"), node.outputs[0])


@onnx_op("Swish", since=24)
def swish(ctx: Context, node: OnnxNode, *, alpha: float = 1.0) -> None:
    """Swish -> x * sigmoid(alpha * x)."""
    x = node.inputs[0]
    scaled = x if alpha == 1.0 else ctx.binary(BIN.MUL, x, ctx.const(np.float32(alpha)))
    ctx.binary(BIN.MUL, x, ctx.unary(UN.SIGMOID, scaled), node.outputs[0])


@onnx_op("Shrink", since=9)
def shrink(ctx: Context, node: OnnxNode, *, bias: float = 0.0, lambd: float = 0.5) -> None:
    """Shrink -> x - bias where x > lambd, x + bias where -lambd > x, else 0 (two Selects). The second test is
    written as GREATER(-lambd, x): official MNN 3.6.1 gets LESS(x, scalar) wrong here."""
    x = node.inputs[0]
    cast = np.float32 if ctx.is_float(x) else np.int32  # MNN holds integer tensors as int32
    inner = ctx.out(OP.Select, [ctx.binary(BIN.GREATER, ctx.const(cast(-lambd)), x),
                                ctx.binary(BIN.ADD, x, ctx.const(cast(bias))), ctx.const(cast(0))], name="Select")
    ctx.out(OP.Select, [ctx.binary(BIN.GREATER, x, ctx.const(cast(lambd))),
                        ctx.binary(BIN.SUB, x, ctx.const(cast(bias))), inner], [node.outputs[0]])


@onnx_op("Det", since=11)
def det(ctx: Context, node: OnnxNode) -> None:
    """Det -> Det (determinants of the trailing [M, M] matrices)."""
    ctx.emit(OP.Det, [node.inputs[0]], node.outputs, name=node.name)


@onnx_op("ReverseSequence", since=10)
def reverse_sequence(ctx: Context, node: OnnxNode, *, batch_axis: int = 1, time_axis: int = 0) -> None:
    """ReverseSequence (x, sequence_lens) -> ReverseSequence(batchDim, seqDim)."""
    param = fb.ReverseSequenceParamT()
    param.batchDim, param.seqDim = int(batch_axis), int(time_axis)
    ctx.emit(OP.ReverseSequence, list(node.inputs[:2]), node.outputs, PARAM.ReverseSequenceParam, param,
             name=node.name)


def _dft_matrices(n: int, length: int, inverse: bool, onesided: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """(cos, sin, columns) for a DFT along an axis of n samples: the transform of length `length` is x @ matrices
    (rows past `length` are zero: the signal is cut; missing rows are the zero padding). Forward: e^(-i t), inverse:
    e^(+i t) / length; onesided keeps length // 2 + 1 frequencies; an inverse onesided one (irfft) maps n one-sided
    coefficients to `length` real samples, the interior frequencies counted twice (their conjugate twins), the
    imaginary parts of frequency 0 and of length / 2 dropping out (sin 0 = sin(pi t) = 0)."""
    if inverse and onesided:
        freqs = min(n, length // 2 + 1)
        k, t = np.arange(n)[:, None], np.arange(length)[None, :]
        weight = np.where((k == 0) | (2 * k == length), 1.0, 2.0) * (k < freqs) / length
        angle = 2.0 * np.pi * k * t / length
        return (weight * np.cos(angle)).astype(np.float32), (-weight * np.sin(angle)).astype(np.float32), length
    columns = length // 2 + 1 if onesided else length
    i, k = np.arange(n)[:, None], np.arange(columns)[None, :]
    angle = 2.0 * np.pi * (i % length) * k / length
    scale = (i < length) / (length if inverse else 1.0)
    return (scale * np.cos(angle)).astype(np.float32), (scale * np.sin(angle)).astype(np.float32), columns


@onnx_op("DFT", since=17)
def dft(ctx: Context, node: OnnxNode, *, axis: int = 1, inverse: int = 0, onesided: int = 0) -> None:
    """DFT (static shape, constant dft_length and axis) -> MatMuls with constant cos / sin matrices along the axis
    (moved last by a Permute), real and imaginary parts gathered from and stacked back into the last dimension."""
    x = node.inputs[0]
    shape = ctx.shape(x)
    if ctx.opset >= 20:
        axis = -2
        if node.input(2):
            value = ctx.value(node.inputs[2])
            if value is None:
                raise UseFunctionBody(f"{node.label()}: a run-time axis is not supported")
            axis = int(np.asarray(value).reshape(-1)[0])
    if shape is None or None in shape or len(shape) < 3 or shape[-1] not in (1, 2):
        raise UseFunctionBody(f"{node.label()}: DFT needs a static input shape [..., n, 1 or 2]")
    rank = len(shape)
    axis = axis % rank
    if axis == rank - 1:
        raise UseFunctionBody(f"{node.label()}: the DFT axis cannot be the real/imaginary axis")
    n = int(shape[axis])
    length = n if not node.input(1) else None
    if length is None:
        value = ctx.value(node.inputs[1])
        if value is None:
            raise UseFunctionBody(f"{node.label()}: a run-time dft_length is not supported")
        length = int(np.asarray(value).reshape(-1)[0])
    elif inverse and onesided:
        length = 2 * (n - 1)
    if length < 1 or (onesided and not inverse and shape[-1] == 2):
        raise UseFunctionBody(f"{node.label()}: dft_length {length} / a onesided transform of a complex signal is "
                              f"not supported")
    cos, sin, columns = _dft_matrices(n, length, bool(inverse), bool(onesided))
    # [.., n, .., 1|2] -> real and imaginary [rows, n] (the axis moved last), GEMMs, back
    parts = [ctx.out(OP.GatherV2, [x, ctx.const(np.int32(c)), ctx.const(np.int32(rank - 1))], name="GatherV2")
             for c in range(shape[-1])]
    kept = [d for d in range(rank - 1) if d != axis]
    moved = [*kept, axis]
    rows = int(np.prod([shape[d] for d in kept]))
    flat = [ctx.reshape(ctx.permute(p, moved) if moved != list(range(rank - 1)) else p, [rows, n]) for p in parts]
    cos_name, sin_name = ctx.const(cos, "dft_cos"), ctx.const(sin, "dft_sin")
    re, im = flat[0], flat[1] if len(flat) > 1 else None
    if inverse and onesided:  # real output
        outs = [ctx.binary(BIN.ADD, matmul_op(ctx, re, cos_name), matmul_op(ctx, im, sin_name)) if im else
                matmul_op(ctx, re, cos_name)]
    else:
        sign = BIN.SUB if inverse else BIN.ADD  # forward: re cos + im sin; inverse: re cos - im sin
        real = matmul_op(ctx, re, cos_name) if im is None else \
            ctx.binary(sign, matmul_op(ctx, re, cos_name), matmul_op(ctx, im, sin_name))
        imag_from_re = matmul_op(ctx, re, sin_name)  # forward: im cos - re sin; inverse: im cos + re sin
        imag = (ctx.unary(UN.NEG, imag_from_re) if not inverse else imag_from_re) if im is None else \
            ctx.binary(BIN.ADD if inverse else BIN.SUB, matmul_op(ctx, im, cos_name), imag_from_re)
        outs = [real, imag]
    back = [int(v) for v in np.argsort(moved)]
    folded = [ctx.reshape(o, [shape[d] for d in kept] + [columns]) for o in outs]
    if back != list(range(rank - 1)):
        folded = [ctx.permute(o, back) for o in folded]
    stacked = [ctx.squeeze(o, [rank - 1], unsqueeze=True) for o in folded]
    if len(stacked) == 1:
        ctx.alias(stacked[0], node.outputs[0])
        return
    param = fb.AxisT()
    param.axis = rank - 1
    ctx.emit(OP.Concat, stacked, node.outputs, PARAM.Axis, param, name=node.name)


# center_point_box: [x_center, y_center, width, height] @ _CENTER_TO_CORNERS = [x1, y1, x2, y2] (each output a sum of
# one exact product with 1 and one with +-0.5, so the same float as x_center -+ width / 2). Negative sizes are
# clamped to 0 first: onnxruntime gives a center box of negative width or height no overlap with any box (its
# corners stay unsorted), and an empty box overlaps nothing in TF's NMS either; sorted corners would overlap.
_CENTER_TO_CORNERS = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [-0.5, 0, 0.5, 0], [0, -0.5, 0, 0.5]], np.float32)
_SIZES_FLOOR = np.array([[-np.finfo(np.float32).max, -np.finfo(np.float32).max, 0, 0]], np.float32)


@onnx_op("NonMaxSuppression", since=10)
def non_max_suppression(ctx: Context, node: OnnxNode, *, center_point_box: int = 0) -> None:
    """NonMaxSuppression (boxes [B, N, 4], scores [B, C, N], max per class, iou, score threshold) -> one
    NonMaxSuppressionV2 (TF's single-class NMS) per batch and class, as MNN's converter does; each one's kept
    indices k become rows [b, c, k] (k * [0, 0, 1] + [b, c, 0]), concatenated in ONNX's order (batch, then class).
    The counts come from the values, so the file runs through the Module API (`mnnpy.nn._segments`)."""
    boxes, scores = node.inputs[0], node.inputs[1]
    box_shape, score_shape = ctx.shape(boxes), ctx.shape(scores)
    if box_shape is None or score_shape is None or None in (*box_shape[:1], *score_shape[:2]):
        raise UseFunctionBody(f"{node.label()}: needs static batch and class counts")
    batches, classes = int(score_shape[0]), int(score_shape[1])
    if center_point_box:
        boxes = ctx.binary(BIN.MAXIMUM, boxes, ctx.const(_SIZES_FLOOR, "sizes_floor"))
        boxes = matmul_op(ctx, boxes, ctx.const(_CENTER_TO_CORNERS, "center_to_corners"))
    limit = node.input(2) or ctx.const(np.array([0], np.int32), "max_output_boxes_per_class")
    iou = node.input(3) or ctx.const(np.array([0.0], np.float32), "iou_threshold")
    tail = [limit, iou] + ([node.inputs[4]] if node.input(4) else [])
    param = fb.NonMaxSuppressionV2T()
    pick_k = ctx.const(np.array([[0, 0, 1]], np.int32), "pick_k")
    rows = []
    zero = ctx.const(np.int32(0), "axis")
    for b in range(batches):
        batch = ctx.const(np.int32(b), "batch")
        box_b = ctx.out(OP.GatherV2, [boxes, batch, zero], name="GatherV2")
        score_b = ctx.out(OP.GatherV2, [scores, batch, zero], name="GatherV2")
        for c in range(classes):
            score_bc = ctx.out(OP.GatherV2, [score_b, ctx.const(np.int32(c), "class"), zero], name="GatherV2")
            kept = ctx.out(OP.NonMaxSuppressionV2, [box_b, score_bc, *tail], None, PARAM.NonMaxSuppressionV2,
                           param, name="NonMaxSuppressionV2")
            column = ctx.squeeze(kept, [1], unsqueeze=True)
            rows.append(ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, column, pick_k),
                                   ctx.const(np.array([[b, c, 0]], np.int32), "batch_class")))
    if len(rows) == 1:
        ctx.alias(rows[0], node.outputs[0])
        return
    axis = fb.AxisT()
    axis.axis = 0
    ctx.emit(OP.Concat, rows, node.outputs, PARAM.Axis, axis, name=node.name)
