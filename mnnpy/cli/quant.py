"""Quantise a float model to int8 (MNN's quantization tool): mnnpy quant MODEL.mnn OUT.mnn CONFIG.json"""

from __future__ import annotations

import argparse
import sys

COMMAND = "quant"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="float .mnn model")
    p.add_argument("output", help="int8 .mnn model to write")
    p.add_argument("config", help="calibration config JSON (keys of MNN's quantization tool)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or summary")


def run(args: argparse.Namespace) -> int:
    from mnnpy.quant import QuantConfigError, quantize_model

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr)

    try:
        _, report = quantize_model(args.model, args.output, args.config, progress)
    except QuantConfigError as exc:
        print(f"mnnpy quant: error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"Quantized {args.model} -> {args.output}: {report.summary()}")
    return 0
