"""What a Caffe layer converter sees: the layer (params, weights) and a context that maps blob names to tensors.

Caffe layers may run in place (top == bottom); the context gives every write a fresh graph tensor so the graph stays
in SSA form, and the loader names the final tensor of each output blob after the blob.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ...graph import ConvertError, Graph, Node
from ..context import EmitContext

OP = fb.OpType
PARAM = fb.OpParameter
BIN = fb.BinaryOpOperation
UN = fb.UnaryOpOperation


def blob_to_numpy(blob: Any) -> np.ndarray:
    """A BlobProto's data (float, or double_data) with its shape (`shape` or the legacy num/channels/h/w)."""
    data = np.asarray(blob.double_data if len(blob.double_data) else blob.data, np.float32)
    if blob.HasField("shape"):
        shape = [int(d) for d in blob.shape.dim]
    else:
        shape = [int(blob.num), int(blob.channels), int(blob.height), int(blob.width)]
    if int(np.prod(shape)) != data.size:
        shape = [data.size]
    return data.reshape(shape)


class Layer:
    """One LayerParameter with its weights (from the caffemodel layer of the same name)."""

    def __init__(self, proto: Any, blobs: list[np.ndarray]) -> None:
        self.proto = proto
        self.name: str = proto.name
        self.type: str = proto.type
        self.bottoms: list[str] = list(proto.bottom)
        self.tops: list[str] = list(proto.top)
        self.blobs = blobs

    def blob(self, i: int, what: str) -> np.ndarray:
        """Weight blob `i`, or a ConvertError naming what is missing."""
        if i >= len(self.blobs):
            raise ConvertError(f"{self.label()}: the {what} (blob {i}) is missing from the caffemodel")
        return self.blobs[i]

    def label(self) -> str:
        """How error messages name this layer."""
        return f"{self.type} '{self.name}'"


class Context(EmitContext):
    """Conversion state of one net: the current graph tensor of each blob and its static shape when known."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.tensors: dict[str, str] = {}
        self.shapes: dict[str, list[int]] = {}
        self.written: set[str] = set()

    def x(self, layer: Layer, i: int = 0) -> str:
        """Graph tensor currently holding bottom `i` of `layer`."""
        blob = layer.bottoms[i]
        if blob not in self.tensors:
            raise ConvertError(f"{layer.label()}: bottom '{blob}' is not produced by any earlier layer")
        return self.tensors[blob]

    def shape(self, layer: Layer, i: int = 0) -> list[int] | None:
        """Static shape of bottom `i` when known."""
        return self.shapes.get(self.x(layer, i))

    def top(self, layer: Layer, i: int = 0) -> str:
        """A fresh graph tensor for top `i` (named after the blob unless that name is taken: in-place layers)."""
        blob = layer.tops[i]
        name = self.graph.unique_name(blob) if blob in self.written else blob
        self.written.add(blob)
        self.tensors[blob] = name
        return name

    def forward(self, layer: Layer) -> None:
        """Every top is bottom 0 (Split, Dropout): no op is emitted."""
        source = self.x(layer)
        for blob in layer.tops:
            self.tensors[blob] = source

    def set_shape(self, name: str, shape: list[int] | None) -> None:
        """Record the static shape of graph tensor `name`."""
        if shape is not None:
            self.shapes[name] = [int(d) for d in shape]

    def bottoms(self, layer: Layer) -> list[str]:
        """The tensors of all the layer's bottoms."""
        return [self.x(layer, i) for i in range(len(layer.bottoms))]

    def layer_op(self, layer: Layer, op_type: int, param_type: int, param_class: type, *,
                 inputs: list[str] | None = None, **fields: Any) -> Node:
        """The usual layer: `op_type` from `inputs` (bottom 0 by default) to top 0, named as the layer, with a
        `param_class()` table whose fields are `fields`."""
        param = param_class()
        for key, value in fields.items():
            if not hasattr(param, key):
                raise AttributeError(f"{layer.label()}: {param_class.__name__} has no field {key!r}")
            setattr(param, key, value)
        return self.emit(op_type, inputs or [self.x(layer)], [self.top(layer)], param_type, param, name=layer.name)

    def out(self, op_type: int, inputs: list[str], param_type: int = 0, param: Any = None, base: str = "t") -> str:
        """Append an MNN op with one fresh output; returns its name."""
        return self.graph.add(op_type, inputs, None, param_type, param, name=base).outputs[0]
