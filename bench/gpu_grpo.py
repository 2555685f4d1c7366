"""Segment-GRPO on a GPU: generation and update throughput against transformers' ``generate`` and TRL.

The model has Qwen2.5-0.5B's public architecture values (written out in
``ascend_kernel_gym.agents.local_lm.QWEN2_5_0_5B``; ~494M parameters, vocabulary 151,936) and random
weights, in bfloat16. Nothing is downloaded. Three parts (``--parts``), each with its warm-up (first
call of a shape: CUDA context, allocator, autotuning, ``torch.compile``) timed and reported apart
from the steady-state numbers:

- ``generate``: tokens/s and peak memory at batch 8 and 64 of the package's generation engines
  (its own loop; ``transformers``' ``generate`` with a static KV cache, eager and with the decoding
  step compiled) against plain eager ``generate`` (dynamic cache) on the same prompts in the same
  run. The random model never samples its stop token, so every row generates ``--gen-new-tokens``.
- ``update``: tokens/s (input tokens through forward + backward + optimizer step) and peak memory of
  one segment-GRPO update (:meth:`SegmentGRPOTrainer.update`, bf16 with float32 master weights, and
  pure bf16) against TRL's ``GRPOTrainer`` loss (``compute_loss`` + backward + AdamW step, loss type
  ``dapo``, bf16) on the same model initialisation and the same batch, gradient checkpointing on for both.
- ``iteration``: one full iteration through the real env (rollout with policy-written compaction,
  then the update), with a reference-solution rollout timing the evaluator.

Run:

    python bench/gpu_grpo.py                       # cuda: generate + update -> bench/results/gpu_grpo_h200.md
    python bench/gpu_grpo.py --parts generate,update,iteration
    python bench/gpu_grpo.py --tiny --out /tmp/x.md  # CPU smoke test of every part (tiny model)

Results are written to the ``.json`` beside ``--out`` after every measurement, so a run cut short
keeps what it measured. Needs ``gymnasium`` (``import ascend_kernel_gym`` registers the env) in
every part; the ``update`` part's TRL side needs ``trl`` and ``datasets`` (on a machine without them,
carry their wheels: ``trl``, ``datasets``, ``dill``, ``multiprocess``, ``gymnasium``,
``farama-notifications``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_OUT = ROOT / "bench" / "results" / "gpu_grpo_h200.md"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="CPU smoke test: tiny model, small shapes, interpreter backend")
    p.add_argument("--out", default=None, help=f"markdown output (default {DEFAULT_OUT.relative_to(ROOT)})")
    p.add_argument(
        "--parts",
        default=None,
        help="comma-separated: generate, update, iteration (default: all three with --tiny, generate,update on cuda)",
    )
    p.add_argument("--reps", type=int, default=2, help="steady-state repetitions per measurement")
    # generation
    p.add_argument("--gen-batches", default=None, help="generation batch sizes (default 8,64; 2,4 with --tiny)")
    p.add_argument("--prompt-len", type=int, default=None, help="longest prompt, 0-25%% shorter rows (512; 64)")
    p.add_argument("--gen-new-tokens", type=int, default=None, help="new tokens per row (256; 16 with --tiny)")
    p.add_argument("--engines", default="eager_generate,loop,static,static_compiled", help="generation engines")
    # update
    p.add_argument("--update-rows", type=int, default=None, help="samples in the update batch (16; 4 with --tiny)")
    p.add_argument("--update-prompt", type=int, default=None, help="prompt tokens per sample (512; 32)")
    p.add_argument("--update-response", type=int, default=None, help="response tokens per sample (512; 32)")
    p.add_argument("--no-trl", action="store_true", help="skip TRL's side of the update part")
    # iteration (the full env loop)
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
    args = p.parse_args(argv)
    sizes = {
        "gen_batches": ("8,64", "2,4"),
        "prompt_len": (512, 64),
        "gen_new_tokens": (256, 16),
        "update_rows": (16, 4),
        "update_prompt": (512, 32),
        "update_response": (512, 32),
    }
    for name, (gpu, tiny) in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, tiny if args.tiny else gpu)
    return args


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in ("torch", "triton", "transformers", "trl", "datasets", "accelerate", "peft", "gymnasium"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "-"
    return out


class Results(dict):
    """The run's numbers; written to ``path`` (JSON) after every :meth:`put`, so partial runs keep theirs."""

    def __init__(self, path: Path, **header: Any) -> None:
        super().__init__(header)
        self.path = path

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self, indent=2, default=str))
        print(f"[gpu_grpo] {key}: {json.dumps(value, default=str)}", flush=True)


