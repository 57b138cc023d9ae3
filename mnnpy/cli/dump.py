"""Print a .mnn model: ops (type, name, inputs -> outputs, params) and tensors; --json for MNN's JSON dump.

Like `MNNConvert -f MNN --modelFile m.mnn --JsonFile m.json`, the JSON is the whole Net with enum names.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from mnnpy.schema.io import load_net
from mnnpy.schema.jsonify import to_dict

COMMAND = "dump"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="path to a .mnn file")
    p.add_argument("--json", action="store_true", help="print the whole Net as JSON (flatc/MNN style)")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="with --json, shorten numeric vectors longer than N to {count, head}")


def _param_summary(params: dict) -> str:
    parts = []
    for key, value in params.items():
        if isinstance(value, dict) and "count" in value:
            parts.append(f"{key}[{value['count']}]")
        elif isinstance(value, dict):
            parts.append(f"{key}{{{_param_summary(value)}}}")
        elif isinstance(value, list) and len(value) > 8:
            parts.append(f"{key}[{len(value)}]")
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts)


def _names(idx: Any, names: list[str]) -> str:
    seq = [] if idx is None else np.asarray(idx).ravel().tolist()
    return ",".join(names[i] for i in seq)


def run(args: argparse.Namespace) -> int:
    net = load_net(args.model)
    if args.json:
        json.dump(to_dict(net, "Net", args.limit), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    info = to_dict(net, "Net", limit=4)
    names = list(net.tensorName or [])
    ops = info.get("oplists", [])
    version = info.get("extraInfo", {}).get("version", "?")
    print(f"{args.model}: {len(ops)} ops, {len(names)} tensors, source {info.get('sourceType', 'CAFFE')}, "
          f"bizCode {info.get('bizCode', '')}, MNN version {version}")
    print(f"outputs: {', '.join(info.get('outputName', []))}")
    print(f"{'#':>4}  {'type':<22} {'name':<28} inputs -> outputs  params")
    for i, (op, raw) in enumerate(zip(ops, net.oplists or [], strict=True)):
        io = f"{_names(raw.inputIndexes, names)} -> {_names(raw.outputIndexes, names)}"
        params = _param_summary(op.get("main", {}))
        print(f"{i:>4}  {op.get('type', '?')!s:<22} {op.get('name', '')!s:<28} {io}  {params}")
    print("tensors:")
    for i, name in enumerate(names):
        print(f"{i:>4}  {name}")
    return 0
