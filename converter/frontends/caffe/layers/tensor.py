"""Input, Split, Dropout, Eltwise, Concat, Slice, Softmax, Flatten, Reshape, Permute, Crop, Interp, ArgMax."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ....graph import ConvertError, InputSpec
from ..context import BIN, OP, PARAM, Context, Layer
from ..registry import caffe_layer


@caffe_layer("Input")
def input_layer(ctx: Context, layer: Layer) -> None:
    """Input: one graph input per top, with the shapes of input_param."""
    shapes = [[int(d) for d in shape.dim] for shape in layer.proto.input_param.shape]
    for i, blob in enumerate(layer.tops):
        if not shapes:
            raise ConvertError(f"{layer.label()}: input '{blob}' has no shape")
        shape = shapes[min(i, len(shapes) - 1)]
        name = ctx.top(layer, i)
        ctx.graph.inputs[name] = InputSpec(shape)
        ctx.set_shape(name, shape)


@caffe_layer("Split", "Dropout")
def split(ctx: Context, layer: Layer) -> None:
    """Split and Dropout are identities at inference: the tops share bottom 0's tensor."""
    ctx.forward(layer)


@caffe_layer("Eltwise")
def eltwise(ctx: Context, layer: Layer) -> None:
    """Eltwise PROD/SUM/MAX -> Eltwise; a SUM with coefficients becomes MUL/ADD BinaryOps."""
    p = layer.proto.eltwise_param
    inputs = ctx.bottoms(layer)
    if p.operation == p.SUM and len(p.coeff) and any(c != 1 for c in p.coeff):
        terms = [x if c == 1 else ctx.binary(BIN.MUL, x, ctx.const(np.float32(c), layer.name + "/coeff"))
                 for x, c in zip(inputs, p.coeff, strict=False)]
        total = terms[0]
        for i, term in enumerate(terms[1:]):
            total = ctx.binary(BIN.ADD, total, term, ctx.top(layer) if i == len(terms) - 2 else None)
        return
    param = fb.EltwiseT()
    param.type = {p.PROD: fb.EltwiseType.PROD, p.SUM: fb.EltwiseType.SUM, p.MAX: fb.EltwiseType.MAXIMUM}[p.operation]
    ctx.emit(OP.Eltwise, inputs, [ctx.top(layer)], PARAM.Eltwise, param, name=layer.name)



@caffe_layer("Concat")
def concat(ctx: Context, layer: Layer) -> None:
    """Concat(axis, or the legacy concat_dim) -> Concat."""
    p = layer.proto.concat_param
    axis = int(p.axis) if p.HasField("axis") or not p.HasField("concat_dim") else int(p.concat_dim)
    ctx.layer_op(layer, OP.Concat, PARAM.Axis, fb.AxisT, inputs=ctx.bottoms(layer), axis=axis)


@caffe_layer("Slice")
def slice_layer(ctx: Context, layer: Layer) -> None:
    """Slice(axis, slice_point boundaries) -> Slice (sourceType CAFFE); no points means equal parts."""
    p = layer.proto.slice_param
    param = fb.SliceT()
    param.axis = int(p.axis) if p.HasField("axis") or not p.HasField("slice_dim") else int(p.slice_dim)
    param.slicePoints = [int(v) for v in p.slice_point] or None
    param.sourceType = fb.NetSource.CAFFE
    outputs = [ctx.top(layer, i) for i in range(len(layer.tops))]
    ctx.emit(OP.Slice, [ctx.x(layer)], outputs, PARAM.Slice, param, name=layer.name)


@caffe_layer("Softmax")
def softmax(ctx: Context, layer: Layer) -> None:
    """Softmax(axis) -> Softmax."""
    ctx.layer_op(layer, OP.Softmax, PARAM.Axis, fb.AxisT, axis=int(layer.proto.softmax_param.axis))


@caffe_layer("Flatten")
def flatten(ctx: Context, layer: Layer) -> None:
    """Flatten(axis, end_axis) -> Flatten."""
    p = layer.proto.flatten_param
    ctx.layer_op(layer, OP.Flatten, PARAM.Flatten, fb.FlattenT, axis=int(p.axis), endAxis=int(p.end_axis))


