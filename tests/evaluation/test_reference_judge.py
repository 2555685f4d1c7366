"""The judge in the reference child (cuda's default, ``AKG_JUDGE=reference``), run on the interpreter.

On cuda the candidate's outputs reach that judge by CUDA IPC handle; here they travel as bytes
through the zygote to the reference child, which judges them exactly as it does on a GPU. The
verdicts must be the zygote judge's: the same passes, failures and hacks, the same trial
names, and a candidate that attacks the verdict from its own process gets nowhere.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator
from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.judge import Judge, Verdict
from ascend_kernel_gym.evaluation.reference_judge import verdict_message
from ascend_kernel_gym.evaluation.remote_judge import RemoteJudge
from ascend_kernel_gym.evaluation.wire import FREED, HEADER, JOB_TAKEN, frame
from ascend_kernel_gym.tasks import get_task

pytestmark = pytest.mark.slow

REDTEAM = Path(__file__).parent / "redteam"
DATA = Path(__file__).parent.parent / "data"
#: red-team files that go after the verdict itself (memory writes into the harness, forged
#: results, the reference's model, the output's structure), and legitimate ones next to them
ATTACKS = (
    "oob_patch_tensor_abs_slot",
    "oob_method_slot_atomic_xchg",
    "spoof_result_builtins",
    "spoof_result_match",
    "fake_json_stdout",
    "gc_reference_model",
    "calls_own_reference_copy",
    "sabotage_reference_params",
    "patch_reference_finalizer",
    "patch_reference_self_restoring",
    "expanded_output",
    "sparse_output",
    "stale_output_kernel_arg",
    "mutate_input_constant_output",
    "params_layernorm_ignores_affine",
    "legit_tuple_output",
    "legit_inplace_relu",
    "legit_layernorm_params",
    # the first call is special to these (a deferred plan makes it before the plan comes)
    "launder_first_call_only",
    "cost_model_call_count",
    "legit_type_self_cache",
)


def _meta(path: Path) -> dict[str, str]:
    meta = {}
    for line in path.read_text().splitlines():
        match = re.match(r"#\s*(expected|task|timeout):\s*(.+)", line)
        if match:
            meta[match.group(1)] = match.group(2).strip()
    return meta


@pytest.fixture(scope="module", params=["eager", "deferred"])
def reference_judged(request, tmp_path_factory):
    """An evaluator whose reference child judges; ``deferred``: it builds the plan only once the
    candidate's child made trial 1's first call (a shared device's default)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AKG_JUDGE", "reference")
    mp.setenv("AKG_DEFER_REFERENCE", "1" if request.param == "deferred" else "0")
    ev = Evaluator(
        backend="interpreter", workers=2, cache=False, timeout_s=120, tmp_root=str(tmp_path_factory.mktemp("rj"))
    )
    try:
        yield ev
    finally:
        ev.close()
        mp.undo()


def test_good_wrong_and_constant_kernels_get_the_zygote_judges_verdicts(reference_judged, relu_task, relu_solution):
    wrong = relu_solution.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")
    constant = relu_solution.replace("tl.maximum(x, 0.0)", "x * 0.0")
    assert wrong != relu_solution and constant != relu_solution
    good, bad, zero = reference_judged.evaluate_many(
        [EvalRequest(task=relu_task, code=c, seed=4) for c in (relu_solution + "\n# ref\n", wrong, constant)]
    )
    assert good.ok and good.trials_passed == good.trials_total == 5, good.error_message
    assert bad.error_type == ErrorType.VALUE_MISMATCH and "trial 1 of 5" in bad.error_message
    assert bad.trials_passed == 0 and bad.max_abs_err == pytest.approx(0.5, abs=1e-6)
    assert zero.error_type == ErrorType.INPUT_INDEPENDENT, zero.error_message  # through the probe


@pytest.mark.parametrize("stem", ATTACKS)
def test_verdict_attacks_fail_and_legitimate_files_pass(stem, reference_judged):
    path = REDTEAM / f"{stem}.py"
    meta = _meta(path)
    name = meta.get("task", "core/L1/relu")
    task = get_task(DATA / name if name.endswith(".py") else name)
    timeout = float(meta.get("timeout", 60.0))
    result = reference_judged.evaluate(EvalRequest(task=task, code=path.read_text(), timeout_s=timeout, seed=20260))
    expected = {ErrorType(k) for k in meta["expected"].split("|")}
    assert result.error_type in expected, (stem, result.error_type, result.error_message[:300])
    if ErrorType.NONE not in expected:
        assert not result.correct


def test_an_output_that_changes_after_the_first_call_is_nondeterministic_either_way(reference_judged, relu_task):
    """Deferred, trial 1's first call comes before the plan: it must still be trial 1's, the
    call its second is compared with (not a call of its own that leaves trial 1 to the second)."""
    code = (Path(__file__).parent / "corpus" / "nondeterministic.py").read_text()
    result = reference_judged.evaluate(EvalRequest(task=relu_task, code=code, seed=7))
    assert result.error_type == ErrorType.NONDETERMINISTIC, result.error_message


# --- the two ends of the protocol, without processes -------------------------------------------------


def _stream(tmp_path):
    """A stand-in for the reference child: pipes for the forwarded trials and for the verdicts."""
    from ascend_kernel_gym.evaluation.child_stream import Child, ChildStream

    verdict_read, verdict_write = os.pipe()
    trial_read, trial_write = os.pipe()
    stream = ChildStream(Child(pid=0, job_fd=trial_write, result_fd=verdict_read, sandbox=str(tmp_path)), "tok")
    return stream, verdict_write, trial_read


def test_a_verdict_message_round_trips_to_the_zygote_side(tmp_path) -> None:
    judge = Judge(1e-2, 1e-2, 3)
    judge.passed, judge.max_abs, judge.max_rel, judge.out_bytes = 2, 0.25, 0.5, 4096
    failure = StageError(ErrorType.VALUE_MISMATCH, "wrong (trial 3 of 3)", max_abs_err=0.7)
    stream, verdict_write, trial_read = _stream(tmp_path)
    remote = RemoteJudge(3, deadline=time.perf_counter() + 60)
    plan = {"plan": {"trials": [{}, {}, {}], "probe_seed": 1}, "slowest_ref_s": 0.5, "device_bytes": 5 << 20}
    remote.load_reference(plan, b"")
    assert remote.device_bytes == 5 << 20  # the judge's peak device memory, which sizes later evaluations
    remote.attach(stream)
    assert remote.ready and remote.trials == [0, 1, 2] and remote.slowest_ref_s == 0.5
    message = {**verdict_message(judge, Verdict("fail", failure)), "device_bytes": 9 << 20}
    os.write(verdict_write, frame(json.dumps(message).encode()))
    verdict = remote.judge({"index": 2, "tensors": []}, b"body")
    assert remote.device_bytes == 9 << 20
    assert (remote.plan_bytes, remote.judging_bytes) == (5 << 20, 9 << 20)  # building the plan, then judging
    assert verdict.action == "fail" and verdict.failure.error_type == ErrorType.VALUE_MISMATCH
    assert verdict.failure.metrics == {"max_abs_err": 0.7} and "trial 3 of 3" in verdict.failure.message
    assert (remote.passed, remote.max_abs, remote.max_rel, remote.out_bytes) == (2, 0.25, 0.5, 4096)
    forwarded = os.read(trial_read, 1 << 16)  # the trial went on as header and body, each framed
    (size,) = HEADER.unpack(forwarded[: HEADER.size])
    assert json.loads(forwarded[HEADER.size : HEADER.size + size]) == {"index": 2, "tensors": []}
    assert forwarded.endswith(HEADER.pack(4) + b"body")
    os.write(verdict_write, frame(b'{"action": "continue", "failure": null}'))  # fields missing
    assert remote.judge({"index": 2}, b"").failure.error_type == ErrorType.HARNESS_ERROR
    os.write(
        verdict_write, frame(json.dumps({**verdict_message(judge, Verdict("continue")), "action": "pass"}).encode())
    )
    assert remote.judge({"index": 2}, b"").action == "fail"  # no such action: never a pass


def test_a_plan_with_the_wrong_trial_count_or_a_reference_failure_ends_the_evaluation() -> None:
    remote = RemoteJudge(3, deadline=0.0)
    remote.load_reference({"plan": {"trials": [{}]}}, b"")
    assert remote.reference_failure is not None and remote.reference_failure.error_type == ErrorType.HARNESS_ERROR
    failed = RemoteJudge(3, deadline=0.0)
    failed.load_reference({"error": {"type": "timeout", "message": "the reference ran too long"}}, b"")
    assert failed.reference_failure is not None and failed.reference_failure.error_type == ErrorType.TIMEOUT
    assert not failed.done and failed.trials == []


def test_a_judge_that_is_gone_or_silent_fails_the_trial_as_the_harness(tmp_path) -> None:
    stream, verdict_write, _ = _stream(tmp_path)
    remote = RemoteJudge(1, deadline=0.0)  # already past: a silent judge is not waited for
    remote.load_reference({"plan": {"trials": [{}]}}, b"")
    remote.attach(stream)
    silent = remote.judge({"index": 0}, b"")
    assert silent.action == "fail" and silent.failure.error_type == ErrorType.TIMEOUT
    os.close(verdict_write)  # the judge's pipe closed: it ended
    remote.deadline = time.perf_counter() + 60
    gone = remote.judge({"index": 0}, b"")
    assert gone.action == "fail" and gone.failure.error_type == ErrorType.HARNESS_ERROR


def test_ipc_entries_that_no_exporter_makes_are_refused_before_the_driver_is_asked() -> None:
    import torch

    from ascend_kernel_gym.evaluation.device_ipc import IpcError, export_tensor, import_tensor

    with pytest.raises(IpcError, match="dense"):
        export_tensor(torch.ones(3).to_sparse())
    good = {"handle": "00" * 64, "offset": 0, "stride": [1]}
    for bad in (
        {**good, "handle": "zz" * 64},
        {**good, "handle": "00" * 10},
        {**good, "offset": "0"},
        {**good, "stride": [-1]},
        {**good, "stride": [1, 1]},
    ):
        with pytest.raises(IpcError) as caught:
            import_tensor(bad, torch.float32, [4], torch.device("cpu"))
        assert caught.value.malformed
    empty = import_tensor({**good, "stride": [4, 1]}, torch.float32, [0, 4], torch.device("cpu"))  # no bytes
    assert empty.shape == (0, 4)


def test_an_idle_judge_gives_the_last_jobs_device_memory_back_before_it_waits() -> None:
    """Idle judges holding cached blocks left other workers' references without memory (H100, 8 workers)."""
    import types

    from ascend_kernel_gym.evaluation import reference_judge
    from ascend_kernel_gym.evaluation.process import Prepared

    log_read, log_write = os.pipe()
    taken_read, taken_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # judge_main ends its process
        try:
            os.close(log_read)

            def log(event: str) -> None:
                os.write(log_write, f"{event}\n".encode())

            outcomes = iter([True, False])
            reference_judge._judge_one = lambda *args: (log("judged"), next(outcomes))[1]
            reference_judge.read_message = lambda fd: (log("waits"), {"role": "judge", "job": None, "token": "t"})[1]
            reference_judge.torch.fakedev = types.SimpleNamespace(empty_cache=lambda: log("empty_cache"))
            device = types.SimpleNamespace(type="fakedev")
            reference_judge.judge_main(None, -1, taken_write, "t", Prepared(device=device))
        finally:
            os._exit(3)
    os.close(log_write)
    os.close(taken_write)
    _, status = os.waitpid(pid, 0)
    events = os.read(log_read, 4096).decode().split()
    said = os.read(taken_read, 16)
    os.close(log_read)
    os.close(taken_read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert events == ["judged", "empty_cache", "waits", "judged"]
    # FREED once its memory is back (the zygote holds the device until then), then the next job's JOB_TAKEN
    assert said == FREED + JOB_TAKEN


def test_the_judge_lets_go_of_the_references_outputs_once_every_trial_passed() -> None:
    import torch

    from ascend_kernel_gym.evaluation import reference_judge
    from ascend_kernel_gym.evaluation.tensor_wire import encode_payload, encode_tree
    from ascend_kernel_gym.evaluation.wire import split_payload

    def split(header: dict, tensors: list) -> tuple[dict, bytes]:
        _, head, body = split_payload(encode_payload(header, tensors))
        return head, body

    inputs = [torch.linspace(-1.0, 1.0, 8) * (k + 1) for k in range(3)]
    tensors: list = []
    entries = [
        {"seed": k, "distribution": "normal", "output": encode_tree(torch.relu(x), tensors), "inputs_after": {}}
        for k, x in enumerate(inputs)
    ]
    for entry in entries:
        entry["slack"] = None
    probe = {
        "seed": 9,
        "distribution": "task",
        "output": encode_tree(torch.relu(inputs[0]), tensors),
        "inputs_after": {},
        "slack": None,
    }
    judge = Judge(1e-5, 1e-5, 3)
    judge.load_reference(*split({"trials": entries, "probe": probe, "profile": "small"}, tensors))

    trial_read, trial_write = os.pipe()
    verdict_read, verdict_write = os.pipe()
    for k, x in enumerate(inputs):
        out: list = []
        again = torch.relu(x) if k == 0 else None
        header = {
            "index": k, "output": encode_tree(torch.relu(x), out), "aliased": [False], "changed": [],
            "inputs_after": {}, "again": encode_tree(again, out) if again is not None else None,
        }  # fmt: skip
        head, body = split(header, out)
        raw = json.dumps(head).encode()
        os.write(trial_write, HEADER.pack(len(raw)) + raw + HEADER.pack(len(body)) + body)
    os.write(trial_write, HEADER.pack(0))  # the end of the evaluation
    assert reference_judge._serve(judge, torch.device("cpu"), trial_read, verdict_write) is True
    os.close(verdict_write)
    replies = os.read(verdict_read, 1 << 16)
    assert replies.count(b'"action": "continue"') == 3 and judge.done
    assert all(t.output is None for t in judge.trials) and judge.probe.output is None
    for fd in (trial_read, trial_write, verdict_read):
        os.close(fd)
