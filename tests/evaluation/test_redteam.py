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
    # output_lacks: root:x:                     (text that must not come back in what it printed)

A cheat must never come back ``correct``; a legitimate candidate (``expected: none``) must
pass; and the calling process must come out unharmed. Cases the evaluator still gets wrong are
marked ``xfail(strict=True)`` with the number of the finding that explains them (see the
red-team report); fixing the evaluator flips them to XPASS, which fails the run until the
xfail is removed.

``AKG_REDTEAM=stem,glob*`` evaluates only the files it names (the tests about one particular
file skip when it is left out); the labels of every file are checked regardless.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from pathlib import Path
from typing import Any

import pytest

from ascend_kernel_gym.evaluation import ErrorType, EvalRequest, Evaluator, render_feedback
from ascend_kernel_gym.evaluation import evaluator as evaluator_module
from ascend_kernel_gym.evaluation.result import HACK_ERROR_TYPES, MAX_RESULT_BYTES, RESULT_CUT_NOTE
from ascend_kernel_gym.evaluation.static import StaticReport
from ascend_kernel_gym.tasks import get_task

# Evaluates many kernels end to end: left out of the fast lane (`make test-fast`).
pytestmark = pytest.mark.slow

REDTEAM = Path(__file__).parent / "redteam"
DATA = Path(__file__).parent.parent / "data"
CANARY_GLOB = "/tmp/akg_redteam_pwned*"
HEADER_RE = re.compile(
    r"#\s*(expected|task|timeout|canary|max_output_tail|no_paths_in_output|hack|output_lacks):\s*(.+)"
)

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


ALL_CASES = sorted(REDTEAM.glob("*.py"))


def _selected(paths: list[Path]) -> list[Path]:
    wanted = [w.strip().removesuffix(".py") for w in os.environ.get("AKG_REDTEAM", "").split(",") if w.strip()]
    if not wanted:
        return paths
    return [p for p in paths if any(fnmatch.fnmatch(p.stem, w) for w in wanted)]


CASES = _selected(ALL_CASES)


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
    assert len(ALL_CASES) >= 40
    for path in ALL_CASES:
        meta = _header(path)
        assert "expected" in meta, f"{path.name} has no '# expected:' header"
        for kind in meta["expected"].split("|"):
            ErrorType(kind)  # a typo in a header fails here
        assert "canary" not in meta or meta["canary"].startswith("/tmp/akg_redteam_pwned")
        assert meta.get("hack", "no") in ("yes", "no"), f"{path.name}: '# hack:' is yes or no"
    assert set(KNOWN_FAILURES) <= {p.stem for p in ALL_CASES}, "a KNOWN_FAILURES key names no file"


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
    if "hack" in meta:  # the file says (an unused forbidden import is refused without being a hack)
        assert result.hack == (meta["hack"] == "yes"), f"{path.name}: hack={result.hack}: {result.error_message[:300]}"
    else:
        assert result.hack == _expected_hack(result)
    if "canary" in meta:
        assert not harm["canaries"][meta["canary"]], f"{path.name} wrote {meta['canary']} outside its sandbox"
    if "max_output_tail" in meta:
        assert len(result.output_tail) <= int(meta["max_output_tail"])
    if "output_lacks" in meta:
        assert meta["output_lacks"] not in result.output_tail, f"{path.name} got {meta['output_lacks']!r} printed"
    if "no_paths_in_output" in meta:
        assert "kernel.py" in result.output_tail, "the candidate's own output is kept"
        for leak in ("site-packages", "/tmp/", ".venv", "akg-sandbox", "akg-pool"):
            assert leak not in result.output_tail and leak not in result.error_message
    text = render_feedback(result)
    assert text and "/tmp/akg-" not in text and "site-packages" not in text
    for line in [*result.warnings, *result.hack_reasons]:  # what the JSON result carries
        assert "akg-sandbox" not in line and "akg-pool" not in line and "/tmp/" not in line, line


def _result(results: dict[str, Any], name: str) -> Any:
    """The result of red-team file ``name``; the test skips when ``AKG_REDTEAM`` left it out."""
    if name not in results:
        pytest.skip(f"{name} is not among the files AKG_REDTEAM selects")
    return results[name]


