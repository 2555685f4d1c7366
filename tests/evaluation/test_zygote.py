"""The zygote (evaluation/zygote.py): its side of the child protocol (the result-pipe stream), and
with a real pool: spare children set up ahead and replaced, sandboxes removed. The quiet-device
rule and the device lease are in test_zygote_lease.py."""

from __future__ import annotations

import glob
import json
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator
from ascend_kernel_gym.evaluation.child_stream import Child, ChildStream, read_output_tail
from ascend_kernel_gym.evaluation.verdict import final_reply
from ascend_kernel_gym.evaluation.wire import (
    HEADER,
    JOB_TAKEN,
    NOT_READY,
    QUIET,
    READY,
    RESULT,
    TIMED,
    encode_result,
)
from ascend_kernel_gym.evaluation.zygote import Zygote
from ascend_kernel_gym.tasks import get_task

DATA = Path(__file__).parent.parent / "data"


def _framed(token: str, result: dict) -> bytes:
    return RESULT + encode_result(token, result)


def _child() -> Child:
    return Child(pid=0, job_fd=-1, result_fd=-1, sandbox="")


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 20])
def test_stream_is_parsed_across_any_chunking(chunk: int) -> None:
    child = _child()
    run = ChildStream(child, "tok")
    # A result whose length prefix starts with the QUIET byte must not be taken for a request.
    body = {"stage": "done", "pad": ""}
    while HEADER.pack(len(_framed("tok", body)) - 1 - HEADER.size)[:1] != QUIET:
        body["pad"] += "x"
    stream = READY + JOB_TAKEN + QUIET + _framed("tok", body)
    seen_quiet = False
    for start in range(0, len(stream), chunk):
        assert run.reply() is None  # incomplete until the last byte
        run.feed(stream[start : start + chunk])
        seen_quiet = seen_quiet or run.quiet_asked
    assert child.ready and run.taken and seen_quiet
    assert run.reply() == body


def test_stream_rejects_a_forged_or_unframed_result() -> None:
    forged = ChildStream(_child(), "tok")
    forged.feed(JOB_TAKEN + _framed("other", {"correct": True}))
    assert forged.taken and forged.reply() is None
    unframed = ChildStream(_child(), "tok")
    payload = json.dumps({"token": "tok", "result": {}}).encode()
    unframed.feed(JOB_TAKEN + HEADER.pack(len(payload)) + payload)  # no RESULT marker
    assert unframed.reply() is None
    not_taken = ChildStream(_child(), "tok")
    not_taken.feed(_framed("tok", {}))  # a result without the job ever being taken
    assert not not_taken.taken and not_taken.reply() is None


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
        # waiting for the next job: its candidate's child and its reference child
        spare, other = _running_children(zygote, settle_to=2)
        assert (
            _pipes(spare) == 2 and _pipes(other) == 2
        )  # own job and result pipes; none of the zygote's or a sibling's
        os.kill(spare, signal.SIGKILL)  # dies before it gets a job: replaced, not blamed on the candidate
        for i in range(3):
            code = relu_solution + f"\n# spare {i + 2}\n"
            result = ev.evaluate(EvalRequest(task=relu_task, code=code, profile="small"))
            assert result.ok, result.error_message
        children = _children(zygote)
        running = _running_children(zygote, settle_to=2)
        assert len(running) == 2 and len(children) <= 6  # finished children are reaped
        spares = [pid for pid in children if _running(pid)]
    finally:
        ev.close()
    assert not any(_running(pid) for pid in spares)
    assert not glob.glob(os.path.join(str(tmp_path), "akg-pool-*"))


