"""The ``akg`` command. Each area adds its sub-commands through a ``register(subparsers)`` function
in its own ``cli`` module; this file only wires them together."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that contribute sub-commands, in help order.
COMMAND_MODULES = (
    "ascend_kernel_gym.tasks.cli",  # tasks, doctor
    "ascend_kernel_gym.evaluation.cli",  # check
    "ascend_kernel_gym.kb_index.cli",  # kb
    "ascend_kernel_gym.leaderboard.cli",  # eval, report, submit, verify, leaderboard
    "ascend_kernel_gym.agents.cli",  # train
)


def build_parser() -> argparse.ArgumentParser:
    from ascend_kernel_gym import __version__

    parser = argparse.ArgumentParser(prog="akg", description="ascend-kernel-gym: Triton kernel RL environment tools.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        print(f"akg {args.command}: error: {_message(exc)}", file=sys.stderr)
        return 2


def _message(exc: BaseException) -> str:
    """The exception's text; a ``KeyError``'s without the quotes its ``str()`` adds."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
