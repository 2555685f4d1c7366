"""The trusted judge (evaluation/judge.py): verdicts from plain bytes, the order of the checks,
what a forged result or forged timing gets."""

from __future__ import annotations

import torch

from ascend_kernel_gym.evaluation.judge import Judge, merge_final, timing_check
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage
from ascend_kernel_gym.evaluation.tensor_wire import encode_payload, encode_tree
from ascend_kernel_gym.evaluation.wire import split_payload

ATOL = RTOL = 1e-5


def _split(header: dict, tensors: list[torch.Tensor]) -> tuple[dict, bytes]:
    _, head, body = split_payload(encode_payload(header, tensors))
    return head, body


def _inputs(k: int) -> torch.Tensor:
    return torch.linspace(-1.0, 1.0, 8) * (k + 1)


def _judge(trials: int = 3, inplace: bool = False) -> Judge:
    """A judge loaded with a relu reference over ``trials`` trials (and a probe)."""
    tensors: list[torch.Tensor] = []
    entries = []
    for k in range(trials):
        x = _inputs(k)
        entry = {"seed": 100 + k, "distribution": "normal", "output": encode_tree(torch.relu(x), tensors)}
        entry["inputs_after"] = {"0": encode_tree(torch.relu(x), tensors)} if inplace else {}
        entry["slack"] = None
        entries.append(entry)
    probe_x = _inputs(7)
    probe = {"seed": 9, "distribution": "task", "output": encode_tree(torch.relu(probe_x), tensors)}
    probe.update(inputs_after={}, slack=None)
    judge = Judge(ATOL, RTOL, trials)
    judge.load_reference(*_split({"trials": entries, "probe": probe, "profile": "small"}, tensors))
    assert judge.reference_failure is None and judge.ready
    return judge


def _trial(index, output, again=None, aliased=None, changed=(), after=None) -> tuple[dict, bytes]:
    tensors: list[torch.Tensor] = []
    header = {
        "index": index,
        "output": encode_tree(output, tensors),
        "again": encode_tree(again, tensors) if again is not None else None,
        "aliased": aliased if aliased is not None else [False],
        "changed": list(changed),
        "inputs_after": {str(i): encode_tree(v, tensors) for i, v in (after or {}).items()},
        "result": {"stage": "correctness"},
    }
    return _split(header, tensors)


def test_plan_carries_seeds_and_no_reference_value() -> None:
    plan = _judge().plan()
    plain = {"params": None, "case": "main", "label": ""}
    assert plan == {
        "trials": [
            {"seed": 100, "distribution": "normal", **plain},
            {"seed": 101, "distribution": "normal", **plain},
            {"seed": 102, "distribution": "normal", **plain},
        ],
        "probe_seed": 9,
        "profile": "small",
        "notes": [],
    }


def _judge_with(entry_extra: dict, trials: int = 2, scale: float = 1.0) -> Judge:
    """A relu judge whose trials carry ``entry_extra`` (reference aliasing, labels, tolerance factors)."""
    tensors: list[torch.Tensor] = []
    entries = []
    for k in range(trials):
        x = _inputs(k) * scale
        entry = {"seed": k, "distribution": "large", "output": encode_tree(torch.relu(x), tensors)}
        entry.update(inputs_after={}, slack=None, **entry_extra)
        entries.append(entry)
    probe = {"seed": 9, "distribution": "task", "output": encode_tree(torch.relu(_inputs(7)), tensors)}
    probe.update(inputs_after={}, slack=None)
    judge = Judge(ATOL, RTOL, trials)
    judge.load_reference(*_split({"trials": entries, "probe": probe, "profile": "small", "notes": ["n1"]}, tensors))
    return judge


def test_an_output_aliasing_an_input_passes_only_where_the_reference_aliases_too() -> None:
    out = torch.relu(_inputs(0))
    refused = _judge_with({}).judge(*_trial(0, out, again=out, aliased=[True]))
    assert refused.action == "fail" and refused.failure.error_type == ErrorType.OUTPUT_ALIASES_INPUT
    allowed = _judge_with({"aliased": [True]}).judge(*_trial(0, out, again=out, aliased=[True]))
    assert allowed.action == "continue"


def test_the_failure_names_the_trial_and_the_plan_forwards_notes() -> None:
    judge = _judge_with({"label": "large-magnitude inputs, parameters varied", "params": 77})
    assert judge.plan()["trials"][0]["params"] == 77 and judge.plan()["notes"] == ["n1"]
    wrong = torch.relu(_inputs(0)) + 1.0
    assert judge.judge(*_trial(0, wrong, again=wrong)).action == "probe"
    verdict = judge.judge(*_trial("probe", torch.relu(_inputs(7))))
    assert verdict.failure is not None
    assert "trial 1 of 2: large-magnitude inputs, parameters varied" in verdict.failure.message


