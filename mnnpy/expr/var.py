"""`Var`: a lazy value in an expression graph (MNN: `MNN.expr.Var`)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mnnpy.expr import enums, graph
from mnnpy.expr.enums import FORMAT_OF_NAME, data_format, dtype, normalise_array, to_expr_dtype, to_np_dtype
from mnnpy.expr.graph import CONST, INPUT, OP, Node
from mnnpy.expr.var_methods import VarMethods
from mnnpy.schema.errors import ModelError


class Var(VarMethods):
    """One output of an expression (MNN: `Var`). Values are computed by the core on `read()` and cached."""

    __array_priority__ = 100  # numpy defers `ndarray op Var` to Var's reflected operators

    def __init__(self, node: Node, index: int = 0) -> None:
        self.node = node
        self.index = index
        self._value: np.ndarray | None = None
        self._stamp: tuple | None = None

    # *** properties ***
    @property
    def shape(self) -> list[int]:
        """The shape (logical NCHW order for NC4HW4) (MNN: `Var.shape`)."""
        return list(graph.describe(self)[0])

    @property
    def dtype(self) -> dtype:
        """Element type (MNN: `Var.dtype`)."""
        return to_expr_dtype(self.np_dtype)

    @property
    def np_dtype(self) -> np.dtype:
        """Element type as a numpy dtype."""
        dts = self.node.dtypes
        if dts is None:  # ops loaded from a model: ask the core's shape inference
            return np.dtype(graph.describe(self)[1])
        return dts[0] if self.node.kind != OP else dts[self.index]

    @property
    def data_format(self) -> data_format:
        """Dimension format (MNN: `Var.data_format`)."""
        return FORMAT_OF_NAME[graph.describe(self)[2]]

    @property
    def size(self) -> int:
        """Number of elements (MNN: `Var.size`)."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        """Rank (MNN: `Var.ndim`)."""
        return len(self.shape)

    @property
    def name(self) -> str:
        """Name of the producing expression (MNN: `Var.name`)."""
        return self.node.name

    @name.setter
    def name(self, value: str) -> None:
        self.node.name = str(value)

    @property
    def op_type(self) -> str:
        """MNN op type name of the producer: "Const", "Input" or e.g. "BinaryOp" (MNN: `Var.op_type`)."""
        if self.node.kind == CONST:
            return "Const"
        if self.node.kind == INPUT:
            return "Input"
        return graph.op_type_name(self.node.op.type)

    @property
    def inputs(self) -> list[Var]:
        """Input Vars of the producer (MNN: `Var.inputs`)."""
        return list(self.node.inputs)

    # *** values ***
    def read(self) -> np.ndarray:
        """The value as a numpy array, computed by the core and cached until an input changes (MNN: `Var.read`)."""
        node = self.node
        if node.kind != OP:
            if node.value is None:
                raise ModelError(f"placeholder {node.name or '<unnamed>'} has no value: write() it first")
            return node.value
        nodes = graph.topo([self])
        st = graph.stamp(nodes)
        if self._value is None or self._stamp != st:
            self._value = graph.evaluate([self])[0]
            self._stamp = st
        return self._value

    def read_as_tuple(self) -> tuple:
        """The flattened value as a tuple of Python numbers (MNN: `Var.read_as_tuple`)."""
        return tuple(self.read().ravel().tolist())

    def item(self, idx: int | None = None) -> Any:
        """One element as a Python number (MNN: `Var.item`)."""
        value = self.read()
        return value.item() if idx is None else value.ravel()[idx].item()

    def write(self, data: Any) -> None:
        """Set the value of a placeholder or constant; dependents recompute on their next read (MNN: `Var.write`)."""
        node = self.node
        if node.kind == OP:
            raise ModelError("write() needs a placeholder or constant Var, not the result of an op")
        arr = np.asarray(data)
        if node.value is not None or node.kind == INPUT:
            want = node.dtypes[0]
            size = int(np.prod(node.shape, dtype=np.int64))
            if arr.size != size:
                raise ModelError(f"write(): {arr.size} values for a Var of shape {list(node.shape)}")
            arr = np.require(arr.astype(want, copy=False), requirements="C").reshape(node.shape)
        node.set_value(arr.copy())

    def fix_as_const(self) -> None:
        """Compute the value and make this expression a constant (MNN: `Var.fix_as_const`)."""
        value = np.array(self.read())
        self.node.become(Node(CONST, value=value, shape=value.shape, dtypes=[value.dtype], name=self.node.name))
        self.index = 0

    def fix_as_placeholder(self) -> None:
        """Make this expression a placeholder holding its current value (MNN: `Var.fix_as_placeholder`)."""
        value = np.array(self.read())
        fmt = graph.describe(self)[2] if self.node.kind == OP else self.node.fmt
        self.node.become(Node(INPUT, value=value, shape=value.shape, dtypes=[value.dtype], fmt=fmt,
                              name=self.node.name))
        self.index = 0

    def fix_as_trainable(self) -> None:
        """Same as fix_as_const here (no training) (MNN: `Var.fix_as_trainable`)."""
        self.fix_as_const()

    def replace(self, other: Var) -> None:
        """Make this Var's expression compute `other` instead; dependents follow (MNN: `Var.replace`)."""
        other = to_var(other)
        if other.node is self.node:
            return
        ident = Node(OP, graph.make_op(_IDENTITY), [Var(other.node, other.index)], dtypes=[other.np_dtype],
                     name=self.node.name)
        self.node.become(ident)
        self.index = 0

    def set_inputs(self, inputs: Sequence[Var]) -> None:
        """Rewire the producer's inputs (MNN: `Var.set_inputs`)."""
        if self.node.kind != OP:
            raise ModelError("set_inputs() needs the result of an op")
        self.node.inputs = [Var(v.node, v.index) if isinstance(v, Var) else to_var(v) for v in inputs]
        graph._EPOCH[0] += 1

    def close(self) -> None:
        """Drop the cached value (MNN: `Var.close`)."""
        self._value = None

    def valid(self) -> bool:
        """Whether the Var can be computed (MNN: `Var.valid`)."""
        try:
            graph.describe(self)
        except (ModelError, NotImplementedError):
            return False
        return True

    def sync(self) -> None:
        """Compute now (MNN: `Var.sync`)."""
        self.read()

    def copy(self) -> Var:
        """A constant holding a copy of the value (MNN: `Var.copy`)."""
        return const_of(np.array(self.read()))

    def copy_from(self, other: Var) -> None:
        """Write another Var's value into this placeholder (MNN: `Var.copy_from`)."""
        self.write(to_var(other).read())

    def set_order(self, fmt: enums.data_format) -> None:
        """Change the declared format of a leaf (MNN: `Var.set_order`)."""
        if self.node.kind == OP:
            raise ModelError("set_order() needs a placeholder or constant")
        self.node.fmt = fmt.name
        self.node.version += 1

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        value = self.read()
        return value.astype(dtype) if dtype is not None else np.array(value)

    def __repr__(self) -> str:
        try:
            return repr(self.read())
        except (ModelError, NotImplementedError) as exc:
            return f"<Var {self.op_type} (not computable: {exc})>"

    def __str__(self) -> str:
        return str(self.read())

    def __bool__(self) -> bool:
        return bool(self.read())

    def __float__(self) -> float:
        return float(self.read())

    def __int__(self) -> int:
        return int(self.read())

    def __index__(self) -> int:
        return int(self.read())

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d Var")
        return shape[0]

    def __iter__(self) -> Iterator[Var]:
        for i in range(len(self)):
            yield self[i]

    def __hash__(self) -> int:
        return id(self)

    # *** operators (implemented in expr.math / expr.shape_ops) ***
    def __add__(self, other: Any) -> Var:
        return _m().add(self, other)

    def __radd__(self, other: Any) -> Var:
        return _m().add(other, self)

    def __sub__(self, other: Any) -> Var:
        return _m().subtract(self, other)

    def __rsub__(self, other: Any) -> Var:
        return _m().subtract(other, self)

    def __mul__(self, other: Any) -> Var:
        return _m().multiply(self, other)

    def __rmul__(self, other: Any) -> Var:
        return _m().multiply(other, self)

    def __truediv__(self, other: Any) -> Var:
        return _m().divide(self, other)

    def __rtruediv__(self, other: Any) -> Var:
        return _m().divide(other, self)

    def __floordiv__(self, other: Any) -> Var:
        return _m().floordiv(self, other)

    def __rfloordiv__(self, other: Any) -> Var:
        return _m().floordiv(other, self)

    def __mod__(self, other: Any) -> Var:
        return _m().floormod(self, other)

    def __rmod__(self, other: Any) -> Var:
        return _m().floormod(other, self)

    def __pow__(self, other: Any) -> Var:
        return _m().pow(self, other)

    def __rpow__(self, other: Any) -> Var:
        return _m().pow(other, self)

    def __matmul__(self, other: Any) -> Var:
        return _m().matmul(self, other)

    def __neg__(self) -> Var:
        return _m().negative(self)

    def __pos__(self) -> Var:
        return self

    def __abs__(self) -> Var:
        return _m().abs(self)

    def __eq__(self, other: object) -> Var:  # type: ignore[override]
        return _m().equal(self, other)

    def __ne__(self, other: object) -> Var:  # type: ignore[override]
        return _m().not_equal(self, other)

    def __lt__(self, other: Any) -> Var:
        return _m().less(self, other)

    def __le__(self, other: Any) -> Var:
        return _m().less_equal(self, other)

    def __gt__(self, other: Any) -> Var:
        return _m().greater(self, other)

    def __ge__(self, other: Any) -> Var:
        return _m().greater_equal(self, other)

    def __and__(self, other: Any) -> Var:
        return _m().bitwise_and(self, other)

    def __or__(self, other: Any) -> Var:
        return _m().bitwise_or(self, other)

    def __xor__(self, other: Any) -> Var:
        return _m().bitwise_xor(self, other)

    def __getitem__(self, index: Any) -> Var:
        from mnnpy.expr import indexing

        return indexing.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        from mnnpy.expr import indexing

        result = indexing.setitem(Var(self.node, self.index), index, value)
        self.node, self.index = result.node, result.index
        self._value = None

    def __delitem__(self, index: Any) -> None:
        raise NotImplementedError("mnnpy.expr does not implement Var.__delitem__")


