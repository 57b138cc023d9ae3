"""Registry of TensorFlow op converters: `@tf_op("Conv2D")`; op modules under `ops/` are found with pkgutil."""

from __future__ import annotations

from collections.abc import Callable

from ..registry import Handler, OpRegistry

_REGISTRY = OpRegistry(f"{__package__}.ops")


def tf_op(*op_types: str) -> Callable[[Handler], Handler]:
    """Register a converter function for TF op types; it is called as `fn(ctx, node)`."""
    return _REGISTRY.register(*op_types)


def lookup(op_type: str) -> Handler | None:
    """The converter of `op_type`, or None when it is unsupported."""
    return _REGISTRY.lookup(op_type)


def supported_ops() -> list[str]:
    """Sorted list of supported TF op types."""
    return _REGISTRY.types()
