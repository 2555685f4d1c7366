"""One full segment-GRPO iteration (rollout + update) with a ~0.5B model on a GPU.

The model has Qwen2.5-0.5B's public architecture values (written out in
``ascend_kernel_gym.agents.local_lm.QWEN2_5_0_5B``; ~494M parameters) and random weights; the
tokenizer is a byte-level BPE trained locally on the package's own text. Nothing is downloaded.
Episodes run through the real env (``AscendTritonEnv`` on the ``cuda`` backend + the
``CompactionWrapper`` with policy-written summaries); a random model writes no code, so a
reference-solution rollout through the same env is timed as well, to exercise the evaluator.

Reported (markdown table, plus JSON): generation tokens/s, update tokens/s (input tokens through
forward + backward), peak GPU memory, rollout / env / update wall times, segments and compactions
per episode. Run:

    python bench/gpu_grpo.py                                  # cuda; writes bench/results/gpu_grpo_h200.md
    python bench/gpu_grpo.py --tiny --out /tmp/gpu_grpo.md    # CPU smoke test (tiny model, interpreter)

Needs torch, triton, transformers, numpy, pyyaml, tqdm and gymnasium (offline wheels in ``.whl/``:
``pip install --no-index .whl/*.whl``); not faiss, sentence-transformers, tiktoken or rich.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _require_gymnasium() -> None:
    try:
        import gymnasium  # noqa: F401
    except ImportError:
        sys.exit("gymnasium is missing: pip install --no-index .whl/gymnasium-*.whl .whl/farama_notifications-*.whl")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="CPU smoke test: tiny model, interpreter backend")
    p.add_argument("--out", default=None, help="markdown output (default bench/results/gpu_grpo_h200.md)")
    p.add_argument("--tasks", default="core/L1/relu,core/L1/softmax", help="comma-separated task ids")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-turns", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=512)
    p.add_argument(
        "--budget-tokens",
        type=int,
        default=None,
        help="compaction budget in policy tokens (default 2048 on cuda, 1800 with --tiny)",
    )
    p.add_argument("--vocab", type=int, default=8192, help="size of the locally trained BPE tokenizer")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--micro-batch-tokens", type=int, default=16384)
    p.add_argument("--generation-batch", type=int, default=64)
    p.add_argument("--no-reference-check", action="store_true", help="skip the reference-solution rollout")
    return p.parse_args(argv)


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in ("torch", "triton", "transformers", "gymnasium"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "-"
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from ascend_kernel_gym.agents.config import SegmentGRPOConfig
    from ascend_kernel_gym.agents.rollout import collect_rollouts, make_env
    from ascend_kernel_gym.agents.scripted import ReferencePolicy
    from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer, rollout_metrics
    from ascend_kernel_gym.tasks.suite import get_task

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if args.tiny:
        backend, model_config, tokenizer, dtype = "interpreter", "tiny", "bpe:1024", "float32"
        # the interpreter prompt takes ~1500 tokens of this tokenizer: the budget leaves room for two turns
        max_new, budget, group = min(args.max_new_tokens, 64), args.budget_tokens or 1800, min(args.group_size, 2)
        tasks = tasks[:1]
    else:
        if not torch.cuda.is_available():
            sys.exit("no CUDA device: run with --tiny for the CPU smoke test")
        backend, model_config, tokenizer, dtype = "cuda", "qwen2.5-0.5b", f"bpe:{args.vocab}", args.dtype
        max_new, budget, group = args.max_new_tokens, args.budget_tokens or 2048, args.group_size
    out_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"akg_gpu_grpo_{os.getpid()}"
    config = SegmentGRPOConfig(
        model_config=model_config,
        tokenizer=tokenizer,
        dtype=dtype,
        task_ids=tasks,
        tasks_per_iteration=len(tasks),
        group_size=group,
        backend=backend,
        max_turns=args.max_turns,
        reward="default",
        reward_mode="improvement",
        compaction={"budget_tokens": budget, "trigger_ratio": 1.0, "strategy": "policy", "max_compactions": 2},
        temperature=1.0,
        max_new_tokens=max_new,
        generation_batch_size=args.generation_batch,
        learning_rate=1e-6,
        mini_batches=1,
        max_tokens_per_micro_batch=args.micro_batch_tokens,
        gradient_checkpointing=True,
        iterations=1,
        output_dir=str(out_dir),
        resume=None,
        save_every=0,
        progress=True,
        tensorboard=False,
    )
    started = time.perf_counter()
    trainer = SegmentGRPOTrainer(config)
    build_s = time.perf_counter() - started
    params = sum(p.numel() for p in trainer.model.parameters())
    cuda = trainer.device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats(trainer.device)
    result: dict[str, Any] = {
        "backend": backend,
        "model": model_config,
        "parameters": params,
        "dtype": dtype,
        "tokenizer_vocab": len(trainer.policy.tokenizer),
        "tasks": tasks,
        "group_size": group,
        "max_turns": args.max_turns,
        "max_new_tokens": max_new,
        "compaction_budget_tokens": budget,
        "build_s": build_s,
    }
    try:
        batch = trainer.collect()
        if cuda:
            result["peak_memory_rollout_gb"] = torch.cuda.max_memory_allocated(trainer.device) / 2**30
            torch.cuda.reset_peak_memory_stats(trainer.device)
        metrics = rollout_metrics(batch)
        update = trainer.update(batch)
        if cuda:
            result["peak_memory_update_gb"] = torch.cuda.max_memory_allocated(trainer.device) / 2**30
        result.update({f"rollout.{k}": v for k, v in metrics.items()})
        result.update({f"update.{k}": v for k, v in update.items()})
        result["samples"] = len(batch.samples)
        result["sample_tokens_max"] = max((s.length for s in batch.samples), default=0)
        if not args.no_reference_check:
            ref_started = time.perf_counter()
            # the plain env (no compaction), so the reference policy's turns are all kernels
            ref = collect_rollouts(
                ReferencePolicy(broken_attempts=1),
                [get_task(t) for t in tasks],
                1,
                env_factory=lambda: make_env({"backend": backend, "task_ids": tasks, "max_turns": 2}),
                seed=1,
            )
            result["reference.wall_s"] = time.perf_counter() - ref_started
            result["reference.env_s"] = ref.stats["env_s"]
            result["reference.steps"] = ref.stats["steps"]
            result["reference.correct"] = [e.best_correct for e in ref.episodes]
            result["reference.speedups"] = [e.best_speedup for e in ref.episodes]
    finally:
        trainer.close()
    result["iteration_s"] = time.perf_counter() - started - build_s
    return result


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def to_markdown(result: dict[str, Any], device: str, versions: dict[str, str]) -> str:
    rows = [
        ("device", device),
        (
            "model",
            f"{result['model']} (random weights, {result['parameters'] / 1e6:.1f}M parameters, {result['dtype']})",
        ),
        ("tokenizer", f"byte-level BPE trained locally, {result['tokenizer_vocab']} tokens"),
        (
            "episodes",
            f"{len(result['tasks'])} task(s) x G={result['group_size']}, max_turns {result['max_turns']}, "
            f"max_new_tokens {result['max_new_tokens']}, "
            f"compaction budget {result['compaction_budget_tokens']} tokens",
        ),
        ("generated tokens", result.get("rollout.generated_tokens")),
        ("generation time (s)", result.get("rollout.generation_s")),
        ("**generation tokens/s**", result.get("rollout.generation_tokens_per_s")),
        ("env time in rollout (s)", result.get("rollout.env_s")),
        ("rollout wall (s)", result.get("rollout.rollout_s")),
        ("segments / episode", result.get("rollout.segments_per_episode")),
        ("compactions / episode", result.get("rollout.compactions_per_episode")),
        ("samples (segments)", result.get("samples")),
        (
            "tokens / segment (mean, max)",
            f"{_fmt(result.get('rollout.tokens_per_segment'))}, {_fmt(result.get('sample_tokens_max'))}",
        ),
        ("trained (policy) tokens", result.get("update.trained_tokens")),
        ("update time (s)", result.get("update.update_s")),
        ("**update tokens/s** (input tokens, fwd + bwd)", result.get("update.update_tokens_per_s")),
        ("**peak GPU memory, rollout (GiB)**", result.get("peak_memory_rollout_gb", "-")),
        ("**peak GPU memory, update (GiB)**", result.get("peak_memory_update_gb", "-")),
        ("full iteration (s)", result.get("iteration_s")),
        (
            "reference rollout: correct / speedups",
            f"{result.get('reference.correct', '-')} / {result.get('reference.speedups', '-')}",
        ),
        (
            "reference rollout env time (s, steps)",
            f"{_fmt(result.get('reference.env_s', '-'))} ({result.get('reference.steps', '-')})",
        ),
    ]
    lines = [
        "# Segment-GRPO: one training iteration with a ~0.5B model",
        "",
        f"Date: {dt.date.today().isoformat()}. Versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + ". Command: `python bench/gpu_grpo.py"
        + (" --tiny" if result["backend"] != "cuda" else "")
        + "`.",
        "",
        "| quantity | value |",
        "|---|---|",
    ]
    lines += [f"| {name} | {_fmt(value)} |" for name, value in rows]
    lines += [
        "",
        "Generation: batched over all live episodes, left padding, KV cache, one token per step (the "
        "package's own sampling loop). Update: micro-batches packed by token count, gradient checkpointing, "
        "AdamW; tokens/s counts every input token of every sample (prompt + response) through forward and "
        "backward. A random model rarely ends an answer before max_new_tokens, so answers are long and "
        "carry no code (format failures); the reference rollout (one broken attempt, then the bundled solution, "
        "through the env without compaction) times the evaluator on the same backend.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _require_gymnasium()
    import torch

    result = run(args)
    device = torch.cuda.get_device_name(0) if result["backend"] == "cuda" else f"CPU ({platform.processor() or 'cpu'})"
    versions = _versions()
    text = to_markdown(result, device, versions)
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / "gpu_grpo_h200.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(
        json.dumps({"device": device, "versions": versions, **result}, indent=2, default=str)
    )
    print(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
