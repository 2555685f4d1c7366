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
