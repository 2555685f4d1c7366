"""The text report of ``akg check``: findings with rule, value, limit, fix and KB id, and the estimate."""

from __future__ import annotations

from ascend_rule_cases import VIOLATIONS

from ascend_kernel_gym.ascend.checks import format_ascend_report, run_ascend_checks
from ascend_kernel_gym.evaluation.result import EvalResult


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
