"""`mnnpy.cv`: MNN's OpenCV look-alike (MNN 3.6.1 `MNN.cv`: 70 functions, OpenCV's constants).

Images are HWC Vars (uint8 or float32) as in MNN; functions also take numpy arrays. Pixel work (colour, resize,
warps, filters, thresholds, arithmetic) is built on `mnnpy.expr` ops evaluated by the core; geometry helpers
(matrices, contours, drawing, calib3d) compute on the host as MNN's C++ does.

Modules: `constants`, `codecs` (Pillow), `color`, `geometric`, `filter`, `misc`, `draw`, `structural`, `calib3d`.
"""

# ruff: noqa: F401, F403 - this module re-exports MNN.cv's names
from __future__ import annotations

from mnnpy.cv.calib3d import Rodrigues, solve, solvePnP
from mnnpy.cv.codecs import haveImageReader, haveImageWriter, imdecode, imencode, imread, imwrite
from mnnpy.cv.color import cvtColor, cvtColorTwoPlane
from mnnpy.cv.constants import *
from mnnpy.cv.draw import arrowedLine, circle, drawContours, ellipse, fillPoly, line, polylines, rectangle
from mnnpy.cv.filter import (
    GaussianBlur,
    Laplacian,
    Scharr,
    Sobel,
    bilateralFilter,
    blur,
    boxFilter,
    filter2D,
    getDerivKernels,
    getGaborKernel,
    getGaussianKernel,
    pyrDown,
    pyrUp,
    sepFilter2D,
    spatialGradient,
    sqrBoxFilter,
)
from mnnpy.cv.geometric import (
    convertMaps,
    flip,
    getAffineTransform,
    getPerspectiveTransform,
    getRectSubPix,
    getRotationMatrix2D,
    invertAffineTransform,
    remap,
    resize,
    rotate,
    warpAffine,
    warpPerspective,
)
from mnnpy.cv.misc import (
    adaptiveThreshold,
    addWeighted,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    blendLinear,
    calcHist,
    copyTo,
    hconcat,
    mean,
    merge,
    normalize,
    split,
    threshold,
    vconcat,
)
from mnnpy.cv.morph import dilate, erode, getStructuringElement
from mnnpy.cv.structural import (
    boundingRect,
    boxPoints,
    connectedComponentsWithStats,
    contourArea,
    convexHull,
    findContours,
    minAreaRect,
)

_MODULES = {"calib3d", "codecs", "color", "constants", "draw", "filter", "geometric", "misc", "morph", "structural"}
__all__ = sorted(name for name in dir() if not name.startswith("_") and name not in _MODULES | {"annotations"})
