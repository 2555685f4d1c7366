"""The correctness stage in a real child (evaluation/correctness.py), through the session pool.

Its helpers are tested on their own in test_inputs.py, test_outputs.py and test_compare.py; the
cheats it catches are in the bad-input corpus (test_corpus.py) and the red-team files.
"""

from __future__ import annotations

import hashlib

from identity_math import ADD_FP32_CANDIDATE, COPY_FP32_CANDIDATE, add_task

from ascend_kernel_gym.evaluation import ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.static import check_source


def _run(evaluator, task, code: str, num_trials: int, **job_fields) -> EvalResult:
    report = check_source(code)
    assert report.ok, report.message()
    job = Job(
        task=task, code=code, code_hash=hashlib.sha256(code.encode()).hexdigest(), backend="interpreter",
        profile="small", num_trials=num_trials, seed=5, kernels=report.kernels, **job_fields,
    )  # fmt: skip
    base = EvalResult(task_id=task.id, backend="interpreter", profile="small", code_hash=job.code_hash)
    return evaluator._run_job(job, 120.0, base)


def test_the_job_sets_the_number_of_trials(evaluator, relu_task, relu_solution) -> None:
    good = _run(evaluator, relu_task, relu_solution, num_trials=2)
    assert good.ok and good.correct and good.stage == Stage.DONE, good.error_message
    assert good.trials_passed == good.trials_total == 2
    wrong = _run(evaluator, relu_task, relu_solution.replace("tl.maximum(x, 0.0)", "x"), num_trials=2)
    assert wrong.error_type == ErrorType.VALUE_MISMATCH and wrong.stage == Stage.CORRECTNESS
    assert (
        "(trial 1 of 2: the task's own inputs)" in wrong.error_message
        and wrong.trials_passed == 0
        and wrong.trials_total == 2
    )
    assert wrong.compiled and not wrong.correct


def test_task_inputs_only_job_says_so(evaluator, relu_task, relu_solution) -> None:
    result = _run(evaluator, relu_task, relu_solution, num_trials=3, task_inputs_only=True)
    assert result.ok, result.error_message
    assert any("task's own input distribution" in w for w in result.warnings)


LOOP_FROM_CALL = """
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls >= {first}:
            while True:
                pass
"""


def test_a_stalled_trial_is_cut_by_the_watchdog_at_its_stage_with_progress_kept(
    evaluator, relu_task, relu_solution
) -> None:
    """An endless loop on the 4th call (trial 3 of 4: trial 1 calls twice) is cut after the stall
    limit, long before the time limit, as a timeout in the correctness stage with 2 trials kept."""
    code = relu_solution.replace(
        "        x = x.contiguous()\n", LOOP_FROM_CALL.format(first=4) + "        x = x.contiguous()\n"
    )
    result = _run(evaluator, relu_task, code, num_trials=4, stall_limit_s=3.0)
    assert result.error_type == ErrorType.TIMEOUT and result.stage == Stage.CORRECTNESS
    assert result.trials_passed == 2 and result.trials_total == 4 and result.compiled
    assert "no progress for 3 s in correctness trial 3 of 4" in result.error_message


def test_a_stall_in_the_first_call_is_a_correctness_timeout_with_nothing_passed(
    evaluator, relu_task, relu_solution
) -> None:
    code = relu_solution.replace(
        "        x = x.contiguous()\n", LOOP_FROM_CALL.format(first=1) + "        x = x.contiguous()\n"
    )
    result = _run(evaluator, relu_task, code, num_trials=2, stall_limit_s=3.0)
    assert result.error_type == ErrorType.TIMEOUT and result.stage == Stage.CORRECTNESS
    assert result.trials_passed == 0 and "trial 1 of 2" in result.error_message


def test_exact_zeros_making_the_math_the_identity_are_not_a_copy_of_pytorchs_work(evaluator, tmp_path) -> None:
    result = _run(evaluator, add_task(tmp_path), ADD_FP32_CANDIDATE, num_trials=12)  # every distribution
    assert result.ok and result.correct and not result.hack, result.error_message
    assert any("exact zeros" in w and "not counted in this trial only" in w for w in result.warnings), result.warnings


def test_a_kernel_copying_pytorchs_copy_is_refused(evaluator, tmp_path) -> None:
    result = _run(evaluator, add_task(tmp_path), COPY_FP32_CANDIDATE, num_trials=6)
    assert result.error_type == ErrorType.TORCH_FALLBACK and result.hack, result.error_message
    assert "PyTorch moved" in result.error_message and "[in trial" not in result.error_message
