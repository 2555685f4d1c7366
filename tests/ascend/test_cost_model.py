"""The cost-model facade and the package's lazy exports: stable import paths and the child entry point."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import ascend_kernel_gym.ascend as ascend
from ascend_kernel_gym.ascend import cost_model, cost_process, counters, estimator, roofline

REPO = Path(__file__).resolve().parents[2]


def test_the_facade_exports_the_parts_themselves() -> None:
    homes = {
        "KernelCounters": counters,
        "LaunchCounters": counters,
        "instrument": counters,
        "sample_program_ids": counters,
        "extrapolate": counters,
        "reference_costs": roofline,
        "task_roofline": roofline,
        "estimate": estimator,
        "LABEL": estimator,
        "estimate_kernel": cost_process,
        "estimate_variants": cost_process,
        "estimate_in_process": cost_process,
    }
    assert set(cost_model.__all__) == set(homes)
    for name, home in homes.items():
        assert getattr(cost_model, name) is getattr(home, name), name


def test_the_package_resolves_every_export_lazily() -> None:
    from ascend_kernel_gym.ascend import capture, checks, chips, report, rules

    homes = {
        chips: ["ChipProfile", "list_chips", "load_chip", "resolve_chip"],
        rules: ["RULES", "Rule"],
        checks: ["run_ascend_checks"],
        report: ["format_ascend_report"],
        capture: ["capture_launches"],
        counters: ["KernelCounters", "LaunchCounters", "instrument"],
        roofline: ["reference_costs", "task_roofline"],
        estimator: ["estimate"],
        cost_process: ["estimate_kernel", "estimate_variants", "estimate_in_process"],
    }
    assert sorted(ascend.__all__) == sorted(name for names in homes.values() for name in names)
    for home, names in homes.items():
        for name in names:
            assert getattr(ascend, name) is getattr(home, name), name
    # the function, not the module of the same stem (``estimator`` is named apart for that reason)
    assert callable(ascend.estimate) and ascend.estimate is estimator.estimate
    # the entry module re-exports the names other code takes from it
    assert checks.format_ascend_report is report.format_ascend_report
    assert checks.capture_launches is capture.capture_launches and checks.RULES is rules.RULES


def test_both_child_entry_points_answer_with_a_marked_line() -> None:
    """``-m ...cost_process`` (what estimate_variants runs) and the older ``-m ...cost_model``."""
    for module in ("ascend_kernel_gym.ascend.cost_process", "ascend_kernel_gym.ascend.cost_model"):
        proc = subprocess.run(
            [sys.executable, "-m", module],
            input=pickle.dumps({"task": None, "codes": []}),
            capture_output=True,
            timeout=300,
            cwd=REPO,
            check=False,
        )
        marked = [line for line in proc.stdout.decode().splitlines() if line.startswith("AKG_COST_MODEL_RESULT ")]
        assert proc.returncode == 0 and len(marked) == 1, (module, proc.stderr[-2000:])
        assert '"label": "estimate"' in marked[0] and '"error"' in marked[0]
