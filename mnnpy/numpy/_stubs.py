"""The 101 names MNN.numpy leaves unimplemented: each raises NotImplementedError naming itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NAMES: tuple[str, ...] = (
    "append", "argpartition", "asfortranarray", "base_repr", "binary_repr", "bincount", "block", "bmat",
    "broadcast", "choose", "compress", "convolve", "corrcoef", "correlate", "cov", "cross",
    "deg2rad", "degrees", "delete", "diag", "diag_indices", "diag_indices_from", "diagflat", "diagonal",
    "diff", "digitize", "ediff1d", "extract", "fill_diagonal", "flatiter", "flip", "fliplr",
    "flipud", "frexp", "fromfile", "fromfunction", "fromiter", "fromstring", "gcd", "gradient",
    "heaviside", "histogram2d", "histogram_bin_edges", "histogramdd", "i0", "indices", "insert", "interp",
    "invert", "ix_", "lcm", "left_shift", "loadtxt", "mask_indices", "median", "nan_to_num",
    "nanmedian", "nanpercentile", "nanquantile", "ndenumerate", "ndindex", "nditer", "nested_iters", "nextafter",
    "outer", "packbits", "partition", "percentile", "place", "put", "put_along_axis", "putmask",
    "quantile", "rad2deg", "radians", "ravel_multi_index", "real_if_close", "require", "resize", "right_shift",
    "roll", "rot90", "searchsorted", "select", "sort_complex", "spacing", "take", "take_along_axis",
    "trapz", "tri", "tril", "tril_indices", "tril_indices_from", "trim_zeros", "triu", "triu_indices",
    "triu_indices_from", "unique", "unpackbits", "unwrap", "vander",
)


def _stub(name: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"mnnpy.numpy does not implement {name}")

    stub.__name__ = name
    stub.__qualname__ = name
    stub.__doc__ = f"Not implemented, as in MNN (MNN: `numpy.{name}` raises too)."
    return stub


STUBS: dict[str, Callable[..., Any]] = {name: _stub(name) for name in NAMES}
