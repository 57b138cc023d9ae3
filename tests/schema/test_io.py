"""load_net / save_net: round trips, dtype coercion, atomic writes, clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net, net_to_bytes, save_net
from mnnpy.schema import mnn_generated as fb
from support.models import scratch_cnn

from mnnpy import ModelError


def test_round_trip_preserves_everything(tmp_path: Path) -> None:
    net, weights = scratch_cnn()
    loaded = load_net(save_net(net, tmp_path / "m.mnn"))
    assert loaded.tensorName == ["x", "conv", "pool", "y"]
    assert loaded.outputName == ["y"]
    assert [op.type for op in loaded.oplists] == [fb.OpType.Input, fb.OpType.Convolution, fb.OpType.Pooling,
                                                  fb.OpType.Softmax]
    conv = loaded.oplists[1].main
    assert isinstance(conv, fb.Convolution2DT)
    assert conv.weight.dtype == np.float32
    np.testing.assert_array_equal(conv.weight, weights["w"].ravel())
    assert conv.common.relu and conv.common.kernelX == 3
    assert loaded.oplists[3].main.axis == 1
    assert loaded.bizCode == "mnnpy"


def test_float64_weights_are_written_as_float32(tmp_path: Path) -> None:
    """A float64 array in a [float] field must not be written as raw doubles (twice the values, all garbage)."""
    net, weights = scratch_cnn()
    net.oplists[1].main.weight = weights["w"].astype(np.float64).ravel()
    net.oplists[1].main.bias = [float(v) for v in weights["b"]]
    conv = load_net(net_to_bytes(net)).oplists[1].main
    assert conv.weight.shape == (108,)
    np.testing.assert_array_equal(conv.weight, weights["w"].ravel())
    np.testing.assert_array_equal(conv.bias, weights["b"])


def test_integers_that_do_not_fit_are_rejected() -> None:
    net, _ = scratch_cnn()
    net.oplists[1].inputIndexes = [2**40]
    with pytest.raises(ModelError, match="inputIndexes"):
        net_to_bytes(net)


def test_failed_save_leaves_existing_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "model.mnn"
    target.write_bytes(b"precious")
    net, _ = scratch_cnn()
    net.oplists[1].main.common = "not a table"  # Pack fails half-way through serialisation
    with pytest.raises(AttributeError):
        save_net(net, target)
    assert target.read_bytes() == b"precious"
    assert sorted(os.listdir(tmp_path)) == ["model.mnn"], "no temporary file may be left behind"


def test_failed_rename_leaves_existing_file_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "model.mnn"
    target.write_bytes(b"precious")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        save_net(scratch_cnn()[0], target)
    assert target.read_bytes() == b"precious"
    assert sorted(os.listdir(tmp_path)) == ["model.mnn"]


def test_saved_file_has_normal_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = save_net(scratch_cnn()[0], tmp_path / "m.mnn")
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_missing_file_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"nope\.mnn"):
        load_net(tmp_path / "nope.mnn")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda net: setattr(net.oplists[1], "inputIndexes", [7]), r"op #1 'conv' \(Convolution\) inputIndexes \[7\]"),
        (lambda net: setattr(net.oplists[2], "type", 555), "unknown OpType 555"),
        (lambda net: setattr(net.oplists[1].main.common, "strideX", 0), "strideX=0"),
        (lambda net: setattr(net.oplists[0].main, "dims", [1, -3, 8, 8]), "input dims"),
    ],
)
def test_semantic_errors_name_the_op(mutate: object, message: str) -> None:
    net, _ = scratch_cnn()
    mutate(net)  # type: ignore[operator]
    with pytest.raises(ModelError, match=message):
        load_net(net_to_bytes(net))


def test_const_blob_with_too_little_data_is_rejected() -> None:
    net, _ = scratch_cnn()
    blob = fb.BlobT()
    blob.dims, blob.dataType, blob.float32s = [2, 3], fb.DataType.DT_FLOAT, np.zeros(4, np.float32)
    const = fb.OpT()
    const.type, const.name, const.outputIndexes = fb.OpType.Const, "c", [3]
    const.mainType, const.main = fb.OpParameter.Blob, blob
    net.oplists.insert(0, const)
    with pytest.raises(ModelError, match=r"'c' \(Const\) has 4 values in float32s but dims \[2, 3\] need 6"):
        load_net(net_to_bytes(net))


def test_fields_flatc_renames_are_written_and_dumped() -> None:
    """flatc's object API renames some fields (`useRMSNorm` -> `useRmsnorm`, `Adata` -> `adata`); coercion and the
    JSON dump must still see them, under MNN's schema names in the JSON."""
    from mnnpy.schema.jsonify import to_dict

    net, _ = scratch_cnn()
    norm = fb.LayerNormT()
    norm.axis, norm.epsilon, norm.useRmsnorm = [-1], 1e-5, True
    norm.gamma = np.ones(4, np.float64)  # coerced to float32 through the renamed-field table
    bn = fb.BatchNormT()
    bn.channels, bn.adata = 2, np.array([1.5, 2.5], np.float64)
    for op_type, param_type, param in ((fb.OpType.LayerNorm, fb.OpParameter.LayerNorm, norm),
                                       (fb.OpType.BatchNorm, fb.OpParameter.BatchNorm, bn)):
        op = fb.OpT()
        op.type, op.name, op.inputIndexes, op.outputIndexes = op_type, f"p{op_type}", [3], [3]
        op.mainType, op.main = param_type, param
        net.oplists.append(op)
    loaded = load_net(net_to_bytes(net))
    assert loaded.oplists[4].main.useRmsnorm is True
    np.testing.assert_array_equal(loaded.oplists[4].main.gamma, np.ones(4, np.float32))
    np.testing.assert_array_equal(loaded.oplists[5].main.adata, [1.5, 2.5])
    dumped = to_dict(loaded, "Net")
    assert dumped["oplists"][4]["main"]["useRMSNorm"] is True
    assert dumped["oplists"][5]["main"]["Adata"] == [1.5, 2.5]
