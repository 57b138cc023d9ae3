"""A timm-style ViT built in torch (patch embedding conv + flatten(2).transpose(1, 2), class token concatenated,
learned positions, pre-norm blocks with one fused QKV Linear split by reshape / permute / unbind, exact GELU, final
LayerNorm, `x[:, 0]`, Linear head) and exported by torch.onnx (TorchScript exporter, opset 17): with the default
pipeline the last block after its Attention runs on the class token (prune-rows), every pre-norm LayerNorm gives its
gamma / beta to the Linears reading it (fold-layer-norm-affine), and mnnpy and official MNN match onnxruntime.

The exported file is committed next to this test (test_vit_torch.onnx: 32x32 image, patch 8, dim 24, 3 heads, 2
blocks, 10 classes), so the test needs no torch; regenerate it with `python tests/converter/test_vit_torch.py` in an
environment with torch.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.frontends.onnx import load_onnx
from mnnpy.converter.passes import fold_layer_norm_affine, prune_rows, run_pipeline
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net

FILE = Path(__file__).resolve().parent / "test_vit_torch.onnx"
SIZE, PATCH, DIM, HEADS, DEPTH, CLASSES = 32, 8, 24, 3, 2, 10


def torch_vit() -> Any:
    """The torch module (seeded weights; LayerNorm gamma / beta randomised so that folding them is visible)."""
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)

        def forward(self, x: Any) -> Any:
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4).unbind(0)
            attn = ((q * (c // HEADS) ** -0.5) @ k.transpose(-2, -1)).softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.attn, self.norm2 = nn.LayerNorm(DIM), Attention(), nn.LayerNorm(DIM)
            self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patch = nn.Conv2d(3, DIM, PATCH, PATCH)
            self.cls = nn.Parameter(torch.randn(1, 1, DIM) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, (SIZE // PATCH) ** 2 + 1, DIM) * 0.02)
            self.blocks = nn.Sequential(*(Block() for _ in range(DEPTH)))
            self.norm, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, CLASSES)

        def forward(self, image: Any) -> Any:
            x = self.patch(image).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
            return self.head(self.norm(self.blocks(x))[:, 0])

    torch.manual_seed(0)
    model = ViT().eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.3)
                module.bias.normal_(0.0, 0.2)
    return model


def export() -> None:
    import torch

    torch.onnx.export(torch_vit(), (torch.randn(1, 3, SIZE, SIZE),), str(FILE), input_names=["image"],
                      output_names=["logits"], opset_version=17, dynamo=False)


def test_torch_vit_pruned_and_folded(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from .helpers import rel_diff, run_mnn, run_ort
    from .test_transformer_models import run_mnnpy

    model = onnx.load(str(FILE))
    graph = load_onnx(model)
    counts = run_pipeline(graph)
    # the last block after its Attention: context Reshape, projection MatMul + bias Add, residual Add, LayerNorm,
    # fc1 + bias, GELU, fc2 + bias, residual Add and the final LayerNorm (needs the token count through the patch
    # conv and torch's Shape -> Slice -> Concat flatten, mnnpy.core.session.infer_shapes)
    assert counts[prune_rows.NAME] == 12
    assert counts[fold_layer_norm_affine.NAME] == 2 * DEPTH
    assert [n.op_type for n in graph.nodes].count(fb.OpType.Attention) == DEPTH
    path = tmp_path / "vit.mnn"
    save_net(graph_to_net(graph), str(path))
    feeds = {"image": np.random.default_rng(0).standard_normal((1, 3, SIZE, SIZE)).astype(np.float32)}
    ref = run_ort(model, feeds)[0]
    assert rel_diff(run_mnnpy(path, feeds, ["logits"])[0], ref) <= 1e-4
    pytest.importorskip("MNN")
    assert rel_diff(run_mnn(path, feeds, ["logits"])[0], ref) <= 1e-4


if __name__ == "__main__":
    export()
    sys.exit(0)
