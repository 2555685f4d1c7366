"""The kernel analyser: Unified Buffer sizing per chip, and patterns that must not be flagged."""

from __future__ import annotations

from ascend_rule_cases import ELEMENTWISE, make_launch, make_source, rule_ids

from ascend_kernel_gym.ascend.analyzer import KernelAnalyzer
from ascend_kernel_gym.ascend.checks import run_ascend_checks
from ascend_kernel_gym.ascend.chips import load_chip
from ascend_kernel_gym.ascend.contexts import AnalysisContext
from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.source import parse_module


def test_ub_thresholds_are_exact() -> None:
    # UB: 12,288 fp32 x 2 buffers = 98,304 B fits; 32,768 fp32 x 2 = 262,144 B does not.
    fits = make_launch("k", [40], [[[40 * 12288], "float32"]] * 2, BLOCK=12288)
    assert not rule_ids(run_ascend_checks(make_source(ELEMENTWISE), [fits], "910B3")) & {"ub_overflow", "ub_pressure"}
    over = make_launch("k", [40], [[[40 * 32768], "float32"]] * 2, BLOCK=32768)
    ub = [f for f in run_ascend_checks(make_source(ELEMENTWISE), [over], "910B3") if f["rule"] == "ub_overflow"]
    assert ub and ub[0]["value"] == 262144 and ub[0]["limit"] == 196608


def test_multibuffer_factor_depends_on_the_chip() -> None:
    # 28,672 fp32 = 114,688 B: x 2 buffers overflows 910B3's 196,608 B UB, but fits the 950's
    # 253,952 B UB where multibuffer is off by default.
    launch = make_launch("k", [40], [[[40 * 28672], "float32"]] * 2, BLOCK=28672)
    assert "ub_overflow" in rule_ids(run_ascend_checks(make_source(ELEMENTWISE), [launch], "910B3"))
    assert "ub_overflow" not in rule_ids(run_ascend_checks(make_source(ELEMENTWISE), [launch], "950"))


def test_int64_scalar_base_is_not_flagged() -> None:
    # A per-program int64 base added to the pointer (scalar) is the recommended pattern.
    source = make_source(
        """
        @triton.jit
        def k(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            base = tl.cast(row, tl.int64) * n_cols
            cols = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + base + cols, mask=cols < n_cols)
            tl.store(out_ptr + base + cols, x, mask=cols < n_cols)
        """
    )
    assert "int64_index" not in rule_ids(run_ascend_checks(source, [], "910B3"))


def test_broadcast_subscripts_are_not_slicing() -> None:
    source = make_source(
        """
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            tl.store(x_ptr + r[:, None] * BLOCK + r[None, :], 0.0)
        """
    )
    assert "tensor_slicing" not in rule_ids(run_ascend_checks(source, [], "910B3"))


def test_the_context_decides_tile_sizes_and_dtypes() -> None:
    """The same kernel under two contexts: the constexpr sizes the tile, the pointer dtype its bytes."""
    module = parse_module(make_source(ELEMENTWISE))
    kernel = module.kernels["k"]
    chip = load_chip("910B3")

    def findings(block: int, dtype: str) -> list[dict]:
        ctx = AnalysisContext({"BLOCK": block}, {"x_ptr": dtype, "out_ptr": dtype}, label=f"BLOCK={block}")
        out = Findings()
        KernelAnalyzer(module, kernel, ctx, chip, out).run()
        return out.result()

    assert findings(1024, "fp32") == []
    # 65,536 fp16 = 131,072 B x 2 buffers = 262,144 B > 196,608 B; fp32 would be twice that
    (big,) = [f for f in findings(65536, "fp16") if f["rule"] == "ub_overflow"]
    assert big["value"] == 262144 and "[BLOCK=65536]" in big["message"]
    (bigger,) = [f for f in findings(65536, "fp32") if f["rule"] == "ub_overflow"]
    assert bigger["value"] == 524288
    # the tile itself is also too large (>= 65,536 elements), whatever its dtype
    assert "tile_too_large" in rule_ids(findings(65536, "fp16"))
