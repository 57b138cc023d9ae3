"""Every TF op the issue names has a converter function (the table `supported_ops()` prints)."""

from __future__ import annotations

from mnnpy.converter.frontends.tensorflow import supported_ops

REQUIRED = [
    "Conv2D", "DepthwiseConv2dNative", "BiasAdd", "FusedBatchNorm", "FusedBatchNormV3", "Relu", "Relu6",
    "Sigmoid", "Tanh", "Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Rsqrt", "Sqrt", "Square",
    "Mean", "Sum", "Max", "MatMul", "BatchMatMulV2", "Softmax", "MaxPool", "AvgPool", "Pad", "PadV2", "MirrorPad",
    "ConcatV2", "Reshape", "Squeeze", "ExpandDims", "StridedSlice", "Slice", "Shape", "Pack", "Unpack", "Fill",
    "Transpose", "ResizeBilinear", "ResizeNearestNeighbor", "Cast", "GatherV2", "Identity",
]


def test_required_ops_are_registered() -> None:
    missing = sorted(set(REQUIRED) - set(supported_ops()))
    assert not missing, missing
