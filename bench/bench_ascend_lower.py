"""The ascend_lower stage: lowering time per kernel, its share of an evaluation, which layer catches what,
and the cost model's rank correlation on the H200 table before and after it uses the lowering facts.

    python bench/bench_ascend_lower.py --out bench/results/ascend_lower_cpu.md            # all parts
    python bench/bench_ascend_lower.py --parts timing corpus --out /tmp/lower.md          # some parts

Needs the triton-ascend environment (``akg ascend setup``). Parts:

* ``timing``: every bundled reference solution's launches at the ``full`` profile (captured on
  ``meta`` tensors) lowered for 910B3 with no cache: per kernel the compile time inside the worker
  (front end + Triton-IR passes + triton-adapter-opt), per solution the wall time of the whole
  lowering process (start, sandbox, importing triton-ascend, all its kernels), in the OS sandbox
  and without it, and a cache hit.
* ``share``: the stage's share of an evaluation. Interpreter: the evaluator itself
  (``stage_durations["ascend_lower"]`` against ``total``, cold cache, then cached) on a set of
  solutions. CUDA: no GPU here, so the lowering wall time measured here (it runs on the CPU of
  the calling process whatever the backend) is set against the H200 evaluation times measured in
  ``bench/results/gpu_evaluator_h200.json``: a projection, labelled so.
* ``corpus``: tests/ascend/lowering_corpus/ through the lowering and through our own rule checks.
* ``rank``: the variants of bench/results/gpu_cost_model_h200.json (same generator) re-counted on
  the interpreter and estimated for the H200 profile twice: as today, and with each launch's
  programs per SM capped by the on-chip working set the lowering reports (registers: vector buffers
  + dot accumulator against the 256 KB register file; shared memory: dot operands x num_stages
  against 228 KB), which the model otherwise ignores. Spearman's rho against the measured times.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "ascend"))

import _bootstrap  # noqa: E402, F401
import gpu_cost_model as cost_bench  # noqa: E402

from ascend_kernel_gym.ascend.lower_env import ENV_DIR_VAR, LowerEnv, load_env  # noqa: E402
from ascend_kernel_gym.ascend.lowering import LoweringCache, lower_launches  # noqa: E402

PARTS = ("timing", "share", "corpus", "rank")
#: GH100 (H200) streaming multiprocessor: 64K 32-bit registers, 228 KB of shared memory
H200_REGISTER_BYTES = 65536 * 4
H200_SHARED_BYTES = 228 * 1024
#: Triton's default num_stages on CUDA (software pipelining copies of the dot operands in shared memory)
CUDA_DEFAULT_STAGES = 3


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _solutions() -> list[Any]:
    from ascend_kernel_gym.tasks.suite import load_suite

    return [t for t in load_suite("core") if t.solution_source()]


# --- timing ---------------------------------------------------------------------------------------
def part_timing(env: LowerEnv) -> dict[str, Any]:
    from ascend_kernel_gym.ascend.capture import capture_launches
    from ascend_kernel_gym.evaluation.lower_stage import WorkerRunner

    rows = []
    for task in _solutions():
        code = task.solution_source() or ""
        launches = capture_launches(task, code, "full")
        row: dict[str, Any] = {"task": task.id}
        for label, sandbox in (("sandboxed", True), ("plain", False)):
            runner = WorkerRunner(env, sandbox=sandbox)
            cache = LoweringCache()
            report = lower_launches(code, launches, "910B3", runner, cache=cache)
            row[f"{label}_wall_s"] = runner.last.get("seconds")
            if sandbox:
                row["kernels"] = [
                    {"kernel": k.kernel, "status": k.status, "compile_s": k.seconds} for k in report.kernels
                ]
                started = time.perf_counter()
                lower_launches(code, launches, "910B3", runner, cache=cache)
                row["cached_s"] = time.perf_counter() - started
        rows.append(row)
    compile_s = [k["compile_s"] for r in rows for k in r["kernels"]]
    summary = {
        "solutions": len(rows),
        "kernels": len(compile_s),
        "lowered": sum(k["status"] == "lowered" for r in rows for k in r["kernels"]),
        "compile_s_median": _median(compile_s),
        "compile_s_max": max(compile_s) if compile_s else None,
        "sandboxed_wall_s_median": _median([r["sandboxed_wall_s"] for r in rows]),
        "sandboxed_wall_s_max": max(r["sandboxed_wall_s"] for r in rows),
        "plain_wall_s_median": _median([r["plain_wall_s"] for r in rows]),
        "cached_s_median": _median([r["cached_s"] for r in rows]),
    }
    return {"summary": summary, "rows": rows}


# --- share of an evaluation -----------------------------------------------------------------------
def part_share(env: LowerEnv, tasks: list[str], timing: dict[str, Any] | None) -> dict[str, Any]:
    from ascend_kernel_gym.evaluation import EvalRequest, Evaluator
    from ascend_kernel_gym.tasks.suite import get_task

    os.environ[ENV_DIR_VAR] = str(env.path)
    os.environ["AKG_CACHE_DIR"] = tempfile.mkdtemp(prefix="akg-lower-bench-")  # a cold lowering cache
    rows = []
    with Evaluator(backend="interpreter", workers=1, cache=False, ascend_lower="warn") as evaluator:
        evaluator.warm_up()
        for task_id in tasks:
            task = get_task(task_id)
            row: dict[str, Any] = {"task": task_id}
            for label in ("cold", "cached"):
                result = evaluator.evaluate(EvalRequest(task=task, code=task.solution_source() or "", seed=0))
                total = result.stage_durations.get("total", 0.0)
                lower = result.stage_durations.get("ascend_lower", 0.0)
                row[f"{label}_lower_s"], row[f"{label}_total_s"] = lower, total
                row[f"{label}_share"] = lower / total if total else None
                row["ok"] = result.ok
            rows.append(row)
    cuda = []
    measured = json.loads((ROOT / "bench" / "results" / "gpu_evaluator_h200.json").read_text())["solutions"]
    lowering_wall = {r["task"]: r["sandboxed_wall_s"] for r in (timing or {}).get("rows", [])}
    for row in measured:
        walls = [w for w in row.get("wall_s", []) if w]
        if row["task"] in lowering_wall and walls:
            lower = lowering_wall[row["task"]]
            h200 = statistics.median(walls)
            cuda.append({"task": row["task"], "h200_eval_s": h200, "lower_s": lower, "share": lower / (h200 + lower)})
    summary = {
        "interpreter_share_cold_median": _median([r["cold_share"] for r in rows if r["cold_share"] is not None]),
        "interpreter_share_cached_median": _median([r["cached_share"] for r in rows if r["cached_share"] is not None]),
        "interpreter_lower_s_cold_median": _median([r["cold_lower_s"] for r in rows]),
        "interpreter_total_s_cold_median": _median([r["cold_total_s"] for r in rows]),
        "cuda_projected_share_median": _median([r["share"] for r in cuda]),
        "cuda_projected_share_max": max((r["share"] for r in cuda), default=None),
        "cuda_tasks": len(cuda),
    }
    return {"summary": summary, "interpreter": rows, "cuda_projection": cuda}


# --- which layer catches what ---------------------------------------------------------------------
def part_corpus(env: LowerEnv) -> dict[str, Any]:
    from lowering_cases import load_cases

    from ascend_kernel_gym.ascend.checks import run_ascend_checks
    from ascend_kernel_gym.evaluation.lower_stage import WorkerRunner

    runner = WorkerRunner(env, sandbox=True)
    rows = []
    for case in load_cases():
        report = lower_launches(case.code, case.launches, "910B3", runner, cache=LoweringCache())
        main = report.findings()[0]
        rules = run_ascend_checks(case.code, case.launches, "910B3")
        rows.append({
            "case": case.name,
            "expected": case.expect["outcome"],
            "lowering": main["rule"],
            "stage": main["value"] if main["rule"] == "lowering_failed" else "",
            "first_line": main["message"].split("): ", 1)[-1],
            "rule_errors": sorted({f["rule"] for f in rules if f["severity"] == "error"}),
            "rule_warnings": sorted({f["rule"] for f in rules if f["severity"] == "warning"}),
        })  # fmt: skip
    return {"rows": rows}


# --- rank correlation on the H200 table -----------------------------------------------------------
def counters_job(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    from ascend_kernel_gym.ascend.cost_model import estimate_in_process
    from ascend_kernel_gym.tasks.runtime import instantiate
    from ascend_kernel_gym.tasks.suite import get_task

    torch.set_num_threads(1)
    try:
        task = get_task(job["task_id"])
        tm = instantiate(task, "full")
        torch.manual_seed(0)
        init = tm.get_init_inputs()
        reference = tm.Model(*init)
        torch.manual_seed(1)
        inputs = tm.get_inputs()
        torch.manual_seed(2)
        out = estimate_in_process(job["code"], init, inputs, "H200", reference=reference, max_programs=8)
        return {"counters": out.get("counters"), "est_ms": out.get("est_ms"), "ref_est_ms": out.get("reference_est_ms")}
    except Exception as exc:  # a failing variant is reported, the others go on
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def occupancy_cap(facts: dict[str, Any], num_stages: int | None) -> int | None:
    """Programs one H200 SM can hold given the on-chip working set the lowering reports (None: no limit)."""
    registers = int(facts.get("vector_bytes") or 0) + int(facts.get("accumulator_bytes") or 0)
    shared = int(facts.get("cube_bytes") or 0) * int(num_stages or CUDA_DEFAULT_STAGES)
    caps = []
    if registers:
        caps.append(max(1, H200_REGISTER_BYTES // registers))
    if shared:
        caps.append(max(1, H200_SHARED_BYTES // shared))
    return min(caps) if caps else None


def estimate_after(counters: dict[str, Any], launch_facts: list[dict[str, Any] | None]) -> tuple[float, float, int]:
    """(est_ms as today, est_ms with each launch's residency capped by its working set, launches whose
    residency the cap lowered)."""
    from ascend_kernel_gym.ascend.chips import load_chip
    from ascend_kernel_gym.ascend.counters import KernelCounters
    from ascend_kernel_gym.ascend.estimator import estimate

    chip = load_chip("H200")
    kc = KernelCounters.from_dict(counters)
    before = float(estimate(kc, None, chip)["est_ms"] or 0.0)
    after, changed = 0.0, 0
    for index, launch in enumerate(kc.launches):
        facts = launch_facts[index] if index < len(launch_facts) else None
        cap = occupancy_cap(facts["facts"], facts.get("num_stages")) if facts else None
        profile = chip
        default = chip.resident_programs_per_core(launch.num_warps)
        if cap is not None and cap < default:
            profile = dataclasses.replace(chip, max_resident_programs_per_core=cap)
            changed += 1
        single = dataclasses.replace(kc, launches=[launch])
        after += float(estimate(single, None, profile)["est_ms"] or 0.0)
    return before, after, changed


def _launch_facts(task: Any, code: str, runner: Any) -> list[dict[str, Any] | None]:
    """Per captured launch (in order): the lowering facts of its kernel and its num_stages."""
    from ascend_kernel_gym.ascend.capture import capture_launches

    launches = capture_launches(task, code, "full")
    report = lower_launches(code, launches, "910B3", runner, cache=LoweringCache())
    by_key = {}
    for item in report.kernels:
        if item.facts is not None:
            by_key[(item.kernel, json.dumps(item.spec["constants"], sort_keys=True, default=str))] = item.facts
    out: list[dict[str, Any] | None] = []
    for launch in launches:
        key = (launch.kernel, json.dumps(launch.constexprs, sort_keys=True, default=str))
        facts = by_key.get(key) or next((f for (k, _), f in by_key.items() if k == launch.kernel), None)
        out.append({"facts": facts, "num_stages": launch.num_stages} if facts else None)
    return out


def part_rank(env: LowerEnv, workers: int, tasks: list[str] | None = None) -> dict[str, Any]:
    from ascend_kernel_gym.evaluation.lower_stage import WorkerRunner
    from ascend_kernel_gym.tasks.suite import get_task

    table = json.loads((ROOT / "bench" / "results" / "gpu_cost_model_h200.json").read_text())
    usable = [r for r in table["rows"] if r.get("correct") and r.get("measured_ms") and r.get("est_ms")]
    usable = [r for r in usable if tasks is None or r["task"] in tasks]
    runner = WorkerRunner(env, sandbox=False)
    variants: dict[str, dict[str, str]] = {}
    jobs, facts = [], []
    for row in usable:
        task = get_task(row["task"])
        if row["task"] not in variants:
            variants[row["task"]] = dict(cost_bench.make_variants(task.solution_source() or "", 4))
        code = variants[row["task"]][row["variant"]]
        jobs.append({"task_id": row["task"], "code": code})
        facts.append(_launch_facts(task, code, runner))
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(workers, initializer=cost_bench._init_estimator) as pool:
        counted = pool.map(counters_job, jobs, chunksize=1)
    rows = []
    for row, out, launch_facts in zip(usable, counted, facts, strict=True):
        if not out.get("counters"):
            continue
        before, after, capped = estimate_after(out["counters"], launch_facts)
        ref = out.get("ref_est_ms")
        rows.append({
            "task": row["task"], "variant": row["variant"], "measured_ms": row["measured_ms"],
            "ref_ms": row.get("ref_ms"), "table_est_ms": row["est_ms"], "before_ms": before, "after_ms": after,
            "capped": capped, "before_speedup": ref / before if ref and before else None,
            "after_speedup": ref / after if ref and after else None,
        })  # fmt: skip
    return {
        "seconds": time.perf_counter() - started,
        "before": rank_summary(rows, "before_ms", "before_speedup"),
        "after": rank_summary(rows, "after_ms", "after_speedup"),
        "table": rank_summary(rows, "table_est_ms", None),
        "rows": rows,
    }


def rank_summary(rows: list[dict[str, Any]], key: str, speedup_key: str | None) -> dict[str, Any]:
    """The H200 table's statistics for the estimate in ``key``."""
    rhos, picks = [], []
    for task in dict.fromkeys(r["task"] for r in rows):
        mine = [r for r in rows if r["task"] == task]
        if len(mine) < 3:
            continue
        rho = cost_bench.spearman([r[key] for r in mine], [r["measured_ms"] for r in mine])
        if rho is not None:
            rhos.append(rho)
        picks.append(min(mine, key=lambda r: r["measured_ms"])["variant"] == min(mine, key=lambda r: r[key])["variant"])
    originals = [
        r for r in rows if r["variant"] == "original" and r.get("ref_ms") and speedup_key and r.get(speedup_key)
    ]
    speed = None
    if speedup_key and len(originals) >= 3:
        speed = cost_bench.spearman(
            [r[speedup_key] for r in originals], [r["ref_ms"] / r["measured_ms"] for r in originals]
        )
    return {
        "variants": len(rows),
        "pooled_rho": cost_bench.spearman([r[key] for r in rows], [r["measured_ms"] for r in rows]),
        "mean_task_rho": statistics.fmean(rhos) if rhos else None,
        "median_task_rho": statistics.median(rhos) if rhos else None,
        "top1": sum(picks) / len(picks) if picks else None,
        "speedup_rho": speed,
    }