def test_the_absolute_tolerance_follows_the_outputs_growth_in_a_large_trial() -> None:
    out = torch.relu(_inputs(0) * 1000)
    off = out + 5e-3  # 5e-3 is far beyond atol 1e-5, within 1e-5 * 1000
    strict = _judge_with({}, scale=1000).judge(*_trial(0, off, again=off))
    assert strict.action != "continue"
    scaled = _judge_with({"atol_scale": 1000.0}, scale=1000).judge(*_trial(0, off, again=off))
    assert scaled.action == "continue"


def test_a_correct_candidate_passes_every_trial() -> None:
    judge = _judge()
    for k in range(3):
        out = torch.relu(_inputs(k))
        verdict = judge.judge(*_trial(k, out, again=out.clone() if k == 0 else None))
        assert verdict.action == "continue", verdict.failure
    assert judge.done and judge.passed == 3 and judge.out_bytes == 32


def test_once_every_trial_passed_the_reference_can_go_and_a_later_trial_is_refused() -> None:
    judge = _judge()
    for k in range(3):
        out = torch.relu(_inputs(k))
        assert judge.judge(*_trial(k, out, again=out.clone() if k == 0 else None)).action == "continue"
    judge.release()
    assert all(t.output is None and t.slack is None and not t.inputs_after for t in judge.trials)
    assert judge.probe is not None and judge.probe.output is None and judge.done and judge.passed == 3
    # a fourth trial, or a probe nobody asked for, is refused before any reference value is read
    late = judge.judge(*_trial(3, torch.relu(_inputs(0))))
    assert late.action == "fail" and late.failure.error_type == ErrorType.SANDBOX_VIOLATION
    probe = judge.judge(*_trial("probe", torch.relu(_inputs(7))))
    assert probe.action == "fail" and probe.failure.error_type == ErrorType.SANDBOX_VIOLATION


def test_a_wrong_first_trial_asks_for_the_probe_then_fails_as_a_mismatch() -> None:
    judge = _judge()
    wrong = torch.relu(_inputs(0)) + 0.5
    assert judge.judge(*_trial(0, wrong, again=wrong)).action == "probe"
    verdict = judge.judge(*_trial("probe", torch.relu(_inputs(7)) + 0.5))
    assert verdict.action == "fail" and verdict.failure.error_type == ErrorType.VALUE_MISMATCH
    assert "trial 1 of 3" in verdict.failure.message and not judge.done


def test_a_constant_output_is_input_independent() -> None:
    judge = _judge()
    constant = torch.zeros(8)
    assert judge.judge(*_trial(0, constant, again=constant)).action == "probe"
    verdict = judge.judge(*_trial("probe", constant))
    assert verdict.failure.error_type == ErrorType.INPUT_INDEPENDENT
    # Right on trial 0, then the same output again (a cached result): caught on trial 1.
    judge = _judge()
    first = torch.relu(_inputs(0))
    assert judge.judge(*_trial(0, first, again=first)).action == "continue"
    assert judge.judge(*_trial(1, first)).failure.error_type == ErrorType.INPUT_INDEPENDENT


def test_structure_device_shape_dtype_aliasing_determinism_and_mutation() -> None:
    out = torch.relu(_inputs(0))
    cases = [
        (_trial(0, (out,), again=(out,)), ErrorType.WRONG_OUTPUT_TYPE),
        (_trial(0, out.to(torch.float64), again=out.to(torch.float64)), ErrorType.DTYPE_MISMATCH),
        (_trial(0, out[:4], again=out[:4]), ErrorType.SHAPE_MISMATCH),
        (_trial(0, torch.empty(8, device="meta"), again=out), ErrorType.DEVICE_MISMATCH),
        (_trial(0, out, again=out, aliased=[True]), ErrorType.OUTPUT_ALIASES_INPUT),
        (_trial(0, out, again=out + 1), ErrorType.NONDETERMINISTIC),
        (_trial(0, out, again=out, changed=[0], after={0: torch.zeros(8)}), ErrorType.INPUT_MUTATED),
        (_trial(0, out, again=out, aliased=[False, False]), ErrorType.SANDBOX_VIOLATION),
        (_trial(1, out), ErrorType.SANDBOX_VIOLATION),  # trial 0 skipped
        (_trial("probe", out), ErrorType.SANDBOX_VIOLATION),  # a probe nobody asked for
    ]
    for message, expected in cases:
        verdict = _judge().judge(*message)
        assert verdict.action == "fail" and verdict.failure.error_type == expected, (expected, verdict)


def test_an_input_changed_the_way_the_reference_changes_it_is_fine() -> None:
    judge = _judge(inplace=True)
    out = torch.relu(_inputs(0))
    verdict = judge.judge(*_trial(0, out, again=out, changed=[0], after={0: out.clone()}))
    assert verdict.action == "continue", verdict.failure
    other = _judge(inplace=True).judge(*_trial(0, out, again=out, changed=[0], after={0: out + 1}))
    assert other.failure.error_type == ErrorType.INPUT_MUTATED


