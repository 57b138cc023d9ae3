"""MNNConvert's --inputConfigFile (fixed input shapes) and --saveStaticModel (shape computations folded).

The input config is MNNConvert's text format (`key = value` lines, `#` comments), as its tools read it:

    input_size = 2                      # optional; must match the number of names
    input_names = input0,input1
    input_dims = 1x3x224x224,1x3x64x64

(`output_size`/`output_names`/`data_type`, used by MNN's test tools in the same file, are accepted and ignored.)
With fixed input shapes, the static model has every tensor whose value the shapes decide (Shape, Size, Rank and
the arithmetic on them) folded into constants by mnnpy's own pre-inference, and declares the fixed dims on its
Input ops. It stays an ordinary `.mnn` (usage INFERENCE), so official MNN and mnnpy load it as any other model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .graph import ConvertError, Graph, normalize_const

IGNORED_KEYS = {"output_size", "output_names", "data_type", "control_flow"}


def read_input_config(path: str | Path) -> dict[str, list[int]]:
    """Parse an MNNConvert input config file into {input name: dims}."""
    file = Path(path)
    if not file.is_file():
        raise ConvertError(f"input config file not found: {file}")
    entries: dict[str, str] = {}
    for number, raw in enumerate(file.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ConvertError(f"{file}:{number}: expected 'key = value', got {raw.strip()!r}")
        key = key.strip()
        if key not in ("input_size", "input_names", "input_dims") and key not in IGNORED_KEYS:
            raise ConvertError(f"{file}:{number}: unknown key {key!r} (input_size, input_names, input_dims)")
        entries[key] = value.strip()
    for key in ("input_names", "input_dims"):
        if not entries.get(key):
            raise ConvertError(f"{file}: missing '{key} = ...'")
    names = [n.strip() for n in entries["input_names"].split(",") if n.strip()]
    dims_text = [d.strip() for d in entries["input_dims"].split(",") if d.strip()]
    if len(names) != len(dims_text):
        raise ConvertError(f"{file}: {len(names)} input_names but {len(dims_text)} input_dims")
    if "input_size" in entries and entries["input_size"] != str(len(names)):
        raise ConvertError(f"{file}: input_size = {entries['input_size']} but {len(names)} input_names")
    config: dict[str, list[int]] = {}
    for name, text in zip(names, dims_text, strict=True):
        try:
            dims = [int(d) for d in text.lower().split("x")]
        except ValueError:
            raise ConvertError(f"{file}: input_dims {text!r} of '{name}' is not like 1x3x224x224") from None
        if any(d <= 0 for d in dims):
            raise ConvertError(f"{file}: input_dims {text!r} of '{name}' must be positive")
        config[name] = dims
    return config


def apply_input_config(graph: Graph, config: dict[str, list[int]], source: str = "input config") -> None:
    """Fix the declared shapes of the graph inputs named in `config` (ranks must agree where known)."""
    unknown = sorted(set(config) - set(graph.inputs))
    if unknown:
        raise ConvertError(f"{source}: no model input named {unknown}; inputs are {list(graph.inputs)}")
    for name, dims in config.items():
        spec = graph.inputs[name]
        declared = [d for d in spec.shape]
        if declared and declared != [-1] and len(declared) != len(dims):
            raise ConvertError(f"{source}: input '{name}' has rank {len(declared)} ({declared}), the config gives "
                               f"{dims}")
        if any(d > 0 and d != c for d, c in zip(declared, dims, strict=False)) and len(declared) == len(dims):
            raise ConvertError(f"{source}: input '{name}' is declared {declared}, the config gives {dims}")
        spec.shape = list(dims)


def fold_static_shapes(graph: Graph) -> int:
    """Fold every op whose outputs the (now fixed) input shapes decide into constants; returns ops folded.

    Runs mnnpy's pre-inference (shape computation + constant folding, MNN's `Session::resize`) on the graph written
    as a net, then replaces those ops by their values. Every input must have a fixed shape.
    """
    from mnnpy.schema import ModelError

    from mnnpy.core.pipeline import InputValueNeeded
    from mnnpy.core.session import Session

    from .passes import remove_dead
    from .writer import graph_to_net

    dynamic = {name: spec.shape for name, spec in graph.inputs.items() if not spec.shape or min(spec.shape) < 0}
    if dynamic:
        raise ConvertError(f"--saveStaticModel needs fixed input shapes; give them with --inputConfigFile "
                           f"(dynamic: {dynamic})")
    net = graph_to_net(graph)
    names = [str(n) for n in net.tensorName]
    shapes = {names.index(name): tuple(spec.shape) for name, spec in graph.inputs.items()}
    try:
        session = Session(net, {"backend": "CPU"}, shapes)
    except ModelError as exc:
        raise ConvertError(f"--saveStaticModel: pre-inference failed for the input shapes {shapes}: {exc}") from exc
    if session.graph is None:
        error = session.resize_error
        why = "shapes depend on input values" if isinstance(error, InputValueNeeded) else "pre-inference failed"
        raise ConvertError(f"--saveStaticModel: {why}: {error}")
    values = {names[i]: v for i, v in session.graph.values.items() if names[i] not in graph.inputs}
    folded = 0
    for node in list(graph.nodes):
        if not node.outputs or any(o not in values or o in graph.outputs for o in node.outputs):
            continue
        for out in node.outputs:
            graph.constants[out] = normalize_const(np.asarray(values[out]))
        graph.nodes.remove(node)
        folded += 1
    remove_dead.apply(graph)
    return folded
