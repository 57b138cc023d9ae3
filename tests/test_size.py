"""STYLE rule 7: no hand-written module over 400 counted lines (tools/sz.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_file_over_the_line_budget() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "sz.py"), "--check", "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
