"""The committed SPIR-V is fresh: `tools/compile_shaders.py --check` recompiles every shader and compares."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "compile_shaders.py"
SHADERS = ROOT / "backends" / "vulkan" / "shaders"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compile_shaders", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compile_shaders"] = module
    spec.loader.exec_module(module)
    return module


def test_every_shader_has_committed_spirv() -> None:
    sources = sorted(p.stem for p in SHADERS.glob("*.comp"))
    assert sources, "no shaders found"
    missing = [s for s in sources if not (SHADERS / f"{s}.spv").exists()]
    assert not missing, f"run tools/compile_shaders.py: no .spv for {missing}"


NO_GLSLANG = shutil.which("glslangValidator") is None or shutil.which("spirv-val") is None
SKIP_REASON = "glslangValidator/spirv-val not installed (apt-get install glslang-tools): cannot check the .spv files"


@pytest.mark.skipif(NO_GLSLANG, reason=SKIP_REASON)
def test_spirv_is_fresh() -> None:
    res = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, timeout=300,
                         check=False)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.skipif(NO_GLSLANG, reason=SKIP_REASON)
def test_check_detects_a_stale_spirv(tmp_path: Path) -> None:
    for src in ("fill.comp", *(p.name for p in SHADERS.glob("*.glsl"))):
        shutil.copyfile(SHADERS / src, tmp_path / src)
    tool = _tool()
    assert tool.build(tmp_path) == []
    assert tool.build(tmp_path, check=True) == []
    (tmp_path / "fill.comp").write_text((tmp_path / "fill.comp").read_text().replace("p.value", "p.value + 1.0"))
    problems = tool.build(tmp_path, check=True)
    assert len(problems) == 2 and all("stale" in p for p in problems)  # fill.spv and fill_fp16.spv
