"""The segment-GRPO trainer: rollouts through the wrapped env, advantages, clipped-surrogate updates.

One iteration:

1. pick ``tasks_per_iteration`` tasks; run ``group_size`` episodes of each
   (:func:`~ascend_kernel_gym.agents.rollout.collect_rollouts`), every compaction segment a sample;
2. per-token advantages with the configured estimator (:mod:`~ascend_kernel_gym.agents.advantages`);
3. optionally a no-grad pass for reference / recomputed old log-probs and mismatch rejection;
4. ``mini_batches`` optimizer steps (AdamW), each accumulating gradients over micro-batches packed
   by token count, the loss normalised by the mini-batch's trainable-token count, gradients clipped;
5. metrics to ``metrics.jsonl`` (and tensorboard when installed); checkpoints every ``save_every``.
"""

from __future__ import annotations

import copy
import inspect
import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from ascend_kernel_gym.agents.advantages import assign_advantages
from ascend_kernel_gym.agents.checkpoints import CHECKPOINT_PREFIX, checkpoint_number, load_hf_weights, save_hf_model
from ascend_kernel_gym.agents.config import SegmentGRPOConfig
from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
from ascend_kernel_gym.agents.loss import clipped_surrogate_loss, mismatch_keep, selective_log_softmax
from ascend_kernel_gym.agents.metrics import MetricsLogger, rollout_metrics
from ascend_kernel_gym.agents.precision import TrainerOptimizer
from ascend_kernel_gym.agents.rollout import EnvPool, collect_rollouts, make_env
from ascend_kernel_gym.agents.samples import RolloutBatch, SegmentSample

# ---------------------------------------------------------------------- building blocks


def build_tokenizer(config: SegmentGRPOConfig) -> Any:
    """The tokenizer named by ``config.tokenizer`` (``auto`` resolves to ``char`` for random models)."""
    from ascend_kernel_gym.agents.local_lm import build_bpe_tokenizer, build_char_tokenizer, load_tokenizer

    name = config.tokenizer
    if name == "auto":
        if config.model_name_or_path:
            return load_tokenizer(config.model_name_or_path)
        name = "char"
    if name == "char":
        return build_char_tokenizer()
    if name == "bpe":
        return build_bpe_tokenizer()
    if name.startswith("bpe:") and name[4:].isdigit():
        return build_bpe_tokenizer(int(name[4:]))
    return load_tokenizer(name)


def build_policy(config: SegmentGRPOConfig) -> HFPolicy:
    """The :class:`HFPolicy` a config describes (a local model, or a random one from ``model_config``)."""
    from ascend_kernel_gym.agents.local_lm import QWEN2_5_0_5B, TINY, build_random_causal_lm

    dtype = getattr(torch, config.dtype)
    device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
    sampling = SamplingParams(
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=config.top_k,
        max_new_tokens=config.max_new_tokens,
        seed=config.seed,
    )
    tokenizer = build_tokenizer(config) if (config.tokenizer != "auto" or not config.model_name_or_path) else None
    engine = {
        "engine": config.generation_engine,
        "static_cache": config.static_cache,
        "compile_decode": config.compile_decode,
    }
    if config.model_name_or_path:
        policy = HFPolicy(
            config.model_name_or_path,
            tokenizer,
            sampling=sampling,
            device=device,
            dtype=dtype,
            lora=config.lora,
            max_batch_size=config.generation_batch_size,
            **engine,
        )
    else:
        presets = {"tiny": TINY, "qwen2.5-0.5b": QWEN2_5_0_5B}
        values = presets[config.model_config] if isinstance(config.model_config, str) else config.model_config
        values = dict(values)
        if "vocab_size" in values and values["vocab_size"] < len(tokenizer):
            raise ValueError(f"model_config vocab_size {values['vocab_size']} < tokenizer size {len(tokenizer)}")
        model = build_random_causal_lm(values, tokenizer=tokenizer, seed=config.init_seed).to(dtype=dtype)
        policy = HFPolicy(
            model,
            tokenizer,
            sampling=sampling,
            device=device,
            lora=config.lora,
            max_batch_size=config.generation_batch_size,
            **engine,
            name=f"random-{config.model_config if isinstance(config.model_config, str) else 'custom'}",
        )
    if config.gradient_checkpointing:
        policy.model.gradient_checkpointing_enable()
    return policy


