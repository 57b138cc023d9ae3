"""Every Caffe layer the issue names has a converter function."""

from __future__ import annotations

from mnnpy.converter.frontends.caffe import supported_layers

REQUIRED = [
    "Input", "Convolution", "Deconvolution", "InnerProduct", "Pooling", "ReLU", "PReLU", "Sigmoid", "TanH", "ELU",
    "BatchNorm", "Scale", "Bias", "Eltwise", "Concat", "Slice", "Split", "Softmax", "Dropout", "LRN", "Flatten",
    "Reshape", "Permute", "Normalize", "PriorBox", "DetectionOutput", "Interp", "Crop", "Power", "ArgMax",
]


def test_required_layers_are_registered() -> None:
    missing = sorted(set(REQUIRED) - set(supported_layers()))
    assert not missing, missing
