"""Building `Extra` op parameters (key/value attributes), for ops MNN itself carries as Extra."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.schema import mnn_generated as fb


def attr(key: str, value: Any) -> Any:
    """One Attribute: bool -> b, int -> i, float -> f, str -> s, a sequence of ints/floats -> list.i / list.f."""
    a = fb.AttributeT()
    a.key = key
    if isinstance(value, (bool, np.bool_)):
        a.b = bool(value)
    elif isinstance(value, (int, np.integer)):
        a.i = int(value)
    elif isinstance(value, (float, np.floating)):
        a.f = float(value)
    elif isinstance(value, str):
        a.s = value
    elif isinstance(value, Sequence | np.ndarray):
        arr = np.asarray(value)
        a.list = fb.ListValueT()
        if arr.dtype.kind in "iub":
            a.list.i = arr.astype(np.int32).ravel()
        else:
            a.list.f = arr.astype(np.float32).ravel()
    else:
        raise TypeError(f"attribute {key!r}: unsupported value {value!r}")
    return a


def extra(op_type: str, engine: str, **attrs: Any) -> Any:
    """An ExtraT naming the op, with one attribute per keyword."""
    e = fb.ExtraT()
    e.type, e.engine = op_type, engine
    e.attr = [attr(k, v) for k, v in attrs.items()]
    return e

