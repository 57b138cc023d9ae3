"""Fuse ReLU / ReLU6(0, 6) that directly follow a convolution into its relu / relu6 flags."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph

NAME = "fuse-relu-into-conv"

CONV_OPS = {fb.OpType.Convolution, fb.OpType.ConvolutionDepthwise, fb.OpType.Deconvolution,
            fb.OpType.DeconvolutionDepthwise}


def apply(graph: Graph) -> int:
    """Returns the number of activations fused."""
    fused = 0
    for act in list(graph.nodes):
        if act.op_type == fb.OpType.ReLU:
            if act.param is not None and act.param.slope != 0.0:
                continue
            flag = "relu"
        elif act.op_type == fb.OpType.ReLU6:
            if act.param is not None and (act.param.minValue != 0.0 or act.param.maxValue != 6.0):
                continue
            flag = "relu6"
        else:
            continue
        src = act.inputs[0]
        conv = graph.producers().get(src)
        if conv is None or conv.op_type not in CONV_OPS or len(conv.inputs) != 1 or src in graph.outputs:
            continue
        if len(graph.consumers().get(src, [])) != 1:
            continue
        common = conv.param.common
        if common.relu or common.relu6:
            continue
        setattr(common, flag, True)
        conv.outputs = list(act.outputs)
        graph.nodes.remove(act)
        fused += 1
    return fused
