"""``akg verify``: check a submission's integrity, then re-run every kernel and compare with its claims.

Two layers, and what each one catches:

1. **Integrity** (no execution): the file follows the schema; the digest matches the content
   (catches naive edits); every ``code_sha256`` matches its code (catches code edited after the
   run without updating the hash); the summary ``metrics`` match the per-task claims; the local
   suite has the same content hash and task files; an interpreter submission claims no speedup.
   The digest is a checksum, not a signature: an editor can recompute every hash and the digest.
2. **Re-run**: every submitted kernel is evaluated again on the local backend. A kernel claimed
   correct that fails here, a kernel claimed to compile that does not, or a speedup above the
   local measurement by more than the tolerance (only when the local device has the same name
   as the submission's; otherwise speed is "not comparable") rejects the submission. This is
   the layer that catches false claims, whatever the hashes say.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from ascend_kernel_gym.leaderboard.records import is_ok, sha256_text
from ascend_kernel_gym.leaderboard.submission import (
    KIND,
    SCHEMA_VERSION,
    compute_digest,
    metrics_from_entries,
    schema_errors,
)

DEFAULT_SPEEDUP_TOLERANCE = 0.3
#: Local outcomes that say nothing about the kernel (the harness itself failed).
INCONCLUSIVE_ERRORS = frozenset({"harness_error"})


@dataclass
class TaskVerdict:
    """The verdict on one task of a submission."""

    task_id: str
    verdict: str  # agree | rejected | inconclusive | no code
    claimed: dict[str, Any]
    local: dict[str, Any] | None = None
    speed: str = "n/a"  # ok | inflated | not comparable | not measured | n/a
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class VerificationReport:
    """Everything ``akg verify`` found; ``accepted`` is the bottom line."""

    accepted: bool
    reasons: list[str]
    digest: str | None
    submission_backend: str | None
    submission_device: str | None
    local_backend: str | None = None
    local_device: str | None = None
    speed_comparable: bool = False
    speedup_tolerance: float = DEFAULT_SPEEDUP_TOLERANCE
    rerun: bool = False
    notes: list[str] = field(default_factory=list)
    tasks: list[TaskVerdict] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _metrics_equal(stored: dict[str, Any], recomputed: dict[str, Any]) -> list[str]:
    diffs = []
    for key in sorted(set(stored) | set(recomputed)):
        a, b = stored.get(key), recomputed.get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            if not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12):
                diffs.append(f"{key}: stored {a!r}, per-task claims give {b!r}")
        elif a != b:
            diffs.append(f"{key}: stored {a!r}, per-task claims give {b!r}")
    return diffs


def integrity_problems(data: dict[str, Any]) -> list[str]:
    """Reasons to reject found without running anything (empty when the file is intact)."""
    errors = schema_errors(data)
    if errors:
        return [f"schema: {e}" for e in errors[:20]]
    problems: list[str] = []
    if data["schema_version"] != SCHEMA_VERSION or data["kind"] != KIND:
        problems.append(f"unsupported submission schema {data['schema_version']!r}")
    if data["digest"]["value"] != compute_digest(data):
        problems.append("content digest mismatch: the file was edited after `akg submit` wrote it")
    seen: set[str] = set()
    for entry in data["tasks"]:
        task_id = entry["task_id"]
        if task_id in seen:
            problems.append(f"{task_id}: listed twice")
        seen.add(task_id)
        code, claimed = entry["code"], entry["claimed"]
        if code is None:
            if entry["code_sha256"] is not None or claimed["compiled"] or claimed["correct"]:
                problems.append(f"{task_id}: no code, yet it claims a code hash or a compiled/correct kernel")
        elif entry["code_sha256"] != sha256_text(code):
            problems.append(f"{task_id}: code sha256 mismatch: the kernel code was edited after the run")
        if data["backend"] == "interpreter" and claimed["speedup"] is not None:
            problems.append(
                f"{task_id}: claims a speedup of {claimed['speedup']} on the interpreter, which measures no speed"
            )
    if data["suite"]["task_count"] != len(data["tasks"]):
        problems.append(f"suite.task_count is {data['suite']['task_count']} but {len(data['tasks'])} tasks are listed")
    diffs = _metrics_equal(data["metrics"], metrics_from_entries(data["tasks"], data["backend"]))
    if diffs:
        problems.append("summary metrics do not match the per-task claims: " + "; ".join(diffs[:5]))
    return problems


def suite_problems(data: dict[str, Any], *, allow_suite_change: bool = False) -> tuple[list[str], dict[str, Any]]:
    """Compare the submission's suite with the local copy; returns (problems, local tasks by id).

    With ``allow_suite_change`` a different suite-wide hash (tasks added or changed elsewhere in
    the suite) is not a problem; the submission's own task files must still match.
    """
    from ascend_kernel_gym.leaderboard.records import suite_content_hash
    from ascend_kernel_gym.tasks.suite import load_suite

    name = data["suite"]["name"]
    try:
        local = load_suite(name, split="all")
    except (ValueError, KeyError, FileNotFoundError) as exc:
        return [f"suite {name!r} is not available here ({exc})"], {}
    by_id = {t.id: t for t in local}
    problems = []
    local_hash = suite_content_hash(local)
    if local_hash != data["suite"]["content_sha256"] and not allow_suite_change:
        problems.append(
            f"suite {name!r} content differs: submission {data['suite']['content_sha256'][:12]}, "
            f"here {local_hash[:12]} (different task files, so the split and results may not be comparable; "
            "--allow-suite-change checks only the submission's own task files)"
        )
    for entry in data["tasks"]:
        task = by_id.get(entry["task_id"])
        if task is None:
            problems.append(f"{entry['task_id']}: no such task in the local suite {name!r}")
        elif task.source_hash != entry["task_sha256"]:
            problems.append(f"{entry['task_id']}: the task file differs from the one the submission was run on")
    return problems, by_id


def compare_task(
    entry: dict[str, Any], local: dict[str, Any] | None, *, speed_comparable: bool, tolerance: float
) -> TaskVerdict:
    """Compare one task's claims with its local re-run result (an EvalResult dict)."""
    claimed = entry["claimed"]
    verdict = TaskVerdict(task_id=entry["task_id"], verdict="agree", claimed=claimed, local=local)
    if entry["code"] is None:
        verdict.verdict = "no code"
        return verdict
    assert local is not None
    local_error = str(local.get("error_type") or "none")
    claimed_ok = claimed["correct"] and not claimed["hack"]
    if local_error in INCONCLUSIVE_ERRORS:
        verdict.verdict = "inconclusive"
        message = str(local.get("error_message") or "")[:200]
        verdict.reasons.append(f"could not re-run the kernel here ({local_error}: {message})")
        return verdict
    if claimed_ok and not is_ok(local):
        detail = local_error
        if local.get("hack"):
            detail = "hack: " + ", ".join(local.get("hack_reasons") or [local_error])
        verdict.reasons.append(
            f"claimed correct, but fails here ({detail}: {str(local.get('error_message') or '').strip()[:200]})"
        )
    elif claimed["compiled"] and not local.get("compiled") and not claimed_ok:
        verdict.reasons.append(f"claimed to compile, but does not compile here ({local_error})")
    if not claimed_ok and is_ok(local):
        verdict.notes.append("under-claimed: correct here although the submission says it is not")
    claimed_speed = claimed["speedup"]
    local_speed = local.get("speedup")
    if claimed_speed is None or not claimed_ok:
        verdict.speed = "n/a"
    elif not speed_comparable:
        verdict.speed = "not comparable"
    elif not isinstance(local_speed, (int, float)) or local_speed <= 0:
        verdict.speed = "not measured"
        verdict.notes.append("the speedup could not be re-measured here")
    elif claimed_speed > local_speed * (1.0 + tolerance):
        verdict.speed = "inflated"
        verdict.reasons.append(
            f"speedup inflated: claimed {claimed_speed:.3g}x, measured {local_speed:.3g}x here "
            f"(tolerance {100 * tolerance:.0f}%)"
        )
    else:
        verdict.speed = "ok"
    if verdict.reasons:
        verdict.verdict = "rejected"
    return verdict


