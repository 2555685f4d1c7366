"""The child's evaluation state and its one result message (evaluation/state.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.state import ChildState
from ascend_kernel_gym.tasks import get_task


def test_child_result_scrubs_warnings_and_hack_reasons(tmp_path) -> None:
    # Red-team round 2, F9: every free text of the result is scrubbed of sandbox paths.
    sandbox = tmp_path / "akg-pool-abc" / "akg-sandbox-def"
    sandbox.mkdir(parents=True)
    leak = f"{sandbox}/kernel.py"

    class Captured(Exception):
        pass

    class Writer:
        def emit(self, result: EvalResult):
            raise Captured(result)

    task = get_task("core/L1/relu")
    result = EvalResult(task_id=task.id, backend="interpreter", profile="small", code_hash="x", stage=Stage.DONE)
    result.error_type = ErrorType.INPUT_MUTATED
    result.error_message = f"at {leak}"
    result.warnings = [f"cost model could not run: ValueError: at {leak}", "plain note"]
    result.hack_reasons = [f"input_mutated: at {leak}"]
    state = ChildState(
        job=Job(task=task, code="", code_hash="x", backend="interpreter", profile="small", sandbox=str(sandbox)),
        result=result,
        writer=Writer(),  # type: ignore[arg-type]
        sandbox=str(sandbox),
    )
    with pytest.raises(Captured) as info:
        state.finish()
    sent = info.value.args[0]
    texts = [sent.error_message, *sent.warnings, *sent.hack_reasons]
    assert not any("akg-" in t or str(tmp_path) in t for t in texts), texts
    assert sent.warnings == ["cost model could not run: ValueError: at kernel.py", "plain note"]
    assert sent.hack_reasons == ["input_mutated: at kernel.py"]


@pytest.mark.parametrize("hack", [True, False])
def test_a_failure_marked_hack_makes_the_result_a_hack(hack: bool) -> None:
    """out_of_bounds is not a hack type: a write outside makes its result a hack, a read does not."""
    from ascend_kernel_gym.evaluation.errors import StageError
    from ascend_kernel_gym.evaluation.state import apply_failure

    task = get_task("core/L1/relu")
    result = EvalResult(task_id=task.id, backend="interpreter", profile="small", code_hash="x", correct=True)
    state = ChildState(
        job=Job(task=task, code="", code_hash="x", backend="interpreter", profile="small", sandbox=""),
        result=result,
        writer=None,  # type: ignore[arg-type]
    )
    apply_failure(
        state, StageError(ErrorType.OUT_OF_BOUNDS, "kernel 'k': out-of-bounds write\nyour code line 3", hack=hack)
    )
    assert result.error_type == ErrorType.OUT_OF_BOUNDS and not result.correct
    assert result.hack is hack
    assert result.hack_reasons == (["out_of_bounds: kernel 'k': out-of-bounds write"] if hack else [])


def _finished(state: ChildState) -> EvalResult:
    class Captured(Exception):
        pass

    class Writer:
        def emit(self, result: EvalResult):
            raise Captured(result)

    state.writer = Writer()  # type: ignore[assignment]
    with pytest.raises(Captured) as info:
        state.finish()
    return info.value.args[0]


def _state(tmp_path, result: EvalResult) -> ChildState:
    from ascend_kernel_gym.evaluation.recorder import Recorder

    task = get_task("core/L1/relu")
    state = ChildState(
        job=Job(task=task, code="", code_hash="x", backend="interpreter", profile="small", sandbox=str(tmp_path)),
        result=result,
        writer=None,  # type: ignore[arg-type]
        sandbox=str(tmp_path),
    )
    state.recorder = Recorder("akg_candidate")
    return state


def test_a_refused_kernel_argument_the_candidate_swallowed_still_ends_as_a_hack(tmp_path) -> None:
    """Issue 21: a `with` block whose `__exit__` swallows the refusal cannot make the result pass."""
    from ascend_kernel_gym.evaluation.errors import StageError

    result = EvalResult(task_id="core/L1/relu", backend="interpreter", profile="small", code_hash="x", correct=True)
    state = _state(tmp_path, result)
    message = "kernel `relu`: argument `y` is a `Lazy`, not a torch.Tensor; ..."
    state.recorder.refusal = StageError(ErrorType.FORBIDDEN, message)
    sent = _finished(state)
    assert not sent.correct and sent.hack and sent.error_type == ErrorType.FORBIDDEN
    assert sent.error_message == message and sent.hack_reasons == [f"forbidden: {message}"]


def test_a_refusal_does_not_replace_a_hack_already_found(tmp_path) -> None:
    from ascend_kernel_gym.evaluation.errors import StageError

    result = EvalResult(task_id="core/L1/relu", backend="interpreter", profile="small", code_hash="x")
    result.error_type, result.hack, result.error_message = ErrorType.OUT_OF_BOUNDS, True, "kernel 'k': write"
    state = _state(tmp_path, result)
    state.recorder.refusal = StageError(ErrorType.FORBIDDEN, "kernel `k`: argument `y` ...")
    sent = _finished(state)
    assert sent.error_type == ErrorType.OUT_OF_BOUNDS and sent.error_message == "kernel 'k': write"


def test_the_result_sent_is_bounded_and_says_what_was_cut(tmp_path) -> None:
    """Long constexpr strings in launch records and a flood of output: the message stays under 1 MB."""
    from ascend_kernel_gym.evaluation.result import RESULT_CUT_NOTE, LaunchRecord

    result = EvalResult(task_id="core/L1/relu", backend="interpreter", profile="small", code_hash="x", correct=True)
    state = _state(tmp_path, result)
    state.recorder.launches = [LaunchRecord("k", [1], {"NOTE": "n" * (2 << 20)}) for _ in range(8)]
    state.recorder.notes = ["launch records of kernel `k`: NOTE cut (a record keeps 256 characters of a string)"]
    (tmp_path / "output.txt").write_text("printed\n" * 100_000)
    sent = _finished(state)
    assert len(sent.to_json().encode()) < 1 << 20
    assert sent.correct and not sent.hack
    assert state.recorder.notes[0] in sent.warnings
    assert sent.warnings[-1].startswith(RESULT_CUT_NOTE) and "launches" in sent.warnings[-1]


def test_the_child_reports_its_peak_device_memory_per_phase(tmp_path, monkeypatch) -> None:
    import ascend_kernel_gym.evaluation.state as state_module

    peaks = iter([700 << 20, 3000 << 20, 2000 << 20])  # compile, correctness, timing
    monkeypatch.setattr(state_module, "device_peak_bytes", lambda backend, reset=False: next(peaks))
    result = EvalResult(task_id="core/L1/relu", backend="cuda", profile="small", code_hash="x", correct=True)
    state = _state(tmp_path, result)
    state.memory_phase("compile")
    state.memory_phase("correctness")
    sent = _finished(state)  # the phase under way when the child finishes is the next one
    assert sent.device_memory_mb == {
        "candidate": 3000.0, "candidate_compile": 700.0, "candidate_correctness": 3000.0, "candidate_timing": 2000.0,
    }  # fmt: skip

    monkeypatch.setattr(state_module, "device_peak_bytes", lambda backend, reset=False: None)  # the CPU
    cpu = _finished(
        _state(tmp_path, EvalResult(task_id="core/L1/relu", backend="interpreter", profile="small", code_hash="x"))
    )
    assert cpu.device_memory_mb == {}
