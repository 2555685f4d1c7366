"""Red-team candidates beyond the bad-input corpus (tests/evaluation/redteam/).

Each file says what must happen in its header::

    # expected: forbidden|sandbox_violation    (acceptable error types; ``none`` = must pass)
    # expected_on_cuda: none|compile_error      (replaces ``expected`` on that backend, for
    #                                             bench/gpu_redteam.py; these tests run the interpreter)
    # task: core/L1/transpose                   (default core/L1/relu; a ``.py`` path is a task file
    #                                             relative to tests/data, e.g. third_party/level1/x.py)
    # canary: /tmp/akg_redteam_pwned_x          (a file the candidate tries to create outside its sandbox)
    # max_output_tail: 17000                    (bound on the kept output)
    # no_paths_in_output: yes                   (what it printed comes back without harness paths)
    # hack: yes|no                              (whether the result must be a hack: out_of_bounds is one
    #                                             when it wrote, and not when it only read)

A cheat must never come back ``correct``; a legitimate candidate (``expected: none``) must
pass; and the calling process must come out unharmed. Cases the evaluator still gets wrong are
marked ``xfail(strict=True)`` with the number of the finding that explains them (see the
red-team report); fixing the evaluator flips them to XPASS, which fails the run until the
xfail is removed.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, render_feedback
from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES
from ascend_kernel_gym.tasks import get_task

# Evaluates many kernels end to end: left out of the fast lane (`make test-fast`).
pytestmark = pytest.mark.slow

REDTEAM = Path(__file__).parent / "redteam"
DATA = Path(__file__).parent.parent / "data"
CANARY_GLOB = "/tmp/akg_redteam_pwned*"
HEADER_RE = re.compile(r"#\s*(expected|task|timeout|canary|max_output_tail|no_paths_in_output|hack):\s*(.+)")

#: Cases the evaluator gets wrong today, keyed by file stem; the reason names the finding.
KNOWN_FAILURES: dict[str, str] = {}


def _header(path: Path) -> dict[str, str]:
    meta: dict[str, str] = {}
    for line in path.read_text().splitlines():
        match = HEADER_RE.match(line)
        if match:
            meta[match.group(1)] = match.group(2).strip()
        elif line.strip() and not line.startswith("#"):
            break
    return meta


CASES = sorted(REDTEAM.glob("*.py"))


def _task(meta: dict[str, str]):
    name = meta.get("task", "core/L1/relu")
    return get_task(DATA / name if name.endswith(".py") else name)


def _param(path: Path):
    reason = KNOWN_FAILURES.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(path, id=path.stem, marks=marks)


def _remove_canaries() -> None:
    for leftover in glob.glob(CANARY_GLOB):
        os.remove(leftover)


def test_redteam_files_are_labelled() -> None:
    assert len(CASES) >= 40
    for path in CASES:
        meta = _header(path)
        assert "expected" in meta, f"{path.name} has no '# expected:' header"
        for kind in meta["expected"].split("|"):
            ErrorType(kind)  # a typo in a header fails here
        assert "canary" not in meta or meta["canary"].startswith("/tmp/akg_redteam_pwned")
        assert meta.get("hack", "no") in ("yes", "no"), f"{path.name}: '# hack:' is yes or no"
    assert set(KNOWN_FAILURES) <= {p.stem for p in CASES}, "a KNOWN_FAILURES key names no file"


@pytest.fixture(scope="module")
def redteam_results(evaluator, pool_root, leftover_sandboxes):
    """Evaluate every red-team file once, in parallel (the session's two-worker pool)."""
    _remove_canaries()
    cwd = os.getcwd()
    requests = []
    for path in CASES:
        meta = _header(path)
        timeout = float(meta["timeout"]) if "timeout" in meta else 60.0
        task = _task(meta)
        requests.append(EvalRequest(task=task, code=path.read_text(), timeout_s=timeout, seed=20260))
    results = evaluator.evaluate_many(requests)
    canaries = {p: os.path.exists(p) for p in (_header(c).get("canary") for c in CASES) if p}
    harm = {
        "cwd": os.getcwd(),
        "pwned_in_cwd": glob.glob(os.path.join(cwd, "akg_redteam_pwned*")),
        "canaries": canaries,
        "sandboxes_left": leftover_sandboxes(pool_root, evaluator.workers),
    }
    _remove_canaries()  # whatever a known-failing case managed to write
    assert harm["cwd"] == cwd
    return dict(zip([p.name for p in CASES], results)), harm


@pytest.mark.parametrize("path", [_param(p) for p in CASES])
def test_redteam_case(path: Path, redteam_results) -> None:
    results, harm = redteam_results
    meta = _header(path)
    expected = {ErrorType(k) for k in meta["expected"].split("|")}
    result = results[path.name]
    assert result.error_type in expected, (
        f"{path.name}: expected {sorted(e.value for e in expected)}, got {result.error_type.value} "
        f"(correct={result.correct}): {result.error_message[:400]}"
    )
    if ErrorType.NONE in expected and result.error_type == ErrorType.NONE:
        assert result.ok, f"{path.name} is legitimate and must pass"
    else:
        assert not result.correct and not result.ok, f"{path.name} is a cheat or broken, yet came back correct"
        assert result.error_message, "every failure carries a message"
    assert result.hack == _expected_hack(result)
    if "hack" in meta:
        assert result.hack == (meta["hack"] == "yes"), f"{path.name}: hack={result.hack}: {result.error_message[:300]}"
    if "canary" in meta:
        assert not harm["canaries"][meta["canary"]], f"{path.name} wrote {meta['canary']} outside its sandbox"
    if "max_output_tail" in meta:
        assert len(result.output_tail) <= int(meta["max_output_tail"])
    if "no_paths_in_output" in meta:
        assert "kernel.py" in result.output_tail, "the candidate's own output is kept"
        for leak in ("site-packages", "/tmp/", ".venv", "akg-sandbox", "akg-pool"):
            assert leak not in result.output_tail and leak not in result.error_message
    text = render_feedback(result)
    assert text and "/tmp/akg-" not in text and "site-packages" not in text
    for line in [*result.warnings, *result.hack_reasons]:  # what the JSON result carries
        assert "akg-sandbox" not in line and "akg-pool" not in line and "/tmp/" not in line, line


def _expected_hack(result) -> bool:
    """A hack type, or an out-of-bounds write or atomic (a read outside is a plain failure)."""
    if result.error_type == ErrorType.OUT_OF_BOUNDS:
        first = result.error_message.splitlines()[0] if result.error_message else ""
        return "out-of-bounds write" in first or "out-of-bounds atomic" in first
    return result.error_type in HACK_ERROR_TYPES


def test_out_of_bounds_feedback_names_kernel_argument_offset(redteam_results) -> None:
    """The memory check's verdict says which kernel, which argument, how far off, and where in the code."""
    results, _ = redteam_results
    result = results["oob_unmasked_tail_read.py"]
    assert result.error_type == ErrorType.OUT_OF_BOUNDS and not result.hack and not result.compiled
    message = result.error_message
    assert "kernel 'relu_nomask': out-of-bounds read (" in message
    # the first bad address is the byte right after the input's storage (the unmasked tail)
    match = re.search(r"byte offset (\d+) from argument 'x_ptr'; its storage spans bytes \[0, (\d+)\)", message)
    assert match and match.group(1) == match.group(2), message
    source = (REDTEAM / "oob_unmasked_tail_read.py").read_text().splitlines()
    line = source.index("    x = tl.load(x_ptr + offs)") + 1
    assert f"your code line {line} (in relu_nomask): x = tl.load(x_ptr + offs)" in message
    text = render_feedback(result)
    assert text.startswith("Out-of-bounds memory access:") and "hack" not in text.splitlines()[0]
    assert "Mask the tail" in text
    written = results["oob_store_huge_offset.py"]
    assert written.hack and written.hack_reasons and written.hack_reasons[0].startswith("out_of_bounds: ")
    assert render_feedback(written).startswith("Out-of-bounds memory access (counted as a hack):")


def test_caught_out_of_bounds_is_still_reported(redteam_results) -> None:
    """An attempt the candidate swallowed (and then computed the right output) is still a hack."""
    results, _ = redteam_results
    result = results["oob_caught_then_honest_kernel.py"]
    assert result.error_type == ErrorType.OUT_OF_BOUNDS and result.hack and not result.correct
    assert "kernel 'probe': out-of-bounds write" in result.error_message
    assert result.error_message.endswith("(your code caught the error)")


def test_forged_stdout_is_not_the_result(redteam_results) -> None:
    """The fake JSON a candidate prints stays in its output, never in the verdict."""
    results, _ = redteam_results
    result = results["fake_json_stdout.py"]
    assert not result.correct
    assert '"correct": true' in result.output_tail


def test_swapped_arguments_get_a_note(redteam_results) -> None:
    """An input written while the output is wrong: the output's failure, not a hack, with a hint."""
    results, _ = redteam_results
    result = results["honest_swapped_args.py"]
    assert result.error_type == ErrorType.NAN_OR_INF and not result.hack and result.hack_reasons == []
    assert "modified its input argument(s) [0] in place" in result.error_message
    assert "argument order" in result.error_message and "argument order" in render_feedback(result)


def test_exception_texts_are_scrubbed(redteam_results) -> None:
    """A candidate's exception text quoted in the result loses the sandbox path."""
    results, _ = redteam_results
    result = results["leak_path_in_warning.py"]
    assert result.error_type == ErrorType.RUNTIME_ERROR
    assert "ValueError: at kernel.py" in result.error_message and "/tmp/" not in result.error_message
    assert all("/tmp/" not in w for w in result.warnings)


def test_print_flood_is_capped(redteam_results) -> None:
    results, _ = redteam_results
    result = results["print_flood.py"]
    assert result.ok, result.error_message
    assert "bytes cut" in result.output_tail and len(result.output_tail) < 17000


def test_calling_process_unharmed(redteam_results, evaluator, relu_task, relu_solution) -> None:
    _, harm = redteam_results
    assert harm["pwned_in_cwd"] == [], "a candidate created files in the caller's working directory"
    assert harm["sandboxes_left"] == [], "child sandboxes were not cleaned up"
    after = evaluator.evaluate(EvalRequest(task=relu_task, code=relu_solution, seed=5))
    assert after.ok, after.error_message
    for handle in evaluator._handles:
        assert handle.alive()
