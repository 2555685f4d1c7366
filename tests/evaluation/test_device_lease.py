"""The per-device lease: shared while working, exclusive while timing, no starvation, no deadlock."""

from __future__ import annotations

import itertools
import os
import signal
import time

import pytest

from ascend_kernel_gym.evaluation.device_lease import DeviceLease, LeaseKeeper, device_key, lease_enabled


@pytest.fixture
def lease_dir(tmp_path):
    return str(tmp_path / "leases")


@pytest.fixture
def sleeping_child():
    """A child in its own process group that sleeps (a zygote's child for the keeper to stop)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child just sleeps
        os.setpgid(0, 0)
        time.sleep(30)
        os._exit(0)
    yield pid
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_enabled_by_backend_and_override():
    assert lease_enabled("cuda") and lease_enabled("npu")
    assert not lease_enabled("interpreter")
    assert lease_enabled("interpreter", "1")
    assert not lease_enabled("cuda", "off")


def test_device_key_names_the_visible_device(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1234/5,3")
    assert device_key("cuda") == "cuda-GPU-1234_5"
    assert device_key("interpreter") == "interpreter-cpu"


def test_shared_holders_coexist_and_an_exclusive_waits_for_them(lease_dir):
    a, b, timer = (DeviceLease("dev", lease_dir) for _ in range(3))
    assert a.try_shared() and b.try_shared()
    assert not timer.want_exclusive()  # two holders still work on the device
    assert a.timing_elsewhere() and b.timing_elsewhere()
    newcomer = DeviceLease("dev", lease_dir)
    assert not newcomer.try_shared()  # the turnstile is taken: no new work starts
    a.release()
    assert not timer.want_exclusive()
    b.release()
    assert timer.want_exclusive() and timer.state == "exclusive"
    assert not newcomer.try_shared()
    timer.release()
    assert newcomer.try_shared()
    assert not newcomer.timing_elsewhere()


def test_two_timers_do_not_deadlock(lease_dir):
    a, b = DeviceLease("dev", lease_dir), DeviceLease("dev", lease_dir)
    assert a.try_shared() and b.try_shared()
    first = a.want_exclusive()  # drops its own hold, takes the turnstile, waits for b
    second = b.want_exclusive()  # drops its hold, cannot pass the turnstile
    assert not first and not second
    assert a.want_exclusive()  # nobody holds the device any more
    assert not b.want_exclusive()
    a.release()
    assert b.want_exclusive()
    b.release()


def test_leases_of_different_devices_are_independent(lease_dir):
    a, b = DeviceLease("cuda-0", lease_dir), DeviceLease("cuda-1", lease_dir)
    assert a.try_shared()
    assert b.want_exclusive()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def _wait_state(pid: int, wanted: str) -> str:
    for _ in range(200):
        state = _state(pid)
        if state == wanted:
            return state
        time.sleep(0.01)
    return _state(pid)


def test_keeper_stops_its_children_during_a_timing_elsewhere_and_counts_the_pause(lease_dir, sleeping_child):
    pid = sleeping_child
    clock = [100.0]
    keeper = LeaseKeeper(DeviceLease("dev", lease_dir), lambda: clock[0])
    assert keeper.enter(clock[0] + 5, stopped=[])
    timer = DeviceLease("dev", lease_dir)
    assert not timer.want_exclusive()
    keeper.turn(lambda: [pid])
    assert keeper.paused
    assert _wait_state(pid, "T") == "T"
    assert timer.want_exclusive()  # the keeper let go of the device
    clock[0] += 2.5
    keeper.turn(lambda: [pid])
    assert keeper.paused  # the timing is still going
    timer.release()
    keeper.turn(lambda: [pid])
    assert not keeper.paused
    assert keeper.paused_s == pytest.approx(2.5)
    assert _wait_state(pid, "S") != "T"


def test_keeper_holds_the_device_while_a_child_of_its_job_is_still_exiting(lease_dir, sleeping_child):
    # A stopped process still tears its device context down; that next to a timing moved the
    # PyTorch references' times by 3-4 % (bench/gpu_quiet_probe.py): no pause (and no letting go)
    # before the job's exiting children are gone.
    pid = sleeping_child
    keeper = LeaseKeeper(DeviceLease("dev", lease_dir), time.perf_counter)
    assert keeper.enter(time.perf_counter() + 5, stopped=[])
    timer = DeviceLease("dev", lease_dir)
    assert not timer.want_exclusive()
    exiting = [True]
    keeper.turn(lambda: [pid], lambda: not exiting[0])
    assert not keeper.paused and keeper.lease.state == "shared"
    assert not timer.want_exclusive()  # the timing waits for the teardown
    exiting[0] = False
    keeper.turn(lambda: [pid], lambda: not exiting[0])
    assert keeper.paused and _wait_state(pid, "T") == "T"
    assert timer.want_exclusive()
    timer.release()
    keeper.turn(lambda: [pid])
    assert not keeper.paused


def test_a_job_waiting_to_time_keeps_its_starting_spares_stopped_until_it_holds_the_device(lease_dir, sleeping_child):
    # While it waits for the device alone the job holds nothing: a spare of it starting its
    # context then would do so next to the timing it waits for.
    child = sleeping_child
    spare = os.fork()
    if spare == 0:  # pragma: no cover - it just sleeps
        os.setpgid(0, 0)
        time.sleep(30)
        os._exit(0)
    try:
        keeper = LeaseKeeper(DeviceLease("dev", lease_dir), time.perf_counter)
        assert keeper.enter(time.perf_counter() + 5, stopped=[])
        timer = DeviceLease("dev", lease_dir)
        assert not timer.want_exclusive()
        keeper.turn(lambda: [child, spare])
        assert keeper.paused and timer.want_exclusive()  # the other worker times; both stopped
        assert not keeper.want_exclusive(lambda: [spare])  # the job's child asked to time next
        assert _wait_state(child, "S") != "T"  # the child that asked runs
        assert _wait_state(spare, "T") == "T"  # the starting spare does not
        assert not keeper.want_exclusive(lambda: [])
        assert _state(spare) == "T"
        timer.release()
        assert keeper.want_exclusive(lambda: [])
        assert _wait_state(spare, "S") != "T"  # its own timing waits for it (the zygote's quiet rule)
        keeper.leave([])
    finally:
        os.kill(spare, signal.SIGKILL)
        os.waitpid(spare, 0)


def test_after_its_timed_calls_a_job_holds_the_device_shared_again(lease_dir):
    keeper = LeaseKeeper(DeviceLease("dev", lease_dir), time.perf_counter)
    assert keeper.enter(time.perf_counter() + 5, stopped=[])
    assert keeper.want_exclusive()
    neighbour = DeviceLease("dev", lease_dir)
    assert not neighbour.try_shared()  # nobody works on the device while it times
    keeper.end_timing(lambda: [])
    assert keeper.lease.state == "shared" and not keeper.paused
    assert neighbour.try_shared()  # the neighbours' children run again
    timer = DeviceLease("dev", lease_dir)
    assert not timer.want_exclusive()  # the next timing waits for both shared holders
    neighbour.release()
    keeper.leave([])
    assert timer.want_exclusive()


def test_after_its_timed_calls_a_job_pauses_if_another_timing_got_in_first(lease_dir, sleeping_child):
    pid = sleeping_child
    keeper = LeaseKeeper(DeviceLease("dev", lease_dir), time.perf_counter)
    assert keeper.enter(time.perf_counter() + 5, stopped=[])
    assert keeper.want_exclusive()
    keeper.lease.try_shared = lambda: False  # another zygote took the turnstile in between
    keeper.end_timing(lambda: [pid])
    assert keeper.paused and keeper.lease.state == "free"
    assert _wait_state(pid, "T") == "T"
    keeper.resume()
    assert _wait_state(pid, "S") != "T"


def test_keeper_enter_waits_for_a_running_timing_then_resumes_stopped_spares(lease_dir):
    timer = DeviceLease("dev", lease_dir)
    assert timer.want_exclusive()
    keeper = LeaseKeeper(DeviceLease("dev", lease_dir), time.perf_counter)
    assert not keeper.enter(time.perf_counter() + 0.05, stopped=[])  # gave up: the timing went on
    timer.release()
    assert keeper.enter(time.perf_counter() + 5, stopped=[])
    assert keeper.lease.state == "shared"


def _timed_job(task, code: str, seed: int):
    import hashlib

    from ascend_kernel_gym.evaluation.job import Job
    from ascend_kernel_gym.evaluation.static import check_source

    report = check_source(code)
    return Job(
        task=task,
        code=code,
        code_hash=hashlib.sha256(code.encode()).hexdigest(),
        backend="interpreter",
        profile="small",
        num_trials=1,
        seed=seed,
        profile_reps=6,
        profile_warmup=1,
        kernels=report.kernels,
        cpu_timing=True,  # the device timing path with CPU clocks (as in test_timing.py)
    )


def test_workers_sharing_a_device_time_one_at_a_time(monkeypatch, tmp_path, relu_task, relu_solution):
    """Two workers of one "device" (the interpreter, lease forced on): every timing held the lease
    alone, and no two timing spans overlap (they are on the host's one monotonic clock)."""
    from concurrent.futures import ThreadPoolExecutor

    from ascend_kernel_gym.evaluation import EvalResult, Evaluator

    monkeypatch.setenv("AKG_DEVICE_LEASE", "1")
    monkeypatch.setenv("AKG_LEASE_DIR", str(tmp_path / "leases"))
    jobs = [_timed_job(relu_task, relu_solution, seed) for seed in range(4)]
    with Evaluator(backend="interpreter", workers=2, cache=False, timeout_s=120) as ev:

        def run(job):
            base = EvalResult(task_id=relu_task.id, backend="interpreter", profile="small", code_hash=job.code_hash)
            return ev._run_job(job, 120.0, base)

        with ThreadPoolExecutor(2) as threads:
            results = list(threads.map(run, jobs))
    spans = []
    for result in results:
        assert result.correct and result.kernel_ms, result.error_message
        lease = result.timing["device_lease"]
        assert lease["held"] is True and lease["waited_s"] >= 0 and lease["paused_s"] >= 0
        start, end = lease["span"]
        assert start < end
        spans.append((start, end))
    spans.sort()
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, f"two timings overlapped on one device: {spans}"


def test_without_the_lease_results_carry_no_lease(evaluator, relu_task, relu_solution):
    from ascend_kernel_gym.evaluation import EvalResult

    job = _timed_job(relu_task, relu_solution, 3)
    base = EvalResult(task_id=relu_task.id, backend="interpreter", profile="small", code_hash=job.code_hash)
    result = evaluator._run_job(job, 120.0, base)
    assert result.correct and result.kernel_ms and "device_lease" not in result.timing
