"""Const payloads: int64 is stored as int32 clamped to its range (as MNNConvert), never wrapped."""

from __future__ import annotations

import numpy as np
from mnnpy.converter.writer import make_blob
from mnnpy.schema import mnn_generated as fb


def test_int64_is_clamped_not_wrapped() -> None:
    blob = make_blob(np.array([0, 129, 2**63 - 1, -(2**63), 2**31], np.int64))
    assert blob.dataType == fb.DataType.DT_INT32
    np.testing.assert_array_equal(blob.int32s, [0, 129, 2**31 - 1, -(2**31), 2**31 - 1])
