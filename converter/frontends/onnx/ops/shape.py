"""Shape-changing ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Shape, Size, Expand, Tile, Range, Cast, ..."""

from __future__ import annotations

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..context import ONNX_TO_MNN_DTYPE, OP, PARAM, Context, OnnxNode
from ..functions import UseFunctionBody
from ..registry import onnx_op


@onnx_op("Reshape")
def reshape(ctx: Context, node: OnnxNode, *, allowzero: int = 0, shape: list[int] | None = None) -> None:
    """Reshape -> Reshape(dimType NCHW) with the shape as input 1 (int32)."""
    target = node.input(1)
    if shape is not None:
        target = ctx.const(np.asarray(shape, np.int32), "shape")
    value = ctx.value(target)
    if allowzero and value is not None and (value == 0).any():
        raise UseFunctionBody(f"{node.label()}: allowzero=1 with a 0 in the shape is not supported")
    ctx.reshape(node.inputs[0], target, node.outputs[0])
    ctx.graph.nodes[-1].name = node.name


@onnx_op("Flatten")
def flatten(ctx: Context, node: OnnxNode, *, axis: int = 1) -> None:
    """Flatten -> Flatten(axis) (a negative axis needs the input rank)."""
    if axis < 0:
        axis += ctx.need_rank(node, node.inputs[0])
    param = fb.FlattenT()
    param.axis = axis
    ctx.emit(OP.Flatten, [node.inputs[0]], node.outputs, PARAM.Flatten, param, name=node.name)


def _axes(ctx: Context, node: OnnxNode, attr: list[int] | None, what: str = "axes") -> list[int] | None:
    if attr is not None:
        return [int(a) for a in attr]
    if not node.input(1):
        return None
    return [int(a) for a in ctx.need_value(node, 1, what).ravel()]


def _runtime_axes(ctx: Context, node: OnnxNode, axes: list[int] | None, op_type: int) -> bool:
    """(Un)squeeze with axes computed at run time: they go in as input 1, as MNNConvert writes it (True if so)."""
    if axes is not None or not node.input(1) or ctx.value(node.input(1)) is not None:
        return False
    ctx.emit(op_type, [node.inputs[0], node.inputs[1]], node.outputs, PARAM.SqueezeParam, fb.SqueezeParamT(),
             name=node.name)
    return True


@onnx_op("Squeeze")
def squeeze(ctx: Context, node: OnnxNode, *, axes: list[int] | None = None) -> None:
    """Squeeze -> Squeeze(squeezeDims); run-time axes go in as input 1 (as MNNConvert)."""
    if _runtime_axes(ctx, node, axes, OP.Squeeze):
        return
    ctx.squeeze(node.inputs[0], _axes(ctx, node, axes), node.outputs[0])


@onnx_op("Unsqueeze")
def unsqueeze(ctx: Context, node: OnnxNode, *, axes: list[int] | None = None) -> None:
    """Unsqueeze -> Unsqueeze(squeezeDims) (negative axes resolved against the output rank)."""
    if _runtime_axes(ctx, node, axes, OP.Unsqueeze):
        return
    dims = _axes(ctx, node, axes)
    if dims is None:
        raise UseFunctionBody(f"{node.label()}: axes are required")
    rank = ctx.rank(node.inputs[0])
    if any(a < 0 for a in dims) and rank is not None:  # MNN also reads negative axes against the output rank
        dims = sorted(a + rank + len(dims) if a < 0 else a for a in dims)
    ctx.squeeze(node.inputs[0], dims, node.outputs[0], unsqueeze=True)


@onnx_op("Transpose")
def transpose(ctx: Context, node: OnnxNode, *, perm: list[int] | None = None) -> None:
    """Transpose -> Permute(dims)."""
    if perm is None:
        perm = list(range(ctx.need_rank(node, node.inputs[0])))[::-1]
    ctx.permute(node.inputs[0], perm, node.outputs[0])


@onnx_op("Shape")
def shape_op(ctx: Context, node: OnnxNode, *, start: int = 0, end: int | None = None) -> None:
    """Shape -> Shape (NCHW); start/end (opset 15) slice it with StridedSlice."""
    if start == 0 and end is None:
        ctx.emit(OP.Shape, [node.inputs[0]], node.outputs, name=node.name, default_format=fb.MNN_DATA_FORMAT.NCHW)
        return
    full = ctx.shape_of(node.inputs[0])
    rank = ctx.rank(node.inputs[0])
    stop = 2**31 - 1 if end is None else end
    if rank is not None:  # MNN's StridedSlice does not clamp out-of-range starts; do it here
        start = min(max(start + rank if start < 0 else start, 0), rank)
        stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    _strided_slice(ctx, [full, ctx.const(np.int32([start])), ctx.const(np.int32([stop]))], node.outputs[0])


