"""`convert()`: source model -> Graph -> passes -> Net -> .mnn file (what `mnnpy convert` runs)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import net_to_bytes, save_net

from .graph import ConvertError, Graph
from .passes import OPT_IN, run_pipeline
from .progress import Progress, wanted
from .quantize_qdq import apply_qdq
from .static import apply_input_config, fold_static_shapes, read_input_config
from .writer import graph_to_net

FRAMEWORKS = ("ONNX", "TF", "CAFFE")


@dataclass
class ConvertReport:
    """What a conversion did: op counts in and out, rewrites per pass, output size."""

    ops_in: int = 0
    ops_out: int = 0
    passes: dict[str, int] = field(default_factory=dict)
    bytes_out: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One human-readable paragraph for the CLI."""
        applied = ", ".join(f"{name} x{count}" for name, count in self.passes.items() if count) or "none"
        return (f"ops: {self.ops_in} in -> {self.ops_out} out; passes applied: {applied}; "
                f"{self.bytes_out} bytes in {self.seconds:.2f} s")


def load_graph(framework: str, model_file: str | Path, prototxt: str | Path | None = None,
               progress: bool | None = False) -> tuple[Graph, int]:
    """Run the frontend for `framework` (ONNX, TF or CAFFE, as MNNConvert's -f); returns the graph and the source
    model's node count. `progress`: the tqdm bar over the ONNX nodes (None: on a terminal for large models)."""
    kind = framework.upper()
    if kind not in FRAMEWORKS:
        raise ConvertError(f"framework '{framework}' is not supported (supported: {', '.join(FRAMEWORKS)})")
    path = Path(model_file)
    if not path.is_file():
        raise ConvertError(f"model file not found: {path}")
    if kind == "ONNX":
        import onnx

        from .frontends.onnx import load_onnx
        from .quantize_qdq import fold_qdq

        model = onnx.load(str(path))
        count = len(model.graph.node)
        qdq = fold_qdq(model)  # QuantizeLinear / DequantizeLinear: int8 again in convert() (converter/quantize_qdq.py)
        bar = Progress(count, wanted(progress, count), f"convert {path.name}")
        try:
            graph = load_onnx(model, bar)
            graph.qdq = qdq
            return graph, count
        finally:
            bar.close()
    if kind == "TF":
        from .frontends.tensorflow import load_with_count

        return load_with_count(path)
    if prototxt is None or not Path(prototxt).is_file():
        raise ConvertError("-f CAFFE needs --prototxt (the deploy prototxt) next to --modelFile (the caffemodel)")
    from .frontends.caffe import load_with_count as load_caffe

    return load_caffe(prototxt, path)


def to_fp16(net: fb.NetT) -> int:
    """Store convolution weights as IEEE half (IDSTQuan type 3), as `MNNConvert --fp16`; returns ops changed."""
    changed = 0
    for op in net.oplists or []:
        param = op.main
        if op.mainType != fb.OpParameter.Convolution2D or param is None or param.weight is None:
            continue
        weight = np.asarray(param.weight, np.float32)
        if weight.size == 0:
            continue
        quant = fb.IDSTQuanT()
        quant.type = 3
        quant.buffer = np.frombuffer(weight.astype("<f2").tobytes(), np.int8).copy()
        param.quanParameter = quant
        param.weight = None
        changed += 1
    return changed


def convert(model_file: str | Path, mnn_model: str | Path | None, framework: str = "ONNX", biz_code: str = "MNN",
            fp16: bool = False, json_file: str | Path | None = None, weight_quant_bits: int = 0,
            prototxt: str | Path | None = None, transformer_fuse: bool = False,
            input_config: str | Path | None = None, save_static: bool = False,
            progress: bool | None = False) -> tuple[fb.NetT, ConvertReport]:
    """Convert `model_file` to MNN. Writes `mnn_model` (atomically) only when everything succeeded.

    Mirrors MNNConvert (`tools/converter/source/MNNConverter.cpp`): frontend, optimizer passes, writer.
    `transformer_fuse` (MNNConvert's --transformerFuse) also runs the OPT_IN passes: every attention subgraph becomes
    an Attention op (batch > 1 and per-head masks included: such files run in mnnpy only) and GroupNorm is fused.
    `input_config` (MNNConvert's --inputConfigFile) fixes input shapes; `save_static` (--saveStaticModel) then folds
    everything those shapes decide into constants (`converter.static`). `progress`: a tqdm bar over the source
    nodes (None: only on a terminal for large models).
    """
    start = time.perf_counter()
    graph, ops_in = load_graph(framework, model_file, prototxt, progress)
    if input_config is not None:
        apply_input_config(graph, read_input_config(input_config), str(input_config))
    report = ConvertReport(ops_in=ops_in)
    report.passes = run_pipeline(graph, enable=OPT_IN if transformer_fuse else None)
    if save_static:
        report.passes["fold-static-shapes"] = fold_static_shapes(graph)
    source = {"ONNX": fb.NetSource.ONNX, "TF": fb.NetSource.TENSORFLOW, "CAFFE": fb.NetSource.CAFFE}
    net = graph_to_net(graph, biz_code, source.get(framework.upper(), fb.NetSource.ONNX))
    if getattr(graph, "qdq", None) is not None:
        report.passes["qdq-int8"] = apply_qdq(net, graph.qdq)
    if weight_quant_bits:
        from .quantize import quantize_weights

        report.passes[f"weight-quant-{weight_quant_bits}bit"] = quantize_weights(net, weight_quant_bits)
    elif fp16:
        report.passes["fp16-weights"] = to_fp16(net)
    report.ops_out = len(net.oplists or [])
    data = net_to_bytes(net)
    report.bytes_out = len(data)
    if mnn_model is not None:
        save_net(net, mnn_model)
    if json_file is not None:
        from mnnpy.schema.jsonify import to_dict

        Path(json_file).write_text(json.dumps(to_dict(net, "Net"), indent=1, default=_json_default))
    report.seconds = time.perf_counter() - start
    return net, report


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)
