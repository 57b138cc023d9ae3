"""Fixtures for the OpenCL backend tests: skip everything when no OpenCL device can compile kernels."""

from __future__ import annotations

import pytest
from mnnpy.backends.opencl.runtime import OpenCLRuntime

if not OpenCLRuntime.is_available():
    pytest.skip(f"OpenCL device absent: {OpenCLRuntime.unavailable_reason()}", allow_module_level=True)


@pytest.fixture(scope="session")
def runtime() -> OpenCLRuntime:
    """One runtime (context, queue, caches) for the whole test session."""
    return OpenCLRuntime()


@pytest.fixture()
def backend(runtime: OpenCLRuntime) -> object:
    """A fresh backend (its own arena) on the shared runtime."""
    return runtime.create_backend()
