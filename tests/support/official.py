"""Helpers around the official MNN wheel, a test-only reference.

Its converter is called through `_tools.mnnconvert([...])`, never through the `mnnconvert` console script (which
pip-installs packages and sends telemetry).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support import runners


def require_mnn() -> object:
    return pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")


def convert(src: Path, dst: Path, *extra: str, framework: str = "ONNX") -> Path:
    """Convert a model with the official converter, in a child process.

    `_tools.mnnconvert` aborts the whole process on some inputs (a C++ abort, not an exception), so it never runs
    inside the pytest process: a failed conversion becomes a RuntimeError of one test instead of a dead run.
    """
    require_mnn()
    args = ["mnnconvert", "-f", framework, "--modelFile", str(src), "--MNNModel", str(dst), "--bizCode", "MNN",
            *extra]
    code = "import sys, _tools; _tools.mnnconvert(sys.argv[1:])"
    proc = subprocess.run([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=600, check=False)
    if proc.returncode != 0 or not Path(dst).exists():
        raise RuntimeError(f"official converter failed on {src} (rc {proc.returncode}): {proc.stderr[-2000:]}")
    return Path(dst)


def run(path: Path, feeds: dict[str, np.ndarray], outputs: list[str] | None = None, **kwargs: Any
        ) -> dict[str, np.ndarray]:
    """Run a .mnn file in official MNN on CPU; inputs and outputs are NCHW arrays by name (`support.runners.run`'s
    options: `dim`, `config`, `hints`, ...)."""
    return runners.run(path, feeds, outputs, lib=require_mnn(), **kwargs)


def run_many(path: Path, runs: list[dict[str, np.ndarray]], outputs: list[str] | None = None, **kwargs: Any
             ) -> list[dict[str, np.ndarray]]:
    """`run` once per feed dict in one official MNN session (`support.runners.run_many`)."""
    return runners.run_many(path, runs, outputs, lib=require_mnn(), **kwargs)
