"""Every Caffe layer the issue names has a converter function, except the two waiting for schema tables."""

from __future__ import annotations

from mnnpy.converter.frontends.caffe import supported_layers

REQUIRED = [
    "Input", "Convolution", "Deconvolution", "InnerProduct", "Pooling", "ReLU", "PReLU", "Sigmoid", "TanH", "ELU",
    "BatchNorm", "Scale", "Bias", "Eltwise", "Concat", "Slice", "Split", "Softmax", "Dropout", "LRN", "Flatten",
    "Reshape", "Permute", "Normalize", "Interp", "Crop", "Power", "ArgMax",
]
WAITING_FOR_SCHEMA = {"PriorBox", "DetectionOutput"}  # our schema declares their parameter tables empty


def test_required_layers_are_registered() -> None:
    missing = sorted(set(REQUIRED) - set(supported_layers()))
    assert not missing, missing
    assert not WAITING_FOR_SCHEMA & set(supported_layers())
