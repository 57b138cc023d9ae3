"""Fixtures for the OpenCL backend tests; every test here is skipped, with the reason, when no OpenCL device that
compiles kernels is present (`OpenCLRuntime.is_available()` false, pyopencl missing included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mnnpy.backends.opencl.runtime import OpenCLRuntime

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark this folder's tests skipped when the OpenCL runtime is unavailable."""
    if OpenCLRuntime.is_available():
        return
    marker = pytest.mark.skip(reason=f"OpenCL device absent: {OpenCLRuntime.unavailable_reason()}")
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(marker)


@pytest.fixture(scope="session")
def runtime() -> OpenCLRuntime:
    """One runtime (context, queue, caches) for the whole test session."""
    return OpenCLRuntime()


@pytest.fixture()
def backend(runtime: OpenCLRuntime) -> object:
    """A fresh backend (its own arena) on the shared runtime. Op tests leave the local size to the driver: on PoCL
    every tuned candidate size is a separate code generation, which a cold kernel cache pays for; tuning itself is
    tested in test_runtime.py and through sessions."""
    return runtime.create_backend({"tuning": "none"})
