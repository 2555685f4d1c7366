"""A lowering failure as shown (ascend/lower_errors.py): the compiler's words kept, a first line that says
where and what, the candidate's line, a fix and a knowledge-base entry that exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascend_kernel_gym.ascend.lower_errors import FRONTEND_PATTERNS, classify, trim
from ascend_kernel_gym.kb_index.store import load_entries

IR = Path(__file__).with_name("lowering_corpus") / "ir"
CRASH = """///------------------[ERROR][Triton][BEG]------------------
[ConvertTritonIRToLinalgIR] encounters error:
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace.
Stack dump:
0.\tProgram arguments: /home/u/.cache/x/triton-adapter-opt /tmp/tmpab12/kernel.ttir.mlir --triton-to-linalg
Stack dump without symbol names (ensure you have llvm-symbolizer in your PATH or
set the environment var `LLVM_SYMBOLIZER_PATH` to point to it):
0  triton-adapter-opt 0x00005598136190c8
 #1 0x000055f1806f0bce (/home/u/.cache/x/triton-adapter-opt+0x203bbce)
[INFO]: The compiled kernel cache is in /tmp/cache/abc
///------------------[ERROR][Triton][END]------------------"""


def test_trim_keeps_the_compilers_words_and_drops_frames_and_paths() -> None:
    text = trim(CRASH)
    assert "PLEASE submit a bug report" in text and "Stack dump:" in text
    assert "0x0000" not in text and "/tmp/" not in text and "/home/u" not in text and "[INFO]" not in text
    assert len(trim("x" * 5000, 100)) <= 100


def test_a_frontend_error_names_the_candidates_line_and_its_entry() -> None:
    text = (
        "CompilationError: at 3:8:\ndef k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs)\n        ^\n"
        "ValueError('[fp8, fp64] is unsupported on Ascend for now.Source scalar type is int32 and "
        "destination type is fp64')"
    )
    error = classify({"ok": False, "stage": "frontend", "error": text}, def_line=20)
    assert error.line == 22 and error.kb_id == "unsupported-unsigned-and-fp64"
    assert error.first_line.startswith(
        "triton-ascend's front end rejects the kernel at line 22: [fp8, fp64] is unsupported"
    )
    unknown = classify({"ok": False, "stage": "frontend", "error": "at 1:0:\nsomething odd"}, def_line=5)
    assert unknown.kb_id == "lowering-frontend-rejects" and unknown.line == 5


def test_an_adapter_crash_names_the_pass_and_the_pointer_choice_from_the_ttir() -> None:
    reply = {
        "ok": False,
        "stage": "ttadapter",
        "error": CRASH,
        "returncode": -11,
        "crash_pass": "--triton-to-unstructure",
        "ttir": (IR / "where_pointer.ttir.mlir").read_text(),
    }
    error = classify(reply)
    assert error.first_line.startswith("triton-adapter-opt crashed (SIGSEGV) in its --triton-to-unstructure pass")
    assert "pointer chosen at run time" in error.first_line and error.line == 44
    assert error.kb_id == "lowering-pointer-select-or-branch" and "PLEASE submit a bug report" in error.detail
    loop = classify({**reply, "ttir": (IR / "while_if_pointer.ttir.mlir").read_text()})
    assert "if / else branch inside a loop at line 57" in loop.first_line


def test_an_adapter_assertion_and_an_mlir_error_are_quoted() -> None:
    assertion = 'triton-adapter-opt: TypeRange.cpp:20: Assertion `all types non-null && "null types"\' failed.'
    error = classify(
        {"ok": False, "stage": "ttadapter", "error": assertion + " TypeRange with null types", "returncode": -6}
    )
    assert "SIGABRT" in error.first_line and "assertion `all types non-null" in error.first_line
    mlir = "loc(\"kernel.py\":12:4): error: failed to legalize operation 'tt.foo'"
    error = classify({"ok": False, "stage": "ttadapter", "error": mlir, "returncode": 1})
    assert error.line == 12 and "failed to legalize operation" in error.first_line and "failed" in error.first_line
    timeout = classify({"ok": False, "stage": "ttadapter", "error": "", "timed_out": True})
    assert "did not finish in time" in timeout.first_line


@pytest.mark.parametrize("entry", sorted({e for _, e, _ in FRONTEND_PATTERNS} | {"lowering-pointer-select-or-branch"}))
def test_every_entry_a_classification_names_exists(entry: str) -> None:
    assert entry in {e.id for e in load_entries()}


def test_the_new_entries_trigger_on_the_compilers_and_the_evaluators_wording() -> None:
    entries = {e.id: e for e in load_entries()}
    cases = {
        "lowering-pointer-select-or-branch": "triton-adapter-opt crashed (SIGSEGV) in its --triton-to-unstructure pass",
        "lowering-adapter-crash": "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/",
        "lowering-newer-triton-api": "module 'triton.language' has no attribute 'map_elementwise'",
        "lowering-ub-overflow": "k allocates 512 KB of vector buffers per program but the Unified Buffer holds 192 KB",
        "eval-ascend-compile-error": "the kernel does not get through triton-ascend Ascend910B3 lowering: ...",
        "lowering-frontend-rejects": "triton-ascend's front end rejects the kernel at line 3: odd",
    }
    for entry, text in cases.items():
        assert entries[entry].match_triggers(text), entry


def test_the_kb_wrapper_finds_the_lowering_entries_of_a_result() -> None:
    """A result with a lowering failure in warn mode: the wrapper's Ascend-check hits name the finding's
    entry, and the warning line the agent sees triggers the crash and pointer entries by their wording."""
    from ascend_kernel_gym.kb_index.retrieval import KnowledgeBase
    from ascend_kernel_gym.wrappers.kb_retrieval import ascend_check_hits, build_query

    message = (
        "k does not lower (triton-ascend 3.2.0 for Ascend910B3): triton-adapter-opt crashed (SIGSEGV) in its "
        "--triton-to-unstructure pass: a pointer chosen at run time (tl.where or if / else between pointers) at line 9"
    )
    finding = {"rule": "lowering_failed", "severity": "error", "kb_id": "lowering-pointer-select-or-branch"}
    result = {"error_type": "none", "ascend_checks": [finding], "warnings": [f"ascend[lowering_failed] {message}"]}
    assert ascend_check_hits(result) == [("lowering-pointer-select-or-branch", "ascend_check: lowering_failed")]
    _query, trigger_text = build_query(None, None, result)
    hits = {entry.id for entry, _match in KnowledgeBase().trigger_hits(trigger_text)}
    assert {"lowering-pointer-select-or-branch", "eval-ascend-compile-error"} <= hits