# ---------------------------------------------------------------------- shared helpers


def _model_config(tiny: bool) -> dict[str, Any]:
    from ascend_kernel_gym.agents.local_lm import QWEN2_5_0_5B, TINY

    return dict(TINY, vocab_size=4096) if tiny else dict(QWEN2_5_0_5B)


def _build_model(tiny: bool, device: Any, tokenizer: Any) -> Any:
    import torch

    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    dtype = torch.float32 if tiny else torch.bfloat16
    return build_random_causal_lm(_model_config(tiny), tokenizer=tokenizer, seed=0).to(device=device, dtype=dtype)


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_peak(device: Any) -> None:
    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _peak_gib(device: Any) -> float | None:
    import torch

    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None


def _allocated_gib(device: Any) -> float | None:
    import torch

    return torch.cuda.memory_allocated(device) / 2**30 if device.type == "cuda" else None


def _measure(fn: Callable[[int], int], device: Any, reps: int) -> dict[str, Any]:
    """Call ``fn(rep)`` (returns a token count) once as warm-up, then ``reps`` times; times and peak memory."""
    _reset_peak(device)
    _sync(device)
    t0 = time.perf_counter()
    warm_tokens = fn(0)
    _sync(device)
    warmup_s = time.perf_counter() - t0
    warm_peak = _peak_gib(device)
    times, tokens, peaks = [], [], []
    for rep in range(1, reps + 1):
        _reset_peak(device)
        base = _allocated_gib(device)
        _sync(device)
        t0 = time.perf_counter()
        n = fn(rep)
        _sync(device)
        times.append(time.perf_counter() - t0)
        tokens.append(n)
        peak = _peak_gib(device)
        peaks.append(None if peak is None else {"peak_gib": peak, "above_start_gib": peak - (base or 0.0)})
    steady_s = sum(times)
    return {
        "warmup_s": warmup_s,
        "warmup_tokens": warm_tokens,
        "warmup_peak_gib": warm_peak,
        "steady_s": times,
        "steady_tokens": tokens,
        "tokens_per_s": sum(tokens) / steady_s if steady_s > 0 else None,
        "peak_gib": max((p["peak_gib"] for p in peaks if p), default=None),
        "peak_above_start_gib": max((p["above_start_gib"] for p in peaks if p), default=None),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# ---------------------------------------------------------------------- generation


def _prompts(rng: random.Random, batch: int, longest: int, vocab: int) -> list[list[int]]:
    lengths = [longest - rng.randrange(longest // 4 + 1) for _ in range(batch)]
    lengths[0] = longest  # every set has the same padded width: the shape repeats
    return [[rng.randrange(10, vocab) for _ in range(n)] for n in lengths]


def _eager_generate(model: Any, policy: Any, prompts: list[list[int]], new_tokens: int) -> int:
    """Plain ``model.generate`` (dynamic cache, no compile, no log-probs): the baseline."""
    import torch
    from transformers import GenerationConfig

    input_ids, attention = policy.left_padded(prompts)
    config = GenerationConfig(
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        max_new_tokens=new_tokens,
        eos_token_id=policy.stop_ids,
        pad_token_id=int(policy.tokenizer.pad_token_id),
        disable_compile=True,
    )
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config)
    new = out[:, input_ids.shape[1] :].tolist()
    stops = set(policy.stop_ids)
    count = 0
    for row in new:
        for tid in row:
            count += 1
            if tid in stops:
                break
    return count


def bench_generation(args: argparse.Namespace, device: Any, results: Results) -> None:
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    model = _build_model(args.tiny, device, tokenizer)
    vocab = model.config.vocab_size
    results.put("generation.model_gib", _allocated_gib(device))
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if device.type != "cuda":  # transformers compiles the decoding step on accelerators only
        engines = [e for e in engines if e != "static_compiled"]
    kinds = {
        "loop": {"engine": "loop"},
        "static": {"engine": "generate", "static_cache": True},
        "static_compiled": {"engine": "generate", "static_cache": True, "compile_decode": True},
        "dynamic": {"engine": "generate"},
    }
    for batch in [int(b) for b in args.gen_batches.split(",") if b.strip()]:
        sampling = SamplingParams(temperature=1.0, max_new_tokens=args.gen_new_tokens, seed=0)
        for engine in engines:
            rng = random.Random(1000 + batch)  # the same prompts for every engine
            prompt_sets = [_prompts(rng, batch, args.prompt_len, vocab) for _ in range(args.reps + 1)]
            if engine == "eager_generate":
                policy = HFPolicy(model, tokenizer, sampling=sampling, max_batch_size=batch)

                def call(rep: int, policy: Any = policy, sets: Any = prompt_sets) -> int:
                    return _eager_generate(model, policy, sets[rep], args.gen_new_tokens)
            else:
                policy = HFPolicy(model, tokenizer, sampling=sampling, max_batch_size=batch, **kinds[engine])

                def call(rep: int, policy: Any = policy, sets: Any = prompt_sets) -> int:
                    return sum(len(g.token_ids) for g in policy.generate_from_ids(sets[rep]))

            try:
                measured = _measure(call, device, args.reps)
            except Exception as exc:  # report the failure, go on with the other engines
                measured = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            results.put(f"generation.b{batch}.{engine}", measured)
        base = results.get(f"generation.b{batch}.eager_generate", {})
        ratios = {}
        for engine in engines:
            row = results.get(f"generation.b{batch}.{engine}", {})
            ratios[engine] = {
                "speed_vs_eager_generate": _ratio(row.get("tokens_per_s"), base.get("tokens_per_s")),
                "peak_above_start_vs_eager_generate": _ratio(
                    row.get("peak_above_start_gib"), base.get("peak_above_start_gib")
                ),
            }
        results.put(f"generation.b{batch}.ratios", ratios)


# ---------------------------------------------------------------------- update


def _update_batch(args: argparse.Namespace, vocab: int) -> Any:
    """One group of ``--update-rows`` single-turn episodes: random prompt and response ids, rewards 0..1."""
    from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord

    rng = random.Random(7)
    batch = RolloutBatch(group_size=args.update_rows)
    for i in range(args.update_rows):
        response = [rng.randrange(10, vocab) for _ in range(args.update_response)]
        batch.samples.append(
            SegmentSample(
                group=0,
                episode=i,
                member=i,
                segment=0,
                task_id="bench",
                prompt_ids=[rng.randrange(10, vocab) for _ in range(args.update_prompt)],
                response_ids=response,
                loss_mask=[1] * len(response),
                summary_mask=[0] * len(response),
                rollout_logprobs=[0.0] * len(response),
                turns=[0],
            )
        )
        episode = EpisodeRecord(group=0, member=i, task_id="bench", samples=[i])
        episode.turns.append(TurnRecord(0, 0, False, rng.random(), span=(0, len(response)), sample=i))
        batch.episodes.append(episode)
    return batch


def _ours(args: argparse.Namespace, device: Any, master: bool, results: Results, key: str) -> None:
    import torch

    from ascend_kernel_gym.agents.config import SegmentGRPOConfig
    from ascend_kernel_gym.agents.hf import HFPolicy
    from ascend_kernel_gym.agents.local_lm import build_char_tokenizer
    from ascend_kernel_gym.agents.trainer import SegmentGRPOTrainer, response_logprobs

    tokenizer = build_char_tokenizer()
    model = _build_model(args.tiny, device, tokenizer)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    policy = HFPolicy(model, tokenizer)
    config = SegmentGRPOConfig(
        dtype="float32" if args.tiny else "bfloat16",
        master_weights=master,
        learning_rate=1e-6,
        mini_batches=1,
        max_tokens_per_micro_batch=args.update_rows * (args.update_prompt + args.update_response),
        output_dir=str(Path(os.environ.get("TMPDIR", "/tmp")) / f"akg_gpu_grpo_update_{os.getpid()}"),
        resume=None,
        progress=False,
        tensorboard=False,
    )
    trainer = SegmentGRPOTrainer(config, policy=policy, tasks=["bench"], env_factory=lambda: None)
    batch = _update_batch(args, model.config.vocab_size)
    with torch.no_grad():  # the sampler's log-probs, as a rollout with these weights would record them
        for sample in batch.samples:
            logp, _ = response_logprobs(model, [sample], 1.0, device, "logits_to_keep")
            sample.rollout_logprobs = logp[0].float().tolist()
    tokens = args.update_rows * (args.update_prompt + args.update_response)

    def step(_rep: int) -> int:
        trainer.update(batch)
        return tokens

    results.put(key, _measure(step, device, args.reps))


def _trl(args: argparse.Namespace, device: Any, results: Results) -> None:
    import tempfile

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from ascend_kernel_gym.agents.local_lm import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    model = _build_model(args.tiny, device, tokenizer)
    rows = args.update_rows
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="akg_trl_"),
        per_device_train_batch_size=rows,
        num_generations=rows,
        max_completion_length=args.update_response,
        learning_rate=1e-6,
        loss_type="dapo",
        beta=0.0,
        bf16=not args.tiny,
        gradient_checkpointing=True,
        gradient_checkpointing_kwargs={"use_reentrant": False},
        report_to="none",
        use_cpu=device.type != "cuda",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=config,
        train_dataset=Dataset.from_dict({"prompt": ["x"] * rows}),
        processing_class=tokenizer,
    )
    trl_model = trainer.model
    trl_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    trl_model.config.use_cache = False
    trl_model.train()
    trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = 1
    batch = _update_batch(args, model.config.vocab_size)
    prompt = torch.tensor([s.prompt_ids for s in batch.samples], device=device)
    completion = torch.tensor([s.response_ids for s in batch.samples], device=device)
    rewards = torch.tensor([e.turns[0].reward for e in batch.episodes], device=device)
    inputs = {
        "prompt_ids": prompt,
        "prompt_mask": torch.ones_like(prompt),
        "completion_ids": completion,
        "completion_mask": torch.ones_like(completion),
        "advantages": rewards - rewards.mean(),
        "num_items_in_batch": torch.tensor(float(completion.numel()), device=device),
    }
    tokens = prompt.numel() + completion.numel()

    def step(_rep: int) -> int:
        loss = trainer.compute_loss(trl_model, inputs)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trl_model.parameters(), 1.0)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)
        return tokens

    results.put("update.trl_grpo", _measure(step, device, args.reps))
    results.put("update.trl_optimizer", type(trainer.optimizer).__name__)


