"""``akg ascend setup|status``: the triton-ascend environment the ``ascend_lower`` stage lowers kernels in."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ascend_kernel_gym.ascend.lower_env import REQUIREMENTS, env_dir, env_status, setup_env


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ascend",
        help="the triton-ascend environment for lowering kernels on any machine (setup, status)",
        description="triton-ascend replaces the triton package, so the evaluator's ascend_lower stage runs it in an "
        f"environment of its own ({' '.join(REQUIREMENTS)}), in the package's cache directory.",
    )
    commands = parser.add_subparsers(dest="ascend_command", metavar="COMMAND")
    setup = commands.add_parser(
        "setup",
        help="create (or reuse) the triton-ascend environment",
        description=f"Create the environment at {env_dir()} (AKG_ASCEND_ENV or AKG_CACHE_DIR move it) with a CPython "
        "3.10 / 3.11 found on this machine, or reuse it when it is already there. Safe to run again.",
    )
    setup.add_argument("--python", default=None, metavar="PATH", help="the CPython 3.10 / 3.11 to build it from")
    setup.add_argument("--force", action="store_true", help="remove the environment and make it again")
    setup.set_defaults(func=_cmd_setup, command="ascend setup")
    status = commands.add_parser("status", help="whether the environment is ready, where, and its size")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(func=_cmd_status, command="ascend status")
    parser.set_defaults(func=lambda _args: parser.print_help() or 2, command="ascend")


def _cmd_setup(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, highlight=False)
    started = time.perf_counter()

    def progress(line: str) -> None:
        elapsed = f"[dim]{time.perf_counter() - started:6.1f}s[/dim] "
        console.print(elapsed + (f"[dim]{escape(line)}[/dim]" if line.lstrip().startswith("pip:") else escape(line)))

    env = setup_env(progress=progress, python=args.python, force=args.force)
    print(env.python)
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    status = env_status()
    if args.json:
        print(json.dumps(status, indent=2))
        return 0 if status["ready"] else 1
    if status["ready"]:
        print(
            f"ready: triton-ascend {status['triton_ascend']} (Python {status['python']}) at {status['path']}, "
            f"{status.get('size_mb')} MB"
        )
        return 0
    print(f"not ready: {status['why']} at {status['path']}; {status['hint']}", file=sys.stderr)
    return 1