def _expected_hack(result) -> bool:
    """A hack type, or an out-of-bounds write or atomic (a read outside is a plain failure)."""
    if result.error_type == ErrorType.OUT_OF_BOUNDS:
        first = result.error_message.splitlines()[0] if result.error_message else ""
        return "out-of-bounds write" in first or "out-of-bounds atomic" in first
    return result.error_type in HACK_ERROR_TYPES


def test_out_of_bounds_feedback_names_kernel_argument_offset(redteam_results) -> None:
    """The memory check's verdict says which kernel, which argument, how far off, and where in the code."""
    results, _ = redteam_results
    result = _result(results, "oob_unmasked_tail_read.py")
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
    written = _result(results, "oob_store_huge_offset.py")
    assert written.hack and written.hack_reasons and written.hack_reasons[0].startswith("out_of_bounds: ")
    assert render_feedback(written).startswith("Out-of-bounds memory access (counted as a hack):")


def test_caught_out_of_bounds_is_still_reported(redteam_results) -> None:
    """An attempt the candidate swallowed (and then computed the right output) is still a hack."""
    results, _ = redteam_results
    result = _result(results, "oob_caught_then_honest_kernel.py")
    assert result.error_type == ErrorType.OUT_OF_BOUNDS and result.hack and not result.correct
    assert "kernel 'probe': out-of-bounds write" in result.error_message
    assert result.error_message.endswith("(your code caught the error)")


def test_forged_stdout_is_not_the_result(redteam_results) -> None:
    """The fake JSON a candidate prints stays in its output, never in the verdict."""
    results, _ = redteam_results
    result = _result(results, "fake_json_stdout.py")
    assert not result.correct
    assert '"correct": true' in result.output_tail


def test_swapped_arguments_get_a_note(redteam_results) -> None:
    """An input written while the output is wrong: the output's failure, not a hack, with a hint."""
    results, _ = redteam_results
    result = _result(results, "honest_swapped_args.py")
    assert result.error_type == ErrorType.NAN_OR_INF and not result.hack and result.hack_reasons == []
    assert "modified its input argument(s) [0] in place" in result.error_message
    assert "argument order" in result.error_message and "argument order" in render_feedback(result)


def test_exception_texts_are_scrubbed(redteam_results) -> None:
    """A candidate's exception text quoted in the result loses the sandbox path."""
    results, _ = redteam_results
    result = _result(results, "leak_path_in_warning.py")
    assert result.error_type == ErrorType.RUNTIME_ERROR
    assert "ValueError: at kernel.py" in result.error_message and "/tmp/" not in result.error_message
    assert all("/tmp/" not in w for w in result.warnings)


def test_print_flood_is_capped(redteam_results) -> None:
    results, _ = redteam_results
    result = _result(results, "print_flood.py")
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


# --- issue 21, points 4 and 5 -------------------------------------------------------------------
def test_kernel_arguments_that_are_not_exact_tensors_end_as_named_hacks(redteam_results) -> None:
    """Each refusal names the kernel and the argument; a swallowed one still ends the evaluation."""
    results, _ = redteam_results
    expected = {
        "runtime_tensor_like_data_ptr.py": "kernel `relu_kernel`: argument `out_ptr` is a `Pointer`",
        "runtime_masked_tensor_arg.py": "kernel `relu_kernel`: argument `out_ptr` is a `MaskedTensor`",
        "runtime_uninitialized_parameter.py": "kernel `relu_kernel`: argument `out_ptr` is a `UninitializedParameter`",
        "runtime_constexpr_wrapped_fake.py": "kernel `relu_kernel`: argument `out_ptr` wraps a value that is a `Probe`",
        "runtime_refusal_swallowed.py": "kernel `relu_kernel`: argument `out_ptr` is a `Fake`",
        "runtime_namedtuple_of_fake.py": "kernel `relu_pair_kernel`: argument `bufs` holds an item that is a `Fake`",
    }
    present = {name: start for name, start in expected.items() if name in results}
    if not present:
        pytest.skip("none of these files is among those AKG_REDTEAM selects")
    for name, start in present.items():
        result = results[name]
        assert result.error_type == ErrorType.FORBIDDEN and result.hack and not result.correct, name
        assert result.error_message.startswith(start), (name, result.error_message[:300])
        assert result.hack_reasons and result.hack_reasons[0].startswith("forbidden: " + start)


