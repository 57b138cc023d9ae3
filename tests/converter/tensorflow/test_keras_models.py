"""Acceptance: Keras MobileNetV2 and ResNet50 (weights=None, seeded, batch-norm statistics randomised so the logits
are far from zero), frozen to a GraphDef with TensorFlow (a test-only oracle, skipped when it is not installed),
converted by our frontend and run on mnnpy and official MNN: logits within 1e-4 relative of TensorFlow's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .tf_build import run_mnnpy
from .tf_jobs import run_job


@pytest.mark.parametrize(("name", "size"), [("MobileNetV2", 96), ("ResNet50", 64)])
def test_keras_application(name: str, size: int, tmp_path: Path) -> None:
    from mnnpy.converter.frontends.tensorflow import load
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net
    from support import official

    x, ref = run_job("freeze_keras", name, size, str(tmp_path / "model.pb"))
    graph = load(tmp_path / "model.pb")
    run_pipeline(graph)
    net = graph_to_net(graph)
    save_net(net, tmp_path / "model.mnn")
    output = net.outputName[0]
    runs = {"mnnpy": run_mnnpy(tmp_path / "model.mnn", {"input": x})[output]}
    runs["official"] = official.run(tmp_path / "model.mnn", {"input": x})[output]
    for runner, got in runs.items():
        err = float(np.abs(np.asarray(got, np.float64).reshape(ref.shape) - ref).max() / np.abs(ref).max())
        assert err <= 1e-4, f"{runner}: max rel diff {err:.3g}"
