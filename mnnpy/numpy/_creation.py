"""Array creation and conversion of `mnnpy.numpy` (MNN: `MNN.numpy`). Constants are made on the host."""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as em
from mnnpy.expr import shape_ops as es
from mnnpy.expr.enums import to_np_dtype
from mnnpy.expr.var import Var, const_of
from mnnpy.numpy._util import shape_of, var


def _dt(dtype: Any, default: Any = np.float32) -> np.dtype:
    want = to_np_dtype(default if dtype is None else dtype)
    if want == np.float64:
        return np.dtype(np.float32)
    return np.dtype(np.int32) if want == np.int64 else want


def array(object: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False,
          ndmin: int = 0, like: Any = None) -> Var:
    """A Var from array-like data or another Var (MNN: `numpy.array`)."""
    if isinstance(object, Var):
        v = var(object, dtype)
        if copy and v is object:
            v = const_of(np.array(object.read()))
    elif isinstance(object, (list, tuple)) and any(isinstance(o, Var) for o in object):
        v = es.stack([var(o) for o in object], 0)
        v = var(v, dtype)
    else:
        v = var(np.asarray(object), dtype)
    if v.ndim < ndmin:
        v = es.reshape(v, [1] * (ndmin - v.ndim) + v.shape)
    return v


def asarray(a: Any, dtype: Any = None, order: Any = None) -> Var:
    """A Var without copying Vars (MNN: `numpy.asarray`)."""
    return array(a, dtype, copy=False)


def asanyarray(a: Any, dtype: Any = None, order: Any = None) -> Var:
    """Same as asarray (MNN: `numpy.asanyarray`)."""
    return array(a, dtype, copy=False)


def ascontiguousarray(a: Any, dtype: Any = None) -> Var:
    """asarray with at least one dimension, as numpy (Vars are always contiguous) (MNN: `numpy.ascontiguousarray`)."""
    return array(a, dtype, copy=False, ndmin=1)


def asarray_chkfinite(a: Any, dtype: Any = None) -> Var:
    """asarray that raises on inf / NaN (MNN: `numpy.asarray_chkfinite`)."""
    v = array(a, dtype, copy=False)
    if v.np_dtype.kind == "f" and not bool(np.isfinite(v.read()).all()):
        raise ValueError("array must not contain infs or NaNs")
    return v


def asfarray(a: Any, dtype: Any = None) -> Var:
    """A float Var (MNN: `numpy.asfarray`)."""
    return var(array(a, copy=False), np.float32)


def asmatrix(data: Any, dtype: Any = None) -> Var:
    """A 2-D Var (MNN: `numpy.asmatrix`)."""
    return array(data, dtype, copy=False, ndmin=2)


mat = matrix = asmatrix


def asscalar(a: Any) -> Any:
    """The single element as a Python number (MNN: `numpy.asscalar`)."""
    return var(a).item()


def copy(a: Any, order: str = "K", subok: bool = False) -> Var:
    """A constant copy (MNN: `numpy.copy`)."""
    return const_of(np.array(var(a).read()))


