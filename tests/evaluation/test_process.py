"""Process set-up of an evaluation child (evaluation/process.py)."""

from __future__ import annotations

import os

from ascend_kernel_gym.evaluation.process import RollingOutput


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