def test_malformed_messages_fail_without_raising() -> None:
    judge = _judge()
    assert judge.judge({"index": 0}, b"").failure.error_type == ErrorType.SANDBOX_VIOLATION
    assert judge.judge({"index": 0, "tensors": [], "output": {"t": 0}}, b"").action == "fail"


def test_the_judge_running_out_of_memory_is_the_harnesses_and_never_a_forgery(monkeypatch) -> None:
    """Eight workers on an H100 left a judge no memory to compare a trial in (2026-12-05): reading
    or comparing a trial that fails to allocate is a harness out-of-memory (run again alone next
    to neighbours), not a malformed message (a hack) and not a verdict on the candidate."""
    from ascend_kernel_gym.evaluation import judge as judge_module
    from ascend_kernel_gym.evaluation.concurrency import neighbour_oom
    from ascend_kernel_gym.evaluation.errors import HARNESS_OUT_OF_MEMORY

    def no_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    out = torch.relu(_inputs(0))
    trial, judges = _trial(0, out, again=out.clone()), [_judge() for _ in range(3)]
    with monkeypatch.context() as patch:
        patch.setattr(judge_module, "decode_tensors", no_memory)
        reading = judges[0].judge(*trial)
    with monkeypatch.context() as patch:
        patch.setattr(Judge, "_route", no_memory)
        comparing = judges[1].judge(*trial)
    for verdict, doing in ((reading, "reading a trial"), (comparing, "comparing a trial")):
        failure = verdict.failure
        assert verdict.action == "fail" and failure.error_type == ErrorType.HARNESS_ERROR and not failure.hack
        assert failure.message.startswith(f"{HARNESS_OUT_OF_MEMORY} (the judge, {doing})"), failure.message
        result = EvalResult(
            task_id="t", backend="cuda", profile="full", code_hash="h",
            error_type=failure.error_type, error_message=failure.message,
        )  # fmt: skip
        assert neighbour_oom(result, had_neighbour=True)
    # any other failure to read a trial is still a forged message
    with monkeypatch.context() as patch:
        patch.setattr(judge_module, "decode_tensors", lambda *a, **k: (_ for _ in ()).throw(ValueError("bad")))
        forged = judges[2].judge(*trial)
    assert forged.failure.error_type == ErrorType.SANDBOX_VIOLATION


def test_a_reference_failure_or_an_unreadable_plan_ends_the_evaluation() -> None:
    judge = Judge(ATOL, RTOL, 2)
    judge.load_reference({"error": {"type": "harness_error", "message": "the task's reference fails"}}, b"")
    assert judge.ready and judge.reference_failure.error_type == ErrorType.HARNESS_ERROR
    short = Judge(ATOL, RTOL, 5)
    short.load_reference({"tensors": [], "trials": [], "probe": {}}, b"")
    assert short.reference_failure is not None and "unreadable" in short.reference_failure.message


def _done(**fields) -> EvalResult:
    return EvalResult(
        task_id="t", backend="cuda", profile="small", code_hash="h", stage=Stage.DONE, correct=True, **fields
    )


def test_a_correct_result_without_judged_trials_is_a_forgery() -> None:
    judge = _judge()
    result = merge_final(_done(trials_passed=3, trials_total=3), judge)
    assert not result.correct and result.hack and result.error_type == ErrorType.SANDBOX_VIOLATION
    assert result.trials_passed == 0


def test_the_judge_owns_the_correctness_fields() -> None:
    judge = _judge()
    for k in range(3):
        out = torch.relu(_inputs(k))
        judge.judge(*_trial(k, out, again=out if k == 0 else None))
    result = merge_final(_done(trials_passed=99, max_abs_err=-1.0), judge)
    assert result.correct and result.trials_passed == 3 and result.max_abs_err == 0.0
    failed = merge_final(
        EvalResult(
            task_id="t",
            backend="cuda",
            profile="small",
            code_hash="h",
            error_type=ErrorType.ASCEND_CONSTRAINT,
            trials_passed=9,
        ),
        judge,
    )
    assert not failed.correct and failed.trials_passed == 3


def _timed(kernel_ms: float, samples: list[float], ref_samples: list[float]) -> EvalResult:
    result = _done(kernel_ms=kernel_ms, ref_ms=1.0, speedup=1.0 / kernel_ms)
    result.timing = {"kernel_ms_samples": samples, "ref_ms_samples": ref_samples}
    return result


