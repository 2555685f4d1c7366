"""The job a worker runs (evaluation/job.py): what the evaluator puts in it, and that it crosses processes."""

from __future__ import annotations

import pickle

import pytest

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator
from ascend_kernel_gym.evaluation.job import Job

TWO_KERNELS = """
import torch
import triton
import triton.language as tl


@triton.jit
def b_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.jit
def a_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        a_kernel[(1,)](y, x.numel(), BLOCK=128)
        b_kernel[(1,)](y, x.numel(), BLOCK=128)
        return y
"""


@pytest.fixture
def jobs():
    """An evaluator whose workers never run: it records each job and its time limit."""
    ev = Evaluator(
        backend="interpreter",
        workers=1,
        start=False,
        cache=False,
        num_trials=3,
        memory_mb=1234,
        output_cap=999,
        timeout_s=42.0,
        ascend_checks="enforce",
        ascend_profile="910B4",
        profile_reps=7,
        profile_warmup=2,
    )
    seen: list[tuple[Job, float]] = []

    def fake_run_job(job, timeout, base):
        seen.append((job, timeout))
        return EvalResult.from_dict(base.to_dict())

    ev._run_job = fake_run_job
    try:
        yield ev, seen
    finally:
        ev.close()


def test_the_job_carries_the_request_and_the_evaluator_settings(jobs, relu_task) -> None:
    ev, seen = jobs
    ev.evaluate(EvalRequest(task=relu_task, code=TWO_KERNELS, seed=11, measure_performance=False, timeout_s=5.0))
    ((job, timeout),) = seen
    assert job.task is relu_task and job.code == TWO_KERNELS and len(job.code_hash) == 64
    assert (job.backend, job.profile, job.num_trials, job.seed) == ("interpreter", "small", 3, 11)
    assert job.measure_performance is False and timeout == 5.0
    assert (job.memory_mb, job.output_cap) == (1234, 999)
    assert (job.ascend_checks, job.ascend_profile, job.profile_reps, job.profile_warmup) == ("enforce", "910B4", 7, 2)
    assert job.kernels == ["a_kernel", "b_kernel"]  # sorted, for a stable job
    assert job.task_inputs_only is False and job.cpu_timing is False


def test_request_values_win_and_missing_ones_fall_back(jobs, relu_task) -> None:
    ev, seen = jobs
    ev.evaluate(EvalRequest(task=relu_task, code=TWO_KERNELS, profile="full", num_trials=1))
    ev.evaluate(EvalRequest(task=relu_task, code=TWO_KERNELS + "\n# again\n"))
    (first, first_timeout), (second, second_timeout) = seen
    assert (first.profile, first.num_trials, first.seed, first_timeout) == ("full", 1, None, 42.0)
    assert (second.profile, second.num_trials, second_timeout) == ("small", 3, 42.0)
    assert first.code_hash != second.code_hash


def test_a_job_pickles_with_its_task_and_defaults_are_not_shared(relu_task) -> None:
    job = Job(task=relu_task, code="x", code_hash="h", backend="interpreter", profile="small", kernels=["k"])
    back = pickle.loads(pickle.dumps(job))
    assert back == job and back.task.source == relu_task.source and back.task.id == relu_task.id
    other = Job(task=relu_task, code="y", code_hash="g", backend="interpreter", profile="small")
    other.static_warnings.append("w")
    other.paths.append("torch.relu")
    assert job.static_warnings == [] and job.paths == [] and Job(relu_task, "", "", "b", "p").escaping == []
