"""The timing stage (evaluation/timing.py), exercised on the CPU.

On the interpreter the evaluator never reports a speedup; the first tests run the device timing
code path of a real child (interleaved rounds, input sets reloaded per call, audit rounds) with
CPU timers through its test hook (``Job.cpu_timing``), so that the protocol and its
anti-cheating audits are tested without a GPU; they assert no measured time. The tests of the
protocol itself (:func:`time_side_by_side`) give it a fake clock that only the fake models
advance, so every expected time is exact.
"""

from __future__ import annotations

import hashlib
import math
import random

import pytest
import torch
from fake_clock import FakeClock
from identity_math import ADD_FP32_CANDIDATE, add_task

from ascend_kernel_gym.evaluation import ErrorType, EvalResult, Stage, timing
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
    parts = {"reference_reruns", "audit_calls", "compare", "keep"}
    assert set(phases) == {"setup", "warmup", "quiet_wait", "rounds", "inputs", "checks", "after_timing", *parts}
    assert all(seconds >= 0 for seconds in phases.values())
    # Inputs are drawn in their rounds (never ahead: a set waiting in memory could be found by a
    # kernel and answered early); the audit calls' kept outputs are compared with the reference's
    # after the timed calls (the reference's re-runs happen there). The checks' parts are within
    # the checks.
    assert 0 < phases["inputs"] + phases["keep"] + phases["audit_calls"] <= phases["rounds"]
    assert 0 < phases["reference_reruns"] <= phases["after_timing"]
    assert 0 < sum(phases[part] for part in parts) <= phases["checks"]
    # An honest kernel's checked outputs agreed with the reference's output of their round, at once;
    # the audit calls' copies waited in (device) memory for the reference's re-run; none was
    # compared whole inside the lease.
    kept = result.timing["checks_kept"]
    assert kept["at_once"] == 0 and kept["host"] == 0
    assert 10 <= result.timing["checked_rounds"] <= 10 + 5
    assert kept["agreed"] >= 1 and kept["device"] >= result.timing["audit_rounds"]
    # one check per checked round and one per audit call (an audited round is checked as well)
    assert kept["agreed"] + kept["device"] == result.timing["checked_rounds"] + result.timing["audit_rounds"]
    # Timing started only once the zygote confirmed that no sibling child was starting or ending.
    assert result.timing["quiet_granted"] is True and result.timing["quiet_wait_s"] >= 0


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


COLLECTOR_TELL = """
        flag = []

        def sentinel():
            try:
                yield 0
            finally:
                flag.append(1)

        probe = sentinel()
        next(probe)
        cycle = [probe]
        cycle.append(cycle)  # garbage only the cyclic collector frees
        cycle = probe = None
        young = [[] for _ in range(800)]  # past the young generation's threshold
        young = None
        if flag:  # collected inside the call: the collector was on, so no recorder watched
            return x.clone()
"""


def test_no_call_can_tell_a_timed_round_from_a_recorded_one(evaluator, relu_task, relu_solution) -> None:
    """Every call of the timing stage starts as the recorded ones do (collected, the collector off,
    the harness's settings): a ``forward`` that answered wrongly whenever the collector ran inside
    it, which before was exactly the timed calls (red team of 2026-12-05, night), now never does,
    and its checked rounds pass."""
    code = relu_solution.replace("        x = x.contiguous()\n", COLLECTOR_TELL + "        x = x.contiguous()\n")
    assert code != relu_solution
    result = _timed(evaluator, relu_task, code)
    assert result.ok, result.error_message


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


def test_with_the_device_lease_the_skipped_work_is_caught_after_the_lease_went_back(
    monkeypatch, tmp_path, relu_task, relu_solution
) -> None:
    """The timed outputs are compared once the child said its timed calls were over (the zygote
    then gives the device's lease back): a cheat is still caught, an honest kernel still passes,
    and the lease's span ends before the result."""
    from ascend_kernel_gym.evaluation import Evaluator

    monkeypatch.setenv("AKG_DEVICE_LEASE", "1")
    monkeypatch.setenv("AKG_LEASE_DIR", str(tmp_path / "leases"))
    lazy = relu_solution.replace("        x = x.contiguous()\n", LAZY + "        x = x.contiguous()\n")
    lazy = lazy.replace("        return out\n", "        self.last = out\n        return out\n")
    with Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120) as ev:
        caught = _timed(ev, relu_task, lazy, reps=30)
        honest = _timed(ev, relu_task, relu_solution)
    assert caught.error_type == ErrorType.VALUE_MISMATCH, caught.error_message
    assert "changed during timing" in caught.error_message
    assert honest.ok, honest.error_message
    lease = honest.timing["device_lease"]
    assert lease["held"] is True and lease["span"][0] < lease["span"][1]
    assert honest.timing["phase_s"]["after_timing"] > 0