def test_spares_are_forked_for_their_role_and_taken_by_it(tmp_path, monkeypatch) -> None:
    import subprocess

    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    forked: list[bool] = []
    sleepers: list[subprocess.Popen] = []

    def fork(reference: bool = False) -> Child:
        forked.append(reference)
        sleepers.append(subprocess.Popen(["sleep", "60"]))  # a live child, as a spare waiting for its job
        return Child(pid=sleepers[-1].pid, job_fd=-1, result_fd=-1, sandbox="", reference=reference)

    monkeypatch.setattr(zygote, "_fork_child", fork)
    zygote.prefork = True
    try:
        zygote.start_spare()
        assert zygote.judge_here and sorted(forked) == [False, True]  # the reference's and the candidate's
        zygote.start_spare()
        assert len(forked) == 2  # none missing: none forked
        assert zygote._take_spare(reference=True).reference is True
        assert zygote._take_spare(reference=True) is None  # the candidate's spare is not taken for a reference
        assert zygote._take_spare().reference is False
        zygote.start_spare()
        assert sorted(forked[2:]) == [False, True]
    finally:
        zygote.spares = []
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
        os.rmdir(zygote.root)


def test_a_spare_whose_device_was_full_is_never_handed_a_job(tmp_path) -> None:
    import subprocess

    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    sleepers, pipes = [], []
    try:
        for byte in (NOT_READY, READY):
            read_fd, write_fd = os.pipe()
            os.write(write_fd, byte)  # what the spare said once it had set up (or failed to)
            pipes.append(write_fd)
            sleepers.append(subprocess.Popen(["sleep", "60"]))  # alive, waiting for its job
            sandbox = tempfile.mkdtemp(dir=tmp_path)
            zygote.spares.append(Child(pid=sleepers[-1].pid, job_fd=-1, result_fd=read_fd, sandbox=sandbox))
        full, fine = zygote.spares
        taken = zygote._take_spare()
        assert taken is fine and taken.ready and not taken.unusable
        assert full.unusable and full.pid in zygote.exiting and not os.path.exists(full.sandbox)  # killed, removed
        assert zygote._take_spare() is None  # a fresh child is forked for the job instead
        # a spare taken before the zygote read its byte is handed its job only after the byte says it can
        read_fd, write_fd = os.pipe()
        os.write(write_fd, NOT_READY)
        pipes.append(write_fd)
        sleepers.append(subprocess.Popen(["sleep", "60"]))
        zygote.spares.append(Child(pid=sleepers[-1].pid, job_fd=-1, result_fd=read_fd, sandbox=""))
        assert zygote._take_spare() is None
    finally:
        for fd in pipes:
            os.close(fd)
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
        zygote.spares = []


@pytest.mark.parametrize(
    ("error", "said"),
    [(None, READY), (RuntimeError("CUDA error: out of memory"), NOT_READY), (RuntimeError("no driver"), READY)],
)
def test_a_forked_child_says_whether_its_device_could_be_set_up(monkeypatch, tmp_path, error, said) -> None:
    from ascend_kernel_gym.evaluation import child as child_module
    from ascend_kernel_gym.evaluation.process import ChildSetup, Prepared

    # only a full device makes a spare unusable; any other failure is reported when its job comes
    monkeypatch.setattr(child_module, "prepare", lambda setup: Prepared(error=error))
    job_read, job_write = os.pipe()
    result_read, result_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(job_write)
            os.close(result_read)
            child_module.child_entry(ChildSetup(str(tmp_path), "interpreter", None, 1), job_read, result_write)
        finally:
            os._exit(70)
    os.close(job_read)
    os.close(result_write)
    assert os.read(result_read, 1) == said
    os.close(job_write)  # no job: it ends quietly
    assert os.waitpid(pid, 0)[1] == 0
    os.close(result_read)


def test_a_not_ready_byte_in_a_childs_stream_marks_it_unusable_not_garbled() -> None:
    child = Child(pid=1, job_fd=-1, result_fd=-1, sandbox="")
    stream = ChildStream(child, "t")
    stream.feed(NOT_READY + JOB_TAKEN)
    assert child.ready and child.unusable and stream.taken and not stream.garbled


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


