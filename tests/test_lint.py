"""The whole tree passes ruff with the project's rules (pyproject.toml [tool.ruff])."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    scripts = Path(sysconfig.get_path("scripts")) / "ruff"
    ruff = str(scripts) if scripts.exists() else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed (pip install ruff; it is in the test extra)")
    result = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT,
                            check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-1000:]
    assert sys.version_info >= (3, 10)