def load_tasks(config: SegmentGRPOConfig) -> list[Any]:
    """The training tasks of a config."""
    from ascend_kernel_gym.tasks.suite import get_task, load_suite

    if config.task_ids:
        return [get_task(task_id) for task_id in config.task_ids]
    tasks = list(load_suite(config.suite, split=config.split, levels=config.levels))
    if not tasks:
        raise ValueError(f"no tasks in suite {config.suite!r}, split {config.split!r}, levels {config.levels}")
    return tasks


def pack_micro_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Group sample indices so each group's ``rows x longest`` stays within ``max_tokens``.

    Samples are taken longest first; a sample longer than ``max_tokens`` gets a group of its own.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        length = lengths[index]
        if current and max(longest, length) * (len(current) + 1) > max_tokens:
            groups.append(current)
            current, longest = [], 0
        current.append(index)
        longest = max(longest, length)
    if current:
        groups.append(current)
    return groups


def _forward_kwargs_support(model: Any) -> set[str]:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return set(inspect.signature(base.forward).parameters)


def response_logprobs(
    model: Any, samples: Sequence[SegmentSample], temperature: float, device: Any, keep_arg: str | None
) -> tuple[torch.Tensor, int]:
    """Log-probs of each sample's response tokens under ``model`` (left-padded batch).

    Returns:
        ``[B, R]`` log-probs right-aligned (row ``i``'s response fills its last ``len(response_i)``
        columns; ``R`` is the longest response) and the number of input tokens processed.
    """
    pad = 0
    width = max(s.length for s in samples)
    longest = max(len(s.response_ids) for s in samples)
    ids = torch.full((len(samples), width), pad, dtype=torch.long)
    mask = torch.zeros((len(samples), width), dtype=torch.long)
    for row, sample in enumerate(samples):
        seq = sample.prompt_ids + sample.response_ids
        ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
        mask[row, width - len(seq) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "use_cache": False}
    if keep_arg is not None:
        kwargs[keep_arg] = longest + 1
    logits = model(**kwargs).logits
    logits = logits[:, -(longest + 1) : -1, :]
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    targets = ids[:, width - longest :]
    return selective_log_softmax(logits, targets), int(mask.sum())


def _right_aligned(rows: Sequence[Sequence[float]], width: int, device: Any) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, row in enumerate(rows):
        if row:
            out[i, width - len(row) :] = torch.tensor(list(row), dtype=torch.float32)
    return out.to(device)


def config_env_factory(config: SegmentGRPOConfig, task_ids: Sequence[str], tokenizer: Any = None) -> Callable[[], Any]:
    """The trainer's default env factory: :func:`make_env` from the config's env, compaction, KB and choice.

    Args:
        config: the run's settings.
        task_ids: the training tasks.
        tokenizer: the policy's tokenizer, given to compaction unless the config names one.
    """
    env_kwargs = {
        "suite": config.suite,
        "split": config.split,
        "backend": config.backend,
        "max_turns": config.max_turns,
        "reward": config.reward,
        "reward_mode": config.reward_mode,
        "task_ids": list(task_ids),
        **config.env_kwargs,
    }
    compaction = None
    if config.compaction is not None:
        compaction = dict(config.compaction)
        compaction.setdefault("tokenizer", tokenizer)
    return lambda: make_env(env_kwargs, compaction=compaction, kb=config.kb, choice=config.choice)


# ---------------------------------------------------------------------- trainer