def _strided_slice(ctx: Context, inputs: list[str], output: str | None = None) -> str:
    param = fb.StridedSliceParamT()
    param.fromType = 1
    param.t = fb.DataType.DT_FLOAT
    return ctx.out(OP.StridedSlice, inputs, None if output is None else [output], PARAM.StridedSliceParam, param,
                   name=None if output is not None else "StridedSlice")


@onnx_op("Size")
def size(ctx: Context, node: OnnxNode) -> None:
    """Size -> Size."""
    ctx.emit(OP.Size, [node.inputs[0]], node.outputs, name=node.name, default_format=fb.MNN_DATA_FORMAT.NCHW)


@onnx_op("ConstantOfShape")
def constant_of_shape(ctx: Context, node: OnnxNode, *, value: np.ndarray | None = None) -> None:
    """ConstantOfShape -> Fill(shape, value)."""
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(1)
    ctx.emit(OP.Fill, [node.inputs[0], ctx.const(fill, "value")], node.outputs, name=node.name)


@onnx_op("Expand")
def expand(ctx: Context, node: OnnxNode) -> None:
    """Expand -> BroadcastTo(x, shape)."""
    ctx.emit(OP.BroadcastTo, [node.inputs[0], node.inputs[1]], node.outputs, name=node.name)


@onnx_op("Tile")
def tile(ctx: Context, node: OnnxNode) -> None:
    """Tile -> Tile(x, repeats)."""
    ctx.emit(OP.Tile, [node.inputs[0], node.inputs[1]], node.outputs, name=node.name)


@onnx_op("Range")
def range_op(ctx: Context, node: OnnxNode) -> None:
    """Range -> Range(start, limit, delta)."""
    ctx.emit(OP.Range, list(node.inputs[:3]), node.outputs, name=node.name)


@onnx_op("Cast")
def cast(ctx: Context, node: OnnxNode, *, to: int = 1, saturate: int = 1, round_mode: str = "up") -> None:
    """Cast -> Cast(dstT) with ONNX types mapped to MNN's (int64 -> int32, fp16/double -> float)."""
    dst = ONNX_TO_MNN_DTYPE.get(to)
    if dst is None:
        raise UseFunctionBody(f"{node.label()}: cast to ONNX type {to} is not supported")
    param = fb.CastParamT()
    param.dstT = dst
    ctx.emit(OP.Cast, [node.inputs[0]], node.outputs, PARAM.CastParam, param, name=node.name)


@onnx_op("CastLike")
def cast_like(ctx: Context, node: OnnxNode, *, saturate: int = 1, round_mode: str = "up") -> None:
    """CastLike -> Cast to the (statically known) type of the second input; the types Cast refuses (float8, 4- and
    2-bit) are refused here too, rather than computed in float."""
    import onnx

    elem = ctx.dtypes.get(node.inputs[1])
    like = ctx.value(node.inputs[1])
    if like is not None:
        elem = onnx.helper.np_dtype_to_tensor_dtype(like.dtype)
    if elem is None:
        raise UseFunctionBody(f"{node.label()}: the target type is unknown")
    dst = ONNX_TO_MNN_DTYPE.get(elem)
    if dst is None:
        raise UseFunctionBody(f"{node.label()}: cast to ONNX type {elem} is not supported")
    param = fb.CastParamT()
    param.dstT = dst
    ctx.emit(OP.Cast, [node.inputs[0]], node.outputs, PARAM.CastParam, param, name=node.name)


@onnx_op("DepthToSpace", "SpaceToDepth")
def depth_space(ctx: Context, node: OnnxNode, *, blocksize: int = 1, mode: str = "DCR") -> None:
    """DepthToSpace / SpaceToDepth -> the same MNN op with DepthSpaceParam(blockSize, mode)."""
    param = fb.DepthSpaceParamT()
    param.blockSize = blocksize
    param.mode = fb.DepthToSpaceMode.CRD if mode == "CRD" else fb.DepthToSpaceMode.DCR
    op_type = OP.DepthToSpace if node.op_type == "DepthToSpace" else OP.SpaceToDepth
    ctx.emit(op_type, [node.inputs[0]], node.outputs, PARAM.DepthSpaceParam, param, name=node.name)