def verify_submission(
    data: dict[str, Any],
    *,
    backend: str = "auto",
    speedup_tolerance: float = DEFAULT_SPEEDUP_TOLERANCE,
    evaluator: Any = None,
    workers: int | None = None,
    timeout_s: float | None = None,
    progress: bool = False,
    allow_suite_change: bool = False,
) -> VerificationReport:
    """Verify a submission (see the module docstring for what is checked).

    Args:
        data: the submission (as read from JSON; need not be valid: that is checked).
        backend: local backend to re-run on (``auto``, ``npu``, ``cuda``, ``interpreter``).
        speedup_tolerance: a claimed speedup may exceed the local one by this fraction.
        evaluator: an object with ``evaluate_many(requests)``, or an evaluator address
            (``ray://auto``, ``ray://HOST:PORT``, ``host:port`` of an ``EvaluatorServer``). Default:
            the address in ``AKG_EVALUATOR`` if set, else a fresh local evaluator pool. With
            ``backend="auto"``, an evaluator that has a ``backend`` (a Ray cluster's) sets it.
        workers: workers of the fresh local pool (default: the evaluator's default).
        timeout_s: per-kernel time limit (default: the evaluator's default).
        progress: show a progress bar while re-running.
        allow_suite_change: accept a different suite-wide content hash as long as the
            submission's own task files are unchanged (noted in the report).

    Raises:
        ValueError: ``speedup_tolerance`` is negative.
    """
    if speedup_tolerance < 0:
        raise ValueError(f"speedup_tolerance must be >= 0, got {speedup_tolerance}")
    digest = data.get("digest", {}).get("value") if isinstance(data, dict) else None
    report = VerificationReport(
        accepted=False,
        reasons=[],
        digest=digest if isinstance(digest, str) else None,
        submission_backend=data.get("backend") if isinstance(data, dict) else None,
        submission_device=(data.get("device") or {}).get("name") if isinstance(data, dict) else None,
        speedup_tolerance=speedup_tolerance,
    )
    problems = integrity_problems(data) if isinstance(data, dict) else ["schema: $: not a JSON object"]
    local_tasks: dict[str, Any] = {}
    if not problems:
        more, local_tasks = suite_problems(data, allow_suite_change=allow_suite_change)
        problems += more
    if problems:
        report.reasons = problems
        report.notes.append("kernels were not re-run: the integrity checks failed")
        return report
    if allow_suite_change:
        from ascend_kernel_gym.leaderboard.records import suite_content_hash

        if suite_content_hash(local_tasks.values()) != data["suite"]["content_sha256"]:
            report.notes.append("the local suite differs from the submission's (allowed); its own task files match")

    from ascend_kernel_gym import __version__
    from ascend_kernel_gym.backends.detect import device_info, resolve_backend

    if data["package"]["version"] != __version__:
        report.notes.append(f"submission made with ascend-kernel-gym {data['package']['version']}, here {__version__}")
    evaluator = _given_evaluator(evaluator, backend)
    served = getattr(evaluator, "backend", None) if backend == "auto" else None
    local_backend = str(served) if isinstance(served, str) else resolve_backend(backend)
    local_device = getattr(evaluator, "device_name", None) or device_info(local_backend).name
    report.local_backend, report.local_device = local_backend, local_device
    report.speed_comparable = local_backend == data["backend"] and local_device == data["device"]["name"]
    if local_backend != data["backend"]:
        report.notes.append(
            f"re-run on {local_backend}, submission ran on {data['backend']}: correctness is checked, speed is not"
        )
    elif not report.speed_comparable:
        report.notes.append(f"different device ({local_device!r} vs {data['device']['name']!r}): speed not comparable")

    entries = [e for e in data["tasks"] if e["code"] is not None]
    results = _rerun(
        entries, local_tasks, local_backend, evaluator, workers, timeout_s, report.speed_comparable, progress
    )
    report.rerun = True
    for entry in data["tasks"]:
        verdict = compare_task(
            entry, results.get(entry["task_id"]), speed_comparable=report.speed_comparable, tolerance=speedup_tolerance
        )
        report.tasks.append(verdict)
        report.reasons += [f"{verdict.task_id}: {reason}" for reason in verdict.reasons]
    report.accepted = not report.reasons
    return report


