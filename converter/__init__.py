"""Model converters (installed as `mnnpy.converter`): frontends for ONNX (TensorFlow and Caffe later); passes; writer.

Public names: `convert`, `ConvertError`, `ConvertReport`, `Graph`, `graph_to_net`.
"""

from __future__ import annotations

from .api import ConvertReport, convert
from .graph import ConvertError, Graph
from .writer import graph_to_net

__all__ = ["ConvertError", "ConvertReport", "Graph", "convert", "graph_to_net"]
