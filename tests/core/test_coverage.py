"""Op coverage: every op the official converter emits for CNNs/transformers has a shape function and either a
geometry rewrite or a CPU kernel. Prints the op x layer table (`pytest -s`)."""

from __future__ import annotations

from mnnpy.schema import mnn_generated as fb

from mnnpy.core import registry

OT = fb.OpType
NEEDED = ["ConvertTensor", "Convolution", "ConvolutionDepthwise", "Deconvolution", "DeconvolutionDepthwise",
          "Pooling", "Pooling3D", "BinaryOp", "UnaryOp", "ReLU", "ReLU6", "PReLU", "ELU", "Selu", "Eltwise", "Scale",
          "Softmax", "Interp", "Reshape", "Permute", "Transpose", "Concat", "StridedSlice", "SliceTf", "Slice",
          "Unsqueeze", "Squeeze", "Flatten", "ExpandDims", "Padding", "GatherV2", "Reduction", "Cast", "MatMul",
          "BatchMatMul", "LayerNorm", "ArgMax", "ArgMin", "Fill", "Range", "Tile", "BroadcastTo", "Select", "TopKV2",
          "DepthToSpace", "SpaceToDepth", "Sigmoid", "TanH", "ZerosLike", "SpaceToBatchND", "BatchToSpaceND",
          "GatherND", "GatherElements", "ScatterNd", "OneHot", "CumSum", "While", "If", "ScatterElements",
          "GridSample", "LSTM", "LRN", "GroupNorm"]
QUERIES = {"Shape", "Rank", "Size"}  # computed from descriptors at resize time


def test_coverage_table() -> None:
    registry.load_core()
    registry.import_all("mnnpy.backends.cpu.ops")
    cpu = registry.KERNELS["cpu"]
    missing = []
    print(f"\n{'op':<24}{'shape':<7}{'geometry':<10}cpu")
    for name in NEEDED:
        t = int(getattr(OT, name))
        row = (t in registry.SHAPES, t in registry.GEOMETRY, t in cpu)
        print(f"{name:<24}{'x' if row[0] else '-':<7}{'x' if row[1] else '-':<10}{'x' if row[2] else '-'}")
        if not row[0] or not (row[1] or row[2]):
            missing.append(name)
    assert not missing, missing
    assert all(hasattr(OT, q) for q in QUERIES)
