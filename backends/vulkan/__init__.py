"""Vulkan backend (`vulkan` cffi binding; lavapipe on CPU in CI): GLSL compute shaders shipped as SPIR-V.

`RUNTIME` is resolved lazily: `import mnnpy` never imports `vulkan`, and when the binding or libvulkan is missing
`RUNTIME` is a stub whose `is_available()` is False and whose construction raises `BackendUnavailable`.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "RUNTIME":
        try:
            from mnnpy.backends.vulkan.runtime import VulkanRuntime
        except Exception as exc:
            return _absent_runtime(f"vulkan: cannot load the Vulkan binding ({exc})")
        return VulkanRuntime
    raise AttributeError(name)


def _absent_runtime(reason: str) -> type:
    from mnnpy.core.backend import BackendUnavailable, Runtime

    class AbsentVulkanRuntime(Runtime):
        """Stands in for VulkanRuntime when the binding cannot load."""

        name = "vulkan"

        def __init__(self) -> None:
            raise BackendUnavailable(reason)

        @classmethod
        def is_available(cls) -> bool:
            return False

        @classmethod
        def unavailable_reason(cls) -> str:
            return reason

        def create_backend(self, config: dict[str, Any] | None = None) -> Any:
            raise BackendUnavailable(reason)

    return AbsentVulkanRuntime
