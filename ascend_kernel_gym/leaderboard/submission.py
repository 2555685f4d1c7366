"""``akg submit``: turn a run directory into a schema-versioned, digest-sealed submission file.

Per task the submission holds the best kernel over the run's samples (by the ranking of
:func:`records.rank_key`), its code, the code's sha256 and the results the run claims for it.
``metrics`` are computed from those per-task claims (so ``akg verify`` can recompute them);
``run_metrics`` are the run's metrics over all samples (pass@k etc.), which only the run's own
records back.

The ``digest`` is a sha256 over the canonical JSON (sorted keys, no spaces, UTF-8) of every
field except ``digest`` itself. It detects edits made without recomputing it; it is not a
signature: anyone can recompute it after an edit. What catches false claims is re-running the
kernels (``akg verify``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import platform
from functools import lru_cache
from pathlib import Path
from typing import Any

from ascend_kernel_gym.leaderboard.metrics import compute_metrics
from ascend_kernel_gym.leaderboard.records import json_safe, load_run, rank_key, sha256_text, utc_now
from ascend_kernel_gym.leaderboard.report import run_split, speedup_is_measured

SCHEMA_VERSION = 1
KIND = "ascend-kernel-gym-submission"
SCHEMA_PATH = Path(__file__).with_name("submission.schema.json")
CLAIM_FIELDS = ("format_ok", "compiled", "correct", "hack", "speedup", "ref_ms", "kernel_ms", "error_type", "profile")
MISSING_ERROR = "missing"


class SubmissionError(ValueError):
    """A submission file is malformed (not JSON, or it does not follow the schema)."""


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The JSON Schema shipped with the package."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def schema_errors(data: Any) -> list[str]:
    """Every schema violation of ``data`` as ``"<json path>: <message>"`` (empty when valid)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{e.json_path}: {e.message[:300]}" for e in errors]


