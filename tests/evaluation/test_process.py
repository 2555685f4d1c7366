"""Process set-up of an evaluation child (evaluation/process.py): printed output rolls over at its cap, and
what the candidate printed comes back capped and scrubbed of harness paths."""

from __future__ import annotations

import os
from pathlib import Path

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, render_feedback
from ascend_kernel_gym.evaluation.process import RollingOutput

ROOT = Path(__file__).resolve().parents[2]


def test_printed_output_starts_over_instead_of_failing_a_write(tmp_path) -> None:
    path = tmp_path / "output.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        out = RollingOutput(fd, str(path), limit=1000)
        for i in range(300):
            print(f"line {i}", file=out)  # about 2.7 KB in all
        out.write("x" * 5000)  # one write larger than the limit keeps its end
        out.write("last\n")
    finally:
        os.close(fd)
    text = path.read_text()
    assert len(text.encode()) <= 1000
    assert text.startswith("[... ") and "bytes of earlier output cut" in text and text.endswith("x" * 100 + "last\n")
    assert out.cut + len(text) - len(text.splitlines()[0]) - 1 == len("".join(f"line {i}\n" for i in range(300))) + 5005


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


def _child_result_when_the_harness_raises(tmp_path, exc: BaseException) -> dict:
    """``child_main``'s result (run in a forked process) when the harness itself raises ``exc``."""
    import hashlib

    from ascend_kernel_gym.evaluation import child
    from ascend_kernel_gym.evaluation.job import Job
    from ascend_kernel_gym.evaluation.wire import decode_result
    from ascend_kernel_gym.tasks import get_task

    task = get_task("core/L1/relu")
    job = Job(
        task=task, code="x = 1\n", code_hash=hashlib.sha256(b"x").hexdigest(), backend="interpreter", profile="small"
    )
    job.sandbox = str(tmp_path)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)

            def fail(state, prepared) -> None:
                raise exc

            child._evaluate = fail
            child.child_main(job, write_fd, "tok")
        finally:
            os._exit(3)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    reply = decode_result(data, "tok")
    assert reply is not None
    return reply


def test_the_harness_running_out_of_device_memory_is_said_so_and_other_harness_errors_are_internal(tmp_path) -> None:
    """An H100 at eight workers (2026-12-05): the harness's own buffers in a candidate's child
    failed with ``CUDA error: out of memory``; the evaluator retries that alone (concurrency.py)."""
    from ascend_kernel_gym.evaluation.concurrency import neighbour_oom
    from ascend_kernel_gym.evaluation.errors import HARNESS_OUT_OF_MEMORY
    from ascend_kernel_gym.evaluation.result import EvalResult

    oom = _child_result_when_the_harness_raises(tmp_path, RuntimeError("CUDA error: out of memory"))
    assert oom["error_type"] == ErrorType.HARNESS_ERROR.value
    assert oom["error_message"].startswith(f"{HARNESS_OUT_OF_MEMORY}: RuntimeError: CUDA error: out of memory")
    assert neighbour_oom(EvalResult.from_dict(oom), had_neighbour=True)
    bug = _child_result_when_the_harness_raises(tmp_path, KeyError("slot"))
    assert bug["error_type"] == ErrorType.HARNESS_ERROR.value
    assert bug["error_message"].startswith("evaluator internal error: KeyError")
    assert not neighbour_oom(EvalResult.from_dict(bug), had_neighbour=True)
