"""Models built in code for the tests (no binary fixtures): ONNX graphs with onnx.helper, nets with the object API."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
from mnnpy.schema import mnn_generated as fb


def bench_models() -> ModuleType:
    """tools/bench_models.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_models", Path(__file__).resolve().parents[2] / "tools"
                                                  / "bench_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save_onnx(path: Path, nodes: list, inputs: dict[str, list[int] | None], outputs: dict[str, list[int] | None],
              inits: dict[str, np.ndarray], *, name: str = "test", opset: int = 13, check: bool = False) -> Path:
    """Save an ONNX model (IR version 8, default domain at `opset`) made of onnx.helper `nodes`: float inputs and
    outputs as {name: shape or None}, initializers as {name: array} (kept in the array's own dtype)."""
    import onnx
    from onnx import helper as h
    from onnx import numpy_helper as nh

    def info(values: dict[str, list[int] | None]) -> list:
        return [h.make_tensor_value_info(k, onnx.TensorProto.FLOAT, v) for k, v in values.items()]

    graph = h.make_graph(nodes, name, info(inputs), info(outputs), [nh.from_array(np.asarray(v), k)
                                                                     for k, v in inits.items()])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def interop_onnx(path: Path, seed: int = 0) -> Path:
    """The spine's interop model, input x [1,3,8,8] -> y [1,64,10].

    Ops: Conv, BatchNormalization, Relu, depthwise Conv, Add, MaxPool, Concat, Resize, Reshape, Transpose,
    LayerNormalization, MatMul, Softmax.
    """
    from onnx import helper as h

    rng = np.random.default_rng(seed)

    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c1", "g", "bb", "m", "v"], ["bn"]),
        h.make_node("Relu", ["bn"], ["r1"]),
        h.make_node("Conv", ["r1", "wd"], ["dw"], group=8, pads=[1, 1, 1, 1]),
        h.make_node("Add", ["r1", "dw"], ["add"]),
        h.make_node("MaxPool", ["add"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Concat", ["mp", "mp"], ["cat"], axis=1),
        h.make_node("Resize", ["cat", "", "sc"], ["rs"], mode="linear"),
        h.make_node("Reshape", ["rs", "shp"], ["rsh"]),
        h.make_node("Transpose", ["rsh"], ["tr"], perm=[0, 2, 1]),
        h.make_node("LayerNormalization", ["tr", "lg", "lb"], ["ln"], axis=-1),
        h.make_node("MatMul", ["ln", "mw"], ["mm"]),
        h.make_node("Softmax", ["mm"], ["y"], axis=-1),
    ]
    f32 = {"w1": rng.normal(size=(8, 3, 3, 3)), "b1": rng.normal(size=8), "g": rng.random(8) + 0.5,
           "bb": rng.normal(size=8), "m": rng.normal(size=8), "v": rng.random(8) + 0.5,
           "wd": rng.normal(size=(8, 1, 3, 3)), "sc": [1, 1, 2, 2], "lg": rng.random(16) + 0.5,
           "lb": rng.normal(size=16), "mw": rng.normal(size=(16, 10))}
    inits = {k: np.asarray(v, np.float32) for k, v in f32.items()} | {"shp": np.array([1, 16, 64], np.int64)}
    return save_onnx(path, nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 64, 10]}, inits, name="interop", opset=17,
                     check=True)


def net_op(op_type: int, name: str, inputs: list[int], outputs: list[int], param_type: int = 0,
           param: object = None) -> fb.OpT:
    """An object-API op of a net built in code: type, name, tensor indexes and parameter table."""
    op = fb.OpT()
    op.type, op.name, op.inputIndexes, op.outputIndexes = op_type, name, inputs, outputs
    op.mainType, op.main = param_type, param
    return op


