"""tools/model_zoo.py itself: the pinned table, the CLI, cache verification."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import model_zoo
import pytest


def test_table_is_consistent() -> None:
    """Every model names a pinned archive; hashes are sha256 hex digests; names are unique per archive."""
    for model in model_zoo.MODELS.values():
        assert model.archive in model_zoo.ARCHIVES
        assert len(model.sha256) == 64 and int(model.sha256, 16) >= 0
    for archive in model_zoo.ARCHIVES.values():
        assert len(archive.sha256) == 64 and archive.filename.endswith((".whl", ".tar.gz", ".zip"))


def test_unknown_name() -> None:
    with pytest.raises(KeyError, match="unknown zoo model 'nope'"):
        model_zoo.fetch("nope")


def test_cli_list(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MNNPY_ZOO", str(tmp_path))
    assert model_zoo.main(["list"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out
    for name in model_zoo.MODELS:
        assert name in out


@pytest.mark.zoo
def test_fetch_verifies_and_repairs(zoo_fetch: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    """A fetched file has the pinned hash; a corrupted cached copy is re-extracted from the cached wheel."""
    path = zoo_fetch("ppocr-cls")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == model_zoo.MODELS["ppocr-cls"].sha256
    # private cache holding only the verified wheel: no network needed
    archive = model_zoo.ARCHIVES["rapidocr-onnxruntime"]
    (tmp_path / "dist").mkdir()
    shutil.copy(model_zoo.cache_dir() / "dist" / archive.filename, tmp_path / "dist" / archive.filename)
    monkeypatch.setenv("MNNPY_ZOO", str(tmp_path))
    fresh = model_zoo.fetch("ppocr-cls")
    assert fresh.parent.parent == tmp_path
    fresh.write_bytes(b"corrupt")
    assert model_zoo.zoo_path("ppocr-cls").read_bytes() == path.read_bytes()
