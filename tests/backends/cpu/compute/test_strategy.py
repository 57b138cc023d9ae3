"""The cost model: MNN's choices for typical shapes, and its Strassen/Winograd formulas."""

from __future__ import annotations

import pytest
from mnnpy.backends.cpu.compute.common import Conv2DParams

from mnnpy.core.strategy import (
    WINOGRAD_MEMORY_COST,
    gemm_cost,
    im2col_cost,
    numpy_strassen_depth,
    plan_conv2d,
    strassen_depth,
    strassen_should_recurse,
    weight_traffic,
    winograd_cost,
    winograd_time,
    winograd_units,
)


def params(k: int, stride: int = 1, ic: int = 64, oc: int = 64, group: int = 1, dilation: int = 1) -> Conv2DParams:
    pad = (k - 1) // 2 * dilation
    return Conv2DParams((k, k), (stride, stride), (dilation, dilation), (pad, pad, pad, pad), group, ic, oc)


def test_winograd_for_3x3_s1_56x56x64() -> None:
    plan = plan_conv2d(params(3), (1, 64, 56, 56))
    assert plan.algorithm == "winograd"
    assert plan.unit in (2, 4, 6)
    rates = {u: plan.costs["direct"] / plan.costs[f"winograd:{u}"] for u in (2, 4, 6)}
    assert plan.unit == max(rates, key=rates.get)
    assert rates[plan.unit] > 1
    assert "winograd:6:bytes" in plan.costs


def test_im2col_for_strided_and_dilated() -> None:
    assert plan_conv2d(params(3, stride=2), (1, 64, 56, 56)).algorithm == "im2col"
    assert plan_conv2d(params(3, dilation=2), (1, 64, 56, 56)).algorithm == "im2col"


def test_im2col_when_winograd_does_not_pay() -> None:
    plan = plan_conv2d(params(3, ic=1, oc=2), (1, 1, 4, 4))
    assert plan.algorithm == "im2col"


def test_gemm_for_1x1() -> None:
    plan = plan_conv2d(params(1, ic=64, oc=256), (1, 64, 56, 56))
    assert plan.algorithm == "gemm1x1"
    assert plan_conv2d(params(1, stride=2), (1, 64, 56, 56)).algorithm == "im2col"


def test_strassen_for_large_1x1() -> None:
    plan = plan_conv2d(params(1, ic=2048, oc=2048), (1, 2048, 64, 64))
    assert plan.algorithm == "strassen"
    assert 1 <= plan.strassen_depth <= plan.costs["strassen_depth:mnn"] <= 5


def test_strassen_needs_numpy_to_gain() -> None:
    # MNN's traffic rule recurses here, but numpy's extra addition passes cost more than the BLAS flops saved
    plan = plan_conv2d(params(1, ic=1024, oc=1024), (1, 1024, 32, 32))
    assert plan.costs["strassen_depth:mnn"] >= 1 and plan.algorithm == "gemm1x1"
    assert strassen_depth(197, 768, 192) == 1 and numpy_strassen_depth(197, 768, 192) == 0  # ViT-tiny MLP


def test_depthwise_and_deconv() -> None:
    assert plan_conv2d(params(3, ic=32, oc=32, group=32), (1, 32, 28, 28)).algorithm == "depthwise"
    deconv = Conv2DParams((2, 2), (2, 2), (1, 1), (0, 0, 0, 0), 1, 8, 8, transposed=True)
    assert plan_conv2d(deconv, (1, 8, 4, 4)).algorithm == "deconv"
    with pytest.raises(ValueError):
        plan_conv2d(deconv, (1, 8, 4, 4), force="im2col")


def test_winograd_units_follow_alpha_rule() -> None:
    assert winograd_units(3, 56, 56) == [2, 4, 6]
    assert winograd_units(5, 56, 56) == [2, 4]
    assert winograd_units(7, 56, 56) == [2]
    assert winograd_units(3, 3, 3) == [2]  # maxUnit = clamp(isqrt(9), 2, 8) = 3
    # cost formula by hand for F(2,3), ic=oc=1, 4x4 output: (2*64 + 2*16 + 6*2*8) * 4 tiles
    assert winograd_cost(1, 1, 4, 4, 3, 2) == (128 + 32 + 96) * 4


def test_strassen_rule() -> None:
    # square n: recursion pays when n^3/64 > 4.625 n^2 (eP = 16), i.e. n > 296
    assert not strassen_should_recurse(256, 256, 256)
    assert strassen_should_recurse(512, 512, 512)
    assert strassen_depth(4096, 4096, 4096) == 4
    assert strassen_depth(4096, 4096, 4096, max_depth=2) == 2
    assert strassen_depth(512, 12, 512) == 0  # l not divisible by 2 * pack


