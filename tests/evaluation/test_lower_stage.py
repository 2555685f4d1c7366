"""The ``ascend_lower`` stage (evaluation/lower_stage.py): when it runs, how a lowering report changes an
EvalResult in each mode, the lowering winning over rule errors it contradicts, the clear note when the
environment is missing, and, with the triton-ascend environment, the sandboxed process and the whole
evaluator (``akg check --ascend-lower enforce``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_kernel_gym.ascend.lower_env import ENV_DIR_VAR, TRITON_ASCEND_VERSION, LowerEnv, env_dir, load_env
from ascend_kernel_gym.ascend.lowering import KernelLowering, LoweringReport
from ascend_kernel_gym.evaluation import lower_stage
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.lower_stage import (
    NOT_SET_UP,
    WorkerRunner,
    apply_report,
    compile_error_type,
    run_lower_stage,
)
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, LaunchRecord

LAUNCH = LaunchRecord(kernel="k", grid=[4], constexprs={"BLOCK": 1024}, tensor_args=[[[4096], "float32"]] * 2)


def find_env() -> LowerEnv | None:
    """As tests/ascend/lowering_cases.py: ``$AKG_ASCEND_ENV``, else this user's default place."""
    default = Path.home() / ".cache" / "ascend_kernel_gym" / f"triton-ascend-{TRITON_ASCEND_VERSION}"
    for candidate in (os.environ.get(ENV_DIR_VAR), env_dir(), default):
        env = load_env(Path(candidate)) if candidate else None
        if env is not None:
            return env
    return None


@pytest.fixture
def env() -> LowerEnv:
    found = find_env()
    if found is None:
        if os.environ.get("AKG_REQUIRE_ASCEND_ENV") == "1":
            pytest.fail("AKG_REQUIRE_ASCEND_ENV=1 but the triton-ascend environment is missing")
        pytest.skip("the triton-ascend environment is not set up here: run `akg ascend setup` (CI does, in .ci/run)")
    return found


def passing_result(**changes) -> EvalResult:
    result = EvalResult(task_id="t", backend="interpreter", profile="small", code_hash="h", compiled=True)
    result.correct, result.trials_passed, result.trials_total = True, 5, 5
    result.launches = [LAUNCH]
    for key, value in changes.items():
        setattr(result, key, value)
    return result


def job(backend: str = "interpreter") -> Job:
    from ascend_kernel_gym.tasks.suite import get_task

    return Job(task=get_task("core/L1/relu"), code="", code_hash="h", backend=backend, profile="small")


def report_with(*kernels: KernelLowering) -> LoweringReport:
    return LoweringReport("910B3", "Ascend910B3", True, kernels=list(kernels))


FAILED = KernelLowering(
    "k",
    {"signature": {}, "constants": {}, "exact": True},
    "failed",
    error={
        "stage": "ttadapter",
        "first_line": "triton-adapter-opt crashed (SIGSEGV) in its --triton-to-unstructure pass",
        "detail": "PLEASE submit a bug report",
        "kb_id": "lowering-adapter-crash",
        "fix": "simplify",
        "line": 9,
    },
)
FITS = {"vector_bytes": 4096, "cube_bytes": 0, "allocations": [], "core_type": "aiv"}


def lowered(facts: dict) -> KernelLowering:
    from ascend_kernel_gym.ascend.chips import load_chip
    from ascend_kernel_gym.ascend.lowering import budget_of

    item = KernelLowering("k", {"signature": {}, "constants": {}, "exact": True}, "lowered", facts=facts)
    item.budget = budget_of(facts, load_chip("910B3"))
    return item


def test_the_stage_skips_when_off_on_npu_before_compile_or_without_launches(monkeypatch) -> None:
    monkeypatch.setattr(lower_stage, "lower_result", lambda *a, **k: pytest.fail("must not lower"))
    for mode, backend, result in [
        ("off", "interpreter", passing_result()),
        ("enforce", "npu", passing_result()),
        ("enforce", "interpreter", passing_result(compiled=False)),
        ("enforce", "cuda", passing_result(launches=[])),
    ]:
        out = run_lower_stage(result, job(backend), mode)
        assert out.ascend_checks == [] and "ascend_lower" not in out.stage_durations
    with pytest.raises(ValueError, match="ascend_lower must be one of"):
        run_lower_stage(passing_result(), job(), "strict")


