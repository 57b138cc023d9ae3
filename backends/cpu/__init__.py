"""CPU backend (numpy): NC4HW4 feature maps, one op per file in ops/, convolution strategies in compute/.

`RUNTIME` is resolved lazily so that importing `mnnpy.backends.cpu.compute` does not load the op kernels.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "RUNTIME":
        from mnnpy.backends.cpu.backend import CPURuntime

        return CPURuntime
    raise AttributeError(name)
