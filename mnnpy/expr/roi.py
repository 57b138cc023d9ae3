"""Region-of-interest ops of `MNN.expr`: roi_pooling, roi_align, crop_and_resize (MNN: `_ROIPooling`, `_ROIAlign`,
`_CropAndResize`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mnnpy.expr import math as m
from mnnpy.expr.enums import Interp_Method, Pooling_Mode, data_format
from mnnpy.expr.var import Var, apply, to_var
from mnnpy.schema import mnn_generated as fb

OT = fb.OpType
PT = fb.OpParameter


def _float_var(x: Any) -> Var:
    v = to_var(x)
    return v if v.np_dtype == np.float32 else m.cast(v, np.float32)


def _roi_inputs(fn: str, input: Any, roi: Any, pooled_height: int, pooled_width: int, output_grad: bool,
                backward_diff: Any) -> list[Var]:
    """[input, roi] (forward) or [input, roi, backward_diff] (output_grad), checked."""
    x, r = _float_var(input), _float_var(roi)
    if x.ndim != 4:
        raise ValueError(f"mnnpy.expr.{fn}: input must be 4-D [N, C, H, W], got shape {x.shape}")
    if r.ndim != 2 or r.shape[1] != 5:
        raise ValueError(f"mnnpy.expr.{fn}: roi must be [num_rois, 5] (batch, x1, y1, x2, y2), got {r.shape}")
    if int(pooled_height) <= 0 or int(pooled_width) <= 0:
        raise ValueError(f"mnnpy.expr.{fn}: pooled size must be positive, got {pooled_height}x{pooled_width}")
    if x.data_format == data_format.NHWC:
        x = m.convert(x, data_format.NC4HW4)
    if not output_grad:
        return [x, r]
    if backward_diff is None:
        raise ValueError(f"mnnpy.expr.{fn}: output_grad=True needs backward_diff (the pooled output's gradient)")
    diff = _float_var(backward_diff)
    want = [r.shape[0], x.shape[1], int(pooled_height), int(pooled_width)]
    if diff.shape != want:
        raise ValueError(f"mnnpy.expr.{fn}: backward_diff must be {want}, got {diff.shape}")
    return [x, r, diff]


def _params(pooled_height: int, pooled_width: int, spatial_scale: float, output_grad: bool) -> Any:
    p = fb.RoiParametersT()
    p.outputGrad = bool(output_grad)
    p.pooledHeight, p.pooledWidth = int(pooled_height), int(pooled_width)
    p.spatialScale = float(spatial_scale)
    return p


def roi_pooling(input: Any, roi: Any, pooled_height: int, pooled_width: int, spatial_scale: float,
                output_grad: bool = False, backward_diff: Any = None) -> Var:
    """Fast R-CNN max ROI pooling; roi rows are (batch, x1, y1, x2, y2); result NC4HW4 [n, C, ph, pw]
    (MNN: `expr.roi_pooling`, ROIPooling op). With output_grad, the gradient of `input` for `backward_diff`.
    """
    ins = _roi_inputs("roi_pooling", input, roi, pooled_height, pooled_width, output_grad, backward_diff)
    return apply(OT.ROIPooling, ins, PT.RoiParameters,
                 _params(pooled_height, pooled_width, spatial_scale, output_grad))


def roi_align(input: Any, roi: Any, pooled_height: int, pooled_width: int, spatial_scale: float,
              sampling_ratio: int, aligned: bool, pooling_mode: Any, output_grad: bool = False,
              backward_diff: Any = None) -> Var:
    """Mask R-CNN ROI align (average or max of bilinear samples); result NC4HW4 [n, C, ph, pw]
    (MNN: `expr.roi_align`, ROIAlign op). With output_grad (AVEPOOL only, as MNN), the gradient of `input` for
    `backward_diff`.
    """
    ins = _roi_inputs("roi_align", input, roi, pooled_height, pooled_width, output_grad, backward_diff)
    mode = pooling_mode.value if hasattr(pooling_mode, "value") else int(pooling_mode)
    if mode not in (Pooling_Mode.MAXPOOL.value, Pooling_Mode.AVEPOOL.value):
        raise ValueError(f"mnnpy.expr.roi_align: pooling_mode must be MAXPOOL or AVEPOOL, got {pooling_mode!r}")
    if output_grad and mode == Pooling_Mode.MAXPOOL.value:
        raise NotImplementedError("mnnpy.expr.roi_align: max pooling has no backward mode (MNN 3.6.1 has none either)")
    p = _params(pooled_height, pooled_width, spatial_scale, output_grad)
    p.samplingRatio = int(sampling_ratio)
    p.aligned = bool(aligned)
    p.poolType = fb.PoolType.MAXPOOL if mode == Pooling_Mode.MAXPOOL.value else fb.PoolType.AVEPOOL
    return apply(OT.ROIAlign, ins, PT.RoiParameters, p)


def crop_and_resize(x: Any, boxes: Any, box_ind: Any, crop_size: Any, method: Any = Interp_Method.BILINEAR,
                    extrapolation_value: float = 0.0) -> Var:
    """TensorFlow's crop_and_resize of an NHWC image: boxes [n, 4] as normalised (y1, x1, y2, x2), box_ind [n],
    crop_size [2]; result NHWC [n, crop_h, crop_w, C] (MNN: `expr.crop_and_resize`, CropAndResize op).

    `method` (BILINEAR or NEAREST) and `extrapolation_value` (the value of samples outside the image) go into the
    op's CropAndResize table, as MNN's expr writes them.
    """
    image = _float_var(x)
    b = _float_var(boxes)
    ind, size = to_var(box_ind), to_var(crop_size)
    if image.ndim != 4:
        raise ValueError(f"mnnpy.expr.crop_and_resize: image must be 4-D (NHWC), got shape {image.shape}")
    if ind.np_dtype.kind not in "iu" or size.np_dtype.kind not in "iu":
        raise TypeError("mnnpy.expr.crop_and_resize: box_ind and crop_size must be int")
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"mnnpy.expr.crop_and_resize: boxes must be [num_boxes, 4], got {b.shape}")
    if ind.shape != [b.shape[0]]:
        raise ValueError(f"mnnpy.expr.crop_and_resize: box_ind must be [{b.shape[0]}], got {ind.shape}")
    if size.shape != [2]:
        raise ValueError(f"mnnpy.expr.crop_and_resize: crop_size must be [2], got {size.shape}")
    code = method.value if hasattr(method, "value") else int(method)
    if code not in (Interp_Method.BILINEAR.value, Interp_Method.NEAREST.value):
        raise ValueError(f"mnnpy.expr.crop_and_resize: method must be BILINEAR or NEAREST, got {method!r}")
    if image.data_format != data_format.NHWC:
        image = m.convert(image, data_format.NHWC)
    params = fb.CropAndResizeT()
    params.method = fb.CropAndResizeMethod.NEAREST if code == Interp_Method.NEAREST.value else \
        fb.CropAndResizeMethod.BILINEAR
    params.extrapolationValue = float(extrapolation_value)
    return apply(OT.CropAndResize, [image, b, ind, size], PT.CropAndResize, params)
