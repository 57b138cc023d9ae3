"""Acceptance: Keras MobileNetV2 and ResNet50 (weights=None, seeded, batch-norm statistics randomised so the logits
are far from zero), frozen to a GraphDef with TensorFlow (a test-only oracle, skipped when it is not installed),
converted by our frontend and run on mnnpy and official MNN: logits within 1e-4 relative of TensorFlow's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .tf_build import run_mnnpy

tf = pytest.importorskip("tensorflow", reason="tensorflow-cpu not installed (optional test oracle)")


def _randomise(model: object, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        weights = layer.get_weights()
        if not weights:
            continue
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            c = weights[0].shape[0]
            layer.set_weights([rng.uniform(0.5, 1.5, c), rng.normal(0, 0.1, c), rng.normal(0, 0.1, c),
                               rng.uniform(0.5, 1.5, c)])
        elif weights[0].ndim == 4:
            k = weights[0]
            depthwise = isinstance(layer, tf.keras.layers.DepthwiseConv2D)
            fan_in = k.shape[0] * k.shape[1] * (1 if depthwise else k.shape[2])
            rest = [rng.normal(0, 0.1, w.shape) for w in weights[1:]]
            layer.set_weights([rng.normal(0, (2.0 / fan_in) ** 0.5, k.shape), *rest])


def _freeze(name: str, size: int, path: Path) -> tuple[np.ndarray, np.ndarray]:
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    tf.keras.utils.set_random_seed(0)
    build = {"MobileNetV2": tf.keras.applications.MobileNetV2, "ResNet50": tf.keras.applications.ResNet50}[name]
    model = build(weights=None, input_shape=(size, size, 3), classifier_activation=None)
    _randomise(model, 1)
    fn = tf.function(lambda x: model(x, training=False))
    frozen = convert_variables_to_constants_v2(fn.get_concrete_function(tf.TensorSpec([1, size, size, 3],
                                                                                       tf.float32, name="input")))
    path.write_bytes(frozen.graph.as_graph_def().SerializeToString())
    x = np.random.default_rng(0).standard_normal((1, size, size, 3)).astype(np.float32)
    y = frozen(tf.constant(x))
    y = y[0] if isinstance(y, (list, tuple)) else y
    return x, np.asarray(y, np.float64)


@pytest.mark.parametrize(("name", "size"), [("MobileNetV2", 96), ("ResNet50", 64)])
def test_keras_application(name: str, size: int, tmp_path: Path) -> None:
    from mnnpy.converter.frontends.tensorflow import load
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net
    from support import official

    x, ref = _freeze(name, size, tmp_path / "model.pb")
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
