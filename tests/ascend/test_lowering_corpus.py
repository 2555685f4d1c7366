"""The real lowering through triton-ascend 3.2.0 (needs ``akg ascend setup``; CI sets it up in .ci/run and
sets AKG_REQUIRE_ASCEND_ENV=1, so there these tests fail instead of skipping when the environment is missing).

The corpus (tests/ascend/lowering_corpus/) holds kernels that must fail the lowering or overflow UB / L1,
each with its expected outcome, and kernels that must lower; every case also goes through our own rule
checks, which must run on it (docs/ascend.md tabulates which layer catches what). All bundled reference
solutions must lower for 910B3 at both shape profiles."""

from __future__ import annotations

import re

import pytest
from lowering_cases import LoweringCase, env_or_skip, load_cases

from ascend_kernel_gym.ascend.checks import run_ascend_checks
from ascend_kernel_gym.ascend.lowering import LoweringCache, lower_launches

CASES = load_cases()


@pytest.fixture(scope="module")
def runner():
    from ascend_kernel_gym.evaluation.lower_stage import WorkerRunner

    return WorkerRunner(env_or_skip(), sandbox=True)


def test_the_corpus_has_at_least_twenty_kernels_that_must_fail() -> None:
    failing = [c for c in CASES if c.must_fail]
    assert len(failing) >= 20, [c.name for c in failing]
    outcomes = {c.expect["outcome"] for c in failing}
    assert outcomes == {"lowering_failed", "lowered_ub_overflow", "lowered_l1_overflow"}
    assert all(c.name.startswith(("fail_", "ub_", "l1_")) == c.must_fail for c in CASES)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case_lowers_as_expected(case: LoweringCase, runner) -> None:
    report = lower_launches(case.code, case.launches, "910B3", runner, cache=LoweringCache())
    expect = case.expect
    findings = report.findings()
    assert report.available and report.kernels, runner.last
    main = findings[0]
    assert main["rule"] == expect["outcome"], (main["message"], runner.last.get("stderr_tail"))
    if "first_line" in expect:
        assert expect["first_line"] in main["message"], main["message"]
    if "stage" in expect:
        assert main["value"] == expect["stage"]
    if "kb_id" in expect:
        assert main["kb_id"] == expect["kb_id"]
    if "line" in expect:
        assert main["line"] == expect["line"]
        assert re.search(rf"\bline {expect['line']}\b", main["message"])
    if "ub_need_min" in expect:
        assert main["value"] >= expect["ub_need_min"] and main["value"] > main["limit"]
    record = main["lowering"]
    if "core_type" in expect:
        assert record["core_type"] == expect["core_type"]
    if "scalar_accesses" in expect:
        assert record["facts"]["scalar_accesses"] == expect["scalar_accesses"]
    assert report.failed if case.must_fail else not report.failed
    # our own rules run on every case too (which of them fire is documented, not asserted here)
    assert isinstance(run_ascend_checks(case.code, case.launches, "910B3"), list)


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["full", "small"])
def test_every_bundled_reference_solution_lowers_for_910b3(profile: str, runner) -> None:
    from ascend_kernel_gym.ascend.capture import capture_launches
    from ascend_kernel_gym.tasks.suite import load_suite

    tasks = [t for t in load_suite("core") if t.solution_source()]
    assert len(tasks) == 45
    problems = []
    kernels = 0
    for task in tasks:
        code = task.solution_source() or ""
        report = lower_launches(code, capture_launches(task, code, profile), "910B3", runner)
        kernels += len(report.kernels)
        problems += [f"{task.id}: {f['message']}" for f in report.findings() if f["severity"] != "info"]
        problems += [f"{task.id}: {k.kernel} {k.status}" for k in report.kernels if k.status != "lowered"]
    assert not problems, problems
    assert kernels >= 45