class SegmentGRPOTrainer:
    """Trains an :class:`HFPolicy` with segment-level GRPO on AscendTriton.

    Args:
        config: the run's settings.
        policy: a ready policy (default: :func:`build_policy` from ``config``).
        tasks: training tasks (default: :func:`load_tasks` from ``config``).
        env_factory: builds one wrapped env (default: :func:`make_env` from the config's env,
            compaction, KB and choice settings, with the policy's tokenizer for compaction).
    """

    def __init__(
        self,
        config: SegmentGRPOConfig,
        policy: HFPolicy | None = None,
        tasks: Sequence[Any] | None = None,
        env_factory: Callable[[], Any] | None = None,
    ) -> None:
        config.validate()
        self.config = config
        random.seed(config.seed)
        torch.manual_seed(config.seed)
        self.policy = policy or build_policy(config)
        self.model = self.policy.model
        self.device = self.policy.device
        self.tasks = list(tasks) if tasks is not None else load_tasks(config)
        if not self.tasks:
            raise ValueError("tasks must not be empty")
        self.env_pool = EnvPool(env_factory or self._default_env_factory())
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters")
        self.optimizer = TrainerOptimizer(
            params,
            master_weights=config.uses_master_weights,
            lr=config.learning_rate,
            betas=(config.adam_beta1, config.adam_beta2),
            weight_decay=config.weight_decay,
        )
        self.reference: Any = None
        if config.kl_coef > 0 and config.lora is None:
            self.reference = copy.deepcopy(self.model).eval()
            for p in self.reference.parameters():
                p.requires_grad_(False)
        supported = _forward_kwargs_support(self.model)
        self._keep_arg = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in supported), None)
        self.iteration = 0
        self.optimizer_steps = 0
        self.rng = random.Random(config.seed)
        self.output_dir = Path(config.output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._task_order: list[int] = []
        if config.resume:
            checkpoint = self._find_checkpoint(config.resume)
            if checkpoint is not None:
                self.load_checkpoint(checkpoint)

    # ------------------------------------------------------------------ env
    def _default_env_factory(self) -> Callable[[], Any]:
        return config_env_factory(self.config, [t.id for t in self.tasks], tokenizer=self.policy.tokenizer)

    def close(self) -> None:
        self.env_pool.close()

    # ------------------------------------------------------------------ loop
    def _next_tasks(self) -> list[Any]:
        picked = []
        while len(picked) < min(self.config.tasks_per_iteration, len(self.tasks)):
            if not self._task_order:
                self._task_order = list(range(len(self.tasks)))
                self.rng.shuffle(self._task_order)
            index = self._task_order.pop()
            if self.tasks[index] not in picked:
                picked.append(self.tasks[index])
        return picked

    def collect(self) -> RolloutBatch:
        """One rollout batch at the current iteration."""
        cfg = self.config
        return collect_rollouts(
            self.policy,
            self._next_tasks(),
            cfg.group_size,
            env_pool=self.env_pool,
            seed=cfg.seed * 7919 + self.iteration,
            max_steps=cfg.max_steps_per_episode,
            max_context_tokens=cfg.max_context_tokens,
            env_workers=cfg.env_workers,
            progress=cfg.progress,
            waves=cfg.rollout_waves,
        )

    def train(self, iterations: int | None = None) -> list[dict[str, Any]]:
        """Run until ``config.iterations`` (or ``iterations`` more); returns the metrics of each iteration."""
        cfg = self.config
        target = cfg.iterations if iterations is None else self.iteration + iterations
        logger = MetricsLogger(self.output_dir, cfg.tensorboard, cfg.wandb_project, cfg.to_dict())
        history: list[dict[str, Any]] = []
        bar = None
        if cfg.progress:
            from tqdm import tqdm

            bar = tqdm(total=target, initial=self.iteration, desc="segment-grpo", unit="it")
        try:
            while self.iteration < target:
                record = self.train_iteration()
                logger.log(record)
                history.append(record)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(reward=f"{record['reward_mean']:.3f}", loss=f"{record.get('loss', 0.0):.4f}")
                if cfg.save_every and self.iteration % cfg.save_every == 0:
                    self.save_checkpoint()
            if not cfg.save_every or self.iteration % cfg.save_every != 0:
                self.save_checkpoint()
        finally:
            if bar is not None:
                bar.close()
            logger.close()
        return history

    def train_iteration(self) -> dict[str, Any]:
        """Rollouts, advantages, update; returns the iteration's metrics."""
        started = time.perf_counter()
        batch = self.collect()
        record: dict[str, Any] = {"iteration": self.iteration + 1}
        record.update(rollout_metrics(batch))
        record.update(self.update(batch))
        self.iteration += 1
        record["iteration_s"] = time.perf_counter() - started
        return record

    # ------------------------------------------------------------------ update
    def _weights(self, sample: SegmentSample, masked_spans: Sequence[tuple[int, int]] = ()) -> list[float]:
        """Per-token loss weights: policy tokens, less overlong samples, summary tokens (if off), ``masked_spans``."""
        cfg = self.config
        if cfg.mask_overlong and sample.overlong:
            return [0.0] * len(sample.response_ids)
        weights = [float(m) for m in sample.loss_mask]
        if not cfg.train_summary_tokens:
            weights = [w * (1 - s) for w, s in zip(weights, sample.summary_mask, strict=True)]
        for start, end in masked_spans:
            weights[start:end] = [0.0] * (end - start)
        return weights

    def _truncated_spans(self, batch: RolloutBatch) -> dict[int, list[tuple[int, int]]]:
        """Token spans of answers cut at ``max_new_tokens``, by sample index, when ``truncated_answers`` is mask."""
        spans: dict[int, list[tuple[int, int]]] = {}
        if self.config.truncated_answers != "mask":
            return spans
        for episode in batch.episodes:
            for turn in episode.turns:
                if turn.truncated and turn.sample >= 0:
                    spans.setdefault(turn.sample, []).append(turn.span)
        return spans

    def _no_grad_logprobs(self, model: Any, samples: list[SegmentSample]) -> list[list[float]]:
        out: list[list[float]] = [[] for _ in samples]
        lengths = [s.length for s in samples]
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for group in pack_micro_batches(lengths, self.config.max_tokens_per_micro_batch):
                    chunk = [samples[i] for i in group]
                    logp, _ = response_logprobs(model, chunk, self.config.temperature, self.device, self._keep_arg)
                    for row, index in enumerate(group):
                        n = len(samples[index].response_ids)
                        out[index] = logp[row, logp.shape[1] - n :].float().cpu().tolist() if n else []
        finally:
            if was_training:
                model.train()
        return out

    def update(self, batch: RolloutBatch) -> dict[str, Any]:
        """Compute advantages and take ``mini_batches`` optimizer steps on ``batch``'s samples."""
        cfg = self.config
        started = time.perf_counter()
        penalty = cfg.truncation_penalty if cfg.truncated_answers == "penalize" else 0.0
        per_turn = assign_advantages(
            batch, cfg.advantage, gamma=cfg.gamma, normalize_std=cfg.normalize_std, truncation_penalty=penalty
        )
        flat_adv = [a for row in per_turn for a in row]
        truncated_spans = self._truncated_spans(batch)
        spans_of = {id(s): truncated_spans.get(i, []) for i, s in enumerate(batch.samples)}
        samples = [s for s in batch.samples if s.response_ids and s.num_policy_tokens > 0]
        for s in samples:
            s.check()
        metrics: dict[str, Any] = {
            "advantage_mean": (sum(flat_adv) / len(flat_adv)) if flat_adv else 0.0,
            "advantage_abs_mean": (sum(abs(a) for a in flat_adv) / len(flat_adv)) if flat_adv else 0.0,
        }
        if not samples:
            metrics.update(loss=0.0, trained_tokens=0, optimizer_steps=0, update_s=0.0)
            return metrics
        self.model.train()
        old: list[list[float]] = [list(s.rollout_logprobs) for s in samples]
        keep = [True] * len(samples)
        ref: list[list[float]] | None = None
        mismatch_log_ratio: list[float] = []
        if cfg.recompute_old_logprobs or cfg.mismatch_eps is not None:
            recomputed = self._no_grad_logprobs(self.model, samples)
            for i, s in enumerate(samples):
                lp = torch.tensor(recomputed[i])
                ro = torch.tensor(s.rollout_logprobs)
                m = torch.tensor(s.loss_mask, dtype=torch.float32)
                if m.sum() > 0:
                    mismatch_log_ratio.append(float(((lp - ro) * m).sum() / m.sum()))
                if cfg.mismatch_eps is not None:
                    keep[i] = bool(mismatch_keep(lp[None], ro[None], m[None], cfg.mismatch_eps)[0])
            if cfg.recompute_old_logprobs:
                old = recomputed
        if cfg.kl_coef > 0:
            if self.reference is not None:
                ref = self._no_grad_logprobs(self.reference, samples)
            else:  # LoRA: the reference is the base model with the adapter switched off
                with self.model.disable_adapter():
                    ref = self._no_grad_logprobs(self.model, samples)
        order = list(range(len(samples)))
        self.rng.shuffle(order)
        n_mini = min(cfg.mini_batches, len(order))
        minis = [order[k::n_mini] for k in range(n_mini)]
        totals = {"loss": 0.0, "tokens": 0.0, "clipped": 0.0, "kl_sum": 0.0, "ratio_sum": 0.0, "input_tokens": 0}
        grad_norms: list[float] = []
        steps = 0
        for mini in minis:
            kept = [i for i in mini if keep[i]]
            weights = {i: self._weights(samples[i], spans_of[id(samples[i])]) for i in kept}
            num_tokens = sum(sum(w) for w in weights.values())
            if num_tokens <= 0:
                continue
            # S (sequence_mean): samples with a trainable token; M (constant): every sample of the mini-batch
            num_samples = (
                sum(1 for w in weights.values() if sum(w) > 0) if cfg.loss_aggregation == "sequence_mean" else len(mini)
            )
            self.optimizer.zero_grad()
            for group in pack_micro_batches([samples[i].length for i in kept], cfg.max_tokens_per_micro_batch):
                idx = [kept[g] for g in group]
                chunk = [samples[i] for i in idx]
                logp, n_inputs = response_logprobs(self.model, chunk, cfg.temperature, self.device, self._keep_arg)
                width = logp.shape[1]
                out = clipped_surrogate_loss(
                    logp,
                    _right_aligned([old[i] for i in idx], width, self.device),
                    _right_aligned([samples[i].advantages for i in idx], width, self.device),
                    _right_aligned([weights[i] for i in idx], width, self.device),
                    num_tokens=num_tokens,
                    clip_low=cfg.clip_low,
                    clip_high=cfg.clip_high,
                    ref_logprobs=_right_aligned([ref[i] for i in idx], width, self.device) if ref else None,
                    kl_coef=cfg.kl_coef,
                    kl_estimator=cfg.kl_estimator,
                    aggregation=cfg.loss_aggregation,
                    num_samples=num_samples,
                    constant=cfg.loss_constant or cfg.max_new_tokens,
                )
                out.loss.backward()
                self.optimizer.accumulate()
                totals["loss"] += float(out.loss.detach())
                totals["tokens"] += out.tokens
                totals["clipped"] += out.clipped
                totals["kl_sum"] += out.kl_sum
                totals["ratio_sum"] += out.ratio_sum
                totals["input_tokens"] += n_inputs
            grad_norms.append(self.optimizer.clip_grad_norm(cfg.max_grad_norm))
            self._set_lr()
            self.optimizer.step()
            self.optimizer_steps += 1
            steps += 1
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        elapsed = time.perf_counter() - started
        tokens = max(totals["tokens"], 1e-9)
        metrics.update(
            {
                "loss": totals["loss"] / max(1, steps),
                "trained_tokens": int(totals["tokens"]),
                "clip_fraction": totals["clipped"] / tokens,
                "kl": (totals["kl_sum"] / tokens) if ref is not None else None,
                "ratio_mean": totals["ratio_sum"] / tokens,
                "grad_norm": (sum(grad_norms) / len(grad_norms)) if grad_norms else None,
                "optimizer_steps": steps,
                "mismatch_dropped": sum(1 for k in keep if not k),
                "mismatch_log_ratio_mean": (sum(mismatch_log_ratio) / len(mismatch_log_ratio))
                if mismatch_log_ratio
                else None,
                "update_s": elapsed,
                "update_tokens_per_s": totals["input_tokens"] / max(1e-9, elapsed),
                "lr": self.optimizer.param_groups[0]["lr"],
            }
        )
        return metrics

    def _set_lr(self) -> None:
        cfg = self.config
        scale = 1.0
        if cfg.warmup_iterations > 0:
            scale = min(1.0, (self.optimizer_steps + 1) / cfg.warmup_iterations)
        for group in self.optimizer.param_groups:
            group["lr"] = cfg.learning_rate * scale

    # ------------------------------------------------------------------ checkpoints
    def _find_checkpoint(self, resume: str) -> Path | None:
        if resume == "auto":
            found = sorted(self.output_dir.glob(f"{CHECKPOINT_PREFIX}*"), key=lambda p: checkpoint_number(p))
            found = [p for p in found if (p / "trainer_state.json").is_file()]
            return found[-1] if found else None
        path = Path(resume).expanduser()
        if not (path / "trainer_state.json").is_file():
            raise FileNotFoundError(f"resume: {path} is not a checkpoint directory (no trainer_state.json)")
        return path

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Save model weights, optimizer state, counters and every RNG state; prune old checkpoints."""
        target = Path(path) if path is not None else self.output_dir / f"{CHECKPOINT_PREFIX}{self.iteration}"
        target.mkdir(parents=True, exist_ok=True)
        save_hf_model(self.model, self.policy.tokenizer, target)
        torch.save(self.optimizer.state_dict(), target / "optimizer.pt")
        rng = {
            "python": random.getstate(),
            "trainer": self.rng.getstate(),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            "sampler": self.policy.sampler_state(),
        }
        try:
            import numpy as np

            rng["numpy"] = np.random.get_state()
        except ImportError:  # pragma: no cover - numpy is a base dependency
            pass
        torch.save(rng, target / "rng.pt")
        state = {
            "iteration": self.iteration,
            "optimizer_steps": self.optimizer_steps,
            "task_order": self._task_order,
            "config": self.config.to_dict(),
        }
        (target / "trainer_state.json").write_text(json.dumps(state, indent=2, default=str), encoding="utf-8")
        if path is None:
            self._prune_checkpoints()
        return target

    def _prune_checkpoints(self) -> None:
        found = sorted(self.output_dir.glob(f"{CHECKPOINT_PREFIX}*"), key=lambda p: checkpoint_number(p))
        for old in found[: -self.config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore a checkpoint written by :meth:`save_checkpoint`."""
        source = Path(path)
        state = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))
        if (source / "model.pt").is_file():  # checkpoints of earlier versions: a raw state dict
            self.model.load_state_dict(torch.load(source / "model.pt", map_location=self.device, weights_only=True))
        else:
            load_hf_weights(self.model, source)
        self.optimizer.load_state_dict(torch.load(source / "optimizer.pt", map_location=self.device, weights_only=True))
        rng = torch.load(source / "rng.pt", weights_only=False)
        random.setstate(rng["python"])
        self.rng.setstate(rng["trainer"])
        torch.set_rng_state(rng["torch"])
        if rng.get("cuda") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        if rng.get("sampler") is not None:
            self.policy.set_sampler_state(rng["sampler"])
        if "numpy" in rng:
            import numpy as np

            np.random.set_state(rng["numpy"])
        self.iteration = int(state["iteration"])
        self.optimizer_steps = int(state["optimizer_steps"])
        self._task_order = list(state.get("task_order", []))