def _given_evaluator(evaluator: Any, backend: str) -> Any:
    """The evaluator for ``evaluator``: the object, the one its address names, or ``AKG_EVALUATOR``'s (None: none)."""
    from ascend_kernel_gym.evaluation.remote import configured_address, evaluator_at

    if evaluator is None:
        evaluator = configured_address()
    return evaluator_at(evaluator, backend) if isinstance(evaluator, str) else evaluator


def _rerun(
    entries: list[dict[str, Any]],
    local_tasks: dict[str, Any],
    backend: str,
    evaluator: Any,
    workers: int | None,
    timeout_s: float | None,
    measure: bool,
    progress: bool,
) -> dict[str, dict[str, Any]]:
    from ascend_kernel_gym.evaluation.result import EvalRequest

    requests = [
        EvalRequest(task=local_tasks[e["task_id"]], code=e["code"], measure_performance=measure, timeout_s=timeout_s)
        for e in entries
    ]
    if not requests:
        return {}
    own = evaluator is None
    if own:
        from ascend_kernel_gym.evaluation import Evaluator

        options: dict[str, Any] = {"backend": backend}
        if workers:
            options["workers"] = workers
        evaluator = Evaluator(**options)
    try:
        if progress:
            from tqdm import tqdm

            results = []
            with tqdm(total=len(requests), desc="akg verify: re-running kernels", unit="kernel") as bar:
                chunk = max(1, int(getattr(evaluator, "workers", 0) or 2))
                for start in range(0, len(requests), chunk):
                    batch = evaluator.evaluate_many(requests[start : start + chunk])
                    results.extend(batch)
                    bar.update(len(batch))
        else:
            results = evaluator.evaluate_many(requests)
    finally:
        if own:
            evaluator.close()
    return {
        e["task_id"]: (r.to_dict() if hasattr(r, "to_dict") else dict(r)) for e, r in zip(entries, results, strict=True)
    }