def bench_update(args: argparse.Namespace, device: Any, results: Results) -> None:
    results.put(
        "update.shape",
        {"rows": args.update_rows, "prompt": args.update_prompt, "response": args.update_response},
    )
    variants = [("update.ours_bf16_master", True), ("update.ours_bf16", False)]
    if args.tiny:
        variants = [("update.ours_fp32", False)]
    for key, master in variants:
        try:
            _ours(args, device, master, results, key)
        except Exception as exc:  # report and go on
            results.put(key, {"error": f"{type(exc).__name__}: {exc}"[:500]})
            _reset_peak(device)
    if not args.no_trl:
        try:
            _trl(args, device, results)
        except Exception as exc:  # report and go on
            results.put("update.trl_grpo", {"error": f"{type(exc).__name__}: {exc}"[:800]})
            _reset_peak(device)
    trl = results.get("update.trl_grpo", {})
    ratios = {}
    for key, _ in variants:
        ours = results.get(key, {})
        ratios[key] = {
            "speed_vs_trl": _ratio(ours.get("tokens_per_s"), trl.get("tokens_per_s")),
            "peak_vs_trl": _ratio(ours.get("peak_gib"), trl.get("peak_gib")),
        }
    results.put("update.ratios", ratios)


# ---------------------------------------------------------------------- full iteration


