"""Registry of TensorFlow op converters: `@tf_op("Conv2D")`; op modules under `ops/` are found with pkgutil."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Handler = Callable[..., None]

_HANDLERS: dict[str, Handler] = {}


def tf_op(*op_types: str) -> Callable[[Handler], Handler]:
    """Register a converter function for TF op types; it is called as `fn(ctx, node)`."""

    def wrap(fn: Handler) -> Handler:
        for op_type in op_types:
            _HANDLERS[op_type] = fn
        return fn

    return wrap


def lookup(op_type: str) -> Handler | None:
    """The converter of `op_type`, or None when it is unsupported."""
    _load_ops()
    return _HANDLERS.get(op_type)


def supported_ops() -> list[str]:
    """Sorted list of supported TF op types."""
    _load_ops()
    return sorted(_HANDLERS)


_LOADED: list[Any] = []


def _load_ops() -> None:
    if not _LOADED:
        from . import ops

        _LOADED.append(ops)