def _relu_judge(trials: int = 2):
    """A judge loaded as the reference child would load it: relu over ``trials`` trials."""
    import torch

    from ascend_kernel_gym.evaluation.judge import Judge
    from ascend_kernel_gym.evaluation.tensor_wire import encode_payload, encode_tree
    from ascend_kernel_gym.evaluation.wire import split_payload

    tensors: list = []
    entries = [
        {
            "seed": k,
            "distribution": "task",
            "output": encode_tree(torch.relu(torch.linspace(-1, 1, 4) * (k + 1)), tensors),
            "inputs_after": {},
            "slack": None,
        }
        for k in range(trials)
    ]
    probe = {
        "seed": 9,
        "distribution": "task",
        "output": encode_tree(torch.ones(4), tensors),
        "inputs_after": {},
        "slack": None,
    }
    judge = Judge(1e-5, 1e-5, trials)
    _, header, body = split_payload(encode_payload({"trials": entries, "probe": probe, "profile": "small"}, tensors))
    judge.load_reference(header, body)
    return judge


def _job():
    from types import SimpleNamespace

    task = SimpleNamespace(id="core/L1/relu", atol=1e-5, rtol=1e-5)
    return SimpleNamespace(task=task, backend="interpreter", profile="small", code_hash="h", static_warnings=[])


def _trial_bytes(index, output, again=None) -> bytes:
    from ascend_kernel_gym.evaluation.tensor_wire import encode_payload, encode_tree
    from ascend_kernel_gym.evaluation.wire import TRIAL

    tensors: list = []
    header = {
        "index": index,
        "output": encode_tree(output, tensors),
        "again": encode_tree(again, tensors) if again is not None else None,
        "aliased": [False],
        "changed": [],
        "inputs_after": {},
        "result": {
            "task_id": "core/L1/relu",
            "backend": "interpreter",
            "profile": "small",
            "code_hash": "h",
            "stage": "correctness",
            "compiled": True,
            "format_ok": True,
            "static_ok": True,
        },
    }
    return TRIAL + encode_payload(header, tensors)


def test_a_child_that_reports_correct_without_being_judged_is_a_forgery(tmp_path) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    run = ChildStream(_child(), "tok")
    forged = {
        "task_id": "core/L1/relu",
        "backend": "interpreter",
        "profile": "small",
        "code_hash": "h",
        "stage": "done",
        "correct": True,
        "trials_passed": 2,
        "trials_total": 2,
    }
    run.feed(READY + JOB_TAKEN + _framed("tok", forged))
    reply = final_reply(run, _job(), _relu_judge())
    assert reply["correct"] is False and reply["hack"] is True and reply["error_type"] == "sandbox_violation"
    assert reply["trials_passed"] == 0
    os.rmdir(zygote.root)


def test_the_reply_keeps_the_childs_own_memory_reading_only_as_a_number_and_the_judges_beside_it(tmp_path) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    judge = _relu_judge()
    judge.device_bytes = 3 << 30  # what a judging reference child reported
    judge.plan_bytes, judge.judging_bytes = 3 << 30, 1 << 30  # ... building the plan, then judging
    ref = {"reference": 3072.0, "reference_plan": 3072.0, "reference_judging": 1024.0}
    claims = (
        ({"candidate": 1234.5, "reference": 1.0}, {"candidate": 1234.5, **ref}),
        ({"candidate": "0", "reference": 1.0}, ref),
        (["forged"], ref),
        (  # the child's phases pass as numbers; the judge's own keys are the judge's, whatever the child says
            {"candidate": 900.0, "candidate_compile": 10.0, "candidate_timing": "x", "reference_plan": 1.0, "x": 5.0},
            {"candidate": 900.0, "candidate_compile": 10.0, **ref},
        ),
    )
    for claimed, kept in claims:
        run = ChildStream(_child(), "tok")
        failed = {
            "task_id": "core/L1/relu", "backend": "interpreter", "profile": "small", "code_hash": "h",
            "stage": "compile", "error_type": "runtime_error", "device_memory_mb": claimed,
        }  # fmt: skip
        run.feed(READY + JOB_TAKEN + _framed("tok", failed))
        reply = final_reply(run, _job(), judge)
        assert reply["device_memory_mb"] == kept, claimed
    os.rmdir(zygote.root)


