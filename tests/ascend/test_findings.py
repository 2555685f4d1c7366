"""The findings collector: one finding per rule, kernel and line; the worst kept; errors first."""

from __future__ import annotations

from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.rules import RULES


def test_repeats_keep_the_larger_value_or_the_error() -> None:
    out = Findings()
    out.add("ub_pressure", "k", 3, 1000, 500, "small")
    out.add("ub_pressure", "k", 3, 4000, 500, "large")
    out.add("ub_pressure", "k", 3, 2000, 500, "middle")
    (finding,) = out.result()
    assert finding["value"] == 4000 and "large" in finding["message"]
    out.add("unsupported_dtype", "k", 5, "uint8", None, "tensor argument 0 is uint8", severity="warning")
    out.add("unsupported_dtype", "k", 5, "fp64", None, "tensor argument 1 is fp64")
    dtype = [f for f in out.result() if f["rule"] == "unsupported_dtype"]
    assert len(dtype) == 1 and dtype[0]["severity"] == "error" and dtype[0]["value"] == "fp64"


def test_findings_are_self_contained_and_ordered() -> None:
    out = Findings()
    out.add("while_loop", "b", 9, None, None, "while loop in a kernel")
    out.add("while_loop", "a", 2, None, None, "while loop in a kernel")
    out.add("max_grid", "b", 0, 70000, 65535, "grid (70000,)")
    out.add("early_return", "a", 2, None, None, "return")
    result = out.result()
    assert [(f["rule"], f["kernel"], f["line"]) for f in result] == [
        ("max_grid", "b", 0),  # errors first
        ("early_return", "a", 2),
        ("while_loop", "a", 2),
        ("while_loop", "b", 9),
    ]
    grid = result[0]
    assert grid["message"] == f"b: grid (70000,). Fix: {RULES['max_grid'].fix}"  # no line 0 in the text
    assert result[1]["message"].startswith("a line 2: return. Fix: ")
    assert grid["kb_id"] == RULES["max_grid"].kb_id and grid["severity"] == RULES["max_grid"].severity
