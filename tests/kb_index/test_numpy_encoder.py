"""The NumPy encoder gives sentence-transformers' vectors; ``akg kb search`` says when it builds the index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ascend_kernel_gym.cli import main
from ascend_kernel_gym.kb_index import KnowledgeBase
from ascend_kernel_gym.kb_index.index import default_model_path, load_encoder
from ascend_kernel_gym.kb_index.numpy_encoder import NumpyBertEncoder, supports

TEXTS = [
    "ub overflow, requires 3145728 bits while 1572864 bits available",
    "arange's range must be a power of 2",
    "x",
]


def test_the_bundled_model_is_encoded_with_numpy() -> None:
    path = default_model_path()
    assert supports(path)
    assert isinstance(load_encoder(path), NumpyBertEncoder)


def test_other_models_are_left_to_sentence_transformers(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    assert not supports(model)  # no config at all
    (model / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_act": "gelu"}))
    (model / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer", "path": ""}]))
    assert not supports(model)
    with pytest.raises(ValueError, match="not a BERT"):
        NumpyBertEncoder(model)


@pytest.mark.slow
def test_vectors_match_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    path = default_model_path()
    texts = TEXTS + [entry.embedding_text() for entry in KnowledgeBase().entries[:6]]  # long ones are truncated
    ours = NumpyBertEncoder(path).encode(texts, batch_size=4, normalize_embeddings=True)
    theirs = SentenceTransformer(str(path), device="cpu").encode(texts, normalize_embeddings=True)
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert float((ours * theirs).sum(axis=1).min()) > 0.99999


def test_batching_and_padding_do_not_change_a_vector() -> None:
    encoder = load_encoder(default_model_path())
    alone = encoder.encode(TEXTS[:1], normalize_embeddings=True)
    padded = encoder.encode(TEXTS, batch_size=3, normalize_embeddings=True)  # padded to the longest text
    assert np.abs(alone[0] - padded[0]).max() < 1e-5
    assert np.allclose(np.linalg.norm(padded, axis=1), 1.0, atol=1e-5)


def test_search_in_a_new_process_loads_neither_torch_nor_sentence_transformers() -> None:
    KnowledgeBase().build()  # the session's index cache (AKG_CACHE_DIR), shared with the other tests
    code = (
        "import sys\n"
        "from ascend_kernel_gym.kb_index import KnowledgeBase\n"
        "hits = KnowledgeBase().search('grid too large', k=3)\n"
        "assert len(hits) == 3\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


class _TinyEncoder:
    """Stands in for the model: the test is about what the command prints, not about the vectors."""

    def encode(self, texts, **kwargs):
        rng = np.random.default_rng(len(texts))
        vectors = rng.standard_normal((len(texts), 8)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_first_search_says_it_builds_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ascend_kernel_gym.kb_index import index

    monkeypatch.setattr(index, "load_encoder", lambda path, device="cpu": _TinyEncoder())
    argv = ["kb", "search", "grid too large", "--cache-dir", str(tmp_path), "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "building the knowledge-base index" in captured.err and "entries" in captured.err
    assert json.loads(captured.out)["hits"]
    assert main(argv) == 0  # cached now: nothing to announce
    assert "building" not in capsys.readouterr().err
