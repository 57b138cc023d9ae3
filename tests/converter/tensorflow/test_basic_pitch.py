"""Real model: basic-pitch==0.4.0's SavedModel (shipped in its wheel), frozen to a GraphDef with TensorFlow (a
test-only oracle; skipped without it or offline), converted, and run on mnnpy and official MNN vs TensorFlow."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from .tf_build import run_mnnpy, run_official
from .tf_jobs import require_tensorflow, run_job

MODEL = "basic_pitch/saved_models/icassp_2022/nmp/"
INPUT = "serving_default_input_2"


def _fetch(tmp: Path) -> Path:
    from model_zoo import ZooError, fetch_archive

    try:
        wheel = fetch_archive("basic-pitch")
    except ZooError as exc:
        pytest.skip(f"cannot fetch the basic-pitch wheel (offline?): {exc}")
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith(MODEL):
                archive.extract(name, tmp)
    return tmp / MODEL


def test_basic_pitch_nmp(tmp_path: Path) -> None:
    from mnnpy.converter.frontends.tensorflow import load_graph_def
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net

    require_tensorflow()
    x = (np.random.default_rng(0).standard_normal((1, 43844, 1)) * 0.1).astype(np.float32)
    frozen, outputs, refs = run_job("freeze_saved_model", str(_fetch(tmp_path)), x, INPUT)
    keys = {name: tensor[:-2] if tensor.endswith(":0") else tensor for name, tensor in outputs.items()}
    graph = load_graph_def(frozen, list(keys.values()), {INPUT: [1, 43844, 1]})
    run_pipeline(graph)
    save_net(graph_to_net(graph), tmp_path / "nmp.mnn")
    for runner in (run_mnnpy, run_official):
        results = runner(tmp_path / "nmp.mnn", {INPUT: x})
        for name, key in keys.items():
            ref = np.asarray(refs[name], np.float64)
            err = float(np.abs(results[key].reshape(ref.shape) - ref).max() / np.abs(ref).max())
            assert err <= 1e-4, f"{runner.__name__} {name}: max rel diff {err:.3g}"
