"""Result cache: identical resubmissions cost nothing.

The key covers everything that can change a verdict: the candidate's code, the task's source,
backend, shape profile, trials, whether performance is measured, the fixed seed (if any), the
Ascend options, the package version and a fingerprint of the evaluation harness's own source
(so a result measured by an older protocol is never served after the harness changed, even
under the same version string). Results are kept in memory (LRU) and, when a directory
is given, as one JSON file per key. ``harness_error`` and ``timeout`` results are not cached:
they depend on the machine's state more than on the code; nor are results of a second run
(marked ``retried:``: a neighbour's out-of-memory, a lost Ray actor), which the machine's state
forced. With ``Evaluator(executor="ray")`` one cache serves the whole cluster: a
:class:`~.ray_executor.RayResultCache` actor that holds a :class:`ResultCache`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any

from ascend_kernel_gym.evaluation.concurrency import was_retried
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult

UNCACHED_ERRORS = frozenset({ErrorType.HARNESS_ERROR, ErrorType.TIMEOUT})


HARNESS_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=8)
def harness_fingerprint(directory: Path = HARNESS_DIR) -> str:
    """SHA-256 over the names and contents of the ``.py`` files that make up the harness."""
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*.py")):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_key(parts: dict[str, Any]) -> str:
    """A stable hash of the key parts (a JSON object)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ResultCache:
    """Thread-safe in-memory LRU cache of results with an optional on-disk layer.

    Args:
        max_items: results kept in memory.
        directory: where to keep results on disk (``None``: memory only).
    """

    def __init__(self, max_items: int = 4096, directory: str | os.PathLike[str] | None = None) -> None:
        if max_items < 1:
            raise ValueError(f"max_items must be >= 1, got {max_items}")
        self.max_items = max_items
        self.directory = Path(directory) if directory is not None else None
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> EvalResult | None:
        with self._lock:
            text = self._items.get(key)
            if text is not None:
                self._items.move_to_end(key)
        if text is None and self.directory is not None:
            try:
                text = self._path(key).read_text()
            except OSError:
                text = None
            if text is not None:
                with self._lock:
                    self._remember(key, text)
        if text is None:
            with self._lock:
                self.misses += 1
            return None
        try:
            result = EvalResult.from_json(text)
        except (ValueError, TypeError, KeyError):
            return None
        with self._lock:
            self.hits += 1
        result.cache_hit = True
        return result

    def put(self, key: str, result: EvalResult) -> None:
        if result.error_type in UNCACHED_ERRORS or was_retried(result):
            return
        stored = EvalResult.from_dict(result.to_dict())
        stored.cache_hit = False
        text = stored.to_json()
        with self._lock:
            self._remember(key, text)
        if self.directory is not None:
            path = self._path(key)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                with os.fdopen(fd, "w") as handle:
                    handle.write(text)
                os.replace(tmp, path)
            except OSError:
                pass

    def _remember(self, key: str, text: str) -> None:
        self._items[key] = text
        self._items.move_to_end(key)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