def run_iteration(args: argparse.Namespace) -> dict[str, Any]:
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


# ---------------------------------------------------------------------- report


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


ENGINE_NAMES = {
    "eager_generate": "`generate`, dynamic cache, eager (baseline)",
    "loop": "package loop, dynamic cache",
    "dynamic": "`generate` engine, dynamic cache",
    "static": "`generate` engine, static cache, eager",
    "static_compiled": "`generate` engine, static cache, compiled decode",
}


def _generation_md(results: dict[str, Any]) -> list[str]:
    batches = sorted({int(k.split(".")[1][1:]) for k in results if k.startswith("generation.b")})
    if not batches:
        return []
    lines = [
        "## Generation",
        "",
        f"Model weights: {_fmt(results.get('generation.model_gib'))} GiB. Prompts up to "
        f"{results['args']['prompt_len']} tokens, {results['args']['gen_new_tokens']} new tokens per row, "
        "temperature 1; warm-up = first call of the shape (compilation included), steady = the next calls "
        "(other prompts, same padded width).",
        "",
        "| batch | engine | warm-up (s) | steady tokens/s | x eager generate | peak above weights (GiB) | x eager |",
        "|---|---|---|---|---|---|---|",
    ]
    for batch in batches:
        ratios = results.get(f"generation.b{batch}.ratios", {})
        for engine, label in ENGINE_NAMES.items():
            row = results.get(f"generation.b{batch}.{engine}")
            if row is None:
                continue
            if "error" in row:
                lines.append(f"| {batch} | {label} | error: {row['error'][:120]} | | | | |")
                continue
            r = ratios.get(engine, {})
            lines.append(
                f"| {batch} | {label} | {_fmt(row['warmup_s'])} | {_fmt(row['tokens_per_s'])} | "
                f"{_fmt(r.get('speed_vs_eager_generate'))} | {_fmt(row['peak_above_start_gib'])} | "
                f"{_fmt(r.get('peak_above_start_vs_eager_generate'))} |"
            )
    return [*lines, ""]