_IDENTITY = int(graph.fb.OpType.Identity)


def _m() -> Any:
    from mnnpy.expr import math

    return math


def const_of(value: np.ndarray, fmt: str = "NCHW", name: str = "") -> Var:
    """A constant Var holding `value` (no copy)."""
    return Var(Node(CONST, value=value, shape=value.shape, dtypes=[value.dtype], fmt=fmt, name=name))


def to_var(x: Any, like: Var | None = None) -> Var:
    """A Var for `x`: Vars pass through; Python scalars take `like`'s dtype (float scalar + int Var -> float)."""
    if isinstance(x, Var):
        return x
    if like is not None and isinstance(x, (builtins.int, builtins.float, builtins.bool, np.generic)):
        want = like.np_dtype
        if isinstance(x, (builtins.float, np.floating)) and want.kind != "f":
            want = np.dtype(np.float32)
        return const_of(np.asarray(x, dtype=want))
    return const_of(normalise_array(x))


def apply(op_type: int, inputs: Sequence[Any], main_type: int = 0, main: Any = None, n_out: int = 1,
          dtypes: Sequence[Any] | None = None, name: str = "") -> Any:
    """Create an op node; returns its Var (or a list of Vars when n_out > 1).

    Args:
        op_type: the MNN OpType number.
        inputs: input Vars (or values turned into constants).
        main_type / main: the OpParameter union tag and table.
        n_out: number of outputs.
        dtypes: output dtypes (default: the first input's dtype).
        name: expression name.
    """
    # snapshot (node, index): a later `v[...] = ...` rebinds v to a new node and must not rewire this op
    ins = [Var(v.node, v.index) if isinstance(v, Var) else to_var(v) for v in inputs]
    if dtypes is None:
        first = ins[0].np_dtype if ins else np.dtype(np.float32)
        dtypes = [first] * n_out
    op = graph.make_op(op_type, main_type, main, name)
    node = Node(OP, op, ins, n_out, dtypes=[to_np_dtype(d) for d in dtypes], name=name)
    if n_out == 1:
        return Var(node, 0)
    return [Var(node, k) for k in range(n_out)]
