"""The `.mnn` file format: MNN's FlatBuffers schema, generated code, a verifier, and model I/O.

Installed as `mnnpy.schema`. It imports nothing else of mnnpy. The generated module (`mnn_generated`, ~0.3 s to
import) loads on first use, so `import mnnpy` stays cheap.

Public names: `load_net`, `save_net`, `net_to_bytes`, `verify_buffer`, `ModelError`, and every generated class
(`NetT`, `OpT`, `OpType`, `OpParameter`, `DataType`, ...) through attribute access on this package.
"""

from __future__ import annotations

from typing import Any

from .errors import ModelError

__all__ = ["ModelError", "load_net", "net_to_bytes", "save_net", "verify_buffer"]

_LAZY = {"load_net": "io", "save_net": "io", "net_to_bytes": "io", "verify_buffer": "verify"}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    if name.startswith("_"):
        raise AttributeError(name)
    gen = importlib.import_module(f"{__name__}.mnn_generated")
    try:
        return getattr(gen, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