def test_trials_stream_through_the_judge_and_a_wrong_one_ends_the_child(tmp_path) -> None:
    import torch

    from ascend_kernel_gym.evaluation.wire import CONTINUE, PROBE

    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    read_fd, write_fd = os.pipe()
    child = Child(pid=0, job_fd=write_fd, result_fd=-1, sandbox="")
    judge = _relu_judge()
    run = ChildStream(child, "tok")
    run.plan_sent = True  # trials come only after the plan
    good = torch.relu(torch.linspace(-1, 1, 4))
    stream = READY + JOB_TAKEN + _trial_bytes(0, good, again=good) + _trial_bytes(1, torch.zeros(4) + 3)
    for start in range(0, len(stream), 5):  # any chunking
        run.feed(stream[start : start + 5])
    assert len(run.trials) == 2
    assert zygote._judge_trials(run, judge) is True  # the second trial fails: the evaluation ends
    assert os.read(read_fd, 8) == CONTINUE and judge.passed == 1
    reply = final_reply(run, _job(), judge)
    assert reply["error_type"] == "value_mismatch" and reply["correct"] is False and reply["trials_passed"] == 1
    assert reply["stage"] == "correctness" and reply["compiled"] is True
    # A wrong first trial asks for the probe (one byte back), no verdict yet.
    first = ChildStream(child, "tok")
    first.plan_sent = True
    first.feed(READY + JOB_TAKEN + _trial_bytes(0, good + 1, again=good + 1))
    assert zygote._judge_trials(first, _relu_judge()) is False and os.read(read_fd, 8) == PROBE
    os.close(read_fd)
    os.close(write_fd)
    os.rmdir(zygote.root)


BIG_RELU_TASK = """import torch
import torch.nn as nn

TASK = {"level": 1, "category": "activation", "description": "ReLU", "dtype": "float32", "atol": 1e-5, "rtol": 1e-5}

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(256, 512)]

def get_init_inputs():
    return []
"""


def test_judging_big_outputs_never_leaves_the_zygote_unable_to_fork(relu_solution, tmp_path) -> None:
    # 131072 elements: PyTorch compares them in parallel unless told not to. A zygote that has run
    # an OpenMP parallel region forks children whose first parallel operation waits forever.
    from ascend_kernel_gym.tasks import get_task

    task_file = tmp_path / "big_relu.py"
    task_file.write_text(BIG_RELU_TASK)
    task = get_task(task_file)
    ev = Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=90, tmp_root=str(tmp_path))
    try:
        for i in range(3):
            result = ev.evaluate(EvalRequest(task=task, code=relu_solution + f"\n# big {i}\n", seed=i))
            assert result.ok, (i, result.error_type, result.error_message)
    finally:
        ev.close()


def test_the_device_path_judges_in_the_child_with_the_same_verdicts(relu_task, relu_solution, tmp_path, monkeypatch):
    # On cuda / npu the candidate's child judges itself (no reference child, one spare): run that
    # path on the interpreter and check it reaches the same verdicts as the zygote's judge.
    monkeypatch.setenv("AKG_JUDGE", "child")
    wrong = relu_solution.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")
    constant = relu_solution.replace("tl.maximum(x, 0.0)", "x * 0.0")
    assert wrong != relu_solution and constant != relu_solution
    ev = Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path))
    try:
        good = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# in child\n", seed=4))
        assert good.ok and good.trials_passed == 5, good.error_message
        assert _running_children(ev._handles[0].proc.pid, settle_to=1)  # one spare: no reference child
        bad = ev.evaluate(EvalRequest(task=relu_task, code=wrong, seed=4))
        assert bad.error_type == ErrorType.VALUE_MISMATCH and "trial 1 of 5" in bad.error_message
        zero = ev.evaluate(EvalRequest(task=relu_task, code=constant, seed=4))
        assert zero.error_type == ErrorType.INPUT_INDEPENDENT, zero.error_message
    finally:
        ev.close()


def _self_judged_claims() -> dict:
    """A self-judging child's result claiming 100 timed calls of 1 ms and 50 ms (5.1 s in all)."""
    return {
        "task_id": "core/L1/relu",
        "backend": "cuda",
        "profile": "full",
        "code_hash": "h",
        "stage": "done",
        "correct": True,
        "kernel_ms": 1.0,
        "ref_ms": 50.0,
        "speedup": 50.0,
        "timing": {"kernel_ms_samples": [1.0] * 100, "ref_ms_samples": [50.0] * 100},
    }


