"""Benchmarking and profiling: engines (mnnpy, onnxruntime, official MNN) run side by side, per-op profiles.

* ``threads``: ``blas_threads(n)``, the BLAS thread pool (threadpoolctl when installed, else OpenBLAS by ctypes).
* ``engines``: one small adapter per engine (load, create the session, feed random inputs, run, read the output).
* ``measure``: interleaved timing (A B C A B C ...) after warm-up, robust statistics, the text report.
* ``profile``: per-command timing of an mnnpy session through the session's own run hooks, and an optional chart.

The ``mnnpy bench`` command (``mnnpy/cli/bench.py``) is a thin layer over these.
"""

from __future__ import annotations
