"""The committed TF GraphDef proto module matches protoc's output, parses TF's wire format, and stays off the
runtime import path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.frontends.tensorflow import tf_graph_pb2 as pb
from mnnpy.converter.frontends.tensorflow.loader import attr_value, tensor_to_numpy

ROOT = Path(__file__).resolve().parents[3]


GRPCIO_TOOLS = "1.85.1"  # the protoc that wrote the committed modules (its output differs between versions)


def test_generated_modules_are_up_to_date() -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (protoc) not installed")
    from importlib.metadata import version

    if version("grpcio-tools") != GRPCIO_TOOLS:
        pytest.skip(f"grpcio-tools {version('grpcio-tools')} installed; the modules were generated with {GRPCIO_TOOLS}")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_protos.py"), "--check"], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_runtime_does_not_import_frontends() -> None:
    code = ("import sys, mnnpy; bad = [m for m in sys.modules if 'frontends' in m or m.endswith('_pb2')"
            " or m.startswith(('tensorflow', 'google.protobuf'))]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tensor_values_decode() -> None:
    proto = pb.TensorProto(dtype=pb.DT_FLOAT)
    proto.tensor_shape.dim.add().size = 2
    proto.tensor_shape.dim.add().size = 3
    proto.float_val.append(1.5)  # one value fills the whole shape
    np.testing.assert_array_equal(tensor_to_numpy(proto), np.full((2, 3), 1.5, np.float32))
    ints = pb.TensorProto(dtype=pb.DT_INT64, int64_val=[4, 5])
    ints.tensor_shape.dim.add().size = 2
    np.testing.assert_array_equal(tensor_to_numpy(ints), [4, 5])
    half = pb.TensorProto(dtype=pb.DT_HALF, half_val=[int(np.float16(0.25).view(np.uint16))])
    assert tensor_to_numpy(half) == np.float16(0.25)
    value = pb.AttrValue()
    value.list.i.extend([1, 2, 2, 1])
    assert attr_value(value) == [1, 2, 2, 1]
    assert attr_value(pb.AttrValue(s=b"SAME")) == "SAME"


def test_against_tensorflow(tmp_path: Path) -> None:
    """When TensorFlow is installed (test-only oracle), its own run of a built graph matches ours."""
    from .tf_build import GraphBuilder, check
    from .tf_jobs import run_job

    rng = np.random.default_rng(3)
    g = GraphBuilder()
    x = rng.standard_normal((1, 8, 8, 3)).astype(np.float32)
    inp = g.placeholder("input", [1, 8, 8, 3])
    conv = g.op("Conv2D", [inp, g.const(rng.standard_normal((3, 3, 3, 6)).astype(np.float32))],
                strides=[1, 2, 2, 1], padding="SAME", T=1)
    dw = g.op("DepthwiseConv2dNative", [g.op("Relu6", [conv], T=1),
                                        g.const(rng.standard_normal((3, 3, 6, 1)).astype(np.float32))],
              strides=[1, 1, 1, 1], padding="SAME", T=1)
    g.op("Mean", [dw, g.const(np.asarray([1, 2], np.int32), dtype=np.int32)], name="out", keep_dims=False, T=1,
         Tidx=3)
    ref = run_job("run_graph_def", g.graph.SerializeToString(), {"input": x}, "out:0")
    check(g, {"input": x}, {"out": np.asarray(ref, np.float64)}, tmp_path)
