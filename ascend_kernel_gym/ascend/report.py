"""The Ascend findings and the cost-model estimate of an evaluation result as plain text (``akg check``)."""

from __future__ import annotations

from typing import Any

from ascend_kernel_gym.ascend.rules import ERROR


def format_ascend_report(result: Any) -> str:
    """The Ascend findings and the cost-model estimate of an ``EvalResult`` (or its dict) as text."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    checks = data.get("ascend_checks") or []
    lines: list[str] = []
    if checks:
        errors = sum(1 for c in checks if c.get("severity") == ERROR)
        lines.append(f"Ascend checks: {errors} error(s), {len(checks) - errors} warning(s)")
        for c in checks:
            value = "" if c.get("value") is None else f" (value {c.get('value')}"
            if value and c.get("limit") is not None:
                value += f", limit {c.get('limit')}"
            value += ")" if value else ""
            lines.append(f"  [{c.get('severity')}] {c.get('rule')}: {c.get('message')}{value} (kb: {c.get('kb_id')})")
    else:
        lines.append("Ascend checks: no findings")
    est = data.get("estimate")
    if est:
        lines.append(
            f"Cost-model estimate ({est.get('label', 'estimate')}, chip {est.get('chip')}): "
            f"{_fmt_ms(est.get('est_ms'))} ms; roofline floor {_fmt_ms(est.get('roofline_ms'))} ms; "
            f"roofline fraction {_fmt_frac(est.get('est_roofline_fraction'))}"
            + (f"; est. speedup vs eager PyTorch {est['est_speedup']:.2f}x" if est.get("est_speedup") else "")
        )
        if est.get("bound"):
            lines.append(f"  bound by: {est['bound']}; programs {est.get('programs')}, rounds {est.get('rounds')}")
        for a in est.get("assumptions") or []:
            lines.append(f"  assumption: {a}")
    return "\n".join(lines)


def _fmt_ms(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.4g}"


def _fmt_frac(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.3f}"
