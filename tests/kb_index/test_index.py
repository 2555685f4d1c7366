"""Dense index: offline model resolution, the on-disk cache and its invalidation, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ascend_kernel_gym.kb_index import KnowledgeBase
from ascend_kernel_gym.kb_index.index import (
    IDS_FILE,
    INDEX_FILE,
    DenseIndex,
    default_cache_dir,
    default_model_path,
    resolve_model,
)

ENTRY = """---
id: {id}
title: {title}
tags: [test]
source: test
---
{body} It has a second sentence. And a third one.
"""


def write_entries(directory: Path, items: dict[str, tuple[str, str]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for entry_id, (title, body) in items.items():
        (directory / f"{entry_id}.md").write_text(ENTRY.format(id=entry_id, title=title, body=body))
    return directory


SMALL = {
    "tiles": ("Tile sizes for matrix multiplication", "Use 128 by 256 tiles for matmul on the cube unit."),
    "grid": ("Grid sizing", "Launch one program per core and loop inside the kernel."),
    "print": ("Printing inside kernels", "Set an environment variable before device printing works."),
}


def test_default_model_is_the_bundled_minilm_and_nothing_is_downloaded(tmp_path: Path) -> None:
    path, model_id = resolve_model(None)
    assert path == default_model_path().resolve() and (path / "config.json").is_file()
    assert model_id.startswith("all-MiniLM-L6-v2@")
    with pytest.raises(FileNotFoundError, match="never downloads"):
        resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(FileNotFoundError):
        resolve_model(tmp_path / "missing")


def test_default_cache_dir_follows_akg_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AKG_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "kb"
    monkeypatch.delenv("AKG_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "ascend_kernel_gym" / "kb"


def test_index_is_cached_and_rebuilt_when_entries_change(tmp_path: Path) -> None:
    entries_dir = write_entries(tmp_path / "entries", SMALL)
    cache = tmp_path / "cache"
    kb = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache)
    first = kb.build()
    assert not first.from_cache and first.entries == 3 and first.dim == 384
    assert (Path(first.path) / INDEX_FILE).is_file()
    assert json.loads((Path(first.path) / IDS_FILE).read_text()) == ["grid", "print", "tiles"]

    again = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache).build()
    assert again.from_cache and again.path == first.path and again.embed_s == 0.0

    # Editing one entry's body changes the fingerprint: a new index is built in a new directory.
    write_entries(entries_dir, {"grid": ("Grid sizing", "Use a persistent kernel with an in-kernel loop.")})
    changed = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache)
    stats = changed.build()
    assert not stats.from_cache and stats.fingerprint != first.fingerprint
    # Adding an entry changes it too.
    write_entries(entries_dir, {"extra": ("Another tip", "Something else entirely about atomics.")})
    added = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache).build()
    assert not added.from_cache and added.entries == 4

    forced = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache).build(force=True)
    assert not forced.from_cache and forced.fingerprint == added.fingerprint


def test_dense_scores_are_cosine_similarities_and_rank_the_relevant_entry_first(tmp_path: Path) -> None:
    entries_dir = write_entries(tmp_path / "entries", SMALL)
    kb = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=tmp_path / "cache")
    index = kb.index
    scores = index.scores("what block size should my matmul tiles use")
    assert set(scores) == set(SMALL)
    assert all(-1.0 <= s <= 1.0 + 1e-6 for s in scores.values())
    assert max(scores, key=scores.get) == "tiles"
    ranked = index.search("how many programs should the grid launch", k=2)
    assert ranked[0][0] == "grid" and ranked[0][1] >= ranked[1][1]
    # The same text embedded twice gives similarity ~1 (vectors are normalised).
    vec = index.embed(["Grid sizing"])
    assert np.isclose(np.linalg.norm(vec[0]), 1.0, atol=1e-4)
    hits = kb.search("matmul tile sizes", k=3)
    assert [h.why for h in hits] == ["dense"] * 3 and hits[0].id == "tiles"
    assert [h.id for h in kb.search("matmul tile sizes", k=3, min_score=0.99)] == []


def test_corrupt_cache_is_rebuilt(tmp_path: Path) -> None:
    entries_dir = write_entries(tmp_path / "entries", SMALL)
    cache = tmp_path / "cache"
    stats = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache).build()
    (Path(stats.path) / INDEX_FILE).write_bytes(b"not a faiss index")
    again = KnowledgeBase(extra_dirs=[entries_dir], include_bundled=False, cache_dir=cache).build()
    assert not again.from_cache


def test_empty_entry_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="nothing to index"):
        DenseIndex([])


def test_importing_the_kb_and_wrappers_loads_neither_torch_nor_sentence_transformers() -> None:
    code = (
        "import sys, ascend_kernel_gym, ascend_kernel_gym.kb_index, ascend_kernel_gym.kb_index.cli, "
        "ascend_kernel_gym.wrappers.compaction, ascend_kernel_gym.wrappers.kb_retrieval, "
        "ascend_kernel_gym.wrappers.tokens\n"
        "from ascend_kernel_gym.kb_index import KnowledgeBase\n"
        "KnowledgeBase().search('coreDim=70000 can\\'t be greater than UINT16_MAX', dense=False)\n"
        "heavy = ('torch', 'triton', 'sentence_transformers', 'faiss', 'transformers')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
