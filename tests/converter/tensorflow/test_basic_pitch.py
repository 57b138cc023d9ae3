"""Real model: basic-pitch==0.4.0's SavedModel (shipped in its wheel), frozen to a GraphDef with TensorFlow (a
test-only oracle; skipped without it or offline), converted, and run on mnnpy and official MNN vs TensorFlow."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .tf_build import run_mnnpy, run_official

tf = pytest.importorskip("tensorflow", reason="tensorflow-cpu not installed (optional test oracle)")

WHEEL = "basic_pitch-0.4.0-py2.py3-none-any.whl"
SHA256 = "738adb503aae7fdfc7d1e1511aa0ce35052315f260a19531ef4c356708425db0"
MODEL = "basic_pitch/saved_models/icassp_2022/nmp/"
INPUT = "serving_default_input_2"


def _fetch(tmp: Path) -> Path:
    cache = Path(os.environ.get("MNNPY_ZOO", Path.home() / ".cache" / "mnnpy" / "zoo"))
    wheel = cache / WHEEL
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "basic-pitch==0.4.0", "--no-deps", "-d", str(cache)]
        try:
            subprocess.run(cmd, capture_output=True, check=True, timeout=300)
        except (subprocess.SubprocessError, OSError) as exc:
            pytest.skip(f"cannot fetch {WHEEL} (offline?): {exc}")
    if hashlib.sha256(wheel.read_bytes()).hexdigest() != SHA256:
        pytest.fail(f"{wheel} does not have the pinned sha256")
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith(MODEL):
                archive.extract(name, tmp)
    return tmp / MODEL


def _freeze(saved_model: Path, x: np.ndarray) -> tuple[Any, dict[str, str], dict[str, np.ndarray]]:
    """Load with the v1 loader, inline the function calls (grappler), turn variables into Const nodes."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.grappler import tf_optimizer

    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], str(saved_model))
        signature = meta.signature_def["serving_default"]
        outputs = {key: value.name for key, value in signature.outputs.items()}
        nodes = sorted({name.split(":")[0] for name in outputs.values()})
        exported = tf.compat.v1.train.export_meta_graph(graph=sess.graph)
        exported.collection_def["train_op"].node_list.value.extend(nodes)
        config = config_pb2.ConfigProto()
        config.graph_options.rewrite_options.optimizers.append("function")
        config.graph_options.rewrite_options.min_graph_nodes = -1
        inlined = tf_optimizer.OptimizeGraph(config, exported)
        frozen = tf.compat.v1.GraphDef()
        for node in inlined.node:
            out = frozen.node.add()
            out.CopyFrom(node)
            if node.op == "VarHandleOp":
                handle = sess.graph.get_tensor_by_name(node.name + ":0")
                value = sess.run(tf.raw_ops.ReadVariableOp(resource=handle, dtype=node.attr["dtype"].type))
                out.Clear()
                out.name, out.op = node.name, "Const"
                out.attr["dtype"].type = node.attr["dtype"].type
                out.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
            elif node.op == "ReadVariableOp":
                out.op = "Identity"
                out.attr["T"].type = node.attr["dtype"].type
                del out.attr["dtype"]
            elif "T" in out.attr and out.attr["T"].type == tf.resource.as_datatype_enum:
                out.attr["T"].type = tf.float32.as_datatype_enum
        frozen = tf.compat.v1.graph_util.extract_sub_graph(frozen, nodes)
        refs = dict(zip(outputs, sess.run(list(outputs.values()), {INPUT + ":0": x}), strict=True))
    return frozen, outputs, refs


def test_basic_pitch_nmp(tmp_path: Path) -> None:
    from mnnpy.converter.frontends.tensorflow import load_graph_def
    from mnnpy.converter.passes import run_pipeline
    from mnnpy.converter.writer import graph_to_net
    from mnnpy.schema import save_net

    x = (np.random.default_rng(0).standard_normal((1, 43844, 1)) * 0.1).astype(np.float32)
    frozen, outputs, refs = _freeze(_fetch(tmp_path), x)
    keys = {name: tensor[:-2] if tensor.endswith(":0") else tensor for name, tensor in outputs.items()}
    graph = load_graph_def(frozen.SerializeToString(), list(keys.values()), {INPUT: [1, 43844, 1]})
    run_pipeline(graph)
    save_net(graph_to_net(graph), tmp_path / "nmp.mnn")
    for runner in (run_mnnpy, run_official):
        results = runner(tmp_path / "nmp.mnn", {INPUT: x})
        for name, key in keys.items():
            ref = np.asarray(refs[name], np.float64)
            err = float(np.abs(results[key].reshape(ref.shape) - ref).max() / np.abs(ref).max())
            assert err <= 1e-4, f"{runner.__name__} {name}: max rel diff {err:.3g}"