def test_timings_a_self_judging_child_claims_are_held_to_the_zygotes_clock(tmp_path) -> None:
    # Device backends: the child judges itself, but its timing window is the zygote's (QUIET -> result).
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    claims = _self_judged_claims()
    for window, forged in ((10.0, False), (0.5, True)):  # 5.1 s of claimed samples
        run = ChildStream(_child(), "tok")
        run.feed(READY + JOB_TAKEN + QUIET + _framed("tok", claims))
        run.done_at = run.quiet_at + window
        reply = final_reply(run, _job(), None)
        assert reply["hack"] is forged and (reply["speedup"] is None) is forged, reply["timing"]["cross_check"]
        assert reply["timing"]["cross_check"]["window_s"] == window
    os.rmdir(zygote.root)


def test_the_timing_window_ends_when_the_child_says_its_timed_calls_are_over(tmp_path) -> None:
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    claims = _self_judged_claims()
    # Before asking for a quiet device, or a second time, it is no harness's byte: the stream is broken.
    for stream in (JOB_TAKEN + TIMED, JOB_TAKEN + QUIET + TIMED + TIMED):
        broken = ChildStream(_child(), "tok")
        broken.feed(READY + stream + _framed("tok", claims))
        assert broken.garbled and broken.reply() is None
    run = ChildStream(_child(), "tok")
    run.feed(READY + JOB_TAKEN + QUIET + TIMED + _framed("tok", claims))
    assert run.timed_at is not None and run.reply() == claims
    for window, forged in ((10.0, False), (0.5, True)):  # 5.1 s of claimed samples
        run.timed_at = run.quiet_at + window
        run.done_at = run.quiet_at + 60.0  # checks after the timed calls do not widen the window
        reply = final_reply(run, _job(), None)
        assert reply["hack"] is forged, reply["timing"]["cross_check"]
        assert reply["timing"]["cross_check"]["window_s"] == window
    os.rmdir(zygote.root)


def test_the_judges_time_is_not_the_candidates_stall(tmp_path) -> None:
    # A verdict that took long (large outputs, a judge in another process) must not count against
    # the candidate's progress watchdog: each answered trial is progress.
    from ascend_kernel_gym.evaluation.judge import Verdict

    class SlowJudge:
        def judge(self, header, body):
            time.sleep(0.05)
            return Verdict("continue")

    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path)})
    answers_read, answers_write = os.pipe()
    run = ChildStream(Child(pid=0, job_fd=answers_write, result_fd=-1, sandbox=""), "tok")
    run.trials = [({"index": 0}, b""), ({"index": 1}, b"")]
    run.progress_at = time.perf_counter() - 30.0
    before = time.perf_counter()
    assert zygote._judge_trials(run, SlowJudge()) is False
    assert run.progress_at >= before + 0.1 and run.judged_at == run.progress_at
    assert os.read(answers_read, 8) == b"CC"  # both trials answered
    os.close(answers_read)
    os.close(answers_write)


def test_a_trial_larger_than_the_judge_allows_is_refused_before_it_is_buffered() -> None:
    import torch

    small = _trial_bytes(0, torch.ones(4), again=torch.ones(4))
    accepted = ChildStream(_child(), "tok")
    accepted.plan_sent, accepted.trial_limit = True, 64
    accepted.feed(JOB_TAKEN + small)
    assert len(accepted.trials) == 1 and not accepted.garbled and not accepted.oversized
    big = _trial_bytes(0, torch.ones(1000), again=torch.ones(1000))
    refused = ChildStream(_child(), "tok")
    refused.plan_sent, refused.trial_limit = True, 4096
    body_at = len(big) - 8000  # the header and the body's announced size, none of the body
    refused.feed(JOB_TAKEN + big[:body_at])
    assert refused.garbled and not refused.trials and "8000 bytes" in refused.oversized
    huge_header = ChildStream(_child(), "tok")
    huge_header.plan_sent = True
    huge_header.feed(JOB_TAKEN + b"T" + HEADER.pack(1 << 40))
    assert huge_header.garbled and not huge_header.oversized