def test_after_candidate_sees_the_input_set_of_its_round() -> None:
    loaded: list[int] = []
    checked: list[int] = []

    def candidate(k: int):
        loaded.append(k)
        return lambda: None

    timing.time_side_by_side(
        candidate, lambda k: (lambda: None), lambda k: None, device_type="cpu", num_sets=3, reps=12, warmup=1,
        audit_rounds=3, check_rounds=4, rng=random.Random(5), flush_bytes=1 << 12, after_candidate=checked.append,
        warmup_s=0.0,
    )  # fmt: skip
    timed = loaded[-12:]
    assert timed == [r % 3 for r in range(12)]
    assert 4 <= len(checked) <= 7 and all(0 <= k < 3 for k in checked)


def test_a_time_budget_leaves_fast_pairs_every_round_and_slow_ones_at_least_the_minimum() -> None:
    assert timing.budgeted_reps(100, 2.0, 0.001) == 100  # 0.1 s in all: fits
    assert timing.budgeted_reps(100, 2.0, 0.05) == 40  # 5 s in all: as many as fit
    assert timing.budgeted_reps(100, 2.0, 0.5) == timing.MIN_BUDGET_REPS  # never fewer than the minimum
    assert timing.budgeted_reps(10, 0.001, 0.5) == 10  # nor more than asked
    assert timing.budgeted_reps(100, 2.0, 0.0) == 100  # no reading: unchanged


def test_the_budget_is_applied_from_the_pair_time_read_before_the_rounds() -> None:
    """A 89 ms kernel's 100 rounds held an H100 for 15 s (2026-12-05): with a budget, a slow pair
    gets fewer rounds, counted from its calls' wall time on the quiet device."""
    import time

    def sleeper(ms: float):
        return lambda k: lambda: time.sleep(ms / 1e3)

    kwargs = dict(device_type="cpu", num_sets=25, reps=25, warmup=1, audit_rounds=2, check_rounds=2,
                  flush_bytes=1 << 12, warmup_s=0.0)  # fmt: skip
    slow = timing.time_side_by_side(
        sleeper(10), sleeper(1), lambda k: None, rng=random.Random(1), budget_s=0.05, **kwargs
    )
    assert slow.details["reps"] == timing.MIN_BUDGET_REPS and slow.details["reps_asked"] == 25
    assert len(slow.details["kernel_ms_samples"]) == len(slow.details["ref_ms_samples"]) == timing.MIN_BUDGET_REPS
    roomy = timing.time_side_by_side(
        sleeper(1), sleeper(1), lambda k: None, rng=random.Random(1), budget_s=1e3, **kwargs
    )
    assert roomy.details["reps"] == 25 and roomy.details["budget_s"] == 1e3
    plain = timing.time_side_by_side(sleeper(1), sleeper(1), lambda k: None, rng=random.Random(1), **kwargs)
    assert plain.details["reps"] == 25 and plain.details["budget_s"] is None


# --- the timing protocol itself, on a fake clock ----------------------------------------------------


def _model(clock: FakeClock, ms: float, calls: list[str], name: str):
    def prepare(k: int):
        def call() -> None:
            calls.append(name)
            clock.advance(ms)

        return call

    return prepare


def _protocol(side_streams=None, reps: int = 9):
    clock = FakeClock()
    calls: list[str] = []
    audits: list[int] = []
    result = timing.time_side_by_side(
        _model(clock, 4.0, calls, "cand"),
        _model(clock, 2.0, calls, "ref"),
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
        clock=clock,
    )
    return result, calls, audits