UPDATE_NAMES = {
    "update.ours_bf16_master": "segment-GRPO update, bf16 + float32 master weights",
    "update.ours_bf16": "segment-GRPO update, pure bf16",
    "update.ours_fp32": "segment-GRPO update, float32",
    "update.trl_grpo": "TRL GRPOTrainer: compute_loss + backward + its AdamW step",
}


def _update_md(results: dict[str, Any]) -> list[str]:
    shape = results.get("update.shape")
    if shape is None:
        return []
    lines = [
        "## Update",
        "",
        f"One optimizer step on {shape['rows']} samples of {shape['prompt']} prompt + {shape['response']} response "
        "tokens (one micro-batch), gradient checkpointing, AdamW; tokens/s counts every input token. Peak = "
        "the allocator's peak during the step, model and optimizer state included.",
        "",
        "| variant | warm-up (s) | steady tokens/s | x TRL | peak (GiB) | x TRL |",
        "|---|---|---|---|---|---|",
    ]
    ratios = results.get("update.ratios", {})
    for key, label in UPDATE_NAMES.items():
        row = results.get(key)
        if row is None:
            continue
        if "error" in row:
            lines.append(f"| {label} | error: {row['error'][:160]} | | | | |")
            continue
        r = ratios.get(key, {})
        lines.append(
            f"| {label} | {_fmt(row['warmup_s'])} | {_fmt(row['tokens_per_s'])} | {_fmt(r.get('speed_vs_trl'))} | "
            f"{_fmt(row['peak_gib'])} | {_fmt(r.get('peak_vs_trl'))} |"
        )
    return [*lines, ""]