def test_the_judge_bounds_a_trial_by_the_references_inputs_and_outputs() -> None:
    from ascend_kernel_gym.evaluation.judge import TRIAL_BYTES_FACTOR, TRIAL_EXTRA_BYTES

    judge = _relu_judge()  # outputs of 4 float32 values, inputs not stated
    assert judge.trial_bytes_limit() == TRIAL_EXTRA_BYTES + TRIAL_BYTES_FACTOR * 16
    judge.trials[1].input_bytes = 1000
    assert judge.trial_bytes_limit() == TRIAL_EXTRA_BYTES + TRIAL_BYTES_FACTOR * 1016


def test_an_output_far_larger_than_the_references_is_a_shape_mismatch_not_a_hack(relu_task, relu_solution, tmp_path):
    huge = relu_solution.replace("return out", "return out.expand(1100, *out.shape)")
    assert huge != relu_solution
    ev = Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path))
    try:
        result = ev.evaluate(EvalRequest(task=relu_task, code=huge, seed=5))
    finally:
        ev.close()
    assert result.error_type == ErrorType.SHAPE_MISMATCH and not result.hack, result.error_message
    assert "far more than the reference's" in result.error_message


def test_one_judging_child_serves_evaluation_after_evaluation(monkeypatch, tmp_path, relu_task, relu_solution):
    """The judging reference child goes back as the next job's spare when its job ended cleanly
    (one judging context per many evaluations), settings a task's reference changed do not carry
    over, and a judge killed between jobs is replaced without the next evaluation noticing."""
    monkeypatch.setenv("AKG_JUDGE", "reference")
    leaky = get_task(DATA / "judge_reuse" / "relu_sets_float64.py")
    with Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path)) as ev:
        first = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# 1\n", seed=1))
        assert first.ok, first.error_message
        zygote = ev._handles[0].proc.pid
        after_first = set(_running_children(zygote, settle_to=2))
        # A task whose reference sets float64 as the default dtype: its judge compares float64
        # references with the candidate's float32 outputs (a failure), and goes back all the same.
        ev.evaluate(EvalRequest(task=leaky, code=relu_solution, seed=2))
        after_leaky = set(_running_children(zygote, settle_to=2))
        judge = after_first & after_leaky
        assert len(judge) == 1, (after_first, after_leaky)  # the candidate's spares are fresh each time
        second = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# 2\n", seed=3))
        assert second.ok, second.error_message  # float32 again: the setting did not leak
        assert judge <= set(_running_children(zygote, settle_to=2))
        os.kill(judge.pop(), 9)  # dies while it waits for its next job
        third = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# 3\n", seed=4))
        assert third.ok, third.error_message


def test_a_judge_whose_job_ended_before_its_plan_is_replaced(monkeypatch, tmp_path, relu_task, relu_solution):
    monkeypatch.setenv("AKG_JUDGE", "reference")
    broken = relu_solution.replace("class ModelNew", "raise RuntimeError('no model')\n\n\nclass ModelNew")
    with Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path)) as ev:
        ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# 1\n", seed=1))
        zygote = ev._handles[0].proc.pid
        before = set(_running_children(zygote, settle_to=2))
        failed = ev.evaluate(EvalRequest(task=relu_task, code=broken, seed=2))
        assert not failed.ok
        after = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# 2\n", seed=3))
        assert after.ok, after.error_message
        assert len(before & set(_running_children(zygote, settle_to=2))) <= 1


