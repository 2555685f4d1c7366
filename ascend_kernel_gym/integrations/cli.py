"""``akg serve openenv``: the environment as an OpenEnv server (see docs/integrations.md)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``serve`` (with its ``openenv`` sub-command) to the ``akg`` command."""
    serve = subparsers.add_parser(
        "serve", help="serve the environment to other RL stacks", description="Serve AscendTriton-v0 over a protocol."
    )
    targets = serve.add_subparsers(dest="target", metavar="TARGET")
    parser = targets.add_parser(
        "openenv",
        help="an OpenEnv server (WebSocket sessions, reset / step / state)",
        description="Serve AscendTriton-v0 with openenv-core: one env per WebSocket session, evaluations through "
        "this process's evaluator pool (or --evaluator). Needs `pip install openenv-core`.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--max-sessions", type=int, default=8, help="concurrent sessions (default 8)")
    parser.add_argument("--backend", choices=("auto", "npu", "cuda", "interpreter"), default="auto")
    parser.add_argument("--suite", default="core", help="task suite (default core)")
    parser.add_argument("--split", default="train", help="split a reset without task_id draws from (default train)")
    parser.add_argument("--max-turns", type=int, default=4, help="answers per episode (default 4)")
    parser.add_argument("--reward", default="default", help="reward preset (default 'default')")
    parser.add_argument("--reward-mode", default="improvement", choices=("improvement", "score", "terminal"))
    parser.add_argument("--num-trials", type=int, help="correctness trials per evaluation")
    parser.add_argument("--evaluator", help="host:port of an EvaluatorServer to send evaluations to")
    parser.add_argument("--compaction-budget", type=int, help="turn compaction on with this token budget")
    parser.add_argument("--compaction-strategy", default="rules", choices=("rules", "policy"))
    parser.add_argument("--kb", action="store_true", help="add knowledge-base tips to the feedback")
    parser.add_argument("--kb-k", type=int, default=3, help="tips per turn with --kb (default 3)")
    parser.set_defaults(func=run_serve_openenv)
    serve.set_defaults(func=lambda args: serve.print_help() or 2)


def app_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`~ascend_kernel_gym.integrations.openenv_server.create_openenv_app` options of the parsed flags."""
    env_kwargs: dict[str, Any] = {
        "backend": args.backend,
        "suite": args.suite,
        "split": args.split,
        "max_turns": args.max_turns,
        "reward": args.reward,
        "reward_mode": args.reward_mode,
    }
    if args.num_trials is not None:
        env_kwargs["num_trials"] = args.num_trials
    if args.evaluator:
        env_kwargs["evaluator"] = args.evaluator
    compaction = None
    if args.compaction_budget is not None:
        compaction = {"budget_tokens": args.compaction_budget, "strategy": args.compaction_strategy}
    kb = {"k": args.kb_k} if args.kb else None
    return {"env_kwargs": env_kwargs, "compaction": compaction, "kb": kb, "max_sessions": args.max_sessions}


def run_serve_openenv(args: argparse.Namespace) -> int:
    try:
        from ascend_kernel_gym.integrations.openenv_server import serve_openenv
    except ImportError as exc:
        raise RuntimeError(f"akg serve openenv needs openenv-core (pip install openenv-core): {exc}") from exc
    print(f"serving AscendTriton-v0 over OpenEnv on http://{args.host}:{args.port} (ws: /ws, health: /health)")
    serve_openenv(args.host, args.port, **app_options(args))
    return 0
