"""ONNX node suite (from the installed onnx wheel) through MnnBackend: our converter + official MNN runtime.

Every case not in `onnx_backend_expected_failures.txt` must pass, and every listed case must still fail (so the list
only shrinks: remove a case when it starts passing). Cases run in a crash-isolated worker (~10 s for all 1765).
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnx", reason="onnx not installed")
pytest.importorskip("MNN", reason="official MNN wheel not installed")

from .onnx_backend import MnnBackend, all_cases, read_expected_failures, run_suite


def test_backend_adapter_is_an_onnx_backend() -> None:
    from onnx.backend.base import Backend

    assert issubclass(MnnBackend, Backend) and MnnBackend.supports_device("CPU")


def test_node_suite_matches_expected_failures() -> None:
    cases = all_cases()
    expected = read_expected_failures()
    results = run_suite(cases)
    passed = {name for name, (status, _) in results.items() if status == "pass"}
    unexpected = sorted(f"{name}: {results[name]}" for name in cases if name not in passed and name not in expected)
    fixed = sorted(name for name in expected if name in passed)
    assert not unexpected, f"{len(unexpected)} node cases newly failing:\n" + "\n".join(unexpected[:50])
    assert not fixed, f"{len(fixed)} cases now pass; remove them from the expected-failure list:\n" + "\n".join(fixed)
    print(f"node suite: {len(passed)} / {len(cases)} pass")
