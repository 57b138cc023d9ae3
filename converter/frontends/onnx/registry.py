"""Registry of ONNX op converters: `@onnx_op("Relu")`, opset variants tagged `since=13`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Handler = Callable[..., None]

_HANDLERS: dict[str, list[tuple[int, Handler]]] = {}


def onnx_op(*op_types: str, since: int = 1) -> Callable[[Handler], Handler]:
    """Register a converter function for ONNX op types, valid from opset `since` on.

    The function is called as `fn(ctx, node, **attributes)`; attributes missing from the node take the
    function's keyword defaults, which should be ONNX's defaults.
    """

    def wrap(fn: Handler) -> Handler:
        for op_type in op_types:
            variants = _HANDLERS.setdefault(op_type, [])
            variants.append((since, fn))
            variants.sort(key=lambda item: item[0])
        return fn

    return wrap


def lookup(op_type: str, opset: int) -> Handler | None:
    """The newest variant of `op_type` whose `since` is not newer than `opset` (None if unsupported)."""
    _load_ops()
    best: Handler | None = None
    for since, fn in _HANDLERS.get(op_type, []):
        if since <= opset:
            best = fn
    if best is None and op_type in _HANDLERS:
        best = _HANDLERS[op_type][0][1]
    return best


def supported_ops() -> list[str]:
    """Sorted list of registered ONNX op types."""
    _load_ops()
    return sorted(_HANDLERS)


_LOADED: list[Any] = []


def _load_ops() -> None:
    if not _LOADED:
        from . import ops

        _LOADED.append(ops)
