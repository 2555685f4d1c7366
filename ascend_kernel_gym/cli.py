"""The ``akg`` command. Each area adds its sub-commands through a ``register(subparsers)`` function
in its own ``cli`` module; this file only wires them together."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

#: Modules that contribute sub-commands, in help order.
COMMAND_MODULES = (
    "ascend_kernel_gym.tasks.cli",  # tasks, doctor
    "ascend_kernel_gym.evaluation.cli",  # check
    "ascend_kernel_gym.ascend.cli",  # ascend setup, ascend status
    "ascend_kernel_gym.kb_index.cli",  # kb
    "ascend_kernel_gym.leaderboard.cli",  # eval, report, submit, verify, leaderboard
    "ascend_kernel_gym.agents.cli",  # train
    "ascend_kernel_gym.integrations.cli",  # serve openenv
)


def build_parser() -> argparse.ArgumentParser:
    from ascend_kernel_gym import __version__

    parser = argparse.ArgumentParser(prog="akg", description="ascend-kernel-gym: Triton kernel RL environment tools.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(VERBOSE_FLAG, action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    for sub in _leaf_parsers(subparsers):
        if VERBOSE_FLAG not in sub._option_string_actions:
            # SUPPRESS: a sub-command without the flag keeps what `akg --verbose` set.
            sub.add_argument(VERBOSE_FLAG, action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    return parser


VERBOSE_FLAG = "--verbose"
VERBOSE_HELP = "also show third-party progress bars and log messages (hidden by default)"

#: Environment variables that silence third-party progress bars and advisory logging
#: (huggingface_hub and transformers read them when imported); ``--verbose`` leaves them unset.
QUIET_ENVIRONMENT = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _leaf_parsers(action: argparse._SubParsersAction) -> list[argparse.ArgumentParser]:
    """Every parser below ``action`` that runs a command (sub-sub-commands included)."""
    leaves = []
    for sub in dict.fromkeys(action.choices.values()):
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        leaves.append(sub)
        for inner in nested:
            leaves.extend(_leaf_parsers(inner))
    return leaves


def quiet_third_party() -> None:
    """Silence third-party progress bars and advisory logs (what ``akg`` does without ``--verbose``)."""
    for name, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if not getattr(args, "verbose", False):
        quiet_third_party()
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not as a message when Python exits
        return status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        print(f"akg {args.command}: error: {_message(exc)}", file=sys.stderr)
        return 2


def _closed_pipe() -> int:
    """The reader of our output went away (``akg ... | head``): stop quietly, as ``cat`` does.

    Python would report the failed flush of ``sys.stdout`` at exit, so stdout is pointed at
    ``/dev/null`` first (the recipe of Python's ``signal`` documentation).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141  # 128 + SIGPIPE, what a shell reports for a command killed by a closed pipe


def _message(exc: BaseException) -> str:
    """The exception's text; a ``KeyError``'s without the quotes its ``str()`` adds."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
