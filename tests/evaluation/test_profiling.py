"""The profiling stage, exercised on the CPU through its wall-clock test hook (Job.cpu_timing).

On the interpreter the evaluator never reports a speedup; these tests run the device timing
code path (interleaved rounds, input sets reloaded per call, audit rounds) with CPU timers so
that the protocol and its anti-cheating audits are tested without a GPU.
"""

from __future__ import annotations

import hashlib

from ascend_kernel_gym.evaluation import ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.static import check_source


def _timed(evaluator, task, code: str, reps: int = 12) -> EvalResult:
    report = check_source(code)
    assert report.ok, report.message()
    job = Job(
        task=task,
        code=code,
        code_hash=hashlib.sha256(code.encode()).hexdigest(),
        backend="interpreter",
        profile="small",
        num_trials=3,
        seed=11,
        profile_reps=reps,
        profile_warmup=1,
        kernels=report.kernels,
        cpu_timing=True,
    )
    base = EvalResult(task_id=task.id, backend="interpreter", profile="small", code_hash=job.code_hash)
    return evaluator._run_job(job, 120.0, base)


def test_timing_protocol_runs(evaluator, relu_task, relu_solution) -> None:
    result = _timed(evaluator, relu_task, relu_solution)
    assert result.ok, result.error_message
    assert result.stage == Stage.DONE
    assert result.ref_ms and result.kernel_ms and result.ref_ms > 0 and result.kernel_ms > 0
    assert result.speedup is not None and abs(result.speedup - result.ref_ms / result.kernel_ms) < 1e-2
    assert result.timing["reps"] == 12 and result.timing["audit_rounds"] == 5 and result.timing["input_sets"] == 3
    assert result.timing["kernel_ms_p25"] <= result.timing["kernel_ms_p75"]


SWITCHER = '''
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 8:
            scratch = torch.empty_like(x)
            relu_kernel[(1,)](x, scratch, 1, BLOCK_SIZE=1024)
            return torch.relu(x)
'''


def test_audit_catches_switch_to_pytorch_during_timing(evaluator, relu_task, relu_solution) -> None:
    code = relu_solution.replace("        x = x.contiguous()\n", SWITCHER + "        x = x.contiguous()\n")
    result = _timed(evaluator, relu_task, code)
    assert result.error_type == ErrorType.TORCH_FALLBACK, result.error_message
    assert result.stage == Stage.PERFORMANCE and result.hack


CACHER = '''
        self.calls = getattr(self, "calls", 0) + 1
        key = x.data_ptr()
        if self.calls > 8 and key in getattr(self, "memo", {}):
            scratch = torch.empty_like(x)
            relu_kernel[(1,)](x, scratch, 1, BLOCK_SIZE=1024)
            return self.memo[key]
'''
REMEMBER = "        self.memo = {**getattr(self, 'memo', {}), key: out}\n        return out\n"


def test_audit_catches_cache_by_input_address(evaluator, relu_task, relu_solution) -> None:
    code = relu_solution.replace("        x = x.contiguous()\n", CACHER + "        x = x.contiguous()\n")
    code = code.replace("        return out\n", REMEMBER)
    result = _timed(evaluator, relu_task, code)
    assert result.error_type == ErrorType.VALUE_MISMATCH, result.error_message
    assert "changed during timing" in result.error_message
