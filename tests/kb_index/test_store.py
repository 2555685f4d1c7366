"""Entry files: the bundled set, front-matter validation, user directories and trigger regexes."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from ascend_kernel_gym.evaluation.feedback import render_feedback
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult
from ascend_kernel_gym.kb_index import BUNDLED_ENTRIES_DIR, EntryError, KnowledgeBase, load_entries, parse_entry

GOOD = """---
id: my-tip
title: A tip
tags: [grid]
triggers:
  - 'my special error \\d+'
source: TA PG
---
One. Two. Three.
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def entries():
    return load_entries()


def test_bundled_set_is_large_unique_and_ascii(entries) -> None:
    assert len(entries) >= 80
    ids = [e.id for e in entries]
    assert len(ids) == len(set(ids))
    allowed = set(string.printable) - {"\x0b", "\x0c", "\r"}
    for e in entries:
        text = Path(e.path).read_text()
        bad = sorted(set(text) - allowed)
        assert not bad, f"{e.path} has characters outside printable ASCII: {bad}"
        assert Path(e.path).parent == BUNDLED_ENTRIES_DIR
        assert e.source.strip() and e.title.strip() and e.tags


def test_bodies_are_three_to_eight_sentences(entries) -> None:
    for e in entries:
        body = re.sub(r"`[^`]*`", "CODE", e.body)  # code spans may contain dots
        body = re.sub(r"\b(e\.g|i\.e|etc|vs)\.", "X", body)
        sentences = re.findall(r"[.!?](?=\s|$)", body)
        assert 3 <= len(sentences) <= 8, f"{e.id}: {len(sentences)} sentences"


def test_every_topic_of_the_facts_file_is_covered(entries) -> None:
    tags = {t for e in entries for t in e.tags}
    required = {
        "grid", "cores", "ub", "memory", "multibuffer", "alignment", "gather", "mask", "block_ptr", "dtype", "dot",
        "cube", "cv", "compile-error", "env-var", "debugging", "profiling", "timing", "install", "porting",
        "autotune", "atomics", "llm-mistake", "benchmark", "hardware", "evaluator",
    }  # fmt: skip
    assert required <= tags, sorted(required - tags)
    assert sum(1 for e in entries if e.triggers) >= 60
    assert any(e.version for e in entries), "version-dependent advice must be marked"


@pytest.mark.parametrize(
    ("error_text", "entry_id"),
    [
        ("ub overflow, requires 3145728 bits while 1572864 bits available!", "ub-overflow-compile-error"),
        ("coreDim=70000 can't be greater than UINT16_MAX", "grid-uint16-max-coredim"),
        ("Cannot find option named 'Ascend310P1'", "install-310p-unsupported"),
        ("[ConvertTritonIRToLinalgIR] PassManager::run failed", "compile-error-stage-tags"),
        ("Casting pointers with unmatched bitwidth", "pointer-cast-bitwidth"),
        ("LLVM ERROR: unsupported datatype for arith::ExtFOp to hfusion", "extf-hfusion-pow-rsqrt"),
        ("Unsupported op for finding the root alloc", "hivm-root-alloc-failure"),
        ("Failed to run buildFinalHIVMPipelines pipeline", "a5-final-hivm-pipeline"),
        ('ValueError("arange\'s range must be a power of 2")', "arange-rules-ascend"),
        ("TypeError(\"'dtype' object is not callable\")", "scalar-cast-and-constexpr"),
        ("Segmentation fault (core dumped)", "eval-crash-out-of-bounds"),
        (
            "kernel 'add_kernel': out-of-bounds read (3 addresses outside the tensor arguments' memory)",
            "eval-out-of-bounds",
        ),
    ],
)
def test_real_error_strings_fire_their_triggers(error_text: str, entry_id: str) -> None:
    kb = KnowledgeBase()
    hits = kb.search(error_text, k=3, dense=False)
    assert hits and hits[0].id == entry_id, [h.id for h in hits]
    assert hits[0].why.startswith("trigger: ") and hits[0].score is None


@pytest.mark.parametrize("error_type", [e for e in ErrorType if e is not ErrorType.NONE])
def test_each_evaluator_feedback_triggers_exactly_its_own_entry(error_type: ErrorType) -> None:
    """The evaluator's rendered feedback (titles and hints) must not fire unrelated entries."""
    kb = KnowledgeBase()
    result = EvalResult(
        task_id="t", backend="interpreter", profile="small", code_hash="h", error_type=error_type,
        error_message="something went wrong",
    )  # fmt: skip
    text = f"{render_feedback(result)}\nerror_type: {error_type.value}"
    fired = {entry.id for entry, _ in kb.trigger_hits(text)}
    assert len(fired) == 1, fired
    assert next(iter(fired)).startswith("eval-")


def test_correct_feedback_fires_no_trigger() -> None:
    result = EvalResult(
        task_id="t", backend="interpreter", profile="small", code_hash="h", correct=True, trials_passed=5,
        trials_total=5,
    )  # fmt: skip
    assert KnowledgeBase().trigger_hits(render_feedback(result)) == []


def test_parse_good_entry_and_case_insensitive_trigger() -> None:
    entry = parse_entry(GOOD)
    assert entry.id == "my-tip" and entry.tags == ("grid",) and entry.version is None
    assert [m.matched for m in entry.match_triggers("xx MY SPECIAL ERROR 42 yy")] == ["MY SPECIAL ERROR 42"]
    assert entry.match_triggers("unrelated") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD.replace("source: TA PG", "source: TA PG\npriority: 3"), "unknown key(s) ['priority']"),
        (GOOD.replace("'my special error \\d+'", "'unbalanced (paren'"), "is not a valid regular expression"),
        (GOOD.replace("'my special error \\d+'", "'x*'"), "matches the empty string"),
        (GOOD.replace("source: TA PG\n", ""), "missing required key(s) ['source']"),
        (GOOD.replace("tags: [grid]", "tags: [grid, 950]"), "'tags' must be a list of non-empty strings"),
        (GOOD.replace("One. Two. Three.\n", ""), "the body"),
        (GOOD.replace("id: my-tip", "id: My Tip"), "'id' must match"),
        ("no front matter here", "missing front matter"),
        (GOOD.replace("title: A tip", "title: [unclosed"), "not valid YAML"),
    ],
)
def test_malformed_entries_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "user", "my-tip.md", text)
    with pytest.raises(EntryError) as info:
        load_entries([tmp_path / "user"], include_bundled=False)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_id_must_match_file_name(tmp_path: Path) -> None:
    write(tmp_path, "other-name.md", GOOD)
    with pytest.raises(EntryError, match="must equal the file name 'other-name'"):
        load_entries([tmp_path], include_bundled=False)


def test_duplicate_id_names_both_files(tmp_path: Path) -> None:
    first = write(tmp_path / "a", "my-tip.md", GOOD)
    second = write(tmp_path / "b", "my-tip.md", GOOD)
    with pytest.raises(EntryError) as info:
        KnowledgeBase(extra_dirs=[tmp_path / "a", tmp_path / "b"], include_bundled=False)
    assert str(first) in str(info.value) and str(second) in str(info.value)
    dup_of_bundled = write(
        tmp_path / "c", "grid-uint16-max-coredim.md", GOOD.replace("my-tip", "grid-uint16-max-coredim")
    )
    with pytest.raises(EntryError, match="duplicate entry id 'grid-uint16-max-coredim'"):
        KnowledgeBase(extra_dirs=[dup_of_bundled.parent])