@caffe_layer("Reshape")
def reshape(ctx: Context, layer: Layer) -> None:
    """Reshape(shape with 0 = copy, -1 = infer) -> Reshape; axis/num_axes keep the untouched leading dims."""
    p = layer.proto.reshape_param
    dims = [int(d) for d in p.shape.dim]
    if p.num_axes != -1 or p.axis < 0:
        raise ConvertError(f"{layer.label()}: num_axes / negative axis are not supported")
    ctx.reshape(ctx.x(layer), [0] * int(p.axis) + dims, ctx.top(layer))


@caffe_layer("Permute")
def permute(ctx: Context, layer: Layer) -> None:
    """Permute(order) -> Permute (missing trailing axes keep their place)."""
    order = [int(v) for v in layer.proto.permute_param.order]
    shape = ctx.shape(layer)
    rank = len(shape) if shape is not None else max(4, len(order))
    order += [i for i in range(rank) if i not in order]
    ctx.layer_op(layer, OP.Permute, PARAM.Permute, fb.PermuteT, dims=order)


@caffe_layer("Crop")
def crop(ctx: Context, layer: Layer) -> None:
    """Crop(bottom 0 to the shape of bottom 1, axis, offsets) -> Crop."""
    p = layer.proto.crop_param
    param = fb.CropT()
    param.axis = int(p.axis)
    param.offset = [int(v) for v in p.offset] or [0]
    ctx.emit(OP.Crop, [ctx.x(layer), ctx.x(layer, 1)], [ctx.top(layer)], PARAM.Crop, param, name=layer.name)


@caffe_layer("Interp")
def interp(ctx: Context, layer: Layer) -> None:
    """Interp (PSPNet/DeepLab: bilinear, align corners) -> Interp with the output size or zoom/shrink factors."""
    p = layer.proto.interp_param
    if p.pad_beg or p.pad_end:
        raise ConvertError(f"{layer.label()}: pad_beg/pad_end are not supported")
    param = fb.InterpT()
    param.resizeType = 2
    param.alignCorners = True
    param.ctm = fb.CoordinateTransformationMode.AlignCorners
    if p.height and p.width:
        param.outputHeight, param.outputWidth = int(p.height), int(p.width)
    else:
        shape = ctx.shape(layer)
        if shape is None:
            raise ConvertError(f"{layer.label()}: zoom/shrink factors need a static input shape")
        h, w = shape[2], shape[3]
        h, w = (h - 1) // int(p.shrink_factor) + 1, (w - 1) // int(p.shrink_factor) + 1
        h, w = h + (h - 1) * (int(p.zoom_factor) - 1), w + (w - 1) * (int(p.zoom_factor) - 1)
        param.outputHeight, param.outputWidth = h, w
    size = ctx.const(np.asarray([param.outputHeight, param.outputWidth], np.int32), layer.name + "/size")
    ctx.emit(OP.Interp, [ctx.x(layer), size], [ctx.top(layer)], PARAM.Interp, param, name=layer.name,
             default_format=fb.MNN_DATA_FORMAT.NCHW)


@caffe_layer("ArgMax")
def argmax(ctx: Context, layer: Layer) -> None:
    """ArgMax(axis, top_k 1, no values) -> ArgMax, keeping the reduced axis with size 1 as Caffe does."""
    p = layer.proto.argmax_param
    if p.out_max_val or p.top_k != 1 or not p.HasField("axis"):
        raise ConvertError(f"{layer.label()}: only ArgMax with an axis, top_k 1 and no max values is supported")
    param = fb.ArgMaxT()
    param.axis = int(p.axis)
    param.topK = 1
    index = ctx.out(OP.ArgMax, [ctx.x(layer)], PARAM.ArgMax, param, base=layer.name)
    squeeze = fb.SqueezeParamT()
    squeeze.squeezeDims = [int(p.axis)]
    as_float = fb.CastParamT()
    as_float.dstT = fb.DataType.DT_FLOAT
    expanded = ctx.out(OP.Unsqueeze, [index], PARAM.SqueezeParam, squeeze, base="Unsqueeze")
    ctx.emit(OP.Cast, [expanded], [ctx.top(layer)], PARAM.CastParam, as_float, name=layer.name + "/cast")
