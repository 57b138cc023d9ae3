"""OpenCL backend (pyopencl; PoCL on the CPU in CI): NC4HW4 buffers, one op per file in ops/, kernels in kernels/.

`RUNTIME` is resolved lazily, so importing this package does not import pyopencl (MNN: `OpenCLRuntime`).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "RUNTIME":
        from mnnpy.backends.opencl.runtime import OpenCLRuntime

        return OpenCLRuntime
    raise AttributeError(name)
