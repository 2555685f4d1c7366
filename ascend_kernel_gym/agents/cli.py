"""``akg train``: segment-GRPO training from a YAML config."""

from __future__ import annotations

import argparse
from typing import Any

#: Metrics shown in the summary table, in order.
SUMMARY_KEYS = (
    "reward_mean",
    "correct_rate",
    "episode_correct_rate",
    "speedup_mean",
    "compactions_per_episode",
    "segments_per_episode",
    "tokens_per_segment",
    "clip_fraction",
    "kl",
    "loss",
    "generation_tokens_per_s",
    "update_tokens_per_s",
)


def register(subparsers: Any) -> None:
    """Add ``train`` to the ``akg`` command."""
    parser = subparsers.add_parser(
        "train",
        help="train a policy with segment-level GRPO",
        description="Train an LLM policy on AscendTriton with compaction-aware, segment-level GRPO. "
        "See docs/segment_grpo.md and examples/configs/segment_grpo_tiny.yaml.",
    )
    parser.add_argument("--config", help="YAML file of SegmentGRPOConfig fields")
    parser.add_argument("--iterations", type=int, help="override config.iterations")
    parser.add_argument("--output-dir", help="override config.output_dir")
    parser.add_argument("--backend", choices=("auto", "npu", "cuda", "interpreter"), help="override config.backend")
    parser.add_argument("--no-resume", action="store_true", help="start fresh even if output_dir has checkpoints")
    parser.add_argument(
        "--preset",
        help="objective preset applied under the file's keys: grpo, dr_grpo, dapo or segment_grpo (the ablations)",
    )
    parser.add_argument("--help-config", action="store_true", help="list every config field with its help and exit")
    parser.set_defaults(func=run_train)


def _config_help() -> str:
    import dataclasses

    from ascend_kernel_gym.agents.config import SegmentGRPOConfig

    lines = []
    for f in dataclasses.fields(SegmentGRPOConfig):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        lines.append(f"{f.name} (default {default!r}):\n    {f.metadata.get('help', '')}")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def run_train(args: argparse.Namespace) -> int:
    if args.help_config:
        print(_config_help())
        return 0
    if not args.config:
        raise ValueError("--config FILE is required (see examples/configs/segment_grpo_tiny.yaml)")
    from ascend_kernel_gym.agents.config import SegmentGRPOConfig

    config = SegmentGRPOConfig.from_yaml(args.config, preset=args.preset)
    if args.iterations is not None:
        config.iterations = args.iterations
    if args.output_dir is not None:
        config.output_dir = args.output_dir
    if args.backend is not None:
        config.backend = args.backend
    if args.no_resume:
        config.resume = None
    config.validate()
    if config.backend == "interpreter":
        import os

        os.environ.setdefault("TRITON_INTERPRET", "1")

    from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer

    trainer = SegmentGRPOTrainer(config)
    try:
        history = trainer.train()
    finally:
        trainer.close()
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"segment-GRPO: {config.output_dir}")
    table.add_column("metric")
    shown = history[:1] + history[-1:] if len(history) > 1 else history
    for record in shown:
        table.add_column(f"iteration {record['iteration']}", justify="right")
    for key in SUMMARY_KEYS:
        table.add_row(key, *[_fmt(record.get(key)) for record in shown])
    Console().print(table)
    print(f"metrics: {trainer.output_dir / 'metrics.jsonl'}")
    return 0
