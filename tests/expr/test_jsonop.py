"""jsonop: ops built from their flatc-style JSON description run through the core like the ops they describe."""

from __future__ import annotations

import json

import numpy as np
import pytest
from mnnpy.schema.jsonify import to_dict

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use
from mnnpy.expr.graph import param_key
from mnnpy.expr.jsonop import from_dict

RNG = np.random.default_rng(3)
X = RNG.normal(size=(1, 3, 6, 5)).astype(np.float32)


def _described(v: F.Var) -> str:
    """The JSON description of the op computing `v` (written by mnnpy.schema.jsonify)."""
    return json.dumps(to_dict(v.node.op, "Op"))


@pytest.mark.parametrize("build", [
    lambda x: F.relu(x, 0.2), lambda x: F.softmax(x, 1), lambda x: F.max_pool(x, [3, 2], [2, 1]),
    lambda x: F.conv2d(x, RNG.normal(size=(4, 3, 3, 3)).astype(np.float32), RNG.normal(size=4).astype(np.float32),
                       padding_mode=F.SAME),
    lambda x: F.transpose(x, [0, 2, 3, 1]),
    lambda x: F.raster([x], [0, 30, 1, 5, 0, 30, 6, 1, 3, 5, 6], [1, 3, 5, 6]),
])
def test_jsonop_matches_the_op_it_describes(build: object) -> None:
    x = F.const(X, X.shape)
    direct = build(x)  # type: ignore[operator]
    (rebuilt,) = F.jsonop(direct.inputs, _described(direct), 1)
    assert rebuilt.op_type == direct.op_type
    np.testing.assert_array_equal(F.convert(rebuilt, F.NCHW).read(), F.convert(direct, F.NCHW).read())


def test_jsonop_multiple_outputs_against_numpy() -> None:
    desc = {"type": "Slice", "main_type": "Slice", "main": {"axis": 2, "slicePoints": [2, 5], "sourceType": "CAFFE"}}
    parts = F.jsonop([F.const(X, X.shape)], json.dumps(desc), 3)
    for got, want in zip(parts, np.split(X, [2, 5], axis=2), strict=True):
        np.testing.assert_array_equal(got.read(), want)
    (y,) = F.jsonop([F.const([1.5, -2.0], [2])], '{"type": "UnaryOp", "main_type": "UnaryOp", '
                    '"main": {"opType": "SQUARE", "T": "DT_FLOAT"}}', 1)
    np.testing.assert_array_equal(y.read(), [2.25, 4.0])
    assert y.dtype == F.float


@pytest.mark.parametrize("build", [
    lambda x: F.quant(x, [0.5, 1.0, 2.0]),
    lambda x: F.detection_post_process(np.zeros((1, 4, 4), np.float32), np.zeros((1, 4, 3), np.float32),
                                       np.ones((4, 4), np.float32), 2, 3, 1, 2, 0.1, 0.5, True, [10, 10, 5, 5])[0],
    lambda x: F.roi_align(x, np.zeros((1, 5), np.float32), 2, 2, 0.5, 2, True, F.MAXPOOL),
    lambda x: F.resize(x, 2.0, 1.5),
])
def test_from_dict_inverts_jsonify(build: object) -> None:
    op = build(F.const(X, X.shape)).node.op  # type: ignore[operator]
    again = from_dict(to_dict(op, "Op"), "Op")
    assert param_key(again.main) == param_key(op.main) and again.type == op.type and again.mainType == op.mainType
    assert to_dict(again, "Op") == to_dict(op, "Op")


def test_jsonop_bad_input() -> None:
    x = F.const([1.0], [1])
    with pytest.raises(ValueError, match="not valid JSON"):
        F.jsonop([x], "{type: ReLU", 1)
    with pytest.raises(ValueError, match="'Relux' is not a OpType name"):
        F.jsonop([x], '{"type": "Relux"}', 1)
    with pytest.raises(ValueError, match=r"Op.main: unknown field\(s\) \['slop'\] for table Relu"):
        F.jsonop([x], '{"type": "ReLU", "main_type": "Relu", "main": {"slop": 1}}', 1)
    with pytest.raises(ValueError, match="'Reluu' is not a OpParameter member"):
        F.jsonop([x], '{"type": "ReLU", "main_type": "Reluu", "main": {}}', 1)
    with pytest.raises(ValueError, match="expected a number"):
        F.jsonop([x], '{"type": "ReLU", "main_type": "Relu", "main": {"slope": "big"}}', 1)
    with pytest.raises(ValueError, match="output_number must be >= 1"):
        F.jsonop([x], '{"type": "ReLU"}', 0)
