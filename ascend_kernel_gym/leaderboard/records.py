"""Run directories: the episode JSONL file, the ``run.json`` manifest, and best-attempt selection.

A run directory holds::

    runs/NAME/run.json        manifest: agent, suite, split, backend, device, versions, config, times
    runs/NAME/results.jsonl   one finished episode per line (appended as episodes finish)

Episodes are keyed by ``(task_id, sample)``; when a key appears more than once (an episode that
errored and was re-run), the last line without an ``error`` wins.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "run.json"
RUN_SCHEMA = "akg-run/1"

EpisodeKey = tuple[str, int]


def utc_now() -> str:
    """The current UTC time as an ISO-8601 string with seconds precision."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats replaced by ``None`` and tuples turned into lists (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def episode_key(record: dict[str, Any]) -> EpisodeKey:
    return (str(record["task_id"]), int(record["sample"]))


def is_ok(result: dict[str, Any] | None) -> bool:
    """Correct and not a hack."""
    return bool(result) and bool(result.get("correct")) and not bool(result.get("hack"))


def measured_speedup(result: dict[str, Any] | None) -> float | None:
    """The measured speedup of an ok result, or ``None`` (not ok, not measured, or not a positive number)."""
    if not is_ok(result):
        return None
    value = result.get("speedup")  # type: ignore[union-attr]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def rank_key(result: dict[str, Any] | None) -> tuple[int, float, int, int, int, int]:
    """Sort key for "which attempt is best": ok first, then faster, then non-hack, compiled, static ok, format ok."""
    if not result:
        return (0, 0.0, 0, 0, 0, 0)
    speed = measured_speedup(result) or 0.0
    return (
        int(is_ok(result)),
        speed,
        int(not result.get("hack")),
        int(bool(result.get("compiled"))),
        int(bool(result.get("static_ok"))),
        int(bool(result.get("format_ok"))),
    )


def best_turn_index(turns: list[dict[str, Any]]) -> int | None:
    """Index of the best turn by :func:`rank_key` (earliest on ties), ``None`` when there are no turns."""
    best: int | None = None
    for index, turn in enumerate(turns):
        if best is None or rank_key(turn.get("eval")) > rank_key(turns[best].get("eval")):
            best = index
    return best


class ResultsWriter:
    """Appends episode records to ``results.jsonl``, one line each, flushed and fsynced (thread-safe)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / RESULTS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(json_safe(record), sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
        with self._lock, self.path.open("a+b") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":  # a half-written line from a killed run: end it first
                    line = b"\n" + line
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def read_results(run_dir: str | Path, *, include_errors: bool = False) -> dict[EpisodeKey, dict[str, Any]]:
    """Finished episodes by ``(task_id, sample)``.

    A truncated last line (a run killed mid-write) is ignored. Records with an ``error`` are left
    out unless ``include_errors`` (they are re-run on resume).
    """
    path = Path(run_dir) / RESULTS_FILE
    out: dict[EpisodeKey, dict[str, Any]] = {}
    if not path.is_file():
        return out
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
                key = episode_key(record)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
            if record.get("error") and not include_errors:
                continue
            if key in out and record.get("error") and not out[key].get("error"):
                continue
            out[key] = record
    return out


def write_manifest(run_dir: str | Path, manifest: dict[str, Any]) -> None:
    """Write ``run.json`` atomically."""
    path = Path(run_dir) / MANIFEST_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    text = json.dumps(json_safe(manifest), indent=2, sort_keys=True, allow_nan=False, default=repr)
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no run manifest; is {run_dir} a run directory made by `akg eval`?")
    return json.loads(path.read_text(encoding="utf-8"))


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The manifest and the finished episodes of the run's task set and sample range, sorted by key."""
    manifest = read_manifest(run_dir)
    task_ids = {t["id"] for t in manifest.get("tasks", [])}
    samples = int(manifest.get("config", {}).get("samples", 1))
    records = [r for key, r in sorted(read_results(run_dir).items()) if key[0] in task_ids and 0 <= key[1] < samples]
    return manifest, records


def suite_content_hash(tasks: Iterable[Any]) -> str:
    """sha256 over the sorted ``(task id, sha256 of the task file)`` pairs of every task of a suite."""
    entries = sorted([t.id, t.source_hash] for t in tasks)
    return sha256_text(json.dumps(entries, separators=(",", ":")))
