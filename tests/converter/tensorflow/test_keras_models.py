"""Acceptance: Keras MobileNetV2 and ResNet50 (weights=None, seeded, batch-norm statistics randomised so the logits
are far from zero), frozen to a GraphDef with TensorFlow (a test-only oracle, skipped when it is not installed),
converted by our frontend and run on mnnpy and official MNN, through the Session API with Tensorflow-dimension
(NHWC) host tensors and through expr/Module with NHWC Vars: logits within 1e-4 relative of TensorFlow's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .tf_build import run_module, run_session
from .tf_jobs import run_job


@pytest.mark.parametrize(("name", "size"), [("MobileNetV2", 96), ("ResNet50", 64)])
def test_keras_application(name: str, size: int, tmp_path: Path) -> None:
    from mnnpy.converter.frontends.tensorflow import load
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import mnn_generated as fb
    from mnnpy.schema import save_net

    import mnnpy

    x, ref = run_job("freeze_keras", name, size, str(tmp_path / "model.pb"))
    graph = load(tmp_path / "model.pb")
    run_pipeline(graph)
    net = graph_to_net(graph)
    save_net(net, tmp_path / "model.mnn")
    inputs = [op.main for op in net.oplists if op.type == fb.OpType.Input]
    assert [(list(p.dims), p.dformat) for p in inputs] == [([1, size, size, 3], fb.MNN_DATA_FORMAT.NHWC)]
    output = net.outputName[0]
    mnn = pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")
    runs = {}
    for lib in (mnnpy, mnn):
        runs[f"{lib.__name__} session"] = run_session(lib, tmp_path / "model.mnn", {"input": x})[output]
        runs[f"{lib.__name__} module"] = run_module(lib, tmp_path / "model.mnn", {"input": x}, [output])[output]
    for runner, got in runs.items():
        err = float(np.abs(np.asarray(got, np.float64).reshape(ref.shape) - ref).max() / np.abs(ref).max())
        assert err <= 1e-4, f"{runner}: max rel diff {err:.3g}"