# --- report ---------------------------------------------------------------------------------------
def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "/") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _render_timing(s: dict[str, Any]) -> list[str]:
    rows = [
        ["compile per kernel, in the worker (front end + Triton-IR passes + triton-adapter-opt)",
         f"{_fmt(s['compile_s_median'])} s", f"{_fmt(s['compile_s_max'])} s"],
        ["whole lowering per solution in the OS sandbox (process, sandbox, import triton-ascend, all kernels)",
         f"{_fmt(s['sandboxed_wall_s_median'])} s", f"{_fmt(s['sandboxed_wall_s_max'])} s"],
        ["the same without the sandbox", f"{_fmt(s['plain_wall_s_median'])} s", "-"],
        ["cache hit (the same kernels again)", f"{_fmt(s['cached_s_median'] * 1e3)} ms", "-"],
    ]  # fmt: skip
    head = "## Lowering time (the reference solutions' launches at the `full` profile, 910B3, no cache)"
    tail = f"{s['lowered']} of {s['kernels']} kernels lowered ({s['solutions']} solutions)."
    return [head, "", *_table(["measure", "median", "max"], rows), tail, ""]


def _render_share(s: dict[str, Any]) -> list[str]:
    rows = [
        ["interpreter (measured here, cold lowering cache)", f"{_fmt(s['interpreter_lower_s_cold_median'])} s",
         f"{_fmt(s['interpreter_total_s_cold_median'])} s", _fmt(s["interpreter_share_cold_median"])],
        ["interpreter, lowering cached", "-", "-", _fmt(s["interpreter_share_cached_median"])],
        [f"cuda (projection over {s['cuda_tasks']} tasks: lowering measured here, H200 evaluations from "
         "gpu_evaluator_h200.json)", "-", "-",
         f"{_fmt(s['cuda_projected_share_median'])} (max {_fmt(s['cuda_projected_share_max'])})"],
    ]  # fmt: skip
    note = (
        "Medians over the solutions. The cuda row is not a GPU measurement: the lowering runs on the CPU of the "
        "calling process whatever the backend, so its time is the same there; the H200 evaluation times are "
        "those of bench/gpu_evaluator.py."
    )
    return ["## Share of an evaluation", "", *_table(["backend", "lowering", "evaluation", "share"], rows), note, ""]


