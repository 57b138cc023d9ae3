"""Convert a model to .mnn (MNNConvert's flags): mnnpy convert -f ONNX|TF|CAFFE --modelFile m.onnx --MNNModel m.mnn"""

from __future__ import annotations

import argparse
import sys

COMMAND = "convert"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """MNNConvert's flags (the subset that is meaningful here)."""
    p.add_argument("-f", "--framework", required=True, type=str.upper, choices=["ONNX", "TF", "CAFFE"],
                   help="source framework")
    p.add_argument("--modelFile", required=True, help="source model file (.onnx, frozen .pb, or .caffemodel)")
    p.add_argument("--prototxt", default=None, help="Caffe deploy prototxt (with -f CAFFE)")
    p.add_argument("--MNNModel", default=None, help="output .mnn file (overwritten if it exists, as MNNConvert)")
    p.add_argument("--bizCode", default="MNN", help="bizCode written into the model (default MNN)")
    p.add_argument("--JsonFile", default=None, help="also write the converted Net as JSON")
    p.add_argument("--fp16", action="store_true", help="store convolution weights as fp16")
    p.add_argument("--weightQuantBits", type=int, default=0, metavar="N",
                   help="store convolution weights as N-bit (2..8) per-channel quantized codes (IDSTQuan)")
    p.add_argument("--keepInputFormat", action="store_true",
                   help="keep inputs in their source layout (always: ONNX, Caffe NCHW; TF NHWC)")
    p.add_argument("--transformerFuse", action="store_true",
                   help="also fuse attention that official MNN's Attention op cannot run (batch > 1, per-head masks: "
                   "the file then runs in mnnpy only) and GroupNorm (no official MNN CPU kernel)")
    p.add_argument("--inputConfigFile", default=None, metavar="FILE",
                   help="fixed input shapes, MNNConvert's format: 'input_names = a,b' and 'input_dims = 1x3x224x224,"
                   "1x3x64x64' lines")
    p.add_argument("--saveStaticModel", action="store_true",
                   help="fold every shape computation the (fixed) input shapes decide into constants")
    p.add_argument("--noProgress", action="store_true",
                   help="no progress bar (shown on a terminal for models of 300+ nodes)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary, no progress bar")


def run(args: argparse.Namespace) -> int:
    """Convert and print the closing summary; a ConvertError (a ModelError) is printed by the CLI, no traceback.

    Mirrors MNNConvert's main (`tools/converter/source/MNNConverter.cpp`).
    """
    from mnnpy.converter import convert

    if args.MNNModel is None and args.JsonFile is None:
        print("mnnpy convert: error: give --MNNModel and/or --JsonFile", file=sys.stderr)
        return 2
    _, report = convert(args.modelFile, args.MNNModel, args.framework, args.bizCode, args.fp16, args.JsonFile,
                        args.weightQuantBits, args.prototxt, transformer_fuse=args.transformerFuse,
                        input_config=args.inputConfigFile, save_static=args.saveStaticModel,
                        progress=False if args.quiet or args.noProgress else None)
    if not args.quiet:
        target = args.MNNModel or args.JsonFile
        print(f"Converted {args.modelFile} -> {target}: {report.summary()}")
    return 0
