"""Ops with int32 tensors: GatherV2 with runtime indices, ArgMax/ArgMin, Cast; int tensors keep int32 storage even
with precision='low' (an embedding lookup with ids above 2048 stays exact)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.io import net_to_bytes
from support.models import net_op
from support.runners import run_once

import mnnpy as MNN  # noqa: N812 - as official scripts do
from mnnpy.core.ir import TensorDesc

RNG = np.random.default_rng(43)


def _run_int(run_op: Any, op_type: int, op: Any, inputs: list, out: TensorDesc, config: dict | None = None) -> Any:
    (got,) = run_op(op_type, op, inputs, [out], config).run()
    return got


@pytest.mark.parametrize("config", [None, {"precision": "low"}])
@pytest.mark.parametrize(("shape", "axis", "fmt"), [((5, 13), 0, "NCHW"), ((2, 13, 3, 3), 1, "NC4HW4"),
                                                    ((3, 4, 5), 2, "NCHW")])
def test_gather_runtime_indices(run_op: Any, make_op: Any, shape: tuple, axis: int, fmt: str,
                                config: dict | None) -> None:
    data = RNG.standard_normal(shape).astype(np.float32)
    idx = RNG.integers(-shape[axis], shape[axis], size=(2, 3)).astype(np.int32)
    param = fb.GatherT()
    param.axis = axis
    want = np.take(data, np.where(idx < 0, idx + shape[axis], idx), axis=axis)
    got = _run_int(run_op, fb.OpType.GatherV2, make_op(fb.OpType.GatherV2, param), [(data, fmt), (idx, "NCHW")],
                   TensorDesc(want.shape, np.float32, "NCHW"), config)
    tol = 1e-2 if config else 0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("op_type", [fb.OpType.ArgMax, fb.OpType.ArgMin])
@pytest.mark.parametrize(("shape", "axis", "fmt"), [((2, 13, 3, 2), 1, "NC4HW4"), ((3, 127), -1, "NCHW")])
def test_argmax(run_op: Any, make_op: Any, op_type: int, shape: tuple, axis: int, fmt: str) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    param = fb.ArgMaxT()
    param.axis = axis
    fn = np.argmax if op_type == fb.OpType.ArgMax else np.argmin
    want = fn(x, axis=axis).astype(np.int32)
    got = _run_int(run_op, op_type, make_op(op_type, param), [(x, fmt)], TensorDesc(want.shape, np.int32, "NCHW"))
    np.testing.assert_array_equal(got, want)


def test_cast_both_ways(run_op: Any, make_op: Any) -> None:
    x = (RNG.standard_normal((2, 13, 3)) * 100).astype(np.float32)
    got = _run_int(run_op, fb.OpType.Cast, make_op(fb.OpType.Cast, fb.CastParamT()), [(x, "NCHW")],
                   TensorDesc(x.shape, np.int32, "NCHW"))
    np.testing.assert_array_equal(got, x.astype(np.int32))
    i = RNG.integers(-1000, 1000, size=(4, 5)).astype(np.int32)
    got = _run_int(run_op, fb.OpType.Cast, make_op(fb.OpType.Cast, fb.CastParamT()), [(i, "NCHW")],
                   TensorDesc(i.shape, np.float32, "NCHW"))
    np.testing.assert_array_equal(got, i.astype(np.float32))


def _embedding_net(vocab: int, dim: int, seq: int) -> tuple[Any, np.ndarray]:
    table = RNG.standard_normal((vocab, dim)).astype(np.float32)
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [1, seq], fb.DataType.DT_INT32, fb.MNN_DATA_FORMAT.NCHW
    blob = fb.BlobT()
    blob.dims, blob.dataType, blob.dataFormat, blob.float32s = [vocab, dim], fb.DataType.DT_FLOAT, 0, table.ravel()
    gather = fb.GatherT()
    gather.axis = 0
    ops = []
    for op_type, name, ins, outs, ptype, param in [
            (fb.OpType.Input, "ids", [], [0], fb.OpParameter.Input, inp),
            (fb.OpType.Const, "table", [], [1], fb.OpParameter.Blob, blob),
            (fb.OpType.GatherV2, "emb", [1, 0], [2], fb.OpParameter.Gather, gather)]:
        ops.append(net_op(op_type, name, ins, outs, ptype, param))
    net = fb.NetT()
    net.tensorName, net.oplists, net.outputName = ["ids", "table", "emb"], ops, ["emb"]
    net.sourceType = fb.NetSource.ONNX
    return net, table


@pytest.mark.parametrize("precision", ["normal", "low"])
def test_embedding_lookup_session(vk_runtime: Any, precision: str) -> None:
    net, table = _embedding_net(5000, 8, 6)
    interp = MNN.Interpreter(net_to_bytes(net))
    session = interp.createSession({"backend": "VULKAN", "precision": precision})
    ids = np.array([[4999, 0, 2049, 3001, 7, 4096]], np.int32)
    got = run_once(interp, session, ids)
    assert {c["backend"] for c in session.info()["commands"]} == {"vulkan"}, session.info()["commands"]
    tol = 1e-2 if precision == "low" else 0
    np.testing.assert_allclose(got.reshape(1, 6, 8), table[ids], rtol=tol, atol=tol)
