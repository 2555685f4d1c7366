"""``akg check FILE --task ID_OR_PATH``: evaluate one kernel file against one task.

Exit status: 0 when the kernel is correct (and not a hack), 1 when the check ran and the verdict
is anything else (wrong, failed to compile, hack, ...), 2 on misuse (unknown task, a path that is
a directory or cannot be read). ``--exit-zero`` turns 1 into 0 for scripts that read the verdict
from ``--json`` instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ascend_kernel_gym.evaluation.result import EvalResult
from ascend_kernel_gym.tasks.task import decode_python_source

#: Exit status of ``akg check`` when the check ran and the kernel is not correct.
EXIT_NOT_CORRECT = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check one Triton kernel file against a task (static, compile, correctness, speed)",
        description="Evaluate FILE (a module defining ModelNew and its @triton.jit kernels) against a bundled "
        "task id or a KernelBench-format task file. Exit status: 0 correct, 1 not correct (any other verdict), "
        "2 misuse (unknown task, unreadable file).",
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
    parser.add_argument(
        "--ascend-lower",
        default="warn",
        choices=("off", "warn", "enforce"),
        help="lower the launched kernels through triton-ascend (needs `akg ascend setup`): off, warn (default) or "
        "enforce (a kernel that does not lower or overflows UB fails the check)",
    )
    parser.add_argument(
        "--evaluator",
        default=None,
        metavar="ADDRESS",
        help="evaluate there instead of in a local pool: ray://auto, ray://HOST:PORT (a Ray cluster) or HOST:PORT "
        "(an EvaluatorServer); default: the AKG_EVALUATOR environment variable, else a local pool",
    )
    parser.add_argument("--json", action="store_true", help="print the EvalResult as JSON")
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 whatever the verdict (default: 1 when not correct)"
    )
    parser.set_defaults(func=_cmd_check, command="check")


def candidate_path(file: str) -> Path:
    """``file`` as a readable regular file.

    Raises:
        FileNotFoundError: it does not exist, is a directory or another kind of non-file.
        ValueError: it cannot be read (permissions).
    """
    path = Path(file)
    if path.is_dir():
        raise FileNotFoundError(f"{path} is a directory; give the kernel's Python file (e.g. {path}/kernel.py)")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not a regular file")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    return path


def _cmd_check(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.evaluation.evaluator import Evaluator
    from ascend_kernel_gym.evaluation.remote import configured_address, evaluator_at
    from ascend_kernel_gym.evaluation.result import EvalRequest
    from ascend_kernel_gym.tasks.suite import get_task

    path = candidate_path(args.file)
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
    options = {
        "cache": False, "ascend_checks": args.ascend_checks, "ascend_profile": args.ascend_profile,
        "ascend_lower": args.ascend_lower,
    }  # fmt: skip
    address = args.evaluator or configured_address()
    if address is not None:
        evaluator = evaluator_at(address, args.backend, **options)  # a Ray cluster's or an EvaluatorServer's
    else:
        evaluator = Evaluator(backend=args.backend, workers=1, start=False, **options)
    try:
        if not args.json:
            from rich.console import Console
            from rich.markup import escape

            where = getattr(evaluator, "backend", args.backend)
            status = f"checking {escape(path.name)} against {escape(task.id)} on {where} ..."
            with Console(stderr=True).status(status):
                result = evaluator.evaluate(request)
        else:
            result = evaluator.evaluate(request)
    finally:
        if address is None:
            evaluator.close()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True))
    else:
        print_check(result, path.name, empty=not code.strip(), ascend_checks=args.ascend_checks)
    if result.ok or args.exit_zero:
        return 0
    return EXIT_NOT_CORRECT


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


def verdict_text(result: EvalResult) -> str:
    """``correct``, ``hack: <type>`` or ``failed: <type> (stage <stage>)``."""
    if result.ok:
        return "correct"
    if result.hack:
        return f"hack: {result.error_type.value}"
    return f"failed: {result.error_type.value} (stage {result.stage.value})"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


#: Top-level stages of ``EvalResult.stage_durations`` shown in the one-line time summary.
_TIMED_STAGES = ("static", "compile", "correctness", "performance")


def time_summary(durations: dict[str, float]) -> str:
    """``3.1 s in all: compile 0.32 s, correctness 0.61 s`` from the evaluator's stage timers."""
    parts = [f"{name} {durations[name]:.2f} s" for name in _TIMED_STAGES if name in durations]
    total = durations.get("total", durations.get("child_wall"))
    head = "-" if total is None else f"{total:.1f} s in all"
    return head + (": " + ", ".join(parts) if parts else "")


def estimate_sentence(estimate: dict[str, Any]) -> str:
    """The cost model's estimate as a sentence that names its baseline."""
    chip = estimate.get("chip", "the target chip")
    est_ms = estimate.get("est_ms")
    if not isinstance(est_ms, (int, float)):
        return "no estimate"
    text = f"about {est_ms:.3g} ms per call on an Ascend {chip}"
    ref_ms, speedup = estimate.get("reference_est_ms"), estimate.get("est_speedup")
    if isinstance(speedup, (int, float)) and isinstance(ref_ms, (int, float)):
        text += (
            f", {speedup:.2f}x the speed of the task's PyTorch reference run eagerly on the same chip "
            f"(estimated {ref_ms:.3g} ms)"
        )
    roofline = estimate.get("roofline_ms")
    if isinstance(roofline, (int, float)):
        text += f"; the roofline floor is {roofline:.3g} ms"
    return text + ". A cost-model estimate from the work the kernel did on the interpreter, not a measurement."


