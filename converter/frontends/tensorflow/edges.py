"""Graph inputs and outputs of a TF model in MNN's data format, as MNNConvert writes them.

MNNConvert declares TF inputs with NHWC dims and dformat NHWC, and its outputs are NHWC-format tensors, so MNN users
copy NHWC arrays in and out through Tensorflow-dimension host tensors (MNN transposes between the Tensorflow and
Caffe dimension types for any rank >= 3 when formats differ). Inside, our frontend keeps every tensor NCHW-format
(TF-layout values are plain arrays; NCHW feature maps are explicit copies), which is what the layout pass and the
runtimes' format propagation expect. So each input is relabelled NHWC -> NCHW once at the start and each output
NCHW -> NHWC once at the end:

- a 4-D input / a 4-D output that exists as an NCHW copy: one ConvertTensor, which transposes the data as well;
- any other tensor: Reshape to a 4-D view whose channel axis holds every element, a ConvertTensor (a no-op on the
  data), and a Reshape back to the tensor's own shape (read at run time with Shape, so inputs may be resized).
"""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ...graph import ConvertError, InputSpec
from .context import TF_TO_MNN_DTYPE, Context, TfNode

NCHW = fb.MNN_DATA_FORMAT.NCHW
NHWC = fb.MNN_DATA_FORMAT.NHWC


def _convert(ctx: Context, src: str, dst: str, source: int, dest: int) -> str:
    param = fb.TensorConvertInfoT()
    param.source, param.dest = source, dest
    return ctx.out(fb.OpType.ConvertTensor, [src], dst, fb.OpParameter.TensorConvertInfo, param, name=dst)


def _relabel(ctx: Context, src: str, dst: str, source: int, dest: int) -> str:
    """`dst` = `src`'s values and shape, in format `dest` (any rank; no transpose of the data)."""
    view = [1, 1, 1, -1] if source == NHWC else [1, -1, 1, 1]  # the whole tensor on the channel axis
    flat = ctx.reshape(src, view, ctx.graph.unique_name(dst + "__flat"))
    moved = _convert(ctx, flat, ctx.graph.unique_name(dst + "__moved"), source, dest)
    shape = ctx.out(fb.OpType.Shape, [src], ctx.graph.unique_name(dst + "__shape"),
                    default_format=fb.MNN_DATA_FORMAT.NHWC)
    return ctx.reshape(moved, shape, dst)


def placeholder(ctx: Context, node: TfNode, override: list[int] | None) -> None:
    """A TF Placeholder: an NHWC-format graph input, read by the rest of the graph through its NCHW-format copy."""
    shape = override if override is not None else node.attr("shape")
    if shape is None:
        raise ConvertError(f"{node.label()}: unknown rank; pass its shape (input_shapes)")
    dims = [-1 if d is None or d < 0 else int(d) for d in shape]
    dtype = TF_TO_MNN_DTYPE.get(node.attr("dtype", 1), fb.DataType.DT_FLOAT)
    if dtype == fb.DataType.DT_BOOL:
        dtype = fb.DataType.DT_INT32
    ctx.graph.inputs[node.name] = InputSpec(dims, dtype, NHWC)
    tf_shape = [None if d < 0 else d for d in dims]
    if len(dims) == 4:
        ctx.set_out(node.name, _convert(ctx, node.name, node.name + "__nchw", NHWC, NCHW), nchw=True, shape=tf_shape)
    else:
        ctx.set_out(node.name, _relabel(ctx, node.name, node.name + "__nchw", NHWC, NCHW), shape=tf_shape)


def output(ctx: Context, key: str) -> None:
    """Graph output `key` as an NHWC-format tensor of that name (rank <= 2: formats do not matter, kept as is)."""
    rank = ctx.rank(key)
    if key in ctx.graph.inputs:  # an input that is also an output stays the NHWC-format input itself
        return
    producer = ctx.graph.producers().get(key)
    if rank is not None and rank <= 2:
        name = ctx.x(key)
        if name != key:  # an output shared with another tensor: an Identity the identity pass resolves
            ctx.emit(fb.OpType.Identity, [name], [key], name=key)
        return
    if producer is not None:  # the TF-layout value already carries the output's name: it moves aside
        inner = ctx.graph.unique_name(key + "__nchw_format")
        producer.outputs = [inner if out == key else out for out in producer.outputs]
        ctx.graph.rename_input(key, inner)
        ctx.rename_tensor(key, inner)
    if rank == 4 and ctx.is_nchw(key):
        _convert(ctx, ctx.x_nchw(key), key, NCHW, NHWC)
    else:
        _relabel(ctx, ctx.x(key), key, NCHW, NHWC)


__all__ = ["output", "placeholder"]
