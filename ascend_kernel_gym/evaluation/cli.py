"""``akg check FILE --task ID_OR_PATH``: evaluate one kernel file against one task.

Exit status is 0 whenever the check ran, whatever the verdict (use ``--json`` and read
``correct`` / ``error_type`` to script on the verdict); 2 on misuse (unknown task, missing file).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ascend_kernel_gym.evaluation.result import EvalResult
from ascend_kernel_gym.tasks.task import decode_python_source


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check one Triton kernel file against a task (static, compile, correctness, speed)",
        description="Evaluate FILE (a module defining ModelNew and its @triton.jit kernels) against a bundled "
        "task id or a KernelBench-format task file.",
    )
    parser.add_argument("file", metavar="FILE", help="the candidate's Python file")
    parser.add_argument("--task", required=True, metavar="ID_OR_PATH", help="task id (core/L1/relu) or a task file")
    parser.add_argument("--backend", default="auto", help="auto, interpreter, cuda or npu (default: auto)")
    parser.add_argument("--profile", default=None, help="shape profile (default: small on the interpreter, else full)")
    parser.add_argument("--trials", type=int, default=5, help="correctness trials (default: 5)")
    parser.add_argument("--timeout", type=float, default=None, help="wall-clock limit in seconds")
    parser.add_argument("--seed", type=int, default=None, help="fix the hidden input seeds (reproducible runs)")
    parser.add_argument("--no-perf", action="store_true", help="skip the profiling stage")
    parser.add_argument(
        "--ascend-checks",
        default="warn",
        choices=("off", "warn", "enforce"),
        help="Ascend rule checks: off, warn (default) or enforce (violations fail the check)",
    )
    parser.add_argument("--ascend-profile", default="910B3", help="Ascend chip profile for checks and estimates")
    parser.add_argument("--json", action="store_true", help="print the EvalResult as JSON")
    parser.set_defaults(func=_cmd_check, command="check")


def _cmd_check(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.evaluation.evaluator import Evaluator
    from ascend_kernel_gym.evaluation.feedback import render_feedback
    from ascend_kernel_gym.evaluation.result import EvalRequest
    from ascend_kernel_gym.tasks.suite import get_task

    path = Path(args.file)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    code = read_candidate(path)
    task = get_task(args.task)
    if args.trials < 1:
        raise ValueError("--trials must be >= 1")
    request = EvalRequest(
        task=task,
        code=code,
        profile=args.profile,
        num_trials=args.trials,
        measure_performance=not args.no_perf,
        timeout_s=args.timeout,
        seed=args.seed,
    )
    with Evaluator(
        backend=args.backend,
        workers=1,
        cache=False,
        start=False,
        ascend_checks=args.ascend_checks,
        ascend_profile=args.ascend_profile,
    ) as evaluator:
        if not args.json:
            from rich.console import Console

            with Console(stderr=True).status(f"checking {path.name} against {task.id} on {evaluator.backend} ..."):
                result = evaluator.evaluate(request)
        else:
            result = evaluator.evaluate(request)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        _print_table(result, path.name)
        report = _ascend_report(result)
        if report:
            print()
            print(report)
        print()
        print(render_feedback(result))
    return 0


def read_candidate(path: Path) -> str:
    """The candidate file's text as Python reads it: a UTF-8 byte-order mark is dropped and a
    PEP 263 coding line is honoured (:func:`decode_python_source`). The evaluator stores the text
    as UTF-8, so a coding line that names another encoding is rewritten to ``utf-8`` in place.
    Bytes Python could not decode become U+FFFD, so the candidate still gets its verdict."""
    data = path.read_bytes()
    try:
        code = decode_python_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        code = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
        return code.removeprefix("\ufeff")
    lines = code.split("\n", 2)
    for index, line in enumerate(lines[:2]):
        match = _CODING_LINE.match(line)
        if match:
            if match.group(2).lower().replace("_", "-") not in ("utf-8", "utf8"):
                lines[index] = line[: match.start(2)] + "utf-8" + line[match.end(2) :]
            break
        if line.strip() and not line.lstrip().startswith("#"):
            break  # PEP 263: a coding line on line 2 counts only after a comment or blank line 1
    return "\n".join(lines)


#: A PEP 263 coding line (the regular expression of the PEP).
_CODING_LINE = re.compile(r"^([ \t\f]*#.*?coding[:=][ \t]*)([-\w.]+)")


def _ascend_report(result: EvalResult) -> str:
    """The Ascend helper's report of findings and estimate, when that module is installed."""
    if not (result.ascend_checks or result.estimate):
        return ""
    try:
        from ascend_kernel_gym.ascend.checks import format_ascend_report
    except ImportError:
        return ""
    return format_ascend_report(result)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _print_table(result: EvalResult, name: str) -> None:
    from rich.console import Console
    from rich.table import Table

    verdict = "[green]correct[/green]" if result.ok else ("[red]hack[/red]" if result.hack else "[red]failed[/red]")
    table = Table(title=f"akg check {name}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    rows = [
        ("task", result.task_id),
        ("backend / profile", f"{result.backend} / {result.profile}"),
        ("device", result.device or "-"),
        ("verdict", verdict),
        ("error type", result.error_type.value),
        ("stage reached", result.stage.value),
        ("trials passed", f"{result.trials_passed}/{result.trials_total}"),
        ("max abs / rel error", f"{_fmt(result.max_abs_err)} / {_fmt(result.max_rel_err)}"),
        ("reference ms", _fmt(result.ref_ms)),
        ("kernel ms", _fmt(result.kernel_ms)),
        ("speedup", "-" if result.speedup is None else f"{result.speedup:.3f}x"),
        ("kernels launched", ", ".join(sorted({launch.kernel for launch in result.launches})) or "-"),
        ("torch ops in forward", ", ".join(result.torch_ops) or "-"),
        ("seconds", ", ".join(f"{k} {v:.2f}" for k, v in result.stage_durations.items())),
    ]
    if result.estimate:
        rows.append(("estimate (cost model)", json.dumps(result.estimate, default=str)[:300]))
    for key, value in rows:
        table.add_row(key, str(value))
    Console(file=sys.stdout).print(table)
