"""Ascend rule checks: each rule fires on a kernel written to break it, and stays silent on the
bundled reference solutions except where a documented exclusion says why."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from ascend_kernel_gym.ascend.checks import RULES, format_ascend_report, run_ascend_checks
from ascend_kernel_gym.ascend.chips import load_chip
from ascend_kernel_gym.evaluation.result import EvalResult, LaunchRecord

REPO = Path(__file__).resolve().parents[2]
KB_DIR = REPO / "ascend_kernel_gym" / "kb_index" / "entries"

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""


def _src(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def _launch(kernel: str, grid, tensors=(), **constexprs) -> LaunchRecord:
    return LaunchRecord(kernel=kernel, grid=list(grid), constexprs=constexprs, tensor_args=[list(t) for t in tensors])


def _rules(findings: list[dict]) -> set[str]:
    return {f["rule"] for f in findings}


# A compliant vector kernel: int32 offsets, grid = vector cores, grid-stride loop, 1-D access.
COMPLIANT = _src(
    """
    @triton.jit
    def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        for block in range(pid, tl.cdiv(n, BLOCK), tl.num_programs(0)):
            offs = block * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)

    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            relu_kernel[(40,)](x, out, x.numel(), BLOCK=1024)
            return out
    """
)
COMPLIANT_LAUNCH = _launch("relu_kernel", [40], [[[4096, 4096], "float32"]] * 2, BLOCK=1024)

ELEMENTWISE = """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)
"""

MATMUL = """
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC_DTYPE)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"""

MM_TENSORS = [[[256, 256], "float16"], [[256, 256], "float16"], [[256, 256], "float16"]]

# rule -> (source, launches, expected severity, substring expected in the message)
VIOLATIONS: dict[str, tuple[str, list[LaunchRecord], str, str]] = {
    "max_grid": (
        _src(ELEMENTWISE),
        [_launch("k", [70000], [[[70000 * 16], "float32"]] * 2, BLOCK=16)],
        "error",
        "70,000",
    ),
    "grid_oversubscribed": (
        _src(ELEMENTWISE),
        [_launch("k", [4096], [[[4096 * 256], "float32"]] * 2, BLOCK=256)],
        "warning",
        "rounds",
    ),
    "ub_overflow": (
        _src(ELEMENTWISE),
        [_launch("k", [40], [[[40 * 65536], "float32"]] * 2, BLOCK=65536)],
        "error",
        "Unified Buffer",
    ),
    "ub_pressure": (
        _src(
            """
            @triton.jit
            def k(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs)
                y = tl.load(y_ptr + offs)
                z = tl.load(z_ptr + offs)
                s = x + y + z
                tl.store(out_ptr + offs, s)
            """
        ),
        [_launch("k", [40], [[[40 * 8192], "float32"]] * 4, BLOCK=8192)],
        "warning",
        "live tiles",
    ),
    "l0_overflow": (
        _src(MATMUL.replace("ACC_DTYPE", "tl.float32")),
        [_launch("mm", [1], MM_TENSORS, BM=256, BN=256, BK=256)],
        "warning",
        "exceeds",
    ),
    "int64_index": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
                idx = offs * 2 + 1
                tl.store(out_ptr + idx, tl.load(x_ptr + idx))
            """
        ),
        [],
        "warning",
        "int64",
    ),
    "num_warps_stages": (
        _src(
            ELEMENTWISE
            + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        k[(1,)](x, out, x.numel(), BLOCK=128, num_warps=8)
        return out
"""
        ),
        [],
        "warning",
        "num_warps=8",
    ),
    "dot_fp16_accumulator": (
        _src(MATMUL.replace("ACC_DTYPE", "tl.float16")),
        [_launch("mm", [16], MM_TENSORS, BM=16, BN=256, BK=32)],
        "error",
        "fp16",
    ),
    "dot_block_not_multiple_of_16": (
        _src(MATMUL.replace("ACC_DTYPE", "tl.float32")),
        [_launch("mm", [10], MM_TENSORS, BM=24, BN=32, BK=8)],
        "warning",
        "M=24",
    ),
    "dot_options": (
        _src(
            """
            @triton.jit
            def k(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
                r = tl.arange(0, B)
                a = tl.load(a_ptr + r[:, None] * B + r[None, :])
                b = tl.load(b_ptr + r[:, None] * B + r[None, :])
                c = tl.dot(a, b, input_precision="tf32x3")
                tl.store(c_ptr + r[:, None] * B + r[None, :], c)
            """
        ),
        [],
        "warning",
        "tf32x3",
    ),
    "dot_scaled": (
        _src(
            """
            @triton.jit
            def k(a_ptr, s_ptr, c_ptr, B: tl.constexpr):
                r = tl.arange(0, B)
                a = tl.load(a_ptr + r[:, None] * B + r[None, :])
                c = tl.dot_scaled(a, None, "e4m3", a, None, "e4m3")
                tl.store(c_ptr + r[:, None] * B + r[None, :], c)
            """
        ),
        [],
        "warning",
        "dot_scaled",
    ),
    "last_dim_alignment": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
                rows = tl.program_id(0) * BR + tl.arange(0, BR)
                cols = tl.arange(0, BC)
                mask = (rows[:, None] < R) & (cols[None, :] < C)
                x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=mask)
                tl.store(out_ptr + rows[:, None] * C + cols[None, :], x, mask=mask)
            """
        ),
        [_launch("k", [32], [[[2048, 3], "float32"]] * 2, BR=64, BC=4)],
        "warning",
        "12 B",
    ),
    "tensor_slicing": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                first = x[0]
                tl.store(out_ptr, first)
            """
        ),
        [],
        "error",
        "x[0]",
    ),
    "while_loop": (
        _src(
            """
            @triton.jit
            def k(x_ptr, n):
                i = 0
                while i < n:
                    tl.store(x_ptr + i, 0.0)
                    i += 1
            """
        ),
        [],
        "warning",
        "while",
    ),
    "break_continue": (
        _src(
            """
            @triton.jit
            def k(x_ptr, n):
                for i in range(n):
                    if i > 4:
                        break
                    tl.store(x_ptr + i, 0.0)
            """
        ),
        [],
        "error",
        "break",
    ),
    "early_return": (
        _src(
            """
            @triton.jit
            def k(x_ptr, n):
                pid = tl.program_id(0)
                if pid >= n:
                    return
                tl.store(x_ptr + pid, 1.0)
            """
        ),
        [],
        "warning",
        "return",
    ),
    "where_pointer": (
        _src(
            """
            @triton.jit
            def k(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                shifted = tl.where(offs > 3, offs - 4, offs)
                tl.store(out_ptr + offs, tl.load(x_ptr + shifted))
            """
        ),
        [],
        "warning",
        "tl.where",
    ),
    "dtype_call_cast": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.store(out_ptr + tl.arange(0, BLOCK), tl.float16(x))
            """
        ),
        [],
        "error",
        "tl.float16(x)",
    ),
    "constexpr_in_body": (
        _src(
            """
            @triton.jit
            def k(x_ptr):
                B = tl.constexpr(128)
                tl.store(x_ptr + tl.arange(0, B), 0.0)
            """
        ),
        [],
        "warning",
        "tl.constexpr",
    ),
    "arange_too_long": (
        _src(ELEMENTWISE),
        [_launch("k", [1], [[[1 << 21], "float32"]] * 2, BLOCK=1 << 21)],
        "error",
        "2,097,152",
    ),
    "tile_too_large": (
        _src(
            """
            @triton.jit
            def k(x_ptr, R: tl.constexpr, C: tl.constexpr):
                acc = tl.zeros((R, C), dtype=tl.float16)
                tl.store(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :], acc)
            """
        ),
        [_launch("k", [1], [[[512, 256], "float16"]], R=512, C=256)],
        "warning",
        "131,072",
    ),
    "unsupported_dtype": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK)).to(tl.float64)
                tl.store(out_ptr + tl.arange(0, BLOCK), x)
            """
        ),
        [],
        "error",
        "float64",
    ),
    "atomic_unsupported": (
        _src(
            """
            @triton.jit
            def k(x_ptr, count_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.atomic_add(count_ptr, tl.sum(x, axis=0))
            """
        ),
        [_launch("k", [4], [[[1024], "int64"], [[1], "int64"]], BLOCK=256)],
        "error",
        "atomic_add on int64",
    ),
    "sort_dtype": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.store(out_ptr + tl.arange(0, BLOCK), tl.sort(x))
            """
        ),
        [_launch("k", [1], [[[256], "int32"], [[256], "int32"]], BLOCK=256)],
        "error",
        "int32",
    ),
    "item_in_forward": (
        _src(
            ELEMENTWISE
            + """
class ModelNew(nn.Module):
    def forward(self, x):
        n = int(x.sum().item())
        out = torch.empty_like(x)
        k[(1,)](x, out, n, BLOCK=128)
        return out
"""
        ),
        [],
        "warning",
        ".item()",
    ),
    "device_print": (
        _src(
            """
            @triton.jit
            def k(x_ptr):
                pid = tl.program_id(0)
                tl.device_print("pid", pid)
                tl.store(x_ptr + pid, 1.0)
            """
        ),
        [],
        "warning",
        "device_print",
    ),
    "block_ptr_swapped_strides": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
                p = tl.make_block_ptr(x_ptr, shape=(N, M), strides=(1, M), offsets=(0, 0),
                                      block_shape=(BN, BM), order=(0, 1))
                x = tl.load(p)
                q = tl.make_block_ptr(out_ptr, shape=(N, M), strides=(M, 1), offsets=(0, 0),
                                      block_shape=(BN, BM), order=(1, 0))
                tl.store(q, x)
            """
        ),
        [],
        "warning",
        "(1, M)",
    ),
    "indirect_access": (
        _src(
            """
            @triton.jit
            def k(ids_ptr, table_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                ids = tl.load(ids_ptr + offs)
                tl.store(out_ptr + offs, tl.load(table_ptr + ids))
            """
        ),
        [],
        "warning",
        "gather",
    ),
    "div_mod_offsets": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, C, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                src = (offs % C) * C + offs // C
                tl.store(out_ptr + offs, tl.load(x_ptr + src))
            """
        ),
        [],
        "warning",
        "//",
    ),
    "fp16_reduction": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.store(out_ptr, tl.sum(x, axis=0))
            """
        ),
        [_launch("k", [1], [[[1024], "float16"], [[1], "float16"]], BLOCK=1024)],
        "warning",
        "fp16",
    ),
    "int_compare_in_where": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
                y = tl.where(offs < n, x * 2.0, 0.0)
                tl.store(out_ptr + offs, y, mask=offs < n)
            """
        ),
        [],
        "warning",
        "integer",
    ),
    "descriptor_mixing": (
        _src(
            """
            @triton.jit
            def k(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
                desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
                x = desc.load([0, 0])
                r = tl.arange(0, BM)
                c = tl.arange(0, BN)
                tl.store(out_ptr + r[:, None] * N + c[None, :], x)
            """
        ),
        [],
        "warning",
        "descriptor",
    ),
    "scalar_div_rn": (
        _src(
            """
            @triton.jit
            def k(x_ptr, a, b):
                tl.store(x_ptr, tl.div_rn(a, b))
            """
        ),
        [],
        "warning",
        "div_rn",
    ),
}