def test_stream_mode_times_each_model_and_audits() -> None:
    result, calls, audits = _protocol()
    assert result.details["mode"] == timing.STREAM_MODE
    assert calls.count("cand") == calls.count("ref") == 2 + timing.LEASE_WARMUP + 9
    assert len(audits) == 2 and all(0 <= k < 3 for k in audits)
    assert result.details["kernel_ms_samples"] == pytest.approx([4.0] * 9)
    assert result.details["ref_ms_samples"] == pytest.approx([2.0] * 9)
    assert result.kernel_ms == pytest.approx(4.0) and result.ref_ms == pytest.approx(2.0)
    assert result.speedup == pytest.approx(0.5)


def test_the_clock_is_the_wall_clock_unless_given() -> None:
    import time

    assert timing.device_module("cpu").clock is time.perf_counter
    clock = FakeClock()
    dev = timing.device_module("cpu", clock)
    event, end = dev.Event(), dev.Event()
    event.record()
    clock.advance(1.5)
    end.record()
    assert event.elapsed_time(end) == pytest.approx(1.5)


def test_each_model_time_is_a_trimmed_mean_of_its_calls() -> None:
    # Every timed call runs on another placement; some kernels are a few percent slower on some
    # placements (as on an H200). The candidate here is slow on every third call: a median would
    # land on the fast level, the trimmed mean sits between the levels, and a single hiccup is
    # trimmed away.
    clock = FakeClock()
    calls = {"n": 0}

    def candidate(k: int):
        calls["n"] += 1
        n = calls["n"]  # 1 to 4 are the warm-up calls (one, then LEASE_WARMUP = 3); 5 to 34 are timed
        return lambda: clock.advance(300.0 if n == 15 else 9.0 if n % 3 == 0 else 3.0)

    def reference(k: int):
        return lambda: clock.advance(5.0)

    result = timing.time_side_by_side(
        candidate, reference, lambda k: None, device_type="cpu", num_sets=3, reps=30, warmup=1,
        audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0, clock=clock,
    )  # fmt: skip
    # Timed: twenty calls of 3 ms, nine of 9 ms, one of 300 ms. The 10% trim drops three 3 ms
    # calls and the 300 ms call with two 9 ms calls: (17 * 3 + 7 * 9) / 24 = 4.75 ms.
    assert sorted(result.details["kernel_ms_samples"]) == pytest.approx([3.0] * 20 + [9.0] * 9 + [300.0])
    assert result.kernel_ms == pytest.approx(4.75)
    assert result.details["kernel_ms_median"] == pytest.approx(3.0)
    assert result.ref_ms == pytest.approx(5.0) and result.speedup == pytest.approx(5.0 / 4.75)


def test_relocation_is_untimed_and_its_lazy_cost_never_timed() -> None:
    # A move of the memory the harness does not place (the context's local memory on CUDA) makes
    # the next call of each model pay for a lazy allocation; that call must not be a timed one.
    clock = FakeClock()
    state = {"moves": 0, "pending": set()}

    def relocate() -> bool:
        state["moves"] += 1
        state["pending"] = {"cand", "ref"}
        return True

    def model(name: str, ms: float):
        def prepare(k: int):
            def call() -> None:
                if name in state["pending"]:
                    state["pending"].discard(name)
                    clock.advance(200.0)
                clock.advance(ms)

            return call

        return prepare

    result = timing.time_side_by_side(
        model("cand", 4.0), model("ref", 2.0), lambda k: None, device_type="cpu", num_sets=2, reps=12,
        warmup=1, audit_rounds=0, rng=random.Random(1), flush_bytes=1 << 12, warmup_s=0.0, relocate=relocate,
        relocate_every=4, clock=clock,
    )  # fmt: skip
    assert state["moves"] == 3  # rounds 0, 4 and 8
    assert result.details["kernel_ms_samples"] == pytest.approx([4.0] * 12)
    assert result.details["ref_ms_samples"] == pytest.approx([2.0] * 12)


def test_trimmed_mean() -> None:
    assert timing.trimmed_mean([*range(9, 0, -1), 1000.0], 0.1) == pytest.approx(5.5)
    assert timing.trimmed_mean([5.0], 0.4) == 5.0
    assert timing.trimmed_mean([1.0, 9.0], 0.5) == 5.0  # at least one value kept on each side
    assert math.isnan(timing.trimmed_mean([], 0.1))


