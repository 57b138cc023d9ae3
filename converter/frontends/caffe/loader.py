"""Caffe deploy prototxt (text format) + caffemodel (binary) -> converter Graph, with our own compiled caffe.proto."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...graph import ConvertError, Graph, InputSpec
from . import caffe_net_pb2 as pb
from .context import Context, Layer, blob_to_numpy
from .registry import lookup


def parse_prototxt(source: str | Path) -> Any:
    """NetParameter from a prototxt path or its text (unknown fields are skipped, as deploy files carry many)."""
    from google.protobuf import text_format

    if isinstance(source, Path) or ("\n" not in source and Path(source).is_file()):
        text = Path(source).read_text()
    else:
        text = source
    net = pb.NetParameter()
    try:
        text_format.Parse(text, net, allow_unknown_field=True)
    except text_format.ParseError as exc:
        raise ConvertError(f"cannot parse the prototxt: {exc}") from None
    return net


def parse_caffemodel(source: str | Path | bytes | None) -> Any:
    """NetParameter (with weights) from a .caffemodel path or its bytes; an empty net when `source` is None."""
    net = pb.NetParameter()
    if source is None:
        return net
    data = source if isinstance(source, (bytes, bytearray)) else Path(source).read_bytes()
    try:
        net.ParseFromString(bytes(data))
    except Exception as exc:  # protobuf's DecodeError
        raise ConvertError(f"not a caffemodel: {exc}") from None
    return net


_V1_TYPES = {"CONVOLUTION": "Convolution", "DECONVOLUTION": "Deconvolution", "INNER_PRODUCT": "InnerProduct",
             "POOLING": "Pooling", "RELU": "ReLU", "SIGMOID": "Sigmoid", "TANH": "TanH", "LRN": "LRN",
             "DROPOUT": "Dropout", "CONCAT": "Concat", "SLICE": "Slice", "SPLIT": "Split", "SOFTMAX": "Softmax",
             "ELTWISE": "Eltwise", "FLATTEN": "Flatten", "POWER": "Power", "ABSVAL": "AbsVal", "ARGMAX": "ArgMax"}
_V1_PARAMS = ("argmax_param", "concat_param", "convolution_param", "dropout_param", "eltwise_param",
              "inner_product_param", "lrn_param", "pooling_param", "power_param", "relu_param", "sigmoid_param",
              "softmax_param", "slice_param", "tanh_param")


def layers_of(net: Any) -> list[Any]:
    """The net's LayerParameters; old V1 `layers` entries are translated (type names and their parameters)."""
    result = list(net.layer)
    for old in net.layers:
        layer = pb.LayerParameter(name=old.name, bottom=old.bottom, top=old.top, blobs=old.blobs,
                                  include=old.include, exclude=old.exclude)
        kind = pb.V1LayerParameter.LayerType.Name(old.type)
        layer.type = _V1_TYPES.get(kind, kind)
        for field in _V1_PARAMS:
            if old.HasField(field):
                getattr(layer, field).CopyFrom(getattr(old, field))
        result.append(layer)
    return result


def _active(proto: Any) -> bool:
    """False for layers that only run in the TRAIN phase."""
    if any(rule.HasField("phase") and rule.phase == pb.TRAIN for rule in proto.include):
        return False
    return not any(rule.HasField("phase") and rule.phase == pb.TEST for rule in proto.exclude)


def _rename(graph: Graph, old: str, new: str) -> None:
    for node in graph.nodes:
        node.inputs = [new if name == old else name for name in node.inputs]
        node.outputs = [new if name == old else name for name in node.outputs]
        if node.name == old:
            node.name = new
    if old in graph.inputs:
        graph.inputs = {new if key == old else key: spec for key, spec in graph.inputs.items()}


def _legacy_inputs(ctx: Context, net: Any) -> None:
    dims = [int(d) for d in net.input_dim]
    for i, name in enumerate(net.input):
        if i < len(net.input_shape):
            shape = [int(d) for d in net.input_shape[i].dim]
        elif len(dims) >= 4 * (i + 1):
            shape = dims[4 * i: 4 * i + 4]
        else:
            raise ConvertError(f"input '{name}' has no shape in the prototxt")
        ctx.graph.inputs[name] = InputSpec(shape)
        ctx.tensors[name] = name
        ctx.written.add(name)
        ctx.set_shape(name, shape)


def _needed(layers: list[Layer], outputs: list[str]) -> list[Layer]:
    """The layers the output blobs depend on (walking back; in-place layers keep their blob needed)."""
    needed = set(outputs)
    keep: list[Layer] = []
    for layer in reversed(layers):
        if needed & set(layer.tops) or layer.type == "Input":
            keep.append(layer)
            needed -= set(layer.tops)
            needed |= set(layer.bottoms)
    return keep[::-1]


def load_net(prototxt: str | Path, caffemodel: str | Path | bytes | None, outputs: list[str] | None = None) -> Graph:
    """Convert a Caffe net into a Graph of MNN ops.

    Mirrors MNNConvert's Caffe frontend (`tools/converter/source/caffe`). Weights are matched to layers by name.
    Outputs are `outputs` (blob names; only the layers they need are converted) or else the blobs no layer reads.
    Raises one ConvertError listing every unsupported layer type.
    """
    net = parse_prototxt(prototxt)
    weights = {layer.name: [blob_to_numpy(b) for b in layer.blobs]
               for layer in layers_of(parse_caffemodel(caffemodel))}
    layers = [Layer(proto, weights.get(proto.name, [])) for proto in layers_of(net) if _active(proto)]
    if outputs is not None:
        layers = _needed(layers, outputs)
    missing: dict[str, list[str]] = {}
    for layer in layers:
        if lookup(layer.type) is None:
            missing.setdefault(layer.type, []).append(layer.name)
    if missing:
        lines = [f"  {kind}: {', '.join(names)}" for kind, names in sorted(missing.items())]
        raise ConvertError(f"{len(missing)} unsupported Caffe layer type(s):\n" + "\n".join(lines))
    graph = Graph()
    graph.reserve([blob for layer in layers for blob in layer.tops + layer.bottoms] + list(net.input))
    ctx = Context(graph)
    _legacy_inputs(ctx, net)
    for layer in layers:
        handler = lookup(layer.type)
        assert handler is not None
        handler(ctx, layer)
    read = {name for node in graph.nodes for name in node.inputs}
    produced = {name for node in graph.nodes for name in node.outputs}
    if outputs is None:
        finals = {tensor: blob for blob, tensor in reversed(ctx.tensors.items())}
        outputs = [blob for tensor, blob in finals.items() if tensor in produced and tensor not in read][::-1]
    for blob in outputs:
        tensor = ctx.tensors.get(blob)
        if tensor is None or tensor not in produced:
            raise ConvertError(f"output blob '{blob}' is not produced by any layer")
        if tensor != blob:
            if blob in produced or blob in graph.inputs:
                _rename(graph, blob, graph.unique_name(blob + "__inplace"))
            _rename(graph, tensor, blob)
            ctx.tensors = {key: blob if value == tensor else value for key, value in ctx.tensors.items()}
    if not outputs:
        raise ConvertError("the net has no outputs")
    graph.outputs = list(outputs)
    return graph