def scratch_cnn(seed: int = 0) -> tuple[fb.NetT, dict[str, np.ndarray]]:
    """Input [1,3,8,8] -> Convolution 3x3 pad 1 (relu) -> MaxPool 2x2 -> Softmax over channels, random weights.

    Returns the net and its weights (`w` [4,3,3,3], `b` [4]) for a numpy reference.
    """
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    b = rng.normal(size=4).astype(np.float32)
    inp = fb.InputT()
    inp.dims, inp.dtype, inp.dformat = [1, 3, 8, 8], fb.DataType.DT_FLOAT, fb.MNN_DATA_FORMAT.NC4HW4
    common = fb.Convolution2DCommonT()
    common.kernelX = common.kernelY = 3
    common.padX = common.padY = 1
    common.inputCount, common.outputCount, common.relu = 3, 4, True
    conv = fb.Convolution2DT()
    conv.common, conv.weight, conv.bias = common, w.ravel(), b
    pool = fb.PoolT()
    pool.kernelX = pool.kernelY = pool.strideX = pool.strideY = 2
    pool.type, pool.ceilModel = fb.PoolType.MAXPOOL, False
    axis = fb.AxisT()
    axis.axis = 1
    net = fb.NetT()
    net.tensorName = ["x", "conv", "pool", "y"]
    net.oplists = [
        net_op(fb.OpType.Input, "x", [], [0], fb.OpParameter.Input, inp),
        net_op(fb.OpType.Convolution, "conv", [0], [1], fb.OpParameter.Convolution2D, conv),
        net_op(fb.OpType.Pooling, "pool", [1], [2], fb.OpParameter.Pool, pool),
        net_op(fb.OpType.Softmax, "y", [2], [3], fb.OpParameter.Axis, axis),
    ]
    net.outputName = ["y"]
    net.sourceType = fb.NetSource.ONNX
    net.bizCode = "mnnpy"
    return net, {"w": w, "b": b}


def scratch_cnn_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy reference for `scratch_cnn` (float64 math)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # N,C,H,W,3,3
    conv = np.einsum("nchwij,ocij->nohw", windows, w.astype(np.float64)) + b[None, :, None, None]
    relu = np.maximum(conv, 0)
    n, c, hh, ww = relu.shape
    pool = relu.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    e = np.exp(pool - pool.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def attention_nodes(src: str = "x", residual: str = "x", out: str = "y") -> list:
    """ONNX nodes of an unfused multi-head attention block as exporters write it: Q/K/V MatMuls on `src` (weights
    wq, wk, wv), head split (Reshape by `hs`, Transpose), QK^T scaled by `scale`, Softmax, PV, head merge (Reshape
    by `ms`), output projection `wo`, and `out` = projection + `residual`."""
    from onnx import helper as h

    return [*(h.make_node("MatMul", [src, f"w{n}"], [n]) for n in "qkv"),
            *(h.make_node("Reshape", [n, "hs"], [f"{n}2"]) for n in "qkv"),
            h.make_node("Transpose", ["q2"], ["q3"], perm=[0, 2, 1, 3]),
            h.make_node("Transpose", ["k2"], ["k3"], perm=[0, 2, 3, 1]),
            h.make_node("Transpose", ["v2"], ["v3"], perm=[0, 2, 1, 3]),
            h.make_node("MatMul", ["q3", "k3"], ["att"]),
            h.make_node("Mul", ["att", "scale"], ["att2"]),
            h.make_node("Softmax", ["att2"], ["p"], axis=-1),
            h.make_node("MatMul", ["p", "v3"], ["o"]),
            h.make_node("Transpose", ["o"], ["o2"], perm=[0, 2, 1, 3]),
            h.make_node("Reshape", ["o2", "ms"], ["o3"]),
            h.make_node("MatMul", ["o3", "wo"], ["o4"]),
            h.make_node("Add", ["o4", residual], [out])]


def make_conv(ic: int, oc: int, k: tuple[int, int], *, stride: tuple[int, int] = (1, 1),
              dilation: tuple[int, int] = (1, 1), pads: tuple[int, int, int, int] | None = None, pad_mode: int = 0,
              group: int = 1, relu: bool = False, relu6: bool = False, transposed: bool = False,
              out_pads: tuple[int, int] | None = None, seed: int = 0) -> fb.Convolution2DT:
    """A Convolution2DT with random weights in the layout MNN stores for the op."""
    rng = np.random.default_rng(seed)
    common = fb.Convolution2DCommonT()
    common.kernelY, common.kernelX = k
    common.strideY, common.strideX = stride
    common.dilateY, common.dilateX = dilation
    common.padMode, common.group, common.outputCount, common.inputCount = pad_mode, group, oc, ic
    common.relu, common.relu6 = relu, relu6
    if pads is not None:
        common.pads = list(pads)
        common.padY, common.padX = pads[0], pads[1]
    if out_pads is not None:
        common.outPads = list(out_pads)
    conv = fb.Convolution2DT()
    conv.common = common
    shape = (ic, oc // group, *k) if transposed else (oc, ic // group, *k)
    conv.weight = rng.standard_normal(shape).astype(np.float32).ravel()
    conv.bias = rng.standard_normal(oc).astype(np.float32)
    return conv