def _render_corpus(rows: list[dict[str, Any]]) -> list[str]:
    table = [
        [r["case"], r["lowering"], r["first_line"][:110], ", ".join(r["rule_errors"]) or "-",
         ", ".join(r["rule_warnings"]) or "-"]
        for r in rows
    ]  # fmt: skip
    header = ["case", "lowering", "first line", "our rules: errors", "our rules: warnings"]
    return ["## Which layer catches what (tests/ascend/lowering_corpus/)", "", *_table(header, table)]


def _render_rank(rk: dict[str, Any]) -> list[str]:
    labels = {
        "pooled_rho": "rho pooled over all (task, variant) pairs",
        "mean_task_rho": "mean per-task rho",
        "median_task_rho": "median per-task rho",
        "top1": "model picks the fastest variant",
        "speedup_rho": "rho of est_speedup vs measured speedup (originals)",
    }
    rows = [
        [label, _fmt(rk["table"].get(key)), _fmt(rk["before"][key]), _fmt(rk["after"][key])]
        for key, label in labels.items()
    ]
    header = [
        "statistic",
        "table (published estimates)",
        "before (recounted here)",
        "after (working-set occupancy cap)",
    ]
    capped = sum(1 for r in rk["rows"] if r["capped"])
    tail = (
        f"{rk['before']['variants']} variants; the cap lowered the programs per SM of at least one launch in {capped}."
    )
    return [
        "## Cost model on the H200 table, before and after it uses the lowering facts",
        "",
        *_table(header, rows),
        tail,
        "",
    ]


