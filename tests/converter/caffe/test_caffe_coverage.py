"""Every Caffe layer the issue names has a converter function, except the two waiting for schema tables."""

from __future__ import annotations

from mnnpy.converter.frontends.caffe import supported_layers

REQUIRED = [
    "Input", "Convolution", "Deconvolution", "InnerProduct", "Pooling", "ReLU", "PReLU", "Sigmoid", "TanH", "ELU",
    "BatchNorm", "Scale", "Bias", "Eltwise", "Concat", "Slice", "Split", "Softmax", "Dropout", "LRN", "Flatten",
    "Reshape", "Permute", "Normalize", "Interp", "Crop", "Power", "ArgMax",
]


def test_required_layers_are_registered() -> None:
    missing = sorted(set(REQUIRED) - set(supported_layers()))
    assert not missing, missing


def test_ssd_layers_follow_the_schema() -> None:
    """PriorBox / DetectionOutput register exactly when the schema has MNN's parameter tables for them."""
    from mnnpy.schema import mnn_generated as fb

    for layer, table, field in (("PriorBox", fb.PriorBoxT, "minSizes"),
                                ("DetectionOutput", fb.DetectionOutputT, "classCount")):
        assert (layer in supported_layers()) == hasattr(table(), field)