_COUNTED_RELU = """
import os

import torch
import torch.nn as nn

LOG = {log!r}


class Model(nn.Module):
    \"\"\"ReLU that notes each call in a reference child (the candidate's child may write nowhere).\"\"\"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with open("/proc/self/comm") as comm:
            name = comm.read().strip()
        if name == "akg-reference":
            with open(LOG, "a") as log:
                log.write(f"{{name}} {{os.getpid()}}\\n")
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("defer", ["1", "0"])
def test_a_deferred_reference_runs_only_for_a_candidate_that_compiled(
    monkeypatch, tmp_path, relu_solution, defer
) -> None:
    """With ``AKG_DEFER_REFERENCE=1`` (the default where workers share a device) the reference
    child runs the reference only once the candidate asked for the plan: a candidate whose first
    call fails costs no reference run, and its judge serves the next evaluation. Eager (``0``),
    the reference runs for every evaluation."""
    monkeypatch.setenv("AKG_JUDGE", "reference")
    monkeypatch.setenv("AKG_DEFER_REFERENCE", defer)
    log = tmp_path / "calls.log"
    source = tmp_path / "counted_relu.py"
    source.write_text(_COUNTED_RELU.format(log=str(log)))
    task = get_task(source)
    broken = relu_solution.replace("return out", "raise RuntimeError('broken on purpose')")
    assert broken != relu_solution

    def reference_runs() -> list[str]:
        lines = log.read_text().splitlines() if log.exists() else []
        log.write_text("")
        return [line.split()[1] for line in lines]

    # Without the OS sandbox: the task's reference writes its notes outside its sandbox.
    settings = {"workers": 1, "cache": False, "timeout_s": 120, "tmp_root": str(tmp_path), "os_sandbox": False}
    with Evaluator(backend="interpreter", **settings) as ev:
        good = ev.evaluate(EvalRequest(task=task, code=relu_solution + "\n# 1\n", seed=1))
        assert good.ok, good.error_message
        judge = set(reference_runs())
        assert len(judge) == 1  # the plan's runs and the probe, in the one judging child
        failed = ev.evaluate(EvalRequest(task=task, code=broken, seed=2))
        assert failed.error_type == ErrorType.RUNTIME_ERROR, failed.error_message
        assert bool(reference_runs()) == (defer == "0")
        again = ev.evaluate(EvalRequest(task=task, code=relu_solution + "\n# 2\n", seed=3))
        assert again.ok and again.trials_passed == again.trials_total, again.error_message
        if defer == "1":  # the judge that waited through the failed evaluation built this plan
            assert set(reference_runs()) == judge


def test_the_judging_child_makes_the_moved_runs_only_when_an_output_needs_them(monkeypatch, tmp_path, relu_solution):
    """``AKG_LAZY_SENSITIVITY`` reaches the judging reference child: an honest kernel's evaluation
    runs the reference four times fewer per varied trial than with the moved runs in the plan
    (``0``), with the same verdict."""
    monkeypatch.setenv("AKG_JUDGE", "reference")
    log = tmp_path / "calls.log"
    source = tmp_path / "counted_relu.py"
    source.write_text(_COUNTED_RELU.format(log=str(log)))
    task = get_task(source)
    runs: dict[str, int] = {}
    for lazy in ("1", "0"):
        monkeypatch.setenv("AKG_LAZY_SENSITIVITY", lazy)
        settings = {"workers": 1, "cache": False, "timeout_s": 120, "tmp_root": str(tmp_path), "os_sandbox": False}
        with Evaluator(backend="interpreter", **settings) as ev:
            result = ev.evaluate(EvalRequest(task=task, code=relu_solution, seed=5, num_trials=5))
        assert result.ok and result.trials_passed == 5, result.error_message
        runs[lazy] = len(log.read_text().splitlines())
        log.write_text("")
    # trials 2-5 include varied value ranges; each one's four moved runs happen only in the plan
    assert runs["0"] - runs["1"] >= 4 and (runs["0"] - runs["1"]) % 4 == 0, runs


def test_a_childs_printed_output_is_read_through_the_zygotes_own_descriptor(tmp_path) -> None:
    """A child whose code got past every Python layer can put a link (or a FIFO) at its output.txt;
    the zygote reads the output it shows in failed results through the descriptor it opened before
    the fork, so it never follows the link out of the sandbox (issue 21's hidden file reads)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-OUTSIDE-THE-SANDBOX\n")
    (tmp_path / "root").mkdir()
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path / "root")})
    first = zygote._fork_child()
    second = zygote._fork_child()
    try:
        for child in (first, second):  # set up (its output redirected) and waiting for a job
            assert os.read(child.result_fd, 1) == READY
        output = Path(first.sandbox) / "output.txt"
        with open(output, "a") as handle:
            handle.write("printed before the swap\n")
        assert read_output_tail(first.output_fd, 4096) == "printed before the swap\n"
        output.unlink()
        output.symlink_to(secret)
        assert "SECRET" not in read_output_tail(first.output_fd, 4096)
        output.unlink()
        os.mkfifo(output)  # opened by path, a FIFO with no writer would block the zygote
        assert read_output_tail(first.output_fd, 4096) == "printed before the swap\n"
        assert read_output_tail(first.output_fd, 8) == "he swap\n"
        # the next child does not inherit the first one's descriptor
        held = {os.path.realpath(f"/proc/{second.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{second.pid}/fd")}
        assert not any(path.startswith(first.sandbox) for path in held)
    finally:
        for child in (first, second):
            zygote._discard(child)
        zygote._reap(block=True)
    assert first.output_fd == -1 and not os.path.exists(first.sandbox)