def lowering_summary(findings: list[dict[str, Any]]) -> str:
    """One line on the ``ascend_lower`` stage's findings: kernels lowered, failed, skipped (or why none ran)."""
    counts: dict[str, int] = {}
    for finding in findings:
        counts[str(finding.get("rule"))] = counts.get(str(finding.get("rule")), 0) + 1
    if "lowering_unavailable" in counts:
        return str(findings[0].get("message", "not available"))
    names = {"lowered": "lowered", "lowering_failed": "do not lower", "lowered_ub_overflow": "overflow UB",
             "lowered_l1_overflow": "overflow L1", "lowering_skipped": "not lowered"}  # fmt: skip
    parts = [f"{counts[rule]} {text}" for rule, text in names.items() if counts.get(rule)]
    return "kernels through triton-ascend: " + ", ".join(parts) + " (below)"


def _findings(checks: list[dict[str, Any]]) -> list[str]:
    lines = []
    for check in checks:
        value = ""
        if check.get("value") is not None:
            value = f" (value {check.get('value')}" + (
                f", limit {check.get('limit')})" if check.get("limit") is not None else ")"
            )
        kb = f" (knowledge-base entry {check.get('kb_id')})" if check.get("kb_id") else ""
        lines.append(f"{check.get('severity')}: {check.get('rule')}: {check.get('message')}{value}{kb}")
    return lines


#: What to do, for a person, when the file itself is the problem.
_HUMAN_HINTS = {
    "no_code": "The file holds no code: write a module with `class ModelNew(nn.Module)` and its @triton.jit kernel.",
    "syntax": "The file is not valid Python (a binary file, or a syntax error): see the error above.",
}


def print_check(result: EvalResult, name: str, *, empty: bool = False, ascend_checks: str = "warn") -> None:
    """The human report of ``akg check``: a table, Ascend findings, then the agent's feedback.

    Args:
        result: the evaluation.
        name: the candidate file's name (the title).
        empty: the file held no code.
        ascend_checks: the Ascend check mode the evaluation ran with (``off`` shows no findings row).
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.rule import Rule
    from rich.table import Table

    from ascend_kernel_gym.evaluation.feedback import render_feedback

    console = Console(file=sys.stdout)
    colour = "green" if result.ok else "red"
    table = Table(
        title=escape(f"akg check {name}: {result.task_id} on {result.backend} (profile {result.profile})"),
        show_header=False,
    )
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    trials = f"{result.trials_passed}/{result.trials_total} passed" if result.trials_total else "not reached"
    rows: list[tuple[str, str]] = [("verdict", f"[{colour}]{escape(verdict_text(result))}[/{colour}]")]
    if not result.ok and result.error_message.strip():
        lines = [ln for ln in result.error_message.strip().splitlines() if ln.strip()]
        shown = "\n".join(lines[:4]) + (f"\n... ({len(lines) - 4} more lines below)" if len(lines) > 4 else "")
        rows.append(("error", escape(shown)))
    rows.append(("trials", trials))
    if result.max_abs_err is not None or result.max_rel_err is not None:
        rows.append(("errors", f"max abs {_num(result.max_abs_err)}, max rel {_num(result.max_rel_err)}"))
    rows.append(("time", time_summary(result.stage_durations)))
    if result.speedup is not None:
        speed = f"{result.speedup:.2f}x (reference {_num(result.ref_ms, 4)} ms, kernel {_num(result.kernel_ms, 4)} ms)"
        rows.append(("speed", escape(speed)))
    elif result.compiled:
        rows.append(("speed", escape(f"not measured on the {result.backend} backend")))
    if result.launches:
        rows.append(("kernels", escape(", ".join(sorted({launch.kernel for launch in result.launches})))))
    if result.torch_ops:
        rows.append(("torch ops", escape(", ".join(result.torch_ops))))
    if result.estimate:
        rows.append(("estimate", escape(estimate_sentence(result.estimate))))
    lowering = [c for c in result.ascend_checks if c.get("layer")]
    checks = [c for c in result.ascend_checks if not c.get("layer")]
    if checks:
        errors = sum(1 for c in checks if c.get("severity") == "error")
        rows.append(("Ascend checks", f"{errors} error(s), {len(checks) - errors} warning(s) (below)"))
    elif ascend_checks != "off" and result.compiled:
        rows.append(("Ascend checks", "no findings"))
    if lowering:
        rows.append(("Ascend lowering", escape(lowering_summary(lowering))))
    if result.device:
        rows.append(("device", escape(result.device)))
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    hint = _HUMAN_HINTS.get("no_code" if empty else result.error_type.value)
    if hint and not result.ok:
        console.print(escape(hint))
    if result.ascend_checks:
        console.print(Rule("Ascend findings", align="left"))
        for line in _findings(result.ascend_checks):
            console.print(line, markup=False, highlight=False)
    console.print(Rule("Feedback the agent would see (what the environment sends the model)", align="left"))
    console.print(render_feedback(result), markup=False, highlight=False)