def test_side_stream_launch_during_timing_redoes_the_measurement_synchronized() -> None:
    launches = {"n": 0}
    candidate_calls = {"n": 0}

    def counter() -> int:
        candidate_calls["n"] += 1
        if candidate_calls["n"] > 6:  # launches on another stream once timing has started
            launches["n"] += 1
        return launches["n"]

    result, calls, _ = _protocol(counter)
    assert result.details["mode"] == timing.SYNC_MODE
    assert result.details["sync_overhead_ms"] == 0.0  # an empty call takes no time on the fake clock
    assert calls.count("cand") > 2 + 9  # the aborted stream-mode rounds plus a full synchronized set
    assert result.details["kernel_ms_samples"] == pytest.approx([4.0] * 9)  # only the synchronized set
    assert result.kernel_ms == pytest.approx(4.0)


def test_side_stream_launch_in_warm_up_selects_synchronized_mode_at_once() -> None:
    launches = {"n": 0}

    def counter() -> int:
        launches["n"] += 1  # every query sees a new side-stream launch
        return launches["n"]

    result, calls, _ = _protocol(counter)
    assert result.details["mode"] == timing.SYNC_MODE
    assert calls.count("cand") == 2 + timing.LEASE_WARMUP + 9


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
        timing.time_side_by_side(
            candidate.prepare, reference.prepare, lambda k: None, device_type="cpu", num_sets=num_sets, reps=30,
            warmup=3, audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0,
        )  # fmt: skip
        return len(hits)

    # only the warm-up repeats its set (three calls, then LEASE_WARMUP more: one miss, the rest hits)
    assert run(num_sets=30) == 3 + timing.LEASE_WARMUP - 1
    assert run(num_sets=3) >= 27  # three rotating sets: nearly every timed call would hit
    source = RoundInputs(make, base_seed=5)
    first = source[4][0].clone()
    assert not torch.equal(source[5][0], first) and torch.equal(source[4][0], first)  # reproducible per round


#: calls of the candidate before its timed ones with ``warmup=1``: one warm-up call, then those on the quiet device
WARM_CALLS = 1 + timing.LEASE_WARMUP


def _hiccup_protocol(monkeypatch, stalls, reps: int):
    """A candidate of 3 ms whose host part stalls 60 ms (the window then shows 50 ms of idle
    device) on the calls ``stalls(n)`` picks (calls 1 to ``WARM_CALLS`` are the warm-up), against
    a 40 ms cushion."""
    import time

    monkeypatch.setattr(timing, "CPU_CUSHION_MS", 40.0)
    monkeypatch.setattr(timing, "HOST_RETRY_SHARE", 100.0)  # the mechanics, without the budget
    clock = FakeClock()
    calls = {"n": 0}

    def candidate(k: int):
        calls["n"] += 1
        stalled = stalls(calls["n"])

        def call() -> None:
            if stalled:
                time.sleep(0.06)
                clock.advance(50.0)
            clock.advance(3.0)

        return call

    result = timing.time_side_by_side(
        candidate, _model(clock, 5.0, [], "ref"), lambda k: None, device_type="cpu", num_sets=3, reps=reps,
        warmup=1, audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0, clock=clock,
    )  # fmt: skip
    return result, calls["n"]


def test_a_call_whose_host_part_outran_the_cushion_is_timed_again(monkeypatch) -> None:
    result, calls = _hiccup_protocol(monkeypatch, lambda n: n > WARM_CALLS and n % 4 == 0, reps=12)
    assert result.details["kernel_ms_samples"] == pytest.approx([3.0] * 12)
    host = result.details["host"]
    assert host["kernel_retimed"] == calls - WARM_CALLS - 12 >= 2
    assert host["kernel_exposed_kept"] == 0 and host["ref_retimed"] == 0


def test_a_call_that_always_outruns_the_cushion_keeps_its_time(monkeypatch) -> None:
    result, calls = _hiccup_protocol(monkeypatch, lambda n: n > WARM_CALLS, reps=2)
    assert result.details["kernel_ms_samples"] == pytest.approx([53.0] * 2)
    assert calls == WARM_CALLS + 2 * (1 + timing.HOST_RETRIES)
    assert result.details["host"]["kernel_exposed_kept"] == 2


