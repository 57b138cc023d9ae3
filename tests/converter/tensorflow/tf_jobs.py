"""TensorFlow oracle jobs, run in a child process (`run_job`), never imported into the pytest process.

TensorFlow bundles its own LLVM; once it is loaded, a later OpenCL kernel build through PoCL (LLVM as well) in the
same process segfaults. So the tests never import TensorFlow: each job below runs in a fresh interpreter and
passes its arguments and results through a pickle file.
"""

from __future__ import annotations

import importlib.util
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest


def require_tensorflow() -> None:
    """Skip (saying so) when TensorFlow is not installed, without importing it."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow-cpu not installed (optional test oracle)")


def run_job(name: str, *args: Any) -> Any:
    """Run `name(*args)` from this module in a child interpreter and return its result."""
    require_tensorflow()
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "args.pkl", Path(tmp) / "result.pkl"
        src.write_bytes(pickle.dumps(args))
        proc = subprocess.run([sys.executable, __file__, name, str(src), str(dst)], capture_output=True, text=True,
                              timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"TensorFlow job {name} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
        return pickle.loads(dst.read_bytes())


def _randomise(tf: Any, model: Any, seed: int) -> None:
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


def freeze_keras(name: str, size: int, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Build a seeded Keras application (weights=None, batch-norm statistics randomised), freeze it to `path`,
    and return an input and TensorFlow's logits for it."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    tf.keras.utils.set_random_seed(0)
    build = {"MobileNetV2": tf.keras.applications.MobileNetV2, "ResNet50": tf.keras.applications.ResNet50}[name]
    model = build(weights=None, input_shape=(size, size, 3), classifier_activation=None)
    _randomise(tf, model, 1)
    fn = tf.function(lambda x: model(x, training=False))
    spec = tf.TensorSpec([1, size, size, 3], tf.float32, name="input")
    frozen = convert_variables_to_constants_v2(fn.get_concrete_function(spec))
    Path(path).write_bytes(frozen.graph.as_graph_def().SerializeToString())
    x = np.random.default_rng(0).standard_normal((1, size, size, 3)).astype(np.float32)
    y = frozen(tf.constant(x))
    y = y[0] if isinstance(y, list | tuple) else y
    return x, np.asarray(y, np.float64)


def run_graph_def(graph_bytes: bytes, feeds: dict[str, np.ndarray], fetch: str) -> np.ndarray:
    """Run a serialized GraphDef with TensorFlow's v1 session."""
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(graph_bytes)
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            return np.asarray(sess.run(fetch, {f"{k}:0": v for k, v in feeds.items()}))


def freeze_saved_model(saved_model: str, x: np.ndarray, input_name: str) -> tuple[bytes, dict, dict]:
    """Load a SavedModel with the v1 loader, inline its functions (grappler), turn variables into Const nodes;
    returns the frozen GraphDef bytes, the serving outputs and TensorFlow's outputs for `x`."""
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.grappler import tf_optimizer

    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], saved_model)
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
        refs = dict(zip(outputs, sess.run(list(outputs.values()), {input_name + ":0": x}), strict=True))
    return frozen.SerializeToString(), outputs, {k: np.asarray(v) for k, v in refs.items()}


if __name__ == "__main__":
    job, src, dst = sys.argv[1:4]
    result = globals()[job](*pickle.loads(Path(src).read_bytes()))
    Path(dst).write_bytes(pickle.dumps(result))