def copyto(dst: Var, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """Write src (broadcast) into dst (MNN: `numpy.copyto`)."""
    value = es.broadcast_to(var(src, dst.np_dtype), dst.shape)
    if where is not True:
        value = es.select(var(where), value, dst)
    if dst.node.kind == "op":
        dst.replace(value)
    else:
        dst.write(value.read())


def frombuffer(buffer: Any, dtype: Any = None, count: int = -1, offset: int = 0) -> Var:
    """A Var from raw bytes (MNN: `numpy.frombuffer`)."""
    return const_of(np.frombuffer(buffer, dtype=to_np_dtype(dtype), count=count, offset=offset).copy())


def fill(self: Var, fill_value: Any) -> None:
    """Set every element of a leaf Var (MNN: `numpy.fill`)."""
    self.fill(fill_value)


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> Var:
    """A constant of `shape` filled with a value (MNN: `numpy.full`)."""
    default = np.float32 if isinstance(fill_value, float) else np.int32 if isinstance(fill_value, int) else None
    return const_of(np.full(shape_of(shape), fill_value, dtype=_dt(dtype, default)))


def zeros(shape: Any, dtype: Any = None, order: str = "C") -> Var:
    """Zeros (MNN: `numpy.zeros`)."""
    return const_of(np.zeros(shape_of(shape), dtype=_dt(dtype)))


def ones(shape: Any, dtype: Any = None, order: str = "C") -> Var:
    """Ones (MNN: `numpy.ones`)."""
    return const_of(np.ones(shape_of(shape), dtype=_dt(dtype)))


def empty(shape: Any, dtype: Any = None, order: str = "C") -> Var:
    """Uninitialised in numpy; zeros here (MNN: `numpy.empty`)."""
    return zeros(shape, dtype)


def _like(a: Any, dtype: Any, shape: Any) -> tuple[list[int], np.dtype]:
    v = var(a)
    return (v.shape if shape is None else shape_of(shape)), (v.np_dtype if dtype is None else _dt(dtype))


def zeros_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Var:
    """Zeros shaped like a (MNN: `numpy.zeros_like`)."""
    shp, dt = _like(a, dtype, shape)
    return const_of(np.zeros(shp, dt))


def ones_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Var:
    """Ones shaped like a (MNN: `numpy.ones_like`)."""
    shp, dt = _like(a, dtype, shape)
    return const_of(np.ones(shp, dt))


def empty_like(prototype: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None) -> Var:
    """Zeros shaped like the prototype (MNN: `numpy.empty_like`)."""
    return zeros_like(prototype, dtype, shape=shape)


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
              shape: Any = None) -> Var:
    """A value in a's shape (MNN: `numpy.full_like`)."""
    shp, dt = _like(a, dtype, shape)
    return const_of(np.full(shp, fill_value, dt))


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, order: str = "C") -> Var:  # noqa: N803
    """Ones on a diagonal (MNN: `numpy.eye`)."""
    return const_of(np.eye(N, M, k, dtype=_dt(dtype)))


def identity(n: int, dtype: Any = None) -> Var:
    """Square identity (MNN: `numpy.identity`)."""
    return eye(n, dtype=dtype)


def arange(*args: Any, **kwargs: Any) -> Var:
    """[start, stop) by step, through the core's Range op (MNN: `numpy.arange`)."""
    dtype = kwargs.pop("dtype", None)
    names = ["start", "stop", "step"]
    vals = list(args)
    for name in names[len(vals):]:
        if name in kwargs:
            vals.append(kwargs[name])
    if len(vals) == 1:
        vals = [0, vals[0], 1]
    elif len(vals) == 2:
        vals = [vals[0], vals[1], 1]
    v = es.range(*vals)
    return v if dtype is None else var(v, dtype)


def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0) -> Any:
    """Evenly spaced numbers (MNN: `numpy.linspace`)."""
    values, step = np.linspace(start, stop, num, endpoint=endpoint, retstep=True)
    out = const_of(values.astype(_dt(dtype)))
    return (out, float(step)) if retstep else out


def logspace(start: float, stop: float, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Any = None, axis: int = 0) -> Var:
    """Numbers evenly spaced on a log scale (MNN: `numpy.logspace`)."""
    return const_of(np.logspace(start, stop, num, endpoint=endpoint, base=base).astype(_dt(dtype)))


def geomspace(start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Var:
    """A geometric progression (MNN: `numpy.geomspace`)."""
    return const_of(np.geomspace(start, stop, num, endpoint=endpoint).astype(_dt(dtype)))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """Same shape and elements (MNN: `numpy.array_equal`)."""
    a, b = var(a1), var(a2)
    if a.shape != b.shape:
        return False
    return bool(es_all(em.equal(*em._pair(a, b))))


def array_equiv(a1: Any, a2: Any) -> bool:
    """Broadcastable and equal (MNN: `numpy.array_equiv`)."""
    a, b = var(a1), var(a2)
    try:
        np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        return False
    return bool(es_all(em.equal(*em._pair(a, b))))


def es_all(v: Var) -> Var:
    """All elements non-zero, through the core."""
    from mnnpy.expr import reduce as er

    return er.reduce_all(v, [], False)
