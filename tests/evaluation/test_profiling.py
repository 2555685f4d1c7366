"""The profiling stage, exercised on the CPU through its wall-clock test hook (Job.cpu_timing).

On the interpreter the evaluator never reports a speedup; these tests run the device timing
code path (interleaved rounds, input sets reloaded per call, audit rounds) with CPU timers so
that the protocol and its anti-cheating audits are tested without a GPU.
"""

from __future__ import annotations

import hashlib
import math
import random
import subprocess
import sys

import pytest
import torch

from ascend_kernel_gym.evaluation import ErrorType, EvalResult, Stage, profiling
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
    assert result.timing["reps"] == 12 and result.timing["audit_rounds"] == 5
    assert result.timing["input_sets"] == 12  # a fresh input set in every round
    assert result.timing["kernel_ms_p25"] <= result.timing["kernel_ms_p75"]
    samples = result.timing["kernel_ms_samples"]
    assert len(samples) == len(result.timing["ref_ms_samples"]) == 12
    assert min(samples) <= result.kernel_ms <= max(samples)
    phases = result.timing["phase_s"]
    parts = {"reference_reruns", "audit_calls", "compare"}
    assert set(phases) == {"setup", "warmup", "rounds", "inputs", "checks", *parts}
    assert all(seconds >= 0 for seconds in phases.values())
    # Drawing the inputs and checking outputs happen between the timed calls, so within the rounds;
    # the checks' parts are within the checks.
    assert 0 < phases["inputs"] + phases["checks"] <= phases["rounds"]
    assert 0 < sum(phases[part] for part in parts) <= phases["checks"]
    # Timing started only once the zygote confirmed that no sibling child was starting or ending.
    assert 0 <= result.timing["quiet_wait_s"] < 5


SWITCHER = """
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 8:
            scratch = torch.empty_like(x)
            relu_kernel[(1,)](x, scratch, 1, BLOCK_SIZE=1024)
            return torch.relu(x)
"""


def test_audit_catches_switch_to_pytorch_during_timing(evaluator, relu_task, relu_solution) -> None:
    code = relu_solution.replace("        x = x.contiguous()\n", SWITCHER + "        x = x.contiguous()\n")
    result = _timed(evaluator, relu_task, code)
    assert result.error_type == ErrorType.TORCH_FALLBACK, result.error_message
    assert result.stage == Stage.PERFORMANCE and result.hack


CACHER = """
        self.calls = getattr(self, "calls", 0) + 1
        key = x.data_ptr()
        if self.calls > 8 and key in getattr(self, "memo", {}):
            scratch = torch.empty_like(x)
            relu_kernel[(1,)](x, scratch, 1, BLOCK_SIZE=1024)
            return self.memo[key]
"""
REMEMBER = "        self.memo = {**getattr(self, 'memo', {}), key: out}\n        return out\n"


def test_cache_by_input_address_gains_nothing(evaluator, relu_task, relu_solution) -> None:
    # Every timed call gets its inputs at a fresh random place, so an address cache does not hit
    # (with this seed; a chance hit on another input set would return stale data).
    code = relu_solution.replace("        x = x.contiguous()\n", CACHER + "        x = x.contiguous()\n")
    code = code.replace("        return out\n", REMEMBER)
    result = _timed(evaluator, relu_task, code, reps=30)
    assert result.ok, result.error_message


LAZY = """
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 8 and self.calls % 3 == 0:
            scratch = torch.empty_like(x)
            relu_kernel[(1,)](x, scratch, 1, BLOCK_SIZE=1024)
            return self.last
"""


def test_timed_calls_that_skip_their_work_are_caught(evaluator, relu_task, relu_solution) -> None:
    code = relu_solution.replace("        x = x.contiguous()\n", LAZY + "        x = x.contiguous()\n")
    code = code.replace("        return out\n", "        self.last = out\n        return out\n")
    result = _timed(evaluator, relu_task, code, reps=30)
    assert result.error_type == ErrorType.VALUE_MISMATCH, result.error_message
    assert "changed during timing" in result.error_message


def test_after_candidate_sees_the_input_set_of_its_round() -> None:
    loaded: list[int] = []
    checked: list[int] = []

    def candidate(k: int):
        loaded.append(k)
        return lambda: None

    profiling.time_side_by_side(
        candidate, lambda k: (lambda: None), lambda k: None, device_type="cpu", num_sets=3, reps=12, warmup=1,
        audit_rounds=3, check_rounds=4, rng=random.Random(5), flush_bytes=1 << 12, after_candidate=checked.append,
        warmup_s=0.0,
    )  # fmt: skip
    timed = loaded[-12:]
    assert timed == [r % 3 for r in range(12)]
    assert 4 <= len(checked) <= 7 and all(0 <= k < 3 for k in checked)


# --- the timing protocol itself, with the CPU event shim ---------------------------------------------
# The models "run" by advancing a virtual clock that the CPU events read, so the times these tests
# check are exact whatever the machine's load (real sleeps overrun on a busy CPU).


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> VirtualClock:
    virtual = VirtualClock()
    monkeypatch.setattr(profiling._CpuEvent, "record", lambda event: setattr(event, "t", virtual.now))
    return virtual