def test_without_the_environment_a_note_and_never_a_failure(monkeypatch) -> None:
    monkeypatch.setattr(lower_stage, "load_env", lambda: None)
    result = run_lower_stage(passing_result(), job("cuda"), "enforce")
    assert result.ok and result.error_type == ErrorType.NONE and result.warnings == []
    (note,) = result.ascend_checks
    assert note["rule"] == "lowering_unavailable" and note["severity"] == "info" and NOT_SET_UP in note["message"]
    assert "akg ascend setup" in note["message"] and "ascend_lower" in result.stage_durations


def test_a_broken_stage_is_a_warning_not_the_candidates_failure(monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(lower_stage, "lower_result", boom)
    result = run_lower_stage(passing_result(), job(), "enforce")
    assert result.ok and result.warnings == ["ascend_lower could not run: OSError: disk full"]


def test_warn_adds_findings_and_notes_enforce_fails_a_passing_kernel() -> None:
    warned = passing_result()
    apply_report(warned, report_with(FAILED), "warn")
    assert warned.ok and warned.ascend_checks[0]["rule"] == "lowering_failed"
    assert warned.warnings == [f"ascend[lowering_failed] {warned.ascend_checks[0]['message']}"]
    enforced = passing_result()
    apply_report(enforced, report_with(FAILED), "enforce")
    assert not enforced.correct and not enforced.ok and enforced.error_type == compile_error_type()
    assert "does not get through triton-ascend" in enforced.error_message
    assert (
        "--triton-to-unstructure" in enforced.error_message and "PLEASE submit a bug report" in enforced.error_message
    )
    already = passing_result(correct=False, error_type=ErrorType.VALUE_MISMATCH, error_message="wrong")
    apply_report(already, report_with(FAILED), "enforce")
    assert already.error_type == ErrorType.VALUE_MISMATCH and already.error_message == "wrong"
    fine = passing_result()
    apply_report(fine, report_with(lowered(FITS)), "enforce")
    assert fine.ok and fine.warnings == [] and fine.ascend_checks[0]["rule"] == "lowered"


def test_compile_error_type_is_the_issues_name_when_result_has_it() -> None:
    expected = "ascend_compile_error"
    assert compile_error_type().value == expected


def test_the_lowering_wins_over_a_rule_error_it_contradicts() -> None:
    rule_error = {"rule": "ub_overflow", "severity": "error", "kernel": "k", "message": "one tile x2 > UB"}
    other_kernel = {"rule": "ub_overflow", "severity": "error", "kernel": "other", "message": "..."}
    result = passing_result(
        correct=False,
        error_type=ErrorType.ASCEND_CONSTRAINT,
        error_message="the kernel breaks Ascend constraints: one tile x2 > UB",
        ascend_checks=[dict(rule_error)],
    )
    apply_report(result, report_with(lowered(FITS)), "warn")
    assert result.ascend_checks[0]["severity"] == "warning" and "fit in UB" in result.ascend_checks[0]["superseded_by"]
    assert result.ok and result.error_type == ErrorType.NONE and "lowering, which wins" in result.warnings[-1]
    kept = passing_result(
        correct=False, error_type=ErrorType.ASCEND_CONSTRAINT, ascend_checks=[dict(rule_error), dict(other_kernel)]
    )
    apply_report(kept, report_with(lowered(FITS)), "warn")
    assert kept.error_type == ErrorType.ASCEND_CONSTRAINT and not kept.ok  # another kernel's error still stands
    over = passing_result(ascend_checks=[dict(rule_error)])
    apply_report(over, report_with(lowered({**FITS, "vector_bytes": 150 * 1024})), "warn")
    assert over.ascend_checks[0]["severity"] == "error"  # the lowering confirms it
    unseen = passing_result(ascend_checks=[{"rule": "atomic_unsupported", "severity": "error", "kernel": "k"}])
    apply_report(unseen, report_with(lowered(FITS)), "warn")
    assert unseen.ascend_checks[0]["severity"] == "error"  # the adapter cannot see what bishengir rejects


# --- with the triton-ascend environment --------------------------------------------------------
PROBE = """
import json, os, socket, sys
secret = sys.stdin.read().strip()
out = {}
try:
    open(secret).read()
    out["read_outside"] = True
except OSError:
    out["read_outside"] = False
try:
    open(secret + ".escape", "w").write("x")
    out["write_outside"] = True
except OSError:
    out["write_outside"] = False
try:
    socket.create_connection(("127.0.0.1", 22), timeout=2)
    out["network"] = True
except OSError:
    out["network"] = False
out["pid"] = os.getpid()
print("AKG-LOWER-REPLY " + json.dumps(out), flush=True)
"""


def test_the_lowering_process_runs_in_the_os_sandbox(env: LowerEnv, tmp_path) -> None:
    """The launcher's sandbox, with a probe in place of the worker: it cannot read or write this user's
    files, has no network and is PID 1 of its own namespace."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the lowering")
    scratch = tmp_path / "scratch"
    (scratch / "tmp").mkdir(parents=True)
    spec = WorkerRunner(env, sandbox=True).spec(str(scratch))
    spec["worker"] = str(probe)
    spec["read"].append(str(probe))
    package_parent = str(Path(lower_stage.__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-m", "ascend_kernel_gym.evaluation.lower_stage", json.dumps(spec)],
        input=str(secret).encode(),
        capture_output=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": package_parent, "OPENBLAS_NUM_THREADS": "1"},
        check=False,
    )
    lines = [ln for ln in done.stdout.decode().splitlines() if ln.startswith("AKG-LOWER-REPLY ")]
    assert lines, done.stderr.decode()[-2000:]
    seen = json.loads(lines[0].split(" ", 1)[1])
    assert seen == {"read_outside": False, "write_outside": False, "network": False, "pid": 1}
    assert not (tmp_path / "secret.txt.escape").exists()


@pytest.mark.slow
def test_akg_check_enforce_fails_a_kernel_that_does_not_lower(env: LowerEnv, monkeypatch, tmp_path, capsys) -> None:
    from ascend_kernel_gym.cli import main as akg
    from ascend_kernel_gym.tasks.suite import get_task

    monkeypatch.setenv(ENV_DIR_VAR, str(env.path))
    solution = get_task("core/L1/softmax").solution_source() or ""
    load = '            x = tl.load(x_ptr + row_start + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)\n'
    assert load in solution, "the softmax solution changed shape; update this test"
    pick = "            src = tl.where(row >= 0, x_ptr, out_ptr)\n"
    bad = solution.replace(load, pick + load.replace("x_ptr + row_start", "src + row_start"))
    good_file, bad_file = tmp_path / "good.py", tmp_path / "bad.py"
    good_file.write_text(solution)
    bad_file.write_text(bad)
    common = ["--task", "core/L1/softmax", "--backend", "interpreter", "--ascend-lower", "enforce", "--json"]
    assert akg(["check", str(bad_file), *common]) == 1
    failed = EvalResult.from_dict(json.loads(capsys.readouterr().out))
    assert failed.trials_passed == failed.trials_total > 0  # correct on the interpreter ...
    assert failed.error_type == compile_error_type() and not failed.correct  # ... but it does not lower
    assert "pointer chosen at run time" in failed.error_message and "softmax_kernel" in failed.error_message
    assert failed.stage_durations["ascend_lower"] > 0
    assert akg(["check", str(good_file), *common]) == 0
    passed = EvalResult.from_dict(json.loads(capsys.readouterr().out))
    assert passed.ok and [f["rule"] for f in passed.ascend_checks if f.get("layer")] == ["lowered"]


def test_the_workers_output_is_read_within_bounds() -> None:
    """A kernel whose lowering prints without end (``tl.static_print`` in an unrolled loop) must not
    fill the caller's memory: the replies are kept, the printing only in its first and last parts."""
    import subprocess
    import sys

    from ascend_kernel_gym.evaluation import lower_stage

    flood = (
        "import sys\n"
        "request = sys.stdin.read()\n"
        "sys.stdout.write('REPLY ' + request + '\\n'); sys.stdout.flush()\n"
        "chunk = 'A' * (1 << 20)\n"
        "for _ in range(48):\n"
        "    sys.stderr.write(chunk)\n"
        "sys.stderr.write('THE END')\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", flood], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    out, err, timed_out = lower_stage._bounded_communicate(proc, b'{"k": 1}', timeout_s=120)
    assert out == b'REPLY {"k": 1}\n' and not timed_out
    assert len(err) < 3 * lower_stage.KEEP_ERROR_BYTES and err.endswith(b"THE END") and b"bytes cut" in err
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    out, err, timed_out = lower_stage._bounded_communicate(sleeper, b"{}", timeout_s=1)
    assert timed_out and sleeper.returncode is not None
