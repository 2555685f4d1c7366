"""Feedback text: actionable per error type, never leaking harness paths or seeds."""

from __future__ import annotations

from ascend_kernel_gym.evaluation import ErrorType, EvalResult, LaunchRecord, render_feedback, scrub_text
from ascend_kernel_gym.evaluation.result import Stage


def _result(**kwargs) -> EvalResult:
    base = {"task_id": "core/L1/relu", "backend": "interpreter", "profile": "small", "code_hash": "h"}
    base.update(kwargs)
    return EvalResult(**base)


def test_scrub_removes_paths_and_seeds() -> None:
    text = (
        'File "/tmp/akg-pool-abc123/akg-sandbox-xyz/kernel.py", line 12, in forward\n'
        "  /work/main/.venv/lib/python3.11/site-packages/triton/language/core.py:44\n"
        "seed=123456789 and /tmp/other/file.txt"
    )
    out = scrub_text(text, "/tmp/akg-pool-abc123/akg-sandbox-xyz")
    assert "akg-pool" not in out and "akg-sandbox" not in out
    assert "site-packages" not in out and "/work/main" not in out
    assert "123456789" not in out and "/tmp/other" not in out
    assert "kernel.py" in out and "triton/language/core.py" in out


def test_correct_result_feedback() -> None:
    result = _result(
        stage=Stage.DONE,
        format_ok=True,
        static_ok=True,
        compiled=True,
        correct=True,
        trials_passed=5,
        trials_total=5,
        max_abs_err=1e-7,
        launches=[LaunchRecord(kernel="relu_kernel", grid=[4])],
    )
    text = render_feedback(result)
    assert "Correct" in text and "5/5" in text and "relu_kernel" in text
    assert "not measured" in text
    timed = _result(correct=True, speedup=1.5, ref_ms=1.0, kernel_ms=0.6667, backend="cuda")
    assert "1.50x" in render_feedback(timed)


def test_compile_error_points_at_own_line() -> None:
    result = _result(
        stage=Stage.COMPILE,
        error_type=ErrorType.COMPILE_ERROR,
        error_message="ValueError: arange's range must be a power of 2\nyour code line 8 (in k): o = tl.arange(0, B)",
    )
    text = render_feedback(result)
    assert text.startswith("Compile error")
    assert "your code line 8" in text and "power of 2" in text


def test_mismatch_and_hack_feedback() -> None:
    mismatch = _result(
        stage=Stage.CORRECTNESS,
        error_type=ErrorType.VALUE_MISMATCH,
        error_message="output does not match the reference: max abs error 0.5, first bad index (0, 3), atol=1e-05",
    )
    text = render_feedback(mismatch)
    assert "Wrong values" in text and "first bad index (0, 3)" in text and "atol" in text
    hack = _result(error_type=ErrorType.TORCH_FALLBACK, hack=True, error_message="aten.softmax (x1)")
    text = render_feedback(hack)
    assert "hack" in text and "aten.softmax" in text and "Triton kernel" in text


def test_every_error_type_renders() -> None:
    for kind in ErrorType:
        if kind == ErrorType.NONE:
            continue
        text = render_feedback(_result(error_type=kind, error_message=f"detail for {kind.value}"))
        assert f"detail for {kind.value}" in text
        assert len(text) < 2600


def test_long_messages_are_cut() -> None:
    text = render_feedback(
        _result(error_type=ErrorType.RUNTIME_ERROR, error_message="x" * 100 + "\n" * 3 + "y\n" * 500)
    )
    assert len(text) <= 2500
    assert "more lines" in text


def test_ascend_notes_are_grouped_per_rule() -> None:
    warnings = [f"ascend[last_dim_alignment] kernel line {i}: misaligned" for i in range(4)] + [
        "ascend[int64_index] kernel line 9: int64",
        "line 3: `torch.relu` in forward computes with PyTorch",
    ]
    text = render_feedback(_result(correct=True, warnings=warnings))
    assert text.count("last_dim_alignment") == 1 and "(and 3 more like it)" in text
    assert "int64_index" in text and "torch.relu" in text


def test_out_of_bounds_feedback_says_whether_it_was_a_hack() -> None:
    message = "kernel 'k': out-of-bounds read (4 addresses outside the tensor arguments' memory)\nyour code line 9"
    read = render_feedback(_result(error_type=ErrorType.OUT_OF_BOUNDS, error_message=message, output_tail="dbg\n"))
    assert read.startswith("Out-of-bounds memory access:\nkernel 'k'") and "your code line 9" in read
    assert "Mask the tail" in read and "Your program printed" in read
    wrote = render_feedback(
        _result(error_type=ErrorType.OUT_OF_BOUNDS, hack=True, error_message=message.replace("read", "write"))
    )
    assert wrote.startswith("Out-of-bounds memory access (counted as a hack):")
    # titles of the hack types already say so, once
    fallback = render_feedback(_result(error_type=ErrorType.TORCH_FALLBACK, hack=True, error_message="aten.relu"))
    assert fallback.count("counted as a hack") == 1


def test_a_static_time_out_gets_a_hint_about_the_source_not_about_loops() -> None:
    static = render_feedback(
        _result(stage=Stage.STATIC, error_type=ErrorType.TIMEOUT, error_message="checker timed out")
    )
    running = render_feedback(_result(stage=Stage.CORRECTNESS, error_type=ErrorType.TIMEOUT, error_message="killed"))
    assert "reading your source in time" in static and "loop" not in static
    assert "every loop terminates" in running
