"""numpy-style methods of `Var` (MNN: `Var.astype`, `Var.reshape`, `Var.sum`, ...), kept apart from the core class.

Each delegates to the expr / numpy functions, imported on call to avoid import cycles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mnnpy.expr.graph import INPUT
from mnnpy.schema.errors import ModelError

if TYPE_CHECKING:
    from mnnpy.expr.enums import data_format
    from mnnpy.expr.var import Var


def _m() -> Any:
    from mnnpy.expr import math

    return math


class VarMethods:
    """Mixin of Var's numpy-style methods."""

    node: Any

    if TYPE_CHECKING:  # provided by Var

        @property
        def shape(self) -> list[int]: ...

        @property
        def ndim(self) -> int: ...

        @property
        def np_dtype(self) -> np.dtype: ...

        def read(self) -> np.ndarray: ...

        def write(self, data: Any) -> None: ...

    def astype(self, dtype: Any) -> Var:
        """Cast (MNN: `Var.astype`)."""
        return _m().cast(self, dtype)

    def reshape(self, *shape: Any) -> Var:
        """Reshape (MNN: `Var.reshape`)."""
        from mnnpy.expr import shape_ops

        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else shape
        return shape_ops.reshape(self, list(dims))

    def transpose(self, *axes: Any) -> Var:
        """Transpose (MNN: `Var.transpose`)."""
        from mnnpy.expr import shape_ops

        perm = axes[0] if len(axes) == 1 and isinstance(axes[0], (list, tuple)) else axes
        return shape_ops.transpose(self, list(perm) if perm else None)

    @property
    def T(self) -> Var:
        """Reversed axes."""
        return self.transpose()

    def flatten(self) -> Var:
        """1-D copy (MNN: `Var.flatten`)."""
        return self.reshape([-1])

    def ravel(self) -> Var:
        """1-D view (MNN: `Var.ravel`)."""
        return self.reshape([-1])

    def squeeze(self, axis: Any = None) -> Var:
        """Drop size-1 axes (MNN: `Var.squeeze`)."""
        from mnnpy.expr import shape_ops

        axes = [] if axis is None else [axis] if isinstance(axis, int) else list(axis)
        return shape_ops.squeeze(self, axes)

    def swapaxes(self, a: int, b: int) -> Var:
        """Swap two axes (MNN: `Var.swapaxes`)."""
        perm = list(range(self.ndim))
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(perm)

    def resize(self, shape: Sequence[int]) -> None:
        """Change a placeholder's shape; its value is dropped (MNN: `Var.resize`)."""
        node = self.node
        if node.kind != INPUT:
            raise ModelError("resize() needs a placeholder")
        node.shape = tuple(int(d) for d in shape)
        node.value = None
        node.version += 1

    def reorder(self, fmt: data_format) -> Var:
        """Convert to another data format (MNN: `Var.reorder`)."""
        return _m().convert(self, fmt)

    def repeat(self, repeats: int, axis: int | None = None) -> Var:
        """numpy's repeat (MNN: `Var.repeat`)."""
        import mnnpy.numpy as mnp

        return mnp.repeat(self, repeats, axis)

    def fill(self, value: Any) -> None:
        """Set every element of a leaf to `value` (MNN: `Var.fill`)."""
        self.write(np.full(self.shape, value, dtype=self.np_dtype))

    def clip(self, a_min: Any, a_max: Any) -> Var:
        """Clip (MNN: `Var.clip`)."""
        return _m().minimum(_m().maximum(self, a_min), a_max)

    def round(self) -> Var:
        """Round half to even (MNN: `Var.round`)."""
        return _m().round(self)

    def dot(self, other: Any) -> Var:
        """numpy's dot (MNN: `Var.dot`)."""
        import mnnpy.numpy as mnp

        return mnp.dot(self, other)

    def _reduce(self, name: str, axis: Any, keepdims: bool) -> Var:
        from mnnpy.expr import reduce

        axes = [] if axis is None else [axis] if isinstance(axis, int) else list(axis)
        return getattr(reduce, name)(self, axes, keepdims)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Sum (MNN: `Var.sum`)."""
        return self._reduce("reduce_sum", axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Mean (MNN: `Var.mean`)."""
        return self._reduce("reduce_mean", axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Maximum (MNN: `Var.max`)."""
        return self._reduce("reduce_max", axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Minimum (MNN: `Var.min`)."""
        return self._reduce("reduce_min", axis, keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Product (MNN: `Var.prod`)."""
        return self._reduce("reduce_prod", axis, keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Var:
        """All non-zero (MNN: `Var.all`)."""
        return self._reduce("reduce_all", axis, keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Any non-zero (MNN: `Var.any`)."""
        return self._reduce("reduce_any", axis, keepdims)

    def ptp(self, axis: Any = None) -> Var:
        """max - min (MNN: `Var.ptp`)."""
        return self.max(axis) - self.min(axis)

    def var(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Variance (MNN: `Var.var`)."""
        import mnnpy.numpy as mnp

        return mnp.var(self, axis, keepdims=keepdims)

    def std(self, axis: Any = None, keepdims: bool = False) -> Var:
        """Standard deviation (MNN: `Var.std`)."""
        import mnnpy.numpy as mnp

        return mnp.std(self, axis, keepdims=keepdims)

    def argmax(self, axis: int | None = None) -> Var:
        """Index of the maximum (flattened when axis is None) (MNN: `Var.argmax`)."""
        import mnnpy.numpy as mnp

        return mnp.argmax(self, axis)

    def argmin(self, axis: int | None = None) -> Var:
        """Index of the minimum (MNN: `Var.argmin`)."""
        import mnnpy.numpy as mnp

        return mnp.argmin(self, axis)

    def sort(self, axis: int = -1) -> Var:
        """Sorted copy (MNN: `Var.sort`)."""
        from mnnpy.expr import reduce

        return reduce.sort(self, axis)

    def argsort(self, axis: int = -1) -> Var:
        """Sorting indices (MNN: `Var.argsort`)."""
        from mnnpy.expr import reduce

        return reduce.sort(self, axis, arg=True)

    def nonzero(self) -> tuple[Var, ...]:
        """Indices of non-zero elements (MNN: `Var.nonzero`)."""
        import mnnpy.numpy as mnp

        return mnp.nonzero(self)

    def searchsorted(self, v: Any, side: str = "left") -> Var:
        """Not implemented (MNN: `Var.searchsorted`)."""
        raise NotImplementedError("mnnpy.expr does not implement Var.searchsorted")

    def argpartition(self, kth: int, axis: int = -1) -> Var:
        """Not implemented (MNN: `Var.argpartition`)."""
        raise NotImplementedError("mnnpy.expr does not implement Var.argpartition")

    def copy_to_device_ptr(self, ptr: int, device: int = 0) -> None:
        """Not available: mnnpy has no raw device pointers (MNN: `Var.copy_to_device_ptr`)."""
        raise NotImplementedError("mnnpy.expr does not implement Var.copy_to_device_ptr")

    def set_device_ptr(self, ptr: int, device: int = 0) -> None:
        """Not available: mnnpy has no raw device pointers (MNN: `Var.set_device_ptr`)."""
        raise NotImplementedError("mnnpy.expr does not implement Var.set_device_ptr")

    @property
    def ptr(self) -> int:
        """Address of the host value (MNN: `Var.ptr`)."""
        return int(self.read().ctypes.data)
