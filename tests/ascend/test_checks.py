"""Ascend rule checks end to end (``run_ascend_checks``): each rule fires on a kernel written to break it,
the checks stay silent on a compliant kernel and on the bundled reference solutions except where a
documented exclusion says why, and misuse fails loudly."""

from __future__ import annotations

import pytest
from ascend_rule_cases import COMPLIANT, COMPLIANT_LAUNCH, VIOLATIONS, rule_ids

from ascend_kernel_gym.ascend.checks import RULES, run_ascend_checks


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


def test_misuse_fails_loudly() -> None:
    with pytest.raises(ValueError, match="Ascend"):
        run_ascend_checks(COMPLIANT, [], "H200")
    with pytest.raises(ValueError, match="unknown chip"):
        run_ascend_checks(COMPLIANT, [], "910Z9")
    with pytest.raises(TypeError):
        run_ascend_checks(COMPLIANT, [object()], "910B3")  # type: ignore[list-item]
    assert run_ascend_checks("def broken(:\n", [], "910B3") == []


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
    unexpected = rule_ids(findings) - SOLUTION_EXCLUSIONS.get(task_id, set())
    assert not unexpected, [f["message"] for f in findings if f["rule"] in unexpected]


def test_exclusion_list_is_not_stale(solution_findings: dict[str, list[dict]]) -> None:
    stale = {
        task_id: sorted(rules - rule_ids(solution_findings.get(task_id, [])))
        for task_id, rules in SOLUTION_EXCLUSIONS.items()
        if rules - rule_ids(solution_findings.get(task_id, []))
    }
    assert not stale, f"exclusions no longer needed: {stale}"