def test_a_call_that_outran_the_cushion_grows_it_for_the_calls_after_it(monkeypatch) -> None:
    # Every call after the warm-up stalls its host 60 ms against a 40 ms cushion: the first timed
    # call grows the cushion to 1.5 x its host time, and no later call outruns it.
    monkeypatch.setattr(timing, "MAX_CUSHION_MS", 500.0)
    result, calls = _hiccup_protocol(monkeypatch, lambda n: n > WARM_CALLS, reps=6)
    details = result.details
    assert details["cushion_start_ms"] == 40.0 and details["cushion_grown"] == 1
    assert details["cushion_ms"] >= 1.5 * 60 and details["cushion_ms"] % 40.0 == 0  # whole flush writes
    assert details["host"]["kernel_retimed"] == 1 and details["host"]["kernel_exposed_kept"] == 0
    assert calls == WARM_CALLS + 6 + 1


def test_the_cushion_grows_no_further_than_its_cap(monkeypatch) -> None:
    result, _ = _hiccup_protocol(monkeypatch, lambda n: n > WARM_CALLS, reps=2)
    assert result.details["cushion_ms"] == 40.0 and result.details["cushion_grown"] == 0  # the cap is 3 ms


def test_a_call_timed_again_gets_inputs_it_has_not_seen(monkeypatch) -> None:
    # A candidate that computes (10 ms) and stalls its host the first time it sees an input set,
    # then answers from a cache (1 ms) when the same set comes again: the call timed again must
    # not be that cache hit.
    import time

    monkeypatch.setattr(timing, "CPU_CUSHION_MS", 40.0)
    monkeypatch.setattr(timing, "HOST_RETRY_SHARE", 100.0)  # the mechanics, without the budget
    clock = FakeClock()
    seen: set[int] = set()
    called: list[int] = []

    def candidate(k: int):
        called.append(k)

        def call() -> None:
            if k in seen:
                clock.advance(1.0)
                return
            seen.add(k)
            time.sleep(0.06)
            clock.advance(10.0)

        return call

    checked: list[int] = []
    result = timing.time_side_by_side(
        candidate, _model(clock, 5.0, [], "ref"), lambda k: None, device_type="cpu", num_sets=4, reps=4, warmup=1,
        audit_rounds=0, check_rounds=4, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0, clock=clock,
        check=checked.append,
    )  # fmt: skip
    assert result.details["kernel_ms_samples"] == pytest.approx([10.0] * 4)  # never the 1 ms cache hit
    assert result.details["host"]["kernel_exposed_kept"] == 4
    # Each check is on the set the candidate's kept call was timed on: its last of the round
    # (the warm-up calls first, then 1 + HOST_RETRIES calls per round).
    per_round = 1 + timing.HOST_RETRIES
    last_of_round = [called[WARM_CALLS + per_round * (r + 1) - 1] for r in range(4)]
    assert checked == last_of_round and len(set(checked)) == 4 and all(k >= 4 for k in checked)


def test_the_device_is_asked_for_only_after_the_warm_up_and_before_the_calls_that_size_the_cushion() -> None:
    # The warm-up needs no quiet device (neighbours keep running meanwhile); the calls whose host
    # time sizes the cushion, and every timed call, come after the lease's go-ahead.
    clock = FakeClock()
    events: list[str] = []

    def quiet() -> tuple[float, bool]:
        events.append("quiet")
        return (0.25, True)

    result = timing.time_side_by_side(
        _model(clock, 4.0, events, "cand"), _model(clock, 2.0, events, "ref"), lambda k: None, device_type="cpu",
        num_sets=3, reps=5, warmup=2, audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0,
        clock=clock, quiet=quiet,
    )  # fmt: skip
    assert events.count("quiet") == 1
    before = events[: events.index("quiet")]
    after = events[events.index("quiet") + 1 :]
    assert before.count("cand") == before.count("ref") == 2  # the warm-up
    assert after.count("cand") == after.count("ref") == timing.LEASE_WARMUP + 5  # sizing calls, then timed
    assert result.quiet == (0.25, True)
    assert len(result.details["kernel_ms_samples"]) == 5


