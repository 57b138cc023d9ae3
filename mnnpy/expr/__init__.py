"""`mnnpy.expr`: MNN's expression API (MNN 3.6.1 `MNN.expr`).

Vars are lazy: math, reductions, shape and nn functions create MNN ops; reading a Var plans the subgraph once
through the core (shape inference, geometry, CPU backend) and caches the plan and the result.

Modules: `var` (Var), `graph` (nodes, plan cache, evaluation), `creation` (const, placeholder), `math`
(unary/binary/cast/matmul), `reduce` (reductions, argmax, sort, cumsum), `shape_ops` (reshape, concat, gather,
...), `indexing` (`Var[...]`), `nn_ops` (conv2d, pools, activations), `roi` (roi_pooling, roi_align,
crop_and_resize), `detection` (nms, detection_post_process), `lowlevel` (quant, dequant, svd, raster), `jsonop`,
`io` (load_as_dict, save), `unsupported` (executor settings).
"""

# ruff: noqa: F401 - this module re-exports MNN.expr's names; __all__ is computed from them below
from __future__ import annotations

from mnnpy.expr.creation import const, placeholder, randomuniform, scalar
from mnnpy.expr.detection import detection_post_process, nms
from mnnpy.expr.enums import (
    Backend,
    Interp_Method,
    MemoryMode,
    Padding_Mode,
    PadValue_Mode,
    Pooling_Mode,
    PowerMode,
    PrecisionMode,
    data_format,
    dtype,
)
from mnnpy.expr.graph import set_thread_number
from mnnpy.expr.io import get_inputs_and_outputs, load_as_dict, load_as_list, save
from mnnpy.expr.jsonop import jsonop
from mnnpy.expr.lowlevel import dequant, quant, raster, svd
from mnnpy.expr.math import (
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bias_add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    cast,
    ceil,
    clone,
    convert,
    cos,
    cosh,
    divide,
    eltwise_max,
    eltwise_prod,
    eltwise_sub,
    eltwise_sum,
    equal,
    erf,
    erfc,
    erfinv,
    exp,
    expm1,
    floor,
    floordiv,
    floormod,
    gelu,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log1p,
    logical_or,
    matmul,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    reciprocal,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    softplus,
    softsign,
    sqrt,
    square,
    squared_difference,
    subtract,
    tan,
    tanh,
)
from mnnpy.expr.nn_ops import (
    avg_pool,
    conv2d,
    conv2d_transpose,
    elu,
    max_pool,
    normalize,
    prelu,
    relu,
    relu6,
    resize,
    scale,
    selu,
    softmax,
)
from mnnpy.expr.reduce import (
    argmax,
    argmin,
    cumprod,
    cumsum,
    histogram,
    moments,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    sort,
)
from mnnpy.expr.roi import crop_and_resize, roi_align, roi_pooling
from mnnpy.expr.shape_ops import (
    batch_to_space_nd,
    broadcast_to,
    channel_shuffle,
    concat,
    crop,
    depth_to_space,
    expand_dims,
    fill,
    gather,
    gather_nd,
    matrix_band_part,
    one_hot,
    pad,
    range,
    rank,
    reshape,
    reverse,
    reverse_sequence,
    scatter_nd,
    select,
    setdiff1d,
    shape,
    size,
    slice,
    space_to_batch_nd,
    space_to_depth,
    split,
    squeeze,
    stack,
    strided_slice,
    tile,
    transpose,
    unravel_index,
    unsqueeze,
    unstack,
    where,
    zeros_like,
)
from mnnpy.expr.unsupported import gc, lazy_eval, set_global_executor_config, set_lazy_mode
from mnnpy.expr.var import Var

# MNN's module-level constants
NCHW, NHWC, NC4HW4 = data_format.NCHW, data_format.NHWC, data_format.NC4HW4
float, double, int, int64, uint8, int8 = (dtype.float, dtype.double, dtype.int, dtype.int64, dtype.uint8,
                                          dtype.int8)
VALID, SAME, CAFFE = Padding_Mode.VALID, Padding_Mode.SAME, Padding_Mode.CAFFE
CONSTANT, REFLECT, SYMMETRIC = PadValue_Mode.CONSTANT, PadValue_Mode.REFLECT, PadValue_Mode.SYMMETRIC
MAXPOOL, AVEPOOL = Pooling_Mode.MAXPOOL, Pooling_Mode.AVEPOOL
BILINEAR, NEAREST = Interp_Method.BILINEAR, Interp_Method.NEAREST
CPU, OPENCL, OPENGL, VULKAN, METAL, TRT, CUDA, HIAI = (Backend.CPU, Backend.OPENCL, Backend.OPENGL, Backend.VULKAN,
                                                      Backend.METAL, Backend.TRT, Backend.CUDA, Backend.HIAI)
Normal, High, Low, Low_BF16 = (PrecisionMode.Normal, PrecisionMode.High, PrecisionMode.Low,
                               PrecisionMode.Low_BF16)

__all__ = [name for name in dir() if not name.startswith("_") and name != "annotations"]