def test_weight_traffic_prefers_small_units_on_deep_layers() -> None:
    # 512ch 7x7 (ResNet-18's last stage): F(2,3) streams 16/9 of the weights in GEMMs of 16 rows; im2col (49 rows)
    # measured 1.98 vs 2.13 ms (1 thread), and MNN's flop-only rate would even take F(4,3) (3.9 ms)
    plan = plan_conv2d(params(3, ic=512, oc=512), (1, 512, 7, 7))
    assert plan.algorithm == "im2col"
    assert plan.costs["winograd:2"] < plan.costs["winograd:4"] < plan.costs["winograd:6"]
    flop_only = {u: plan.costs["direct:flops"] / plan.costs[f"winograd:{u}:flops"] for u in (2, 4)}
    assert max(flop_only, key=flop_only.get) == 4
    memory = WINOGRAD_MEMORY_COST * plan.costs["winograd:4:bytes"]  # footprint term (issue 12)
    assert plan.costs["winograd:4"] - plan.costs["winograd:4:time"] == pytest.approx(weight_traffic(512, 512, 36)
                                                                                     + memory)
    assert plan_conv2d(params(3, ic=256, oc=256), (1, 256, 14, 14)).unit == 2  # 1.13 ms vs F(4,3) 1.42
    assert plan_conv2d(params(3), (1, 64, 256, 256)).unit == 6  # big images keep the big tile
    assert plan_conv2d(params(3), (1, 64, 56, 56)).unit == 4


def test_time_model_counts_short_gemms_and_passes() -> None:
    assert gemm_cost(1e6, 20) == pytest.approx(2e6) and gemm_cost(1e6, 1e9) == pytest.approx(1e6)
    plan = plan_conv2d(params(3, ic=64, oc=64), (1, 64, 56, 56))
    for u in (2, 4, 6):  # the passes over the tiles, not MNN's transform flops, dominate the Winograd overhead
        gemm = 2.0 * (u + 2) ** 2 * (56 // u + (56 % u > 0)) ** 2 * 64 * 64
        assert plan.costs[f"winograd:{u}:time"] > 1.5 * gemm
        assert plan.costs[f"winograd:{u}:time"] == winograd_time(64, 64, (1, 64, 56, 56), (56, 56), 3, u)
    assert plan.costs["direct"] == im2col_cost(params(3), (1, 64, 56, 56), (56, 56))


def test_winograd_blocks_follow_the_l2_cache(tmp_path) -> None:
    """Blocks of twice the L2 (read from Linux's cache description), 2 MB where it is unknown, within 0.5-4 MB."""
    from mnnpy.core.strategy import l2_cache_bytes, winograd_block_bytes

    for index, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"),
                                                 (3, "Unified", "32768K")]):
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert l2_cache_bytes(str(tmp_path)) == 512 << 10
    assert l2_cache_bytes(str(tmp_path / "absent")) is None
    assert winograd_block_bytes(512 << 10) == 1 << 20 and winograd_block_bytes(1 << 20) == 2 << 20
    assert winograd_block_bytes(None) == 2 << 20
    assert winograd_block_bytes(64 << 10) == 512 << 10 and winograd_block_bytes(16 << 20) == 4 << 20


def test_packed_gemm_model_picks_the_measured_units() -> None:
    """With the packed GEMM (few rows cheap, transforms' flops counted) the picks follow the per-layer times measured
    with it (``strategy.PACKED_GEMM``): F(4,3) down to 14², F(2,3) at 512ch 7² (im2col with numpy's GEMM), F(6,3)
    on big images."""
    from mnnpy.core.strategy import PACKED_GEMM

    def pick(c: int, hw: int) -> str:
        plan = plan_conv2d(params(3, ic=c, oc=c), (1, c, hw, hw), gemm=PACKED_GEMM)
        return plan.algorithm if plan.unit is None else f"{plan.algorithm}:{plan.unit}"

    assert [pick(c, hw) for c, hw in ((64, 56), (128, 28), (256, 14), (512, 7), (64, 256))] == \
        ["winograd:4", "winograd:4", "winograd:4", "winograd:2", "winograd:6"]
    assert plan_conv2d(params(3, ic=512, oc=512), (1, 512, 7, 7)).algorithm == "im2col"  # numpy's GEMM