def _sleeper(clock: VirtualClock, seconds: float, calls: list[str], name: str):
    def prepare(k: int):
        def call() -> None:
            calls.append(name)
            clock.sleep(seconds)

        return call

    return prepare


def _protocol(clock: VirtualClock, side_streams=None, reps: int = 9):
    calls: list[str] = []
    audits: list[int] = []
    timing = profiling.time_side_by_side(
        _sleeper(clock, 0.004, calls, "cand"),
        _sleeper(clock, 0.002, calls, "ref"),
        audits.append,
        device_type="cpu",
        num_sets=3,
        reps=reps,
        warmup=2,
        audit_rounds=2,
        rng=random.Random(0),
        flush_bytes=1 << 12,
        side_stream_launches=side_streams,
        warmup_s=0.0,
    )
    return timing, calls, audits


def test_stream_mode_times_each_model_and_audits(clock) -> None:
    timing, calls, audits = _protocol(clock)
    assert timing.details["mode"] == profiling.STREAM_MODE
    assert calls.count("cand") == calls.count("ref") == 2 + 9
    assert len(audits) == 2 and all(0 <= k < 3 for k in audits)
    assert 3.5 <= timing.kernel_ms < 8 and 1.5 <= timing.ref_ms < 5
    assert 0.3 < timing.speedup < 0.75


def test_each_model_time_is_a_trimmed_mean_of_its_calls(clock) -> None:
    # Every timed call runs on another placement; some kernels are a few percent slower on some
    # placements (as on an H200). The candidate here is slow on every third call: a median would
    # land on the fast level, the trimmed mean sits between the levels, and a single hiccup is
    # trimmed away.
    calls = {"n": 0}

    def candidate(k: int):
        calls["n"] += 1
        n = calls["n"]
        return lambda: clock.sleep(0.3 if n == 15 else 0.009 if n % 3 == 0 else 0.003)

    def reference(k: int):
        return lambda: clock.sleep(0.005)

    timing = profiling.time_side_by_side(
        candidate, reference, lambda k: None, device_type="cpu", num_sets=3, reps=30, warmup=1,
        audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0,
    )  # fmt: skip
    assert 4.0 <= timing.kernel_ms < 7.5  # (2 * 3 + 9) / 3 = 5 ms; the 300 ms call is dropped
    assert timing.details["kernel_ms_median"] < 4.5
    assert 0.6 < timing.speedup < 1.3


def test_relocation_is_untimed_and_its_lazy_cost_never_timed(clock) -> None:
    # A move of the memory the harness does not place (the context's local memory on CUDA) makes
    # the next call of each model pay for a lazy allocation; that call must not be a timed one.
    state = {"moves": 0, "pending": set()}

    def relocate() -> bool:
        state["moves"] += 1
        state["pending"] = {"cand", "ref"}
        return True

    def model(name: str, seconds: float):
        def prepare(k: int):
            def call() -> None:
                if name in state["pending"]:
                    state["pending"].discard(name)
                    clock.sleep(0.2)
                clock.sleep(seconds)

            return call

        return prepare

    timing = profiling.time_side_by_side(
        model("cand", 0.004), model("ref", 0.002), lambda k: None, device_type="cpu", num_sets=2, reps=12,
        warmup=1, audit_rounds=0, rng=random.Random(1), flush_bytes=1 << 12, warmup_s=0.0, relocate=relocate,
        relocate_every=4,
    )  # fmt: skip
    assert state["moves"] == 3  # rounds 0, 4 and 8
    assert max(timing.details["kernel_ms_samples"]) < 100 and max(timing.details["ref_ms_samples"]) < 100


def test_local_memory_moves_only_on_cuda() -> None:
    from ascend_kernel_gym.evaluation.placement import LocalMemory

    assert LocalMemory.for_device(torch.device("cpu"), random.Random(0)) is None

    class Driver:  # the two calls of the CUDA driver API it makes
        def __init__(self) -> None:
            self.limits: list[int] = []

        def cuCtxSetLimit(self, kind: int, value) -> int:
            assert kind == 0  # CU_LIMIT_STACK_SIZE
            self.limits.append(value.value)
            return 0

    driver = Driver()
    local = LocalMemory(driver, 1024, random.Random(3), synchronize=lambda: None)
    assert all(local.move() for _ in range(50)) and local.moves == 50
    assert all(1024 < limit <= 2048 and limit % 16 == 0 for limit in driver.limits)
    assert all(a != b for a, b in zip(driver.limits, driver.limits[1:]))  # every move is a change
    local.restore()
    assert driver.limits[-1] == 1024 and local.moves == 50


def test_trimmed_mean() -> None:
    assert profiling.trimmed_mean([*range(9, 0, -1), 1000.0], 0.1) == pytest.approx(5.5)
    assert profiling.trimmed_mean([5.0], 0.4) == 5.0
    assert profiling.trimmed_mean([1.0, 9.0], 0.5) == 5.0  # at least one value kept on each side
    assert math.isnan(profiling.trimmed_mean([], 0.1))


