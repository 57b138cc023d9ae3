"""ONNX frontend: `load_onnx(path_or_model) -> Graph`. One function per ONNX op lives in `ops/`."""

from __future__ import annotations

from .loader import load_onnx

__all__ = ["load_onnx"]