def test_every_rule_has_a_violation_case() -> None:
    assert set(VIOLATIONS) == set(RULES)


@pytest.mark.parametrize("rule", sorted(VIOLATIONS))
def test_rule_fires_on_a_violating_kernel(rule: str) -> None:
    source, launches, severity, needle = VIOLATIONS[rule]
    findings = run_ascend_checks(source, launches, "910B3")
    mine = [f for f in findings if f["rule"] == rule]
    assert mine, f"{rule} did not fire; got {[(f['rule'], f['message']) for f in findings]}"
    finding = mine[0]
    assert finding["severity"] == severity
    assert needle in finding["message"] + str(finding["value"]), finding
    assert finding["kb_id"] == RULES[rule].kb_id
    assert finding["fix"] == RULES[rule].fix and finding["fix"]
    assert finding["message"].endswith("Fix: " + finding["fix"])  # the feedback line carries the fix
    assert set(finding) >= {"rule", "severity", "value", "limit", "message", "fix", "kb_id"}


def test_compliant_kernel_is_silent() -> None:
    assert run_ascend_checks(COMPLIANT, [COMPLIANT_LAUNCH], "910B3") == []
    assert run_ascend_checks(COMPLIANT, [], "910B3") == []


def test_thresholds_are_exact() -> None:
    # 65535 programs is allowed, 65536 is not.
    ok = _launch("k", [65535], [[[65535 * 1024], "float32"]] * 2, BLOCK=1024)
    bad = _launch("k", [65536], [[[65536 * 1024], "float32"]] * 2, BLOCK=1024)
    assert "max_grid" not in _rules(run_ascend_checks(_src(ELEMENTWISE), [ok], "910B3"))
    grid = [f for f in run_ascend_checks(_src(ELEMENTWISE), [bad], "910B3") if f["rule"] == "max_grid"]
    assert grid and grid[0]["value"] == 65536 and grid[0]["limit"] == 65535
    # A 2-D grid is flattened: 300 x 300 = 90,000 programs.
    two_d = _launch("k", [300, 300], [[[90000 * 16], "float32"]] * 2, BLOCK=16)
    assert "max_grid" in _rules(run_ascend_checks(_src(ELEMENTWISE), [two_d], "910B3"))
    # UB: 12,288 fp32 x 2 buffers = 98,304 B fits; 32,768 fp32 x 2 = 262,144 B does not.
    fits = _launch("k", [40], [[[40 * 12288], "float32"]] * 2, BLOCK=12288)
    assert not _rules(run_ascend_checks(_src(ELEMENTWISE), [fits], "910B3")) & {"ub_overflow", "ub_pressure"}
    over = _launch("k", [40], [[[40 * 32768], "float32"]] * 2, BLOCK=32768)
    ub = [f for f in run_ascend_checks(_src(ELEMENTWISE), [over], "910B3") if f["rule"] == "ub_overflow"]
    assert ub and ub[0]["value"] == 262144 and ub[0]["limit"] == 196608