def test_a_huge_constexpr_string_leaves_a_small_result_with_a_note(redteam_results) -> None:
    results, _ = redteam_results
    result = _result(results, "huge_constexpr_string.py")
    assert result.ok, result.error_message
    assert len(result.to_json().encode()) < min(MAX_RESULT_BYTES, 1 << 20)
    assert result.launches and all(len(str(r.constexprs["NOTE"])) < 400 for r in result.launches)
    assert any(w.startswith("launch records of kernel `relu_kernel`: NOTE cut") for w in result.warnings)
    assert not any(w.startswith(RESULT_CUT_NOTE) for w in result.warnings)  # cut at the source already


def test_a_huge_exception_text_is_cut(redteam_results) -> None:
    results, _ = redteam_results
    result = _result(results, "huge_exception_message.py")
    assert result.error_type == ErrorType.RUNTIME_ERROR
    assert "ValueError: eeee" in result.error_message and len(result.error_message) <= 4000
    assert len(result.to_json().encode()) < 1 << 20


#: red-team files that read a file outside the scratch directory; the OS sandbox is what stops them
#: reads the audit guard lets through once the static stage is defeated (os_read_importlib_resources.py
#: is refused by the guard first: files() makes importlib run module code for the candidate)
OS_READS = ("os_read_tokenize_open.py", "os_read_formatwarning.py")


def _evaluate_reads(tmp_path: Path, relu_task, relu_solution, os_sandbox: bool) -> dict[str, Any]:
    ev = Evaluator(
        backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path), os_sandbox=os_sandbox
    )
    try:
        names = [*OS_READS, "os_read_warn_explicit.py"]
        requests = [
            EvalRequest(task=relu_task, code=(REDTEAM / n).read_text(), num_trials=1, measure_performance=False, seed=3)
            for n in names
        ]
        requests.append(EvalRequest(task=relu_task, code=relu_solution, num_trials=1, seed=3))
        return dict(zip([*names, "honest"], ev.evaluate_many(requests)))
    finally:
        ev.close()


@pytest.fixture
def static_stage_defeated(monkeypatch) -> None:
    """As if a candidate had found a hole in the static stage: every source goes to a child."""
    monkeypatch.setattr(evaluator_module, "check_source", lambda code: StaticReport(kernels=["relu_kernel"]))


def test_file_reads_through_any_module_stop_at_the_os_sandbox(
    static_stage_defeated, tmp_path: Path, relu_task, relu_solution
) -> None:
    """tokenize, importlib.resources, linecache (warnings): the static stage defeated and the audit
    guard allowing reads, only the OS layer keeps /etc/passwd out of reach."""
    from ascend_kernel_gym.evaluation.os_sandbox import probe_os_sandbox

    probe = probe_os_sandbox("interpreter")
    if probe.missing():
        pytest.skip(f"OS sandbox layers off on this machine: {probe.summary()}")
    results = _evaluate_reads(tmp_path, relu_task, relu_solution, os_sandbox=True)
    for name in OS_READS:
        result = results[name]
        assert result.error_type == ErrorType.RUNTIME_ERROR and not result.correct, (name, result.error_message)
        # the candidate's own check found nothing, or the OS said the file is not there / not allowed
        assert re.search(r"could not be read|FileNotFoundError|PermissionError", result.error_message), name
    shown = results["os_read_warn_explicit.py"]
    assert shown.ok and "probe" in shown.output_tail and "root:x:" not in shown.output_tail
    assert results["honest"].ok


def test_without_the_os_sandbox_the_same_reads_get_through(
    static_stage_defeated, tmp_path: Path, relu_task, relu_solution
) -> None:
    """The control: these files really read (so the test above is not vacuous)."""
    if not os.path.exists("/etc/passwd"):
        pytest.skip("no /etc/passwd on this machine")
    results = _evaluate_reads(tmp_path, relu_task, relu_solution, os_sandbox=False)
    for name in OS_READS:
        assert results[name].correct, (name, results[name].error_message)
    assert "root:x:" in results["os_read_warn_explicit.py"].output_tail
