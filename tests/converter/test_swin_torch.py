"""A Swin-T-style stage built in torch (the structure of Microsoft's reference Swin code: window_partition /
window_reverse as view + permute + view, torch.roll for the shifted windows, relative position bias gathered from a
table, the -100 shift mask, exact GELU) and exported by torch.onnx (TorchScript exporter, opset 17): the moves must
drop as on the onnx.helper model, and the outputs match onnxruntime.

The exported files are committed next to this test (test_swin_torch_*.onnx, dim 16, 2 heads, 8x8 tokens,
window 4), so the tests need no torch; regenerate them with `python tests/converter/test_swin_torch.py` in an
environment with torch (`pip install torch`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.converter.frontends.onnx import load_onnx
from mnnpy.converter.passes import OPT_IN, data_moves, run_pipeline, token_reorder
from mnnpy.converter.writer import graph_to_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema import save_net

HERE = Path(__file__).resolve().parent
FILES = {"blocks": HERE / "test_swin_torch_blocks.onnx", "classifier": HERE / "test_swin_torch_classifier.onnx"}
RES, DIM, HEADS, WINDOW = 8, 16, 2, 4


def torch_stage(classes: int) -> Any:
    """The torch module: a W-MSA block, an SW-MSA block, then (classes > 0) LayerNorm, token mean, Linear."""
    import torch
    from torch import nn

    def partition(x: Any, ws: int) -> Any:
        b, h, w, c = x.shape
        x = x.view(b, h // ws, ws, w // ws, ws, c)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, c)

    def reverse(windows: Any, ws: int, h: int, w: int) -> Any:
        x = windows.view(1, h // ws, w // ws, ws, ws, -1)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(1, h, w, -1)

    class WindowAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = (DIM // HEADS) ** -0.5
            self.table = nn.Parameter(torch.randn((2 * WINDOW - 1) ** 2, HEADS) * 0.5)
            coords = torch.stack(torch.meshgrid(torch.arange(WINDOW), torch.arange(WINDOW), indexing="ij")).flatten(1)
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + WINDOW - 1
            self.register_buffer("index", rel[:, :, 0] * (2 * WINDOW - 1) + rel[:, :, 1])
            self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)

        def forward(self, x: Any, mask: Any) -> Any:
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            attn = (q * self.scale) @ k.transpose(-2, -1)
            attn = attn + self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)
            if mask is not None:
                nw = mask.shape[0]
                attn = (attn.view(b // nw, nw, HEADS, n, n) + mask.unsqueeze(1).unsqueeze(0)).view(-1, HEADS, n, n)
            return self.proj((attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c))

    class Block(nn.Module):
        def __init__(self, shift: int) -> None:
            super().__init__()
            self.shift = shift
            self.norm1, self.norm2, self.attn = nn.LayerNorm(DIM), nn.LayerNorm(DIM), WindowAttention()
            self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))
            mask = None
            if shift:
                img = torch.zeros((1, RES, RES, 1))
                bounds = (slice(0, -WINDOW), slice(-WINDOW, -shift), slice(-shift, None))
                for label, (hs, ws) in enumerate((hs, ws) for hs in bounds for ws in bounds):
                    img[:, hs, ws, :] = label
                wins = partition(img, WINDOW).view(-1, WINDOW * WINDOW)
                diff = wins.unsqueeze(1) - wins.unsqueeze(2)
                mask = diff.masked_fill(diff != 0, -100.0).masked_fill(diff == 0, 0.0)
            self.register_buffer("mask", mask)

        def forward(self, x: Any) -> Any:
            z = self.norm1(x).view(1, RES, RES, DIM)
            if self.shift:
                z = torch.roll(z, shifts=(-self.shift, -self.shift), dims=(1, 2))
            z = self.attn(partition(z, WINDOW).view(-1, WINDOW * WINDOW, DIM), self.mask)
            z = reverse(z.view(-1, WINDOW, WINDOW, DIM), WINDOW, RES, RES)
            if self.shift:
                z = torch.roll(z, shifts=(self.shift, self.shift), dims=(1, 2))
            x = x + z.view(1, RES * RES, DIM)
            return x + self.mlp(self.norm2(x))

    class Stage(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.Sequential(Block(0), Block(WINDOW // 2))
            self.norm, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, max(classes, 1))

        def forward(self, x: Any) -> Any:
            x = self.blocks(x)
            return self.head(self.norm(x).mean(1)) if classes else x

    torch.manual_seed(0)
    stage = Stage().eval()
    with torch.no_grad():
        for p in stage.parameters():  # LayerNorm weights off 1 and biases off 0, so every term is tested
            p.add_(torch.randn_like(p) * 0.05)
    return stage


def export() -> None:
    import torch

    for name, classes in (("blocks", 0), ("classifier", 10)):
        torch.onnx.export(torch_stage(classes), (torch.randn(1, RES * RES, DIM),), str(FILES[name]),
                          input_names=["x"], output_names=["y"], opset_version=17, dynamo=False)


@pytest.mark.parametrize(("name", "moves_after"), [("blocks", 3), ("classifier", 2)])
def test_torch_swin_stage(tmp_path: Path, name: str, moves_after: int) -> None:
    """Data moves (data_moves.py). Before: the partition, reverse, QKV and context Permutes of both blocks (8), the
    two torch.rolls' 8 Slices and 4 Concats and the 6 q/k/v Gathers (26). After (with --transformerFuse's passes):
    the QKV projections split (split-qkv), 3 token reorders for the blocks (the fewest possible, see
    test_transformer_models), 2 when the token mean follows (<= 25%). Counting Permute / Transpose / Raster only:
    8 -> 3 and 8 -> 2."""
    onnx = pytest.importorskip("onnx")
    from .helpers import rel_diff, run_ort
    from .test_transformer_models import NEW, run_mnnpy

    model = onnx.load(str(FILES[name]))
    feeds = {"x": np.random.default_rng(0).standard_normal((1, RES * RES, DIM)).astype(np.float32)}
    before = load_onnx(model)
    run_pipeline(before, skip=NEW)
    after = load_onnx(model)
    run_pipeline(after, enable=OPT_IN)
    path = tmp_path / f"{name}.mnn"
    save_net(graph_to_net(after), str(path))
    assert rel_diff(run_mnnpy(path, feeds, ["y"])[0], run_ort(model, feeds)[0]) <= 1e-4
    assert [n.op_type for n in after.nodes].count(fb.OpType.Attention) == 2
    assert token_reorder.count_moves(before) == 26 and token_reorder.count_moves(after) == moves_after
    assert moves_after <= 26 / 4 and all(token_reorder.token_gather(after, n) for n in data_moves.moves(after))
    # the same at run time: the Raster commands of mnnpy's CPU session that reorder data (not the whole-tensor layout
    # conversions, like ConvertTensor above; those whose bytes do not change are aliased and run nothing): before,
    # the blocks' permutes, rolls and q/k/v selections fused by the geometry into 12 rasters; after, only the token
    # reorders
    save_net(graph_to_net(before), str(tmp_path / f"{name}.before.mnn"))
    assert [_copying_rasters(tmp_path / f"{name}.{k}mnn") for k in ("before.", "")] == [12, moves_after]


def _copying_rasters(path: Path) -> int:
    """Raster commands of a CPU session on `path` that reorder data by regions (not whole-tensor copies, packs or
    unpacks; the byte-identical copies are aliased)."""
    import mnnpy

    commands = mnnpy.Interpreter(str(path)).createSession({"backend": "CPU"}).info()["commands"]
    assert any(c["algorithm"] == "alias" for c in commands)  # the layout copies around the 1x1 convolutions
    return sum(c["type"] == "Raster" and c["algorithm"] == "raster-regions" for c in commands)


if __name__ == "__main__":
    export()
    sys.exit(0)
