"""`MNN.expr` executor settings: gc, lazy evaluation switches (no effect here: Vars are always lazy) and the
global executor config.
"""

from __future__ import annotations

from typing import Any

from mnnpy.expr import graph


def gc(full: bool = False) -> None:
    """Drop cached plans (MNN: `expr.gc`)."""
    graph.clear_cache()


def lazy_eval(flag: bool = True) -> None:
    """Vars are always lazy here; accepted for compatibility (MNN: `expr.lazy_eval`)."""


def set_lazy_mode(mode: int = 0) -> None:
    """Accepted for compatibility (MNN: `expr.set_lazy_mode`)."""


_BACKENDS = {0: "CPU", 3: "OPENCL", 7: "VULKAN", 4: "AUTO"}
_PRECISIONS = {0: "normal", 1: "high", 2: "low", 3: "Low_BF16"}


def set_global_executor_config(backend: Any = 0, precision: Any = 0, thread_num: int = 1) -> None:
    """Backend, precision and threads of the sessions expressions run in (MNN: `expr.set_global_executor_config`).

    Backends without a device here fall back to the CPU, as a session's backup backend does.
    """
    b = backend.value if hasattr(backend, "value") else backend
    p = precision.value if hasattr(precision, "value") else precision
    graph.configure(backend=_BACKENDS.get(int(b), "CPU") if not isinstance(b, str) else b.upper(),
                    precision=_PRECISIONS.get(int(p), "normal") if not isinstance(p, str) else p,
                    numThread=max(1, int(thread_num)))
