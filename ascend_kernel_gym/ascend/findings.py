"""The collector of findings: one per rule, kernel and line, the worst value kept, errors first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.ascend.rules import ERROR, RULES, WARNING


@dataclass
class Findings:
    """Findings of one check run, keyed by (rule, kernel, line): a repeat keeps the larger value or the error."""

    items: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)

    def add(
        self,
        rule: str,
        kernel: str,
        line: int,
        value: Any,
        limit: Any,
        detail: str,
        severity: str | None = None,
    ) -> None:
        """Record a finding of ``rule`` (its severity by default), with the rule's fix in the message."""
        spec = RULES[rule]
        key = (rule, kernel, line)
        finding = {
            "rule": rule,
            "severity": severity or spec.severity,
            "value": value,
            "limit": limit,
            # self-contained: the evaluator shows the message alone in the agent's feedback
            "message": f"{kernel}" + (f" line {line}" if line else "") + f": {detail}. Fix: {spec.fix}",
            "fix": spec.fix,
            "kb_id": spec.kb_id,
            "kernel": kernel,
            "line": line,
        }
        old = self.items.get(key)
        if (
            old is None
            or (_sortable(value) > _sortable(old["value"]))
            or (finding["severity"] == ERROR and old["severity"] != ERROR)
        ):
            self.items[key] = finding

    def result(self) -> list[dict[str, Any]]:
        """The findings, errors first, then by kernel, line and rule."""
        order = {ERROR: 0, WARNING: 1}
        return sorted(
            self.items.values(), key=lambda f: (order.get(f["severity"], 2), f["kernel"], f["line"], f["rule"])
        )


def _sortable(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
