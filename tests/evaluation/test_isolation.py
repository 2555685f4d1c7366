"""Isolation: the runtime guard, a pool that survives dead workers, clean temporary directories,
capped output."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator, render_feedback

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def test_guard_policy() -> None:
    proc = subprocess.run(
        [sys.executable, str(HERE.parent / "support" / "guard_scenarios.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdicts = json.loads(proc.stdout.strip().splitlines()[-1])
    allowed = {"write_inside", "read_outside", "mkdir_inside", "import_allowed", "harness_thread"}
    allowed.add("device_library_compiler")  # Triton's own compiler calls on cuda/npu
    for name, verdict in verdicts.items():
        if name in allowed:
            assert verdict == "allowed", f"{name}: {verdict}"
        else:
            assert verdict.startswith("refused"), f"{name} was not refused: {verdict}"
    assert "network" in verdicts["socket"]
    assert "subprocess" in verdicts["subprocess"]
    assert "fork_exec" in verdicts["fork_exec"]
    assert "subprocess" in verdicts["device_candidate_subprocess"]
    assert "thread" in verdicts["thread"]
    assert "json" in verdicts["import_forbidden"]
    assert not glob.glob("/tmp/akg_guard_probe_*") and not glob.glob("/tmp/akg_guard_moved_*")


def test_pool_replaces_a_dead_worker(evaluator, relu_task, relu_solution) -> None:
    evaluator.warm_up()
    handles = evaluator._handles
    starts = [h.starts for h in handles]
    for handle in handles:
        handle.proc.kill()  # the zygote itself dies (not just a child)
        handle.proc.wait()
    results = evaluator.evaluate_many(
        [EvalRequest(task=relu_task, code=relu_solution + f"\n# after kill {i}\n") for i in range(2)]
    )
    assert all(r.ok for r in results), [r.error_message for r in results]
    assert sum(h.starts for h in handles) > sum(starts)
    assert all(h.alive() for h in handles if h.starts > 0)


def test_sandboxes_are_removed(evaluator, relu_task, relu_solution, pool_root, leftover_sandboxes) -> None:
    evaluator.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# sandbox check\n"))
    assert leftover_sandboxes(pool_root, evaluator.workers) == []


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(p) for p in handle.read().split()]


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _running_children(pid: int, settle_to: int, within_s: float = 60.0) -> list[int]:
    """The running children of ``pid``, once their number has come down to ``settle_to``.

    A finished child is killed once its reply is in and may still be tearing down for a few
    milliseconds after the evaluation returned; a spare waits for its job indefinitely, so it
    is still there when the time is up.
    """
    deadline = time.monotonic() + within_s
    while True:
        running = [child for child in _children(pid) if _running(child)]
        if len(running) <= settle_to or time.monotonic() > deadline:
            return running
        time.sleep(0.01)


def _pipes(pid: int) -> int:
    return sum(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("pipe:") for fd in os.listdir(f"/proc/{pid}/fd"))


def test_spare_child_is_set_up_ahead_isolated_and_replaced(relu_task, relu_solution, tmp_path) -> None:
    ev = Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path))
    try:
        first = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# spare 1\n", profile="small"))
        assert first.ok, first.error_message
        assert "ahead.setup" in first.stage_durations and "compile.waited" in first.stage_durations
        zygote = ev._handles[0].proc.pid
        (spare,) = _running_children(zygote, settle_to=1)  # waiting for the next job
        assert _pipes(spare) == 2  # its own job and result pipes; none of the zygote's or a sibling's
        os.kill(spare, signal.SIGKILL)  # dies before it gets a job: replaced, not blamed on the candidate
        for i in range(3):
            code = relu_solution + f"\n# spare {i + 2}\n"
            result = ev.evaluate(EvalRequest(task=relu_task, code=code, profile="small"))
            assert result.ok, result.error_message
        children = _children(zygote)
        assert sum(_running(pid) for pid in children) <= 2 and len(children) <= 3  # finished children are reaped
        spares = [pid for pid in children if _running(pid)]
    finally:
        ev.close()
    assert not any(_running(pid) for pid in spares)
    assert not glob.glob(os.path.join(str(tmp_path), "akg-pool-*"))


def test_without_prefork_no_child_waits(relu_task, relu_solution, tmp_path) -> None:
    ev = Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path), prefork=False)
    try:
        result = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# no spare\n", profile="small"))
        assert result.ok, result.error_message
        assert ev._handles[0].info["prefork"] is False
        assert _running_children(ev._handles[0].proc.pid, settle_to=0) == []
        assert not glob.glob(os.path.join(str(tmp_path), "akg-pool-*", "akg-sandbox-*"))
    finally:
        ev.close()


def test_output_is_captured_capped_and_scrubbed(evaluator, relu_task, relu_solution) -> None:
    noisy = relu_solution.replace(
        "        x = x.contiguous()",
        "        for i in range(20000):\n            print('line', i)\n"
        "        print(__file__)\n        x = x.contiguous()",
    )
    result = evaluator.evaluate(EvalRequest(task=relu_task, code=noisy, num_trials=1))
    assert result.ok, result.error_message
    assert len(result.output_tail) <= evaluator.output_cap + 100
    assert "line 19999" in result.output_tail and "bytes cut" in result.output_tail
    assert "kernel.py" in result.output_tail and "akg-" not in result.output_tail  # paths scrubbed
    failing = relu_solution.replace(
        "        x = x.contiguous()", "        print('debug: about to fail')\n        raise ValueError('boom')"
    )
    bad = evaluator.evaluate(EvalRequest(task=relu_task, code=failing))
    assert bad.error_type == ErrorType.RUNTIME_ERROR
    text = render_feedback(bad)
    assert "debug: about to fail" in text and "ValueError: boom" in text
    assert "your code line" in text
    assert str(ROOT) not in text and "/tmp/" not in text
