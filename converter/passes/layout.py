"""Insert ConvertTensor ops where MNN's NC4HW4 ops meet NCHW ones (MNNConvert's AddTensorFormatConverter).

Every tensor starts in NCHW (inputs and constants of an ONNX model). Ops MNN runs on NC4HW4 get NC4HW4 inputs;
element-wise ops follow their input's layout; everything else reads NCHW. Graph outputs are converted back to
NCHW under their own name (the producer's output becomes `<name>__before_tr`, as MNNConvert names it).
"""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node

NAME = "add-tensor-format-converter"

OP = fb.OpType
NCHW = fb.MNN_DATA_FORMAT.NCHW
NC4HW4 = fb.MNN_DATA_FORMAT.NC4HW4

NC4HW4_OPS = {OP.Convolution, OP.ConvolutionDepthwise, OP.Deconvolution, OP.DeconvolutionDepthwise, OP.Pooling,
              OP.Pooling3D, OP.Interp, OP.Scale, OP.PReLU, OP.BatchNorm, OP.InstanceNorm, OP.LRN, OP.Resize,
              OP.Crop, OP.GridSample, OP.Convolution3D, OP.ROIAlign, OP.ROIPooling}
FOLLOW_INPUT_OPS = {OP.ReLU, OP.ReLU6, OP.Selu, OP.ELU, OP.UnaryOp, OP.Sigmoid, OP.TanH, OP.Cast}
FOLLOW_ALL_OPS = {OP.BinaryOp, OP.Concat, OP.Eltwise}


def _convert_node(name: str, src: str, dst: str, source: int, dest: int) -> Node:
    param = fb.TensorConvertInfoT()
    param.source = source
    param.dest = dest
    return Node(name, OP.ConvertTensor, [src], [dst], fb.OpParameter.TensorConvertInfo, param)


def apply(graph: Graph) -> int:
    """Assign layouts in topological order and insert the ConvertTensor ops; returns how many were added."""
    fmt: dict[str, int] = {}
    converted: dict[tuple[str, int], str] = {}
    result: list[Node] = []
    added = 0

    def read_as(tensor: str, want: int, reader: str) -> str:
        nonlocal added
        have = fmt.get(tensor, NCHW)
        if have == want:
            return tensor
        key = (tensor, want)
        if key not in converted:
            out = graph.unique_name(f"{tensor}___tr4{reader}")
            result.append(_convert_node(out, tensor, out, have, want))
            fmt[out] = want
            converted[key] = out
            added += 1
        return converted[key]

    for node in graph.topological_order():
        data_inputs = [name for name in node.inputs if name and name not in graph.constants]
        if node.op_type in NC4HW4_OPS:
            want = NC4HW4
            node.inputs[0] = read_as(node.inputs[0], NC4HW4, node.name)
        elif node.op_type in FOLLOW_INPUT_OPS and node.inputs:
            want = fmt.get(node.inputs[0], NCHW)
        elif node.op_type in FOLLOW_ALL_OPS and data_inputs and len(data_inputs) == len(node.inputs) and \
                all(fmt.get(name, NCHW) == NC4HW4 for name in data_inputs):
            want = NC4HW4
        else:
            want = NCHW
            node.inputs = [read_as(name, NCHW, node.name) if name else name for name in node.inputs]
        for out in node.outputs:
            fmt[out] = want
        result.append(node)
    for i, name in enumerate(graph.outputs):
        if fmt.get(name, NCHW) == NCHW:
            continue
        producer = next(node for node in result if name in node.outputs)
        inner = graph.unique_name(f"{name}__before_tr")
        producer.outputs = [inner if out == name else out for out in producer.outputs]
        for node in result:
            if node is not producer:
                node.inputs = [inner if n == name else n for n in node.inputs]
        result.append(_convert_node(inner, inner, name, NC4HW4, NCHW))
        graph.outputs[i] = name
        added += 1
    graph.nodes = result
    return added
