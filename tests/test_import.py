"""`import mnnpy` stays light: no optional backend, converter or reference library is imported."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("pyopencl", "vulkan", "onnx", "onnxruntime", "MNN", "torch", "numba", "mnnpy.converter")


def test_import_mnnpy_loads_no_optional_package() -> None:
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import mnnpy"], capture_output=True,
                            text=True, check=True)
    modules = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    top = {m.split(".")[0] for m in modules}
    bad = [m for m in FORBIDDEN if m in top or m in modules]
    assert not bad, f"import mnnpy imported {bad}"
