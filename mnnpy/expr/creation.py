"""Leaves of the graph: constants, placeholders, scalars, random data (MNN: `_Const`, `_Input`, `_Scalar`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr.enums import FORMAT_NAME, MNN_OF_NP, data_format, dtype, normalise_array, to_np_dtype
from mnnpy.expr.graph import INPUT, Node
from mnnpy.expr.var import Var, apply, const_of
from mnnpy.schema import mnn_generated as fb


def const(value_list: Any, shape: Sequence[int] | None = None, data_format: data_format = data_format.NCHW,
          dtype: Any = dtype.float) -> Var:
    """A constant Var from a list / tuple / ndarray reshaped to `shape` (MNN: `expr.const`)."""
    arr = normalise_array(value_list, dtype)
    if shape is not None:
        arr = arr.reshape([int(d) for d in shape])
    return const_of(np.require(arr, requirements="C"), FORMAT_NAME[data_format])


def placeholder(shape: Sequence[int] = (), format: data_format = data_format.NCHW,
                dtype: Any = dtype.float) -> Var:
    """An input Var whose value is set with `write()` (MNN: `expr.placeholder`)."""
    dt = to_np_dtype(dtype)
    if dt == np.int64:
        dt = np.dtype(np.int32)
    return Var(Node(INPUT, shape=tuple(int(d) for d in shape), fmt=FORMAT_NAME[format], dtypes=[dt]))


def scalar(value: Any, dtype: Any = None) -> Var:
    """A 0-d constant (float32 for floats, int32 for ints unless `dtype`) (MNN: `expr.scalar`)."""
    return const_of(normalise_array(np.asarray(value).reshape(()), dtype))


def randomuniform(shape: Sequence[int], dtype: Any = dtype.float, low: float = 0.0, high: float = 1.0,
                  seed0: int = 0, seed1: int = 1) -> Var:
    """Uniform random values in [low, high), a RandomUniform op run by the core (MNN: `expr.randomuniform`).

    As MNN 3.6.1 does, the values depend on the seeds only through whether both are 0 (see the CPU kernel), so
    equal calls give equal values.
    """
    dt = to_np_dtype(dtype)
    if dt == np.int64:
        dt = np.dtype(np.int32)
    dims = [int(d) for d in (shape.read() if isinstance(shape, Var) else np.asarray(shape).ravel())]
    if any(d < 0 for d in dims):
        raise ValueError(f"mnnpy.expr.randomuniform: negative shape {dims}")
    p = fb.RandomUniformT()
    p.seed, p.seed2 = int(seed0), int(seed1)
    p.type = MNN_OF_NP.get(dt, 1)
    p.low, p.high = float(low), float(high)
    return apply(fb.OpType.RandomUniform, [const_of(np.array(dims, np.int32))], fb.OpParameter.RandomUniform, p,
                 dtypes=[dt])
