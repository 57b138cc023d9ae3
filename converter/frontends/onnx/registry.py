"""Registry of ONNX op converters: `@onnx_op("Relu")`, opset variants tagged `since=13`."""

from __future__ import annotations

from collections.abc import Callable

from ..registry import Handler, OpRegistry

_REGISTRY = OpRegistry(f"{__package__}.ops")


def onnx_op(*op_types: str, since: int = 1) -> Callable[[Handler], Handler]:
    """Register a converter function for ONNX op types, valid from opset `since` on.

    The function is called as `fn(ctx, node, **attributes)`; attributes missing from the node take the
    function's keyword defaults, which should be ONNX's defaults.
    """
    return _REGISTRY.register(*op_types, since=since)


def lookup(op_type: str, opset: int) -> Handler | None:
    """The newest variant of `op_type` whose `since` is not newer than `opset` (None if unsupported)."""
    return _REGISTRY.lookup(op_type, opset)


def supported_ops() -> list[str]:
    """Sorted list of registered ONNX op types."""
    return _REGISTRY.types()
