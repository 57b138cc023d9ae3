"""ONNX node suite (from the installed onnx wheel): our converter + official MNN (MnnBackend) and + mnnpy's own CPU
runtime (MnnpyBackend).

Every case not in the runtime's expected-failure list (`onnx_backend_expected_failures.txt`, `..._mnnpy.txt`) must
pass, and every listed case must still fail (so the lists only shrink: remove a case when it starts passing). Cases
run in a crash-isolated worker (all 1765: ~10 s on official MNN, ~50 s on mnnpy's runtime).
"""

from __future__ import annotations

import pytest

pytest.importorskip("onnx", reason="onnx not installed")

from .onnx_backend import MnnBackend, MnnpyBackend, all_cases, read_expected_failures, run_suite


def test_backend_adapter_is_an_onnx_backend() -> None:
    from onnx.backend.base import Backend

    for backend in (MnnBackend, MnnpyBackend):
        assert issubclass(backend, Backend) and backend.supports_device("CPU")


@pytest.mark.parametrize("runtime", ["official", "mnnpy"])
def test_node_suite_matches_expected_failures(runtime: str) -> None:
    if runtime == "official":
        pytest.importorskip("MNN", reason="official MNN wheel not installed")
    cases = all_cases()
    expected = read_expected_failures(runtime)
    results = run_suite(cases, runtime)
    passed = {name for name, (status, _) in results.items() if status == "pass"}
    unexpected = sorted(f"{name}: {results[name]}" for name in cases if name not in passed and name not in expected)
    fixed = sorted(name for name in expected if name in passed)
    assert not unexpected, f"{len(unexpected)} node cases newly failing:\n" + "\n".join(unexpected[:50])
    assert not fixed, f"{len(fixed)} cases now pass; remove them from the expected-failure list:\n" + "\n".join(fixed)
    print(f"node suite ({runtime} runtime): {len(passed)} / {len(cases)} pass")
