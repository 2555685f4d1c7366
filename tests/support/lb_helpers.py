"""Helpers for the leaderboard tests: hand-made eval results and run directories (no evaluator)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ascend_kernel_gym.leaderboard.records import (
    RUN_SCHEMA,
    ResultsWriter,
    best_turn_index,
    suite_content_hash,
    write_manifest,
)


def result(
    *,
    correct: bool = False,
    compiled: bool | None = None,
    hack: bool = False,
    speedup: float | None = None,
    format_ok: bool = True,
    error_type: str | None = None,
    backend: str = "cuda",
) -> dict[str, Any]:
    """A minimal EvalResult dict with the fields the metrics read."""
    compiled = correct or hack if compiled is None else compiled
    if error_type is None:
        error_type = "none" if correct and not hack else ("torch_fallback" if hack else "value_mismatch")
    return {
        "task_id": "t",
        "backend": backend,
        "profile": "full",
        "format_ok": format_ok,
        "static_ok": format_ok,
        "compiled": compiled,
        "correct": correct,
        "hack": hack,
        "speedup": speedup,
        "ref_ms": 1.0 if speedup else None,
        "kernel_ms": (1.0 / speedup) if speedup else None,
        "error_type": error_type,
        "error_message": "",
    }


def episode(task_id: str, sample: int, *turn_results: dict[str, Any] | None, code: str = "CODE") -> dict[str, Any]:
    """An episode record whose turns have the given eval results (``None`` = no code in that turn)."""
    turns = []
    for index, res in enumerate(turn_results):
        turns.append(
            {
                "turn": index,
                "action": "...",
                "code": None if res is None else f"{code} {task_id} {sample} {index}",
                "eval": res if res is not None else {"format_ok": False, "error_type": "no_code"},
                "score": 0.0,
                "reward": 0.0,
            }
        )
    best = best_turn_index(turns)
    return {
        "task_id": task_id,
        "sample": sample,
        "agent": "hand",
        "turns": turns,
        "best_turn": best,
        "best_code": turns[best]["code"] if best is not None else None,
        "best_result": turns[best]["eval"] if best is not None else None,
        "error": None,
    }


def task_rows(ids_levels_categories: list[tuple[str, int, str]]) -> list[dict[str, Any]]:
    return [{"id": i, "level": lvl, "category": cat} for i, lvl, cat in ids_levels_categories]


def write_fake_run(
    run_dir: Path,
    records: list[dict[str, Any]],
    *,
    task_ids: list[str],
    backend: str = "cuda",
    device_name: str = "NVIDIA H200",
    agent: dict[str, Any] | None = None,
    samples: int = 1,
) -> Path:
    """A run directory over real core tasks (so suite hashes are real) with hand-made episodes."""
    from ascend_kernel_gym.tasks.suite import load_suite

    suite = load_suite("core", split="all")
    by_id = {t.id: t for t in suite}
    tasks = [by_id[i] for i in task_ids]
    manifest = {
        "schema": RUN_SCHEMA,
        "agent": agent or {"name": "hand", "class": "tests.Hand"},
        "suite": {"name": "core", "content_sha256": suite_content_hash(suite), "tasks_in_suite": len(suite)},
        "backend": backend,
        "device": {"backend": backend, "name": device_name, "device": "cuda" if backend == "cuda" else "cpu"},
        "versions": {"torch": "2.13.0", "triton": "3.9.0", "torch_npu": None, "python": "3.11"},
        "config": {
            "agent": "hand",
            "suite": "core",
            "split": "all",
            "levels": None,
            "backend": backend,
            "turns": 1,
            "samples": samples,
            "reward": "default",
        },
        "tasks": [{"id": t.id, "level": t.level, "category": t.category, "task_sha256": t.source_hash} for t in tasks],
        "started": "2026-01-01T00:00:00+00:00",
        "finished": "2026-01-01T00:10:00+00:00",
        "status": "complete",
    }
    write_manifest(run_dir, manifest)
    writer = ResultsWriter(run_dir)
    for record in records:
        writer.append(record)
    return run_dir


INJECTED_NAME = 'beta <img src=x onerror="window.__pwned=1">\'"&'
INJECTED_CODE = "</code></pre><script>window.__pwned = 2;</script>"


def make_submission_dir(root: Path) -> Path:
    """Three valid submissions (plus a tampered file, a non-submission and a verification report) in one directory.

    alpha (cuda): 2 of 3 correct; beta (interpreter, hostile name and code): 1 of 3; gamma (cuda): 3 of 3.
    """
    import json

    from ascend_kernel_gym.leaderboard.submission import build_submission, write_submission

    ids = ["core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"]
    plans = {
        "alpha": (
            "cuda",
            [result(correct=True, speedup=1.4), result(correct=True, speedup=0.7), result(compiled=True)],
        ),
        INJECTED_NAME: (
            "interpreter",
            [
                result(correct=True, backend="interpreter"),
                result(compiled=True),
                result(compiled=False, error_type="compile_error"),
            ],
        ),
        "gamma": (
            "cuda",
            [result(correct=True, speedup=2.2), result(correct=True, speedup=1.1), result(correct=True, speedup=3.0)],
        ),
    }
    out = root / "submissions"
    out.mkdir(parents=True)
    for index, (name, (backend, results)) in enumerate(plans.items()):
        records = [
            episode(task_id, 0, res, code=INJECTED_CODE if backend == "interpreter" else "CODE")
            for task_id, res in zip(ids, results)
        ]
        run = write_fake_run(
            root / f"run{index}",
            records,
            task_ids=ids,
            backend=backend,
            device_name="NVIDIA H200" if backend == "cuda" else "CPU (x86_64, Triton interpreter)",
            agent={"name": name, "class": "tests.Hand", "model": f"model-{index}"},
        )
        data = build_submission(run)
        path = write_submission(data, out / f"sub{index}.json")
        if name == "alpha":
            report = {
                "digest": data["digest"]["value"],
                "accepted": True,
                "local_backend": "cuda",
                "tasks": [{"task_id": ids[0], "verdict": "agree", "reasons": []}],
            }
            path.with_name("sub0.verify.json").write_text(json.dumps(report))
            tampered = json.loads(path.read_text())
            tampered["tasks"][2]["claimed"]["correct"] = True
            (out / "tampered.json").write_text(json.dumps(tampered))
    (out / "notes.json").write_text('{"hello": "not a submission"}')
    return out


class InstantEvaluator:
    """Answers at once: code containing ``ModelNew`` is correct, anything else fails to compile."""

    backend = "interpreter"

    def __init__(self) -> None:
        import threading

        self.calls = 0
        self._lock = threading.Lock()

    def evaluate(self, request):
        from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage

        with self._lock:
            self.calls += 1
        base = dict(
            task_id=request.task.id,
            backend="interpreter",
            profile=request.profile or "small",
            code_hash="h",
            format_ok=True,
            static_ok=True,
        )
        if "ModelNew" in request.code:
            return EvalResult(**base, stage=Stage.DONE, compiled=True, correct=True)
        return EvalResult(**base, stage=Stage.COMPILE, error_type=ErrorType.COMPILE_ERROR, error_message="boom")


def env_factory_with(evaluator):
    """An ``env_factory`` for ``run_eval`` whose envs all use ``evaluator``."""
    from dataclasses import replace

    from ascend_kernel_gym.leaderboard.runner import default_env_factory

    def factory(config, backend):
        return default_env_factory(replace(config, env_kwargs={**config.env_kwargs, "evaluator": evaluator}), backend)

    return factory