def test_side_stream_launch_during_timing_redoes_the_measurement_synchronized(clock) -> None:
    launches = {"n": 0}
    candidate_calls = {"n": 0}

    def counter() -> int:
        candidate_calls["n"] += 1
        if candidate_calls["n"] > 6:  # launches on another stream once timing has started
            launches["n"] += 1
        return launches["n"]

    timing, calls, _ = _protocol(clock, counter)
    assert timing.details["mode"] == profiling.SYNC_MODE
    assert "sync_overhead_ms" in timing.details and timing.details["sync_overhead_ms"] >= 0
    assert calls.count("cand") > 2 + 9  # the aborted stream-mode rounds plus a full synchronized set
    assert 3.0 <= timing.kernel_ms < 8


def test_side_stream_launch_in_warm_up_selects_synchronized_mode_at_once(clock) -> None:
    launches = {"n": 0}

    def counter() -> int:
        launches["n"] += 1  # every query sees a new side-stream launch
        return launches["n"]

    timing, calls, _ = _protocol(clock, counter)
    assert timing.details["mode"] == profiling.SYNC_MODE
    assert calls.count("cand") == 2 + 9


PROBE_SCRIPT = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import sys, types
import torch, triton, triton.language as tl
from ascend_kernel_gym.evaluation.recorder import Recorder

mod = types.ModuleType("probe_candidate")
exec('''
import triton, triton.language as tl
@triton.jit
def copy_kernel(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)
''', mod.__dict__)
recorder = Recorder("probe_candidate")
recorder.install()
x = torch.arange(8.0); y = torch.empty_like(x)
mod.copy_kernel[(1,)](x, y, 8, BLOCK=8)
seen = []
recorder.stream_probe = lambda: seen.append(1)
mod.copy_kernel[(2,)](x, y, 8, BLOCK=4)
recorder.stream_probe = None
mod.copy_kernel[(1,)](x, y, 8, BLOCK=8)
assert torch.equal(x, y)
print("probes", len(seen))
"""


HANDLE_PROBE_SCRIPT = r"""
import os
os.environ.pop("TRITON_INTERPRET", None)
from triton.compiler.compiler import CompiledKernel
from ascend_kernel_gym.evaluation.recorder import Recorder

recorder = Recorder("probe_candidate")
recorder.install()
seen = []
recorder.stream_handle_probe = seen.append
class Loaded:  # what launch_metadata reads of a loaded kernel (no device needed)
    name, function, src = "k", 0, None
    def _init_handles(self):
        pass
CompiledKernel.launch_metadata(Loaded(), (1, 1, 1), 1234)
recorder.stream_handle_probe = None
CompiledKernel.launch_metadata(Loaded(), (1, 1, 1), 99)
print("handles", seen)
"""


def test_recorder_sees_the_stream_of_compiled_launches_that_bypass_jit_run() -> None:
    out = subprocess.run([sys.executable, "-c", HANDLE_PROBE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "handles [1234]" in out.stdout


def test_recorder_probes_every_launch_while_a_stream_probe_is_set() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "probes 1" in out.stdout


def test_timing_reloads_tensors_nested_in_list_inputs(evaluator) -> None:
    # forward(self, tensors): every timed round and every audit must see its own input set.
    from pathlib import Path

    from ascend_kernel_gym.tasks import get_task

    data = Path(__file__).parent.parent / "data" / "third_party"
    task = get_task(str(data / "level1" / "20_Concat_list_input.py"))
    result = _timed(evaluator, task, (data / "kernels" / "concat_list_input_ok.py").read_text())
    assert result.ok, result.error_message
    assert result.speedup is not None and result.timing["audit_rounds"] == 5


def test_every_timed_round_gets_fresh_inputs_so_a_content_cache_never_hits() -> None:
    import torch

    from ascend_kernel_gym.evaluation.placement import InputArena, RoundInputs

    def make(seed: int) -> list:
        return [torch.randn(64, generator=torch.Generator().manual_seed(seed))]

    def run(num_sets: int) -> int:
        source = RoundInputs(make, base_seed=5)
        seen: set[bytes] = set()
        hits = []

        def caching_model(x):  # remembers every input it saw, by content
            key = x.numpy().tobytes()
            hits.extend([key] if key in seen else [])
            seen.add(key)
            return x * 2

        candidate = InputArena(caching_model, source, random.Random(0), slack=4096)
        reference = InputArena(lambda x: x * 2, source, random.Random(1), slack=4096)
        profiling.time_side_by_side(
            candidate.prepare, reference.prepare, lambda k: None, device_type="cpu", num_sets=num_sets, reps=30,
            warmup=3, audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0,
        )  # fmt: skip
        return len(hits)

    assert run(num_sets=30) == 2  # only the warm-up repeats its set (three calls, two hits)
    assert run(num_sets=3) >= 27  # three rotating sets: nearly every timed call would hit
    source = RoundInputs(make, base_seed=5)
    first = source[4][0].clone()
    assert not torch.equal(source[5][0], first) and torch.equal(source[4][0], first)  # reproducible per round
