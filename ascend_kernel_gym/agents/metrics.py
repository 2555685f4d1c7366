"""Metrics of a segment-GRPO iteration: rollout statistics and the logger (jsonl, tensorboard, W&B)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ascend_kernel_gym.agents.samples import RolloutBatch


def rollout_metrics(batch: RolloutBatch) -> dict[str, Any]:
    """Reward, correctness, speedup, compaction and size statistics of a rollout batch."""
    episodes = batch.episodes
    returns = [e.episode_return for e in episodes]
    kernel_turns = [t for e in episodes for t in e.turns if not t.is_summary]
    scores = [t.score for t in kernel_turns if t.score is not None]
    speedups = [e.best_speedup for e in episodes if e.best_speedup is not None]
    samples = batch.samples
    stats = batch.stats
    n = max(1, len(episodes))
    out: dict[str, Any] = {
        "reward_mean": sum(returns) / n,
        "reward_std": (sum((r - sum(returns) / n) ** 2 for r in returns) / n) ** 0.5,
        "score_mean": (sum(scores) / len(scores)) if scores else None,
        "correct_rate": (sum(1 for t in kernel_turns if t.correct) / len(kernel_turns)) if kernel_turns else None,
        "episode_correct_rate": sum(1 for e in episodes if e.best_correct) / n,
        "speedup_mean": (sum(speedups) / len(speedups)) if speedups else None,
        "compactions_per_episode": sum(e.compactions for e in episodes) / n,
        "segments_per_episode": sum(e.num_segments for e in episodes) / n,
        "turns_per_episode": sum(len(e.turns) for e in episodes) / n,
        "summary_turns_per_episode": sum(1 for e in episodes for t in e.turns if t.is_summary) / n,
        "overlong_rate": sum(1 for e in episodes if e.overlong) / n,
        "samples": len(samples),
        "tokens_per_segment": (sum(s.length for s in samples) / len(samples)) if samples else 0.0,
        "policy_tokens_per_segment": (sum(s.num_policy_tokens for s in samples) / len(samples)) if samples else 0.0,
        "generated_tokens": stats.get("generated_tokens", 0),
        "generation_s": stats.get("generation_s", 0.0),
        "env_s": stats.get("env_s", 0.0),
        "rollout_s": stats.get("wall_s", 0.0),
        "generation_tokens_per_s": stats.get("generated_tokens", 0) / max(1e-9, stats.get("generation_s", 0.0)),
    }
    return out


class MetricsLogger:
    """Appends one JSON object per iteration to ``metrics.jsonl``; mirrors scalars to tensorboard and to
    Weights & Biases when they are installed (and asked for)."""

    def __init__(
        self,
        output_dir: Path,
        tensorboard: bool = True,
        wandb_project: str | None = None,
        run_config: dict[str, Any] | None = None,
    ) -> None:
        self.path = output_dir / "metrics.jsonl"
        self.writer: Any = None
        self.wandb_run: Any = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.writer = SummaryWriter(str(output_dir / "tensorboard"))
            except (ImportError, ModuleNotFoundError):
                self.writer = None
        if wandb_project:
            try:
                import wandb
            except ImportError:
                wandb = None
            if wandb is not None:
                self.wandb_run = wandb.init(project=wandb_project, dir=str(output_dir), config=run_config or {})

    def log(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
        if self.writer is not None:
            step = int(record.get("iteration", 0))
            for key, value in record.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    self.writer.add_scalar(key, value, step)
            self.writer.flush()
        if self.wandb_run is not None:
            scalars = {k: v for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            self.wandb_run.log(scalars, step=int(record.get("iteration", 0)))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()