def canonical_json(data: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8, no NaN/Infinity: the bytes the digest is taken over."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def compute_digest(data: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of everything except ``digest``."""
    body = {key: value for key, value in data.items() if key != "digest"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def seal(data: dict[str, Any]) -> dict[str, Any]:
    """Set ``data["digest"]`` from the current content (returns ``data``)."""
    data["digest"] = {"algorithm": "sha256", "value": compute_digest(data)}
    return data


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value > 0 else None


def claims_from_result(result: dict[str, Any] | None) -> dict[str, Any]:
    """The claimed fields of an EvalResult dict (all false / ``missing`` for no result)."""
    if not result:
        return {
            "format_ok": False,
            "compiled": False,
            "correct": False,
            "hack": False,
            "speedup": None,
            "ref_ms": None,
            "kernel_ms": None,
            "error_type": MISSING_ERROR,
            "profile": None,
        }
    return {
        "format_ok": bool(result.get("format_ok")),
        "compiled": bool(result.get("compiled")),
        "correct": bool(result.get("correct")),
        "hack": bool(result.get("hack")),
        "speedup": _positive(result.get("speedup")),
        "ref_ms": _positive(result.get("ref_ms")),
        "kernel_ms": _positive(result.get("kernel_ms")),
        "error_type": str(result.get("error_type") or "none"),
        "profile": result.get("profile"),
    }


def metrics_from_entries(entries: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    """Summary metrics over per-task claims (one kernel per task), as stored in ``metrics``."""
    tasks = [{"id": e["task_id"], "level": e["level"], "category": e["category"]} for e in entries]
    records = [
        {
            "task_id": e["task_id"],
            "sample": 0,
            "best_result": e["claimed"] if e["code"] is not None else None,
            "turns": [{"eval": e["claimed"]}] if e["code"] is not None else [],
        }
        for e in entries
    ]
    overall = compute_metrics(tasks, records, samples=1, speedup_measured=speedup_is_measured(backend))["overall"]
    return {k: v for k, v in overall.items() if not k.startswith("pass@")}


def build_submission(run_dir: str | Path) -> dict[str, Any]:
    """Build and seal a submission from a run directory (validated against the schema).

    Raises:
        FileNotFoundError: ``run_dir`` is not a run directory.
        SubmissionError: the result does not follow the schema (a bug or a hand-edited run).
    """
    from ascend_kernel_gym import __version__
    from ascend_kernel_gym.leaderboard.report import run_report

    manifest, records = load_run(run_dir)
    config = manifest.get("config", {})
    backend = str(manifest.get("backend"))
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_task.setdefault(record["task_id"], []).append(record)
    entries = []
    for task in manifest.get("tasks", []):
        candidates = sorted(by_task.get(task["id"], []), key=lambda r: r["sample"])
        best = None
        for record in candidates:
            if record.get("best_code") is None:
                continue
            if best is None or rank_key(record.get("best_result")) > rank_key(best.get("best_result")):
                best = record
        code = best.get("best_code") if best else None
        entries.append(
            {
                "task_id": task["id"],
                "level": int(task["level"]),
                "category": str(task["category"]),
                "task_sha256": task["task_sha256"],
                "sample": best["sample"] if best else None,
                "turn": best.get("best_turn") if best else None,
                "code": code,
                "code_sha256": sha256_text(code) if code is not None else None,
                "claimed": claims_from_result(best.get("best_result") if best else None),
            }
        )
    device = manifest.get("device") or {}
    versions = dict(manifest.get("versions") or {})
    versions.setdefault("python", platform.python_version())
    for key in ("torch", "triton", "torch_npu"):
        versions.setdefault(key, None)
    suite = manifest.get("suite", {})
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "created": utc_now(),
        "package": {"name": "ascend-kernel-gym", "version": __version__},
        "suite": {
            "name": suite.get("name"),
            "content_sha256": suite.get("content_sha256"),
            "split": run_split(config),
            "levels": config.get("levels"),
            "tasks_in_suite": suite.get("tasks_in_suite"),
            "task_count": len(entries),
        },
        "backend": backend,
        "device": {k: v for k, v in device.items() if k != "versions"},
        "versions": {k: (None if v is None else str(v)) for k, v in versions.items()},
        "agent": manifest.get("agent", {}),
        "run": {
            "turns": config.get("turns"),
            "samples": config.get("samples"),
            "reward": config.get("reward"),
            "started": manifest.get("started"),
            "finished": manifest.get("finished"),
            "status": manifest.get("status"),
        },
        "metrics": metrics_from_entries(entries, backend),
        "run_metrics": run_report(run_dir)["metrics"]["overall"],
        "tasks": entries,
    }
    data = seal(json_safe(data))
    errors = schema_errors(data)
    if errors:
        raise SubmissionError(f"the submission built from {run_dir} does not follow the schema: {errors[:5]}")
    return data


def write_submission(data: dict[str, Any], path: str | Path) -> Path:
    """Validate and write a submission (pretty JSON; the digest does not depend on formatting)."""
    errors = schema_errors(data)
    if errors:
        raise SubmissionError(f"refusing to write an invalid submission: {errors[:5]}")
    if data.get("digest", {}).get("value") != compute_digest(data):
        raise SubmissionError("refusing to write a submission whose digest does not match its content; call seal()")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def read_submission(path: str | Path, *, validate: bool = True) -> dict[str, Any]:
    """Read a submission file.

    Raises:
        FileNotFoundError: no such file.
        SubmissionError: not JSON, or (with ``validate``) not following the schema.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such submission file")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{p}: not a JSON file ({exc})") from None
    if validate:
        errors = schema_errors(data)
        if errors:
            raise SubmissionError(f"{p}: does not follow the submission schema: " + "; ".join(errors[:5]))
    return data


def resealed_copy(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy with a freshly computed digest (what an attacker can do after editing)."""
    return seal(copy.deepcopy(data))