def test_timing_claims_are_held_to_the_observed_window_and_the_physical_floor() -> None:
    honest = _timed(0.5, [0.5] * 100, [1.0] * 100)
    record = timing_check(honest, window_s=0.4, out_bytes=1 << 20)
    assert record["ok"] and honest.speedup == 2.0 and not honest.hack
    inflated = _timed(0.5, [0.5] * 100, [50.0] * 100)  # the baseline claims 5 s inside a 0.4 s window
    record = timing_check(inflated, window_s=0.4, out_bytes=1 << 20)
    assert not record["ok"] and inflated.speedup is None and inflated.hack
    too_fast = _timed(1e-6, [1e-6] * 100, [1.0] * 100)  # 1 GiB written in a nanosecond
    record = timing_check(too_fast, window_s=10.0, out_bytes=1 << 30)
    assert not record["ok"] and too_fast.speedup is None and "floor" in record["problems"][0]


def test_timing_claims_must_be_what_their_samples_give() -> None:
    """A child that got past the Python layers used to claim a speedup of 1e7 with no samples at all
    (the check then had nothing to check): the means and the speedup are recomputed from the samples."""
    bare = _done(kernel_ms=1e-6, ref_ms=10.0, speedup=1e7)
    record = timing_check(bare, window_s=1.0, out_bytes=1 << 10)
    assert not record["ok"] and bare.speedup is None and bare.hack and "samples" in record["problems"][0]
    lying_speedup = _timed(0.5, [0.5] * 100, [1.0] * 100)
    lying_speedup.speedup = 40.0
    record = timing_check(lying_speedup, window_s=1.0, out_bytes=1 << 10)
    assert not record["ok"] and "speedup" in record["problems"][0]
    lying_mean = _timed(0.25, [0.5] * 100, [1.0] * 100)  # kernel_ms 0.25 claimed, samples say 0.5
    record = timing_check(lying_mean, window_s=1.0, out_bytes=1 << 10)
    assert not record["ok"] and "trimmed mean" in record["problems"][0]
    unasked = _timed(0.5, [0.5] * 100, [1.0] * 100)
    record = timing_check(unasked, window_s=None, out_bytes=1 << 10, asked=False)
    assert not record["ok"] and unasked.speedup is None
    rounded = _timed(0.123456, [0.12346] * 60 + [0.12345] * 40, [1.0] * 100)  # samples rounded to 1e-5 ms
    rounded.kernel_ms = 0.123456
    rounded.speedup = 1.0 / 0.123456
    assert timing_check(rounded, window_s=1.0, out_bytes=1 << 10)["ok"]


def test_a_shape_mismatch_in_a_later_trial_names_the_trial() -> None:
    judge = _judge_with({"label": "the task's own inputs, shape case 'odd' (dim=7)"})
    first = torch.relu(_inputs(0))
    assert judge.judge(*_trial(0, first, again=first)).action == "continue"
    verdict = judge.judge(*_trial(1, torch.zeros(3)))
    assert verdict.failure is not None and verdict.failure.error_type == ErrorType.SHAPE_MISMATCH
    assert "trial 2 of 2: the task's own inputs, shape case 'odd' (dim=7)" in verdict.failure.message


def test_an_ill_conditioned_trial_lets_its_strays_through_and_says_so() -> None:
    """Where the plan found the reference ill-conditioned (a few elements move far when its inputs
    move by one rounding step), a kernel that rounds differently passes with up to the allowed
    number of elements a little beyond the tolerance; one more, one further, or a NaN fails."""
    out = torch.relu(_inputs(0))
    strays = {"strays": [[2, 0.5]]}

    def off(*places: int, by: float = 0.3) -> torch.Tensor:
        moved = out.clone()
        moved[list(places)] += by
        return moved

    judge = _judge_with(strays, trials=1)
    two = off(1, 6)
    assert judge.judge(*_trial(0, two, again=two)).action == "continue"
    assert judge.strays == 2
    result = merge_final(_done(trials_passed=1), judge)
    assert result.correct and any("ill-conditioned" in w for w in result.warnings)
    for wrong in (off(1, 5, 6), off(1, by=0.6), off(1, by=float("nan"))):
        verdict = _judge_with(strays, trials=1).judge(*_trial(0, wrong, again=wrong))
        assert verdict.action != "continue"
    three = off(1, 5, 6)
    judge = _judge_with(strays, trials=1)
    assert judge.judge(*_trial(0, three, again=three)).action == "probe"
    failure = judge.judge(*_trial("probe", torch.relu(_inputs(7)))).failure
    assert failure is not None and failure.error_type == ErrorType.VALUE_MISMATCH
    assert "3 of 8 elements" in failure.message and "up to 2 elements may lie up to 0.5 further" in failure.message
    # without the plan's allowance the same output fails; a malformed allowance is none
    for plain in ({}, {"strays": [["x", 0.5]]}, {"strays": [[2, float("inf")]]}):
        assert _judge_with(plain, trials=1).judge(*_trial(0, two, again=two)).action != "continue"