def test_a_stream_the_harness_never_writes_ends_as_a_violation_not_a_crash() -> None:
    """A child past the Python layers once crashed the zygote (and left itself running) with a
    result nested too deeply to parse, a trial header making a meta tensor of 2**62 elements, or a
    partial result with fields an EvalResult lacks; a trial before the plan made the zygote buffer
    without bound. Each is now the child's own broken stream."""
    from ascend_kernel_gym.evaluation.wire import PLAN, TRIAL

    deep = ChildStream(_child(), "tok")
    nested = b'{"token": "tok", "result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    deep.feed(READY + JOB_TAKEN + RESULT + HEADER.pack(len(nested)) + nested)
    assert deep.reply() is None and deep.garbled
    early = ChildStream(_child(), "tok")
    early.feed(READY + JOB_TAKEN + PLAN + TRIAL + HEADER.pack(16) + b"x" * 64)  # no plan was sent
    assert early.garbled and early.pending == b""
    judged = ChildStream(_child(), "tok")
    judged.plan_sent = True
    judged.feed(READY + JOB_TAKEN + TRIAL)
    assert judged.in_trial and not judged.garbled
    from ascend_kernel_gym.evaluation.result import EvalResult

    run = ChildStream(_child(), "tok")
    run.partial = {"not_a_field": 1}
    job = _job()
    job.first_result = lambda: EvalResult(task_id="core/L1/relu", backend="interpreter", profile="small", code_hash="h")
    reply = final_reply(run, job, _relu_judge())
    assert reply["error_type"] == "sandbox_violation" and reply["hack"] and not reply["correct"]
    judge = _relu_judge()
    header = {"index": 0, "tensors": [{"shape": [1 << 31, 1 << 31], "dtype": "float32", "device": "meta"}]}
    verdict = judge.judge(header, b"")
    assert verdict.action == "fail" and verdict.failure.error_type.value in ("sandbox_violation", "harness_error")


def test_the_timing_gate_setting_reaches_the_children_through_the_zygote(tmp_path, monkeypatch) -> None:
    """The zygote's environment is cleaned (no AKG_ variables): the caller's AKG_TIMING_GATE comes
    in the zygote's configuration, and the children it forks inherit the setting."""
    from ascend_kernel_gym.evaluation import device_gate

    monkeypatch.setattr(device_gate, "_configured", None)
    monkeypatch.delenv(device_gate.ENV, raising=False)
    zygote = Zygote({"backend": "interpreter", "tmp_root": str(tmp_path), "timing_gate": "1"})
    device_gate.configure(zygote.timing_gate)  # as its warm-up does
    assert device_gate.wanted()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a child forked from the zygote, as its spares are
        os.write(write, b"1" if device_gate.wanted() else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    os.close(read)
    os.close(write)
    os.rmdir(zygote.root)


def test_the_pool_hands_the_callers_timing_gate_setting_to_its_zygote(relu_task, tmp_path, monkeypatch) -> None:
    for setting, wanted in (("1", True), ("0", False)):
        monkeypatch.setenv("AKG_TIMING_GATE", setting)
        ev = Evaluator(backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path))
        try:
            ev.warm_up()
            assert ev._handles[0].info["timing_gate"] is wanted
        finally:
            ev.close()