def _iteration_md(results: dict[str, Any]) -> list[str]:
    it = results.get("iteration")
    if not isinstance(it, dict) or "error" in (it or {}):
        return [f"## Full iteration\n\nerror: {it['error']}\n"] if isinstance(it, dict) else []
    rows = [
        ("model", f"{it['model']} (random weights, {it['parameters'] / 1e6:.1f}M parameters, {it['dtype']})"),
        (
            "episodes",
            f"{len(it['tasks'])} task(s) x G={it['group_size']}, max_turns {it['max_turns']}, "
            f"max_new_tokens {it['max_new_tokens']}, compaction budget {it['compaction_budget_tokens']} tokens",
        ),
        ("generated tokens", it.get("rollout.generated_tokens")),
        ("generation tokens/s (first iteration: warm-up included)", it.get("rollout.generation_tokens_per_s")),
        ("env time in rollout (s)", it.get("rollout.env_s")),
        ("segments / episode", it.get("rollout.segments_per_episode")),
        ("samples (segments)", it.get("samples")),
        ("update tokens/s (input tokens, fwd + bwd)", it.get("update.update_tokens_per_s")),
        ("peak GPU memory, rollout (GiB)", it.get("peak_memory_rollout_gb", "-")),
        ("peak GPU memory, update (GiB)", it.get("peak_memory_update_gb", "-")),
        (
            "reference rollout: correct / speedups",
            f"{it.get('reference.correct', '-')} / {it.get('reference.speedups', '-')}",
        ),
    ]
    lines = ["## Full iteration (through the env)", "", "| quantity | value |", "|---|---|"]
    lines += [f"| {name} | {_fmt(value)} |" for name, value in rows]
    return [*lines, ""]


def to_markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Segment-GRPO on a GPU: generation and update against transformers' generate and TRL",
        "",
        f"Date: {results['date']}. Device: {results['device']}. Versions: "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items())
        + f". Command: `{results['command']}`.",
        "",
        f"Model: {results['model']} with random weights (nothing downloaded), "
        f"{'float32' if results['args']['tiny'] else 'bfloat16'}.",
        "",
    ]
    lines += _generation_md(results) + _update_md(results) + _iteration_md(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if not args.tiny and not torch.cuda.is_available():
        sys.exit("no CUDA device: run with --tiny for the CPU smoke test")
    device = torch.device("cpu" if args.tiny else "cuda")
    parts = args.parts or ("generate,update,iteration" if args.tiny else "generate,update")
    out = Path(args.out) if args.out else DEFAULT_OUT
    results = Results(
        out.with_suffix(".json"),
        date=dt.date.today().isoformat(),
        device=torch.cuda.get_device_name(0) if device.type == "cuda" else f"CPU ({platform.processor() or 'cpu'})",
        versions=_versions(),
        command="python bench/gpu_grpo.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        model="tiny Qwen2 (2 layers, hidden 64)" if args.tiny else "Qwen2.5-0.5B architecture (494M parameters)",
        args=vars(args),
    )
    for part in [p.strip() for p in parts.split(",") if p.strip()]:
        started = time.perf_counter()
        if part == "generate":
            bench_generation(args, device, results)
        elif part == "update":
            bench_update(args, device, results)
        elif part == "iteration":
            try:
                import gymnasium  # noqa: F401
            except ImportError:
                results.put("iteration", {"error": "gymnasium is missing"})
                continue
            results.put("iteration", run_iteration(args))
        else:
            raise SystemExit(f"unknown part {part!r}")
        results.put(f"{part}.wall_s", time.perf_counter() - started)
    text = to_markdown(results)
    out.write_text(text)
    print(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
