"""DeformConv (2-D) -> GridSample + MatMul: MNN has no deformable convolution, but each kernel tap of one is a
bilinear sample of the input at a shifted position, which is what GridSample computes.

With K = kH * kW taps, G offset groups of Cg = C / G channels and P = oH * oW output positions:

* the sampling positions of every tap, output position and offset group, as GridSample's normalised (x, y) grid
  (align_corners, so pixel i sits at 2 i / (size - 1) - 1): a constant base (output position * stride - pad +
  tap * dilation) plus the offsets scaled by 2 / (size - 1), the K taps stacked along the grid's rows;
* one GridSample of the input seen as [N * G, Cg, H, W] (zeros outside it, as the ONNX reference samples), giving
  [N * G, Cg, K * oH, oW]: the columns of an im2col, times the mask when there is one;
* one MatMul with the weights as [group, oC / group, (C / group) * K] over those columns as [N, group, (C / group) *
  K, P], plus the bias.

Shapes must be static (they size the constant grid); the weights, offsets, mask and bias may come at run time.
"""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import BIN, OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op
from .matmul import matmul_op


@onnx_op("DeformConv", since=19)
def deform_conv(ctx: Context, node: OnnxNode, *, dilations: list[int] | None = None, group: int = 1,
                kernel_shape: list[int] | None = None, offset_group: int = 1, pads: list[int] | None = None,
                strides: list[int] | None = None) -> None:
    """DeformConv -> GridSample (the taps) + MatMul (the weights) + Add (the bias); see the module doc."""
    x, w, offset = node.inputs[0], node.inputs[1], node.inputs[2]
    bias, mask = node.input(3), node.input(4)
    x_shape, w_shape, off_shape = ctx.shape(x), ctx.shape(w), ctx.shape(offset)
    if any(s is None or None in s or len(s) != 4 for s in (x_shape, w_shape, off_shape)):
        raise UseFunctionBody(f"{node.label()}: only 2-D DeformConv with static input, weight and offset shapes is "
                              f"supported")
    n, c, h, wd = (int(v) for v in x_shape)
    oc, cpg = int(w_shape[0]), int(w_shape[1])
    kh, kw = (int(v) for v in (kernel_shape or w_shape[2:]))
    oh, ow = int(off_shape[2]), int(off_shape[3])
    sh, sw = strides or [1, 1]
    dh, dw = dilations or [1, 1]
    top, left = (pads or [0, 0, 0, 0])[:2]
    taps = kh * kw
    if h < 2 or wd < 2 or c % offset_group or c != cpg * group or oc % group \
            or int(off_shape[1]) != offset_group * taps * 2 or not ctx.is_float(x):
        raise UseFunctionBody(f"{node.label()}: inconsistent shapes (x {x_shape}, weight {w_shape}, offset "
                              f"{off_shape}, group {group}, offset_group {offset_group}) or an input of height or "
                              f"width 1")
    bottom, right = (pads or [0, 0, 0, 0])[2:]
    want = ((h + top + bottom - (kh - 1) * dh - 1) // sh + 1, (wd + left + right - (kw - 1) * dw - 1) // sw + 1)
    if (oh, ow) != want:
        raise UseFunctionBody(f"{node.label()}: the offset's spatial shape {off_shape[2:]} is not the output shape "
                              f"that the kernel, strides, dilations and pads give")
    cg = c // offset_group
    # grid [N * G, K * oH, oW, 2] = offsets (x, y) * 2 / (size - 1) + base
    scale = np.array([2.0 / (wd - 1), 2.0 / (h - 1)], np.float32)
    tap_y, tap_x = np.meshgrid(np.arange(kh) * dh, np.arange(kw) * dw, indexing="ij")
    pos_y = tap_y.reshape(taps, 1, 1) + (np.arange(oh) * sh - top).reshape(1, oh, 1)
    pos_x = tap_x.reshape(taps, 1, 1) + (np.arange(ow) * sw - left).reshape(1, 1, ow)
    base = np.stack(np.broadcast_arrays(pos_x, pos_y), axis=-1).astype(np.float64) * scale - 1.0  # [K, oH, oW, 2]
    shifts = ctx.reshape(offset, [n, offset_group, taps, 2, oh, ow])
    shifts = ctx.permute(shifts, [0, 1, 2, 4, 5, 3])  # (y, x) last
    shifts = ctx.out(OP.GatherV2, [shifts, ctx.const(np.int32([1, 0])), ctx.const(np.int32(5))], name="GatherV2")
    grid = ctx.binary(BIN.ADD, ctx.binary(BIN.MUL, shifts, ctx.const(scale, "deform_scale")),
                      ctx.const(base.astype(np.float32), "deform_base"))
    grid = ctx.reshape(grid, [n * offset_group, taps * oh, ow, 2])
    param = fb.GridSampleT()
    param.mode = fb.SampleMode.BILINEAR
    param.paddingMode = fb.BorderMode.ZEROS
    param.alignCorners = True
    columns = ctx.out(OP.GridSample, [ctx.reshape(x, [n * offset_group, cg, h, wd]), grid], None, PARAM.GridSample,
                      param, name="GridSample")  # [N * G, Cg, K * oH, oW]
    if mask:
        columns = ctx.binary(BIN.MUL, columns, ctx.reshape(mask, [n * offset_group, 1, taps * oh, ow]))
    columns = ctx.reshape(columns, [n, group, cpg * taps, oh * ow])
    weights = ctx.reshape(w, [group, oc // group, cpg * taps])
    y = matmul_op(ctx, weights, columns)  # [N, group, oC / group, P]
    if not bias:
        ctx.reshape(y, [n, oc, oh, ow], node.outputs[0])
        return
    y = ctx.reshape(y, [n, oc, oh, ow])
    ctx.binary(BIN.ADD, y, ctx.reshape(bias, [1, oc, 1, 1]), node.outputs[0])


@onnx_op("Col2Im", since=18)
def col2im(ctx: Context, node: OnnxNode, *, dilations: list[int] | None = None, pads: list[int] | None = None,
           strides: list[int] | None = None) -> None:
    """Col2Im (2-D; what torch.nn.Fold exports) -> a grouped ConvTranspose whose weights are one-hot: the columns
    [N, C * K, L] seen as [N, C * K, bH, bW] (the block grid), each channel's K block positions spread back to
    their pixels and overlaps summed. image_shape and block_shape must be constants, the input's shape static."""
    from .conv import conv_transpose

    image, block = ctx.value(node.inputs[1]), ctx.value(node.inputs[2])
    shape = ctx.shape(node.inputs[0])
    if image is None or block is None or image.size != 2 or shape is None or None in shape or len(shape) != 3:
        raise UseFunctionBody(f"{node.label()}: only 2-D Col2Im with constant image_shape / block_shape and a static "
                              f"input shape is supported")
    (h, w), (kh, kw) = (int(v) for v in image), (int(v) for v in block)
    sh, sw = strides or [1, 1]
    dh, dw = dilations or [1, 1]
    top, left, bottom, right = pads or [0, 0, 0, 0]
    rows = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    cols = (w + left + right - (kw - 1) * dw - 1) // sw + 1
    n, ck, length = (int(v) for v in shape)
    taps = kh * kw
    if rows < 1 or cols < 1 or rows * cols != length or ck % taps:
        raise UseFunctionBody(f"{node.label()}: input {shape} does not hold {taps}-position blocks over a "
                              f"{rows} x {cols} grid of a {h} x {w} image")
    channels = ck // taps
    weight = np.zeros((ck, 1, kh, kw), np.float32)
    weight[np.arange(ck), 0, (np.arange(ck) % taps) // kw, np.arange(ck) % kw] = 1.0
    grid = ctx.reshape(node.inputs[0], [n, ck, rows, cols])
    extra = [h + top + bottom - ((rows - 1) * sh + (kh - 1) * dh + 1),
             w + left + right - ((cols - 1) * sw + (kw - 1) * dw + 1)]  # image rows / columns no block reaches
    spread = OnnxNode(node.name, "ConvTranspose", [grid, ctx.const(weight, "col2im_onehot")], list(node.outputs),
                      source_name=node.source_name)
    ctx.shapes[grid] = [n, ck, rows, cols]
    conv_transpose(ctx, spread, dilations=[dh, dw], group=channels, kernel_shape=[kh, kw],
                   output_padding=extra if any(extra) else None, pads=[top, left, bottom, right], strides=[sh, sw])