def test_a_model_cannot_pick_its_samples_by_stalling_its_host(monkeypatch) -> None:
    # A candidate that knows on the host which calls will be slow (here: every other one; on a
    # device, by its inputs' placement) and stalls its host on those, so they are timed again
    # elsewhere: only a tenth of its calls may be timed again, the rest keep their (slow) time.
    import time

    monkeypatch.setattr(timing, "CPU_CUSHION_MS", 40.0)
    clock = FakeClock()
    calls = {"n": 0}

    def candidate(k: int):
        calls["n"] += 1
        slow = calls["n"] % 2 == 0

        def call() -> None:
            if slow:
                time.sleep(0.045)  # past 90 % of the cushion: exposed
            clock.advance(3.0 if slow else 1.0)

        return call

    result = timing.time_side_by_side(
        candidate, _model(clock, 5.0, [], "ref"), lambda k: None, device_type="cpu", num_sets=40, reps=40,
        warmup=1, audit_rounds=0, rng=random.Random(0), flush_bytes=1 << 12, warmup_s=0.0, clock=clock,
    )  # fmt: skip
    host = result.details["host"]
    assert host["kernel_retimed"] == math.ceil(timing.HOST_RETRY_SHARE * 40) == 4
    assert host["kernel_exposed_kept"] >= 10
    assert sorted(result.details["kernel_ms_samples"]).count(3.0) >= 10  # its slow calls still count


def test_the_reference_runs_in_the_state_the_harness_set_whatever_the_candidate_left() -> None:
    # A forward that switched grad mode, anomaly detection, deterministic algorithms and the
    # default dtype on after its own work would slow only the reference, which runs next in the
    # same process.
    from ascend_kernel_gym.evaluation.correctness import reference_torch_state

    seen = {}

    def reference(x):
        seen.update(
            grad=torch.is_grad_enabled(),
            anomaly=torch.is_anomaly_enabled(),
            deterministic=torch.are_deterministic_algorithms_enabled(),
            dtype=torch.get_default_dtype(),
        )
        return x

    before = torch.get_default_dtype()
    torch.set_grad_enabled(True)
    torch.set_anomaly_enabled(True)
    torch.use_deterministic_algorithms(True)
    torch.set_default_dtype(torch.float64)
    try:
        with reference_torch_state():
            reference(torch.ones(1))
        assert seen == {"grad": False, "anomaly": False, "deterministic": False, "dtype": before}
        # what the candidate's code set is back for its own calls
        assert torch.is_anomaly_enabled() and torch.are_deterministic_algorithms_enabled()
        assert torch.get_default_dtype() == torch.float64
    finally:
        torch.set_anomaly_enabled(False)
        torch.use_deterministic_algorithms(False)
        torch.set_default_dtype(before)


def test_a_forward_that_leaves_another_stream_current_is_refused() -> None:
    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.result import ErrorType

    class Dev:
        stream = "timing"

        def current_stream(self):
            return self.stream

    dev = Dev()

    def switching(k: int):
        def call() -> None:
            dev.stream = "parked"  # torch.cuda.set_stream(parked) before returning

        return call

    honest = timing._keeping_stream(lambda k: lambda: 1, dev)
    assert honest(0)() == 1
    with pytest.raises(StageError) as refused:
        timing._keeping_stream(switching, dev)(0)()
    assert refused.value.error_type == ErrorType.FORBIDDEN and refused.value.hack


COPY_AFTER_CORRECTNESS = """
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls > 8:
            w = torch.zeros_like(w)  # from here on the kernel writes PyTorch's copy of x back
"""


def test_copying_pytorchs_copy_during_timing_is_refused_by_the_audits(evaluator, tmp_path) -> None:
    """Past the correctness trials the kernel copies PyTorch's upcast of x: the audited calls (the
    task's own inputs) carry the input-copy taint."""
    anchor = "        xf = x.contiguous().float()\n"
    code = ADD_FP32_CANDIDATE.replace(anchor, COPY_AFTER_CORRECTNESS + anchor)
    result = _timed(evaluator, add_task(tmp_path), code)
    assert result.error_type == ErrorType.TORCH_FALLBACK and result.hack, result.error_message
    assert result.stage == Stage.PERFORMANCE