def test_multibuffer_factor_depends_on_the_chip() -> None:
    # 28,672 fp32 = 114,688 B: x 2 buffers overflows 910B3's 196,608 B UB, but fits the 950's
    # 253,952 B UB where multibuffer is off by default.
    launch = _launch("k", [40], [[[40 * 28672], "float32"]] * 2, BLOCK=28672)
    assert "ub_overflow" in _rules(run_ascend_checks(_src(ELEMENTWISE), [launch], "910B3"))
    assert "ub_overflow" not in _rules(run_ascend_checks(_src(ELEMENTWISE), [launch], "950"))


def test_oversubscription_uses_cube_cores_for_dot_kernels() -> None:
    source = _src(MATMUL.replace("ACC_DTYPE", "tl.float32"))
    # 60 programs: 3 rounds over 20 cube cores of 910B3 (fires), 1.5 rounds over 40 vector cores would not.
    launch = _launch("mm", [60], [[[64, 64], "float16"]] * 3, BM=16, BN=64, BK=16)
    found = [f for f in run_ascend_checks(source, [launch], "910B3") if f["rule"] == "grid_oversubscribed"]
    assert found and "20 cube cores" in found[0]["message"]


def test_int64_scalar_base_is_not_flagged() -> None:
    # A per-program int64 base added to the pointer (scalar) is the recommended pattern.
    source = _src(
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
    assert "int64_index" not in _rules(run_ascend_checks(source, [], "910B3"))


def test_broadcast_subscripts_are_not_slicing() -> None:
    source = _src(
        """
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            tl.store(x_ptr + r[:, None] * BLOCK + r[None, :], 0.0)
        """
    )
    assert "tensor_slicing" not in _rules(run_ascend_checks(source, [], "910B3"))


def test_call_site_constants_are_used_without_launch_records() -> None:
    source = _src(
        ELEMENTWISE
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        BLOCK = 65536
        k[(1,)](x, out, x.numel(), BLOCK=BLOCK)
        return out
"""
    )
    assert "tile_too_large" in _rules(run_ascend_checks(source, [], "910B3"))


def test_misuse_fails_loudly() -> None:
    with pytest.raises(ValueError, match="Ascend"):
        run_ascend_checks(COMPLIANT, [], "H200")
    with pytest.raises(ValueError, match="unknown chip"):
        run_ascend_checks(COMPLIANT, [], "910Z9")
    with pytest.raises(TypeError):
        run_ascend_checks(COMPLIANT, [object()], "910B3")  # type: ignore[list-item]
    assert run_ascend_checks("def broken(:\n", [], "910B3") == []


def test_accepts_launch_dicts() -> None:
    launch = _launch("k", [70000], [[[70000 * 16], "float32"]] * 2, BLOCK=16)
    as_dict = EvalResult(task_id="t", backend="interpreter", profile="small", code_hash="x", launches=[launch])
    records = as_dict.to_dict()["launches"]
    assert "max_grid" in _rules(run_ascend_checks(_src(ELEMENTWISE), records, "910B3"))


def _kb_ids() -> set[str]:
    ids = set()
    for path in KB_DIR.glob("*.md"):
        match = re.search(r"^id:\s*(\S+)", path.read_text(encoding="utf-8"), re.MULTILINE)
        if match:
            ids.add(match.group(1).strip("'\""))
    return ids


def test_every_rule_links_an_existing_kb_entry() -> None:
    ids = _kb_ids()
    if not ids:
        pytest.skip("knowledge-base entries not present")
    missing = {rule.id: rule.kb_id for rule in RULES.values() if rule.kb_id not in ids}
    assert not missing


def test_docs_list_every_rule() -> None:
    text = (REPO / "docs" / "ascend.md").read_text(encoding="utf-8")
    assert not [rule for rule in RULES if f"`{rule}`" not in text]


def test_report_text_names_rule_value_and_fix() -> None:
    source, launches, _, _ = VIOLATIONS["max_grid"]
    result = EvalResult(task_id="t", backend="interpreter", profile="small", code_hash="x")
    result.ascend_checks = run_ascend_checks(source, launches, "910B3")
    result.estimate = {
        "label": "estimate",
        "chip": "910B3",
        "est_ms": 0.5,
        "roofline_ms": 0.1,
        "est_roofline_fraction": 0.2,
    }
    text = format_ascend_report(result)
    assert "max_grid" in text and "70000" in text and "65535" in text and "Fix:" in text and "kb: grid-" in text
    assert "estimate" in text and "910B3" in text and "0.200" in text
    assert format_ascend_report(EvalResult("t", "interpreter", "small", "x")).startswith("Ascend checks: no findings")


# --- the bundled reference solutions ------------------------------------------------------------

#: Findings the bundled solutions legitimately produce at the ``full`` profile on 910B3 (warnings
#: only; docs/ascend.md explains each). Anything else, and any error, fails the test.
SOLUTION_EXCLUSIONS: dict[str, set[str]] = {
    # reads rows of the table at ids loaded from memory (a gather by nature) with int64 row offsets
    "core/L1/embedding": {"indirect_access", "int64_index"},
    # int64 row offsets as a tensor; the task's 16384-wide rows fit int32
    "core/L1/matvec": {"int64_index"},
    # tl.where(cols < n, ...) masks the tail of a row with an integer compare
    "core/L1/layernorm": {"int_compare_in_where"},
    "core/L2/add_layernorm": {"int_compare_in_where"},
    "core/L2/attention": {"int_compare_in_where", "last_dim_alignment"},
    "core/L2/cross_entropy": {"indirect_access", "int_compare_in_where"},
    "core/L2/decode_attention_gqa": {"int_compare_in_where", "last_dim_alignment"},
    "core/L2/group_norm": {"div_mod_offsets", "int_compare_in_where"},
    "core/L2/layernorm_gelu": {"grid_oversubscribed", "int_compare_in_where"},
    "core/L2/logsumexp": {"int_compare_in_where"},
    "core/L3/attention_head": {"grid_oversubscribed", "int_compare_in_where"},
    "core/L3/gpt2_block": {"grid_oversubscribed", "int_compare_in_where", "last_dim_alignment"},
    "core/L3/llama_decoder_block": {"grid_oversubscribed", "int_compare_in_where", "num_warps_stages"},
    "core/L3/mha_block": {"int_compare_in_where", "num_warps_stages"},
    # GPU-sized grids (MAX_PROGRAMS = 4096 or one program per tile) with small per-program work
    "core/L1/matmul_square": {"grid_oversubscribed"},
    "core/L2/bias_gelu_residual": {"grid_oversubscribed"},
    "core/L2/residual_rmsnorm": {"grid_oversubscribed"},
    # launched with num_warps=8 (a GPU knob, ignored on Ascend)
    "core/L2/causal_softmax": {"num_warps_stages"},
    "core/L2/linear_relu_fp16": {"num_warps_stages"},
    "core/L2/swiglu_gate_up": {"num_warps_stages"},
    "core/L3/mlp_block": {"num_warps_stages"},
    # positions are rows % S (tensor mod in the cos / sin offsets); six fp16 tiles loaded, double
    # buffered, plus their fp32 copies
    "core/L2/rotary_embedding": {"div_mod_offsets", "ub_pressure"},
}


def _solution_tasks():
    from ascend_kernel_gym.tasks.suite import load_suite

    return [t for t in load_suite("core") if t.solution_path]


@pytest.fixture(scope="module")
def solution_findings() -> dict[str, list[dict]]:
    from ascend_kernel_gym.ascend.checks import capture_launches

    out = {}
    for task in _solution_tasks():
        code = task.solution_source()
        launches = capture_launches(task, code, "full")
        assert launches, f"{task.id}: no launch captured"
        out[task.id] = run_ascend_checks(code, launches, "910B3")
    return out


@pytest.mark.parametrize("task_id", [t.id for t in _solution_tasks()])
def test_bundled_solution_complies(task_id: str, solution_findings: dict[str, list[dict]]) -> None:
    findings = solution_findings[task_id]
    errors = [f for f in findings if f["severity"] == "error"]
    assert not errors, errors
    unexpected = _rules(findings) - SOLUTION_EXCLUSIONS.get(task_id, set())
    assert not unexpected, [f["message"] for f in findings if f["rule"] in unexpected]


def test_exclusion_list_is_not_stale(solution_findings: dict[str, list[dict]]) -> None:
    stale = {
        task_id: sorted(rules - _rules(solution_findings.get(task_id, [])))
        for task_id, rules in SOLUTION_EXCLUSIONS.items()
        if rules - _rules(solution_findings.get(task_id, []))
    }
    assert not stale, f"exclusions no longer needed: {stale}"


def test_profiles_have_the_documented_figures() -> None:
    chip = load_chip("910B3")
    assert (chip.vector_cores, chip.cube_cores, chip.ub_bytes, chip.max_grid) == (40, 20, 196608, 65535)
    assert chip.multibuffer_default and not load_chip("950").multibuffer_default
    assert load_chip("950").ub_bytes == 253952
    # derived peak = cube cores x 16^3 x 2 x clock
    assert abs(chip.peak_dot_tflops - 20 * 16**3 * 2 * 1800e6 / 1e12) < 0.1
    assert chip.hbm_bandwidth_is_assumption and not load_chip("H200").hbm_bandwidth_is_assumption
