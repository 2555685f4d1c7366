"""``akg eval``, ``akg report``, ``akg submit``, ``akg verify`` and ``akg leaderboard``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPORT_FORMATS = ("table", "md", "json")


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_eval(subparsers)
    _register_report(subparsers)
    _register_submit(subparsers)
    _register_verify(subparsers)
    _register_leaderboard(subparsers)


def _register_eval(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate an agent on a suite (resumable)",
        description="Run an agent on a suite's tasks through the AscendTriton environment. Results go to "
        "OUT/results.jsonl (one episode per line) and OUT/run.json; re-running the same command skips finished "
        "episodes.",
    )
    p.add_argument("--agent", required=True, help="reference, openai, hf, or module:Class (a Policy subclass)")
    p.add_argument("--out", required=True, help="run directory, e.g. runs/NAME")
    p.add_argument("--suite", default="core", help="bundled suite name or suite directory (default: core)")
    p.add_argument("--split", default="test", choices=("train", "test", "all"), help="default: test")
    p.add_argument("--levels", type=int, nargs="+", default=None, help="only these levels, e.g. --levels 1 2")
    p.add_argument(
        "--tasks", nargs="+", default=None, metavar="ID", help="only these task ids (from any split of the suite)"
    )
    p.add_argument("--backend", default="auto", choices=("auto", "npu", "cuda", "interpreter"), help="default: auto")
    p.add_argument("--turns", type=int, default=1, help="maximum turns per episode (default: 1)")
    p.add_argument("--samples", type=int, default=1, help="episodes per task, for pass@k (default: 1)")
    p.add_argument("--workers", type=int, default=0, help="episodes in flight at once (default: CPU cores, >= 2)")
    p.add_argument("--reward", default="default", help="reward preset of the environment (default: default)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default: 0)")
    p.add_argument("--env-kwargs", default=None, metavar="JSON", help="extra environment arguments as a JSON object")
    agent = p.add_argument_group("agent options (openai / hf / module:Class)")
    agent.add_argument("--endpoint", default=None, help="openai: base URL of an OpenAI-compatible API")
    agent.add_argument("--model", default=None, help="openai: model name")
    agent.add_argument("--api-key-env", default=None, help="openai: environment variable holding the API key")
    agent.add_argument("--model-path", default=None, help="hf: local model directory")
    agent.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    agent.add_argument("--max-tokens", type=int, default=None, help="maximum new tokens per answer")
    agent.add_argument("--agent-kwargs", default=None, metavar="JSON", help="extra policy constructor arguments")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_eval)


def _register_report(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="metrics of a run (or several side by side): table, Markdown or JSON, and PNG plots",
        description="Metrics of a run directory written by `akg eval`. With several run directories (e.g. two "
        "agents on the same split), the runs are shown side by side with each task's outcome per run.",
    )
    p.add_argument("run", nargs="+", help="run directory (or directories) written by `akg eval`")
    p.add_argument("--format", choices=REPORT_FORMATS, default="table", help="default: table")
    p.add_argument("--plots", default=None, metavar="DIR", help="also write PNG plots to DIR (one run only)")
    p.add_argument("-o", "--output", default=None, help="write md/json output to this file instead of stdout")
    p.set_defaults(func=cmd_report)


def _register_submit(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("submit", help="make a verifiable leaderboard submission from a run")
    p.add_argument("run", help="run directory written by `akg eval`")
    p.add_argument(
        "-o", "--output", required=True, help="submission file to write (JSON; missing directories are created)"
    )
    p.set_defaults(func=cmd_submit)


def _register_verify(subparsers: argparse._SubParsersAction) -> None:
    from ascend_kernel_gym.leaderboard.verify import DEFAULT_SPEEDUP_TOLERANCE

    p = subparsers.add_parser(
        "verify",
        help="check a submission and re-run its kernels; non-zero exit when rejected",
        description="Integrity checks (schema, digest, code hashes, suite hash), then every kernel is re-run on "
        "the local backend and compared with its claims. Exit status: 0 accepted, 1 rejected.",
    )
    p.add_argument("submission", help="submission file")
    p.add_argument("--backend", default="auto", choices=("auto", "npu", "cuda", "interpreter"), help="default: auto")
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_SPEEDUP_TOLERANCE,
        help=f"allowed relative excess of a claimed speedup over the local one (default: {DEFAULT_SPEEDUP_TOLERANCE})",
    )
    p.add_argument("--workers", type=int, default=None, help="evaluator workers (default: evaluator's default)")
    p.add_argument("--timeout", type=float, default=None, help="per-kernel time limit in seconds")
    p.add_argument(
        "--evaluator",
        default=None,
        metavar="ADDRESS",
        help="evaluate on a shared pool: ray://auto, ray://HOST:PORT or HOST:PORT (default: $AKG_EVALUATOR, else a "
        "local pool)",
    )
    p.add_argument(
        "--allow-suite-change",
        action="store_true",
        help="accept a suite whose other task files changed, as long as the submission's own task files match",
    )
    p.add_argument(
        "--report",
        default=None,
        metavar="FILE",
        help="where to write the verification report as JSON (default: X.verify.json beside the submission X.json, "
        "where `akg leaderboard` finds it)",
    )
    p.add_argument("--no-report", action="store_true", help="write no verification report file")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    p.set_defaults(func=cmd_verify)


def _register_leaderboard(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("leaderboard", help="render a static HTML leaderboard from a directory of submissions")
    p.add_argument(
        "directory",
        help="directory of submission files (*.json, each with its *.verify.json when `akg verify` wrote one)",
    )
    p.add_argument("-o", "--output", required=True, help="output directory for the site")
    p.add_argument("--title", default="ascend-kernel-gym leaderboard", help="page title")
    p.set_defaults(func=cmd_leaderboard)


def _json_arg(text: str | None, flag: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{flag} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object, got {type(value).__name__}")
    return value


def run_totals(run_dir: str | Path) -> tuple[int, int, int]:
    """(correct, finished, with a hack caught) episodes of a whole run, earlier invocations included."""
    from ascend_kernel_gym.leaderboard.records import is_ok, load_run

    _, records = load_run(run_dir)
    correct = sum(is_ok(r.get("best_result")) for r in records)
    hacks = sum(any((t.get("eval") or {}).get("hack") for t in r.get("turns", [])) for r in records)
    return correct, len(records), hacks


def cmd_eval(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ascend_kernel_gym.leaderboard.runner import EvalConfig, run_eval

    agent_options = {
        "endpoint": args.endpoint,
        "model": args.model,
        "api_key_env": args.api_key_env,
        "model_path": args.model_path,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "agent_kwargs": _json_arg(args.agent_kwargs, "--agent-kwargs"),
    }
    config = EvalConfig(
        agent=args.agent,
        out=args.out,
        suite=args.suite,
        split=args.split,
        levels=args.levels,
        task_ids=args.tasks,
        backend=args.backend,
        turns=args.turns,
        samples=args.samples,
        workers=args.workers,
        reward=args.reward,
        seed=args.seed,
        env_kwargs=_json_arg(args.env_kwargs, "--env-kwargs"),
        agent_options={k: v for k, v in agent_options.items() if v not in (None, {})},
    )
    summary = run_eval(config, progress=not args.no_progress)
    console = Console(stderr=True)
    correct, finished, hacks = run_totals(summary.out)
    console.print(
        escape(
            f"akg eval: {summary.episodes_run} episode(s) run, {summary.episodes_skipped} already done "
            f"(of {summary.episodes_total}), {summary.episodes_failed} harness error(s), {summary.wall_s:.1f} s; "
            f"the whole run: {correct} of {finished} episode(s) correct, {hacks} with a hack caught -> {summary.out}"
        ),
        highlight=False,
    )
    if summary.episodes_failed:
        console.print("[yellow]episodes with harness errors are re-run when you run the same command again[/yellow]")
    console.print(f"next: akg report {escape(summary.out)}", highlight=False)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.leaderboard.report import render_json, render_markdown, render_table, run_report, write_plots

    if len(args.run) > 1:
        return _report_several(args)
    report = run_report(args.run[0])
    if args.format == "table":
        render_table(report)
    else:
        text = render_markdown(report) if args.format == "md" else render_json(report)
        _write_text(text, args.output)
    if args.plots:
        for path in write_plots(report, args.plots):
            print(f"wrote {path}", file=sys.stderr)
        if not report["metrics"]["overall"]["speedup_measured"]:
            print("speedup not measured on the interpreter: no speedup distribution plot", file=sys.stderr)
    return 0


def _write_text(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _report_several(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.leaderboard.report import render_comparison, render_comparison_markdown, run_report

    if args.plots:
        raise ValueError("--plots takes one run directory; run `akg report RUN --plots DIR` for each run")
    reports = [run_report(run) for run in args.run]
    if args.format == "table":
        render_comparison(reports)
    elif args.format == "md":
        _write_text(render_comparison_markdown(reports), args.output)
    else:
        _write_text(json.dumps(reports, indent=2, sort_keys=True), args.output)
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.leaderboard.submission import build_submission, write_submission

    data = build_submission(args.run)
    path = write_submission(data, args.output)
    metrics = data["metrics"]
    print(
        f"wrote {path}: {data['suite']['task_count']} tasks, correct {100 * (metrics['correct_rate'] or 0):.1f}%, "
        f"digest {data['digest']['value'][:16]}"
    )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.leaderboard.submission import SubmissionError
    from ascend_kernel_gym.leaderboard.verify import verify_submission

    try:
        data = json.loads(Path(args.submission).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        print(f"REJECTED: {args.submission} is not a JSON file ({exc})")
        return 1
    try:
        report = verify_submission(
            data,
            backend=args.backend,
            speedup_tolerance=args.tolerance,
            evaluator=args.evaluator,
            workers=args.workers,
            timeout_s=args.timeout,
            progress=not args.json,
            allow_suite_change=args.allow_suite_change,
        )
    except SubmissionError as exc:
        print(f"REJECTED: {exc}")
        return 1
    report_path = None if args.no_report else Path(args.report or verify_report_path(args.submission))
    if report_path is not None:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print_verification(report)
        if report_path is not None:
            print(f"verification report: {report_path}")
    return 0 if report.accepted else 1


def verify_report_path(submission: str | Path) -> Path:
    """``X.verify.json`` beside the submission ``X.json``: where the leaderboard looks for it."""
    from ascend_kernel_gym.leaderboard.site import VERIFY_SUFFIX

    path = Path(submission)
    stem = path.name[: -len(".json")] if path.name.endswith(".json") else path.name
    return path.with_name(stem + VERIFY_SUFFIX)


def print_verification(report: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    if report.tasks:
        # Speed columns only where some speed was measured (never on the interpreter): 80 columns suffice.
        speeds = any(
            _x(v.claimed.get("speedup")) != "n/a" or _x((v.local or {}).get("speedup")) != "n/a" for v in report.tasks
        )
        table = Table(title="akg verify: claims vs local re-run")
        table.add_column("task", no_wrap=True)
        columns = ("claimed", "local", "speedup claimed/local", "speed", "verdict") if speeds else ("claimed", "local")
        for column in columns:
            table.add_column(column, overflow="fold")
        if not speeds:
            table.add_column("verdict", no_wrap=True)
        for verdict in report.tasks:
            claimed, local = verdict.claimed, verdict.local or {}
            cells = [escape(verdict.task_id), escape(_outcome(claimed))]
            cells.append(escape(_outcome(local)) if verdict.local is not None else "-")
            if speeds:
                cells += [f"{_x(claimed.get('speedup'))} / {_x(local.get('speedup'))}", escape(verdict.speed)]
            colour = "[green]" if verdict.verdict in ("agree", "no code") else "[red]"
            cells.append(colour + escape(verdict.verdict) + "[/]")
            table.add_row(*cells)
        console.print(table)
        if not speeds:
            console.print("[dim]speed: measured on neither side (the interpreter measures none)[/dim]")
    console.print(
        f"submission backend {escape(str(report.submission_backend))} ({escape(str(report.submission_device))}); "
        f"re-run on {escape(str(report.local_backend))} ({escape(str(report.local_device))}); "
        f"speed comparable: {'yes' if report.speed_comparable else 'no'}"
    )
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    if report.accepted:
        console.print("[bold green]ACCEPTED[/bold green]: every claim agrees with the local re-run")
    else:
        console.print(f"[bold red]REJECTED[/bold red] ({len(report.reasons)} reason(s)):")
        for reason in report.reasons:
            console.print(f"  - {escape(reason)}")


def _outcome(result: dict[str, Any]) -> str:
    if not result:
        return "-"
    if result.get("hack"):
        return "hack"
    if result.get("correct"):
        return "correct"
    if result.get("compiled"):
        return f"incorrect ({result.get('error_type')})"
    return f"failed ({result.get('error_type')})"


def _x(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) and not isinstance(value, bool) else "n/a"


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from ascend_kernel_gym.leaderboard.site import build_site

    directory = Path(args.directory)
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{directory} is not a directory of submissions; write one with `akg submit RUN -o {directory}/NAME.json`"
        )
    result = build_site(args.directory, args.output, title=args.title)
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    verified = result.get("verified", 0)
    print(
        f"wrote {result['index']} ({result['submissions']} submission(s), {verified} with a verification report, "
        f"{len(result['pages'])} page(s))"
    )
    print(f"open it in a browser: {Path(result['index']).resolve().as_uri()}")
    return 0
