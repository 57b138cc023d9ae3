"""Registry of Caffe layer converters: `@caffe_layer("Convolution")`; modules under `layers/` found with pkgutil."""

from __future__ import annotations

from collections.abc import Callable

from ..registry import Handler, OpRegistry

_REGISTRY = OpRegistry(f"{__package__}.layers")


def caffe_layer(*layer_types: str) -> Callable[[Handler], Handler]:
    """Register a converter function for Caffe layer types; it is called as `fn(ctx, layer)`."""
    return _REGISTRY.register(*layer_types)


def lookup(layer_type: str) -> Handler | None:
    """The converter of `layer_type`, or None when it is unsupported."""
    return _REGISTRY.lookup(layer_type)


def supported_layers() -> list[str]:
    """Sorted list of supported Caffe layer types."""
    return _REGISTRY.types()
