"""The op-emitting half that the frontends' Contexts share: constants, ops, and the common one-output MNN ops
(BinaryOp, UnaryOp, Permute, Reshape) with each frontend's conventions set as class attributes."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from mnnpy.schema import mnn_generated as fb

from ..graph import Graph, Node


class EmitContext:
    """Base of a frontend Context. Conventions (as MNNConvert writes each source framework):
    `typed_float`: BinaryOp/UnaryOp tables carry T = DT_FLOAT; `name_after_output`: an op writing a given output is
    named after it (else unnamed, and fresh outputs are named after the op type); `reshape_format`: Reshape's
    dimType."""

    graph: Graph
    typed_float = True
    name_after_output = True
    reshape_format = fb.MNN_DATA_FORMAT.NCHW

    def const(self, value: Any, base: str = "Const", dtype: Any = None) -> str:
        """Add a constant tensor and return its name."""
        return self.graph.add_const(value, base, dtype)

    def emit(self, op_type: int, inputs: list[str], outputs: list[str] | None = None, param_type: int = 0,
             param: Any = None, name: str | None = None, **kwargs: Any) -> Node:
        """Append an MNN op; with `outputs` None one fresh output name is made."""
        return self.graph.add(op_type, inputs, outputs, param_type, param, name, **kwargs)

    def single(self, op_type: int, inputs: list[str], output: str | None, param_type: int, param: Any,
               label: str) -> str:
        """Append an op with one output (`output`, or a fresh name after `label`); returns the output name."""
        name = (output or label) if self.name_after_output else (label if output is None else None)
        outputs = None if output is None else [output]
        return self.emit(op_type, inputs, outputs, param_type, param, name=name).outputs[0]

    def binary(self, operation: int, a: str, b: str, output: str | None = None) -> str:
        """BinaryOp(a, b) with `operation` from fb.BinaryOpOperation."""
        param = fb.BinaryOpT()
        param.opType = operation
        if self.typed_float:
            param.T = fb.DataType.DT_FLOAT
        return self.single(fb.OpType.BinaryOp, [a, b], output, fb.OpParameter.BinaryOp, param, "BinaryOp")

    def unary(self, operation: int, x: str, output: str | None = None) -> str:
        """UnaryOp(x) with `operation` from fb.UnaryOpOperation."""
        param = fb.UnaryOpT()
        param.opType = operation
        if self.typed_float:
            param.T = fb.DataType.DT_FLOAT
        return self.single(fb.OpType.UnaryOp, [x], output, fb.OpParameter.UnaryOp, param, "UnaryOp")

    def cast(self, x: str, dtype: int, output: str | None = None) -> str:
        """Cast(x) to `dtype` from fb.DataType."""
        param = fb.CastParamT()
        param.dstT = dtype
        return self.single(fb.OpType.Cast, [x], output, fb.OpParameter.CastParam, param, "Cast")

    def permute(self, x: str, perm: list[int], output: str | None = None) -> str:
        """Permute(x) with a constant permutation."""
        param = fb.PermuteT()
        param.dims = [int(p) for p in perm]
        return self.single(fb.OpType.Permute, [x], output, fb.OpParameter.Permute, param, "Permute")

    def reshape(self, x: str, shape: list[int] | str, output: str | None = None) -> str:
        """Reshape in the frontend's dimension order; a list becomes a Const int32 shape input (0 copies the input
        dim, -1 is inferred)."""
        param = fb.ReshapeT()
        param.dimType = self.reshape_format
        shape_name = shape if isinstance(shape, str) else self.const(np.asarray(shape, np.int32), "shape")
        return self.single(fb.OpType.Reshape, [x, shape_name], output, fb.OpParameter.Reshape, param, "Reshape")

    def deconvolution(self, x: str, out: str, weight: np.ndarray, bias: np.ndarray, common: Any, name: str) -> None:
        """A transposed convolution with constant weights ([ic, oc/group, kh, kw]) and its common parameters:
        Deconvolution, DeconvolutionDepthwise when group == ic == oc > 1, and otherwise, with group > 1, one
        Deconvolution per group between a channel Slice and a Concat, as MNNConvert writes it (official MNN 3.6.1's
        grouped Deconvolution computes garbage: 1e33 off onnxruntime at group 4, 8 -> 4 channels)."""
        groups, ic, oc = int(common.group), int(common.inputCount), int(common.outputCount)
        weight = np.asarray(weight, np.float32)
        bias = np.asarray(bias, np.float32).ravel()

        def one(src: str, dst: str | None, part: Any, w: np.ndarray, b: np.ndarray, op_type: int, label: str) -> str:
            param = fb.Convolution2DT()
            param.common, param.weight, param.bias = part, w.ravel(), b
            return self.emit(op_type, [src], None if dst is None else [dst], fb.OpParameter.Convolution2D, param,
                             name=label).outputs[0]

        if groups <= 1 or groups == ic == oc:
            kind = fb.OpType.DeconvolutionDepthwise if groups > 1 else fb.OpType.Deconvolution
            one(x, out, common, weight, bias, kind, name)
            return
        icg, ocg = ic // groups, oc // groups
        split = fb.SliceT()
        split.axis = 1
        split.sourceType = fb.NetSource.TORCH
        parts = [self.graph.unique_name(f"{x}_group") for _ in range(groups)]
        self.emit(fb.OpType.Slice, [x], parts, fb.OpParameter.Slice, split)
        outs = []
        for g, src in enumerate(parts):
            part = copy.copy(common)
            part.group, part.inputCount, part.outputCount = 1, icg, ocg
            outs.append(one(src, None, part, weight[g * icg:(g + 1) * icg], bias[g * ocg:(g + 1) * ocg],
                            fb.OpType.Deconvolution, f"{name}_g{g}"))
        concat = fb.AxisT()
        concat.axis = 1
        self.emit(fb.OpType.Concat, outs, [out], fb.OpParameter.Axis, concat, name=name)