def render(meta: dict[str, Any], data: dict[str, Any]) -> str:
    out = [
        "# The ascend_lower stage on a CPU machine",
        "",
        f"{meta['date']}, {meta['machine']}; `{meta['command']}`.",
        "",
    ]
    if "timing" in data:
        out += _render_timing(data["timing"]["summary"])
    if "share" in data:
        out += _render_share(data["share"]["summary"])
    if "corpus" in data:
        out += _render_corpus(data["corpus"]["rows"])
    if "rank" in data:
        out += _render_rank(data["rank"])
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--share-tasks", nargs="+", default=None, help="tasks for the interpreter share (default: 12)")
    parser.add_argument("--workers", type=int, default=2, help="interpreter processes of the rank part")
    parser.add_argument("--rank-tasks", nargs="+", default=None, help="tasks of the rank part (default: all)")
    parser.add_argument(
        "--reuse", type=Path, default=None, help="a previous run's JSON: parts not run now come from it"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    env = load_env()
    if env is None:
        print("the triton-ascend environment is not set up: run `akg ascend setup`", file=sys.stderr)
        return 2
    started = time.perf_counter()
    data: dict[str, Any] = {}
    if args.reuse is not None:
        previous = json.loads(args.reuse.read_text())
        data.update({part: previous[part] for part in PARTS if part in previous and part not in args.parts})
    if "timing" in args.parts:
        data["timing"] = part_timing(env)
    if "corpus" in args.parts:
        data["corpus"] = part_corpus(env)
    if "rank" in args.parts:
        data["rank"] = part_rank(env, args.workers, args.rank_tasks)
    if "share" in args.parts:
        tasks = args.share_tasks or [t.id for t in _solutions()][::4]
        data["share"] = part_share(env, tasks, data.get("timing"))
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{machine}, triton-ascend {env.triton_ascend}",
        "command": "python bench/bench_ascend_lower.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip
    if args.reuse is not None:
        meta["command"] += f" (parts {', '.join(p for p in PARTS if p in data and p not in args.parts)} from "
        meta["command"] += f"{previous['meta']['date']}: {previous['meta']['command']})"
    text = render(meta, {part: data[part] for part in PARTS if part in data})
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, **data}, indent=1, default=str))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
