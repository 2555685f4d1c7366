"""``SegmentGRPOConfig``: every setting of a segment-GRPO run, with help text, YAML loading and checks."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.agents.advantages import ESTIMATORS

MODEL_PRESETS = ("tiny", "qwen2.5-0.5b")
TOKENIZERS = ("auto", "char", "bpe")
DTYPES = ("float32", "bfloat16", "float16")
#: Loss aggregations (``agents.loss.AGGREGATIONS``; repeated here so that the config imports no torch).
AGGREGATIONS = ("token_mean", "sequence_mean", "constant")
KL_ESTIMATORS = ("k3", "k2")
TRUNCATED_ANSWERS = ("keep", "mask", "penalize")
GENERATION_ENGINES = ("loop", "generate")

#: Named objective settings for the ablations of the ATRL comparison (``preset:`` in a YAML file, or
#: :meth:`SegmentGRPOConfig.from_preset`). A preset sets these fields; keys given next to it win.
#: ``grpo``: GRPO as published (terminal reward, no compaction, std-normalised group mean, sequence mean,
#: symmetric clip). ``dr_grpo``: Dr. GRPO (no std, constant normaliser). ``dapo``: DAPO's loss side
#: (token mean, clip-higher, cut answers masked; its dynamic sampling is not built in). ``segment_grpo``:
#: this package's default objective with policy-written compaction, summary tokens trained.
PRESETS: dict[str, dict[str, Any]] = {
    "grpo": {
        "reward_mode": "terminal",
        "compaction": None,
        "advantage": "trajectory",
        "normalize_std": True,
        "loss_aggregation": "sequence_mean",
        "clip_low": 0.2,
        "clip_high": 0.2,
        "truncated_answers": "keep",
    },
    "dr_grpo": {
        "reward_mode": "terminal",
        "compaction": None,
        "advantage": "trajectory",
        "normalize_std": False,
        "loss_aggregation": "constant",
        "clip_low": 0.2,
        "clip_high": 0.2,
        "truncated_answers": "keep",
    },
    "dapo": {
        "reward_mode": "terminal",
        "compaction": None,
        "advantage": "trajectory",
        "normalize_std": True,
        "loss_aggregation": "token_mean",
        "clip_low": 0.2,
        "clip_high": 0.28,
        "truncated_answers": "mask",
    },
    "segment_grpo": {
        "reward_mode": "improvement",
        "compaction": {"strategy": "policy"},
        "advantage": "segment",
        "normalize_std": False,
        "loss_aggregation": "token_mean",
        "clip_low": 0.2,
        "clip_high": 0.28,
        "train_summary_tokens": True,
        "truncated_answers": "keep",
    },
}


@dataclass
class SegmentGRPOConfig:
    """Configuration of :class:`~ascend_kernel_gym.agents.trainer.SegmentGRPOTrainer`.

    Load from YAML with :meth:`from_yaml` (unknown keys are an error); every field's help text is
    in ``dataclasses.fields(SegmentGRPOConfig)[i].metadata["help"]`` and in ``akg train --help-config``.
    """

    # ---------------------------------------------------------------- model
    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "Local directory of a Hugging Face causal LM (loaded with local_files_only). Null: build a "
            "random model from model_config."
        },
    )
    model_config: Any = field(
        default="tiny",
        metadata={
            "help": "Random-weight model to build when model_name_or_path is null: a preset name ('tiny', "
            "'qwen2.5-0.5b') or a dict of architecture values ('architecture': qwen2|llama, hidden_size, ...)."
        },
    )
    tokenizer: str = field(
        default="auto",
        metadata={
            "help": "'auto' (the model directory's tokenizer; 'char' for random models), 'char' (one token per "
            "printable character, built locally), 'bpe' or 'bpe:<vocab size>' (byte-level BPE trained locally on "
            "the bundled tasks, knowledge base and prompts; default 8192), or a local path."
        },
    )
    dtype: str = field(
        default="float32",
        metadata={
            "help": "Dtype of the model's weights (generation and forward/backward run in it): float32, bfloat16 "
            "or float16. With bfloat16/float16 the optimizer keeps float32 master weights (see master_weights)."
        },
    )
    master_weights: bool | None = field(
        default=None,
        metadata={
            "help": "Keep a float32 master copy of the trainable weights in the optimizer (gradients accumulated "
            "and AdamW moments in float32, the model's weights rounded from the master after each step). Null: "
            "on when dtype is not float32. Off with bfloat16 most updates at small learning rates round away."
        },
    )
    device: str | None = field(
        default=None,
        metadata={"help": "Torch device ('cpu', 'cuda', 'cuda:1'); null picks cuda when available."},
    )
    lora: dict[str, Any] | None = field(
        default=None,
        metadata={"help": "LoRA settings for peft (r, alpha, dropout, target_modules); null trains all weights."},
    )
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Recompute activations in the backward pass to save memory."}
    )
    init_seed: int = field(default=0, metadata={"help": "Seed of the random initial weights (random models only)."})

    # ---------------------------------------------------------------- tasks and env
    suite: str = field(default="core", metadata={"help": "Task suite: a bundled suite name or a suite directory."})
    split: str = field(default="train", metadata={"help": "Split of the suite to train on: train, test or all."})
    levels: list[int] | None = field(default=None, metadata={"help": "Keep only these levels (null: all)."})
    task_ids: list[str] | None = field(
        default=None, metadata={"help": "Explicit task ids (overrides split and levels)."}
    )
    tasks_per_iteration: int = field(default=4, metadata={"help": "Tasks (groups) per iteration."})
    group_size: int = field(
        default=8,
        metadata={"help": "G: episodes per task in a group (>= 2, the baselines need other episodes)."},
    )
    backend: str = field(default="auto", metadata={"help": "Evaluation backend: auto, npu, cuda or interpreter."})
    max_turns: int = field(default=4, metadata={"help": "Kernel answers per episode (the env's max_turns)."})
    reward: str = field(
        default="default",
        metadata={"help": "Reward preset of the env: default, kevin, drkernel, binary or tiered."},
    )
    reward_mode: str = field(
        default="improvement", metadata={"help": "Step reward mode: improvement, score or terminal."}
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Extra AscendTritonEnv arguments (e.g. num_trials, timeout_s)."},
    )
    compaction: dict[str, Any] | None = field(
        default_factory=lambda: {"strategy": "policy"},
        metadata={
            "help": "CompactionWrapper arguments (null: no compaction). The policy's tokenizer is passed for "
            "token counting unless the dict sets its own."
        },
    )
    kb: dict[str, Any] | None = field(
        default=None, metadata={"help": "KBRetrievalWrapper arguments (null: no knowledge base)."}
    )
    choice: dict[str, Any] | None = field(
        default=None,
        metadata={
            "help": "KernelChoiceWrapper arguments for learning checks with tiny models "
            "(null: off; {} for the defaults)."
        },
    )
    max_steps_per_episode: int = field(
        default=64, metadata={"help": "Safety cap on steps per episode (summary turns included)."}
    )
    max_context_tokens: int | None = field(
        default=None,
        metadata={"help": "End (and mark overlong) an episode whose token context would exceed this (null: no limit)."},
    )
    env_workers: int | None = field(
        default=None,
        metadata={"help": "Threads stepping envs concurrently (null: one per live episode, <= 32)."},
    )

    # ---------------------------------------------------------------- sampling
    temperature: float = field(
        default=1.0, metadata={"help": "Sampling temperature (also applied to logits in the loss)."}
    )
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling mass."})
    top_k: int = field(default=0, metadata={"help": "Top-k sampling (0: off)."})
    max_new_tokens: int = field(default=1024, metadata={"help": "Maximum tokens per answer."})
    generation_batch_size: int = field(default=32, metadata={"help": "Contexts per generation forward pass."})
    generation_engine: str = field(
        default="loop",
        metadata={
            "help": "'loop': the package's own batched sampling loop (dynamic KV cache); 'generate': transformers' "
            "generate (with static_cache, a static KV cache)."
        },
    )
    static_cache: bool = field(
        default=False,
        metadata={"help": "With generation_engine 'generate': cache_implementation='static' (fixed-shape KV cache)."},
    )
    compile_decode: bool = field(
        default=False,
        metadata={"help": "With a static cache: torch.compile the decoding step (transformers' compile_config)."},
    )
    rollout_waves: int = field(
        default=1,
        metadata={
            "help": "Split the live episodes into this many waves: while one wave's answers are evaluated, the "
            "next wave generates (1: generate all, then evaluate all)."
        },
    )

    # ---------------------------------------------------------------- objective
    advantage: str = field(
        default="segment",
        metadata={"help": "Advantage estimator: segment (default), trajectory or turn."},
    )
    gamma: float = field(
        default=1.0,
        metadata={"help": "Discount per turn of the reward-to-go (segment, turn, trajectory)."},
    )
    normalize_std: bool = field(
        default=False, metadata={"help": "Divide advantages by the std of the compared returns."}
    )
    loss_aggregation: str = field(
        default="token_mean",
        metadata={
            "help": "token_mean (every trainable token of the mini-batch weighs the same; DAPO), sequence_mean "
            "(every sample weighs the same; GRPO) or constant (sum / (samples x loss_constant); Dr. GRPO)."
        },
    )
    loss_constant: int | None = field(
        default=None,
        metadata={"help": "C of the constant aggregation (null: max_new_tokens)."},
    )
    truncated_answers: str = field(
        default="keep",
        metadata={
            "help": "Answers cut at max_new_tokens: keep (train them like any other), mask (their tokens get "
            "weight 0) or penalize (truncation_penalty subtracted from the turn's reward)."
        },
    )
    truncation_penalty: float = field(
        default=0.0, metadata={"help": "Reward subtracted from a cut answer's turn with truncated_answers: penalize."}
    )
    clip_low: float = field(default=0.2, metadata={"help": "Lower clip of the ratio: 1 - clip_low."})
    clip_high: float = field(default=0.28, metadata={"help": "Upper clip of the ratio: 1 + clip_high."})
    kl_coef: float = field(
        default=0.0,
        metadata={"help": "Weight of the KL penalty to the frozen initial policy (0: no reference model)."},
    )
    kl_estimator: str = field(
        default="k3",
        metadata={
            "help": "k3 (value estimates KL(pi||ref), gradient is KL(ref||pi)'s) or k2 (gradient is KL(pi||ref)'s)."
        },
    )
    mask_overlong: bool = field(default=True, metadata={"help": "Give episodes over the compaction cap zero weight."})
    train_summary_tokens: bool = field(
        default=True, metadata={"help": "Train the tokens of summary-writing turns (recommended)."}
    )
    mismatch_eps: float | None = field(
        default=None,
        metadata={
            "help": "Drop samples whose geometric-mean train/rollout probability ratio is outside [1-eps, 1+eps] "
            "(null: off; Dr. Kernel uses 0.001)."
        },
    )
    recompute_old_logprobs: bool = field(
        default=False,
        metadata={
            "help": "Use the trainer's own log-probs (one no-grad pass before the update) as the old policy instead of "
            "the rollout's."
        },
    )

    # ---------------------------------------------------------------- optimisation
    iterations: int = field(
        default=100,
        metadata={"help": "Training iterations (each: one rollout batch, then the update)."},
    )
    learning_rate: float = field(default=1e-6, metadata={"help": "AdamW learning rate."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay."})
    adam_beta1: float = field(default=0.9, metadata={"help": "AdamW beta1."})
    adam_beta2: float = field(default=0.999, metadata={"help": "AdamW beta2."})
    warmup_iterations: int = field(default=0, metadata={"help": "Linear learning-rate warm-up, in optimizer steps."})
    max_grad_norm: float | None = field(default=1.0, metadata={"help": "Gradient clipping norm (null: no clipping)."})
    mini_batches: int = field(
        default=1,
        metadata={"help": "Optimizer steps per rollout batch (the samples are split evenly)."},
    )
    max_tokens_per_micro_batch: int = field(
        default=8192,
        metadata={
            "help": "Micro-batch size in padded tokens (rows x longest sequence); gradients "
            "accumulate over micro-batches."
        },
    )
    seed: int = field(
        default=0,
        metadata={"help": "Seed of task sampling, episode seeds, sampling and shuffling."},
    )

    # ---------------------------------------------------------------- output
    output_dir: str = field(
        default="runs/segment_grpo",
        metadata={"help": "Directory for metrics.jsonl, checkpoints and tensorboard logs."},
    )
    save_every: int = field(default=10, metadata={"help": "Save a checkpoint every N iterations (0: only at the end)."})
    keep_checkpoints: int = field(default=2, metadata={"help": "Checkpoints to keep (older ones are deleted)."})
    resume: str | None = field(
        default="auto",
        metadata={"help": "'auto' (latest checkpoint in output_dir, if any), a checkpoint path, or null."},
    )
    tensorboard: bool = field(default=True, metadata={"help": "Also log to tensorboard when it is installed."})
    wandb_project: str | None = field(
        default=None,
        metadata={"help": "Also log to this Weights & Biases project when wandb is installed (null: off)."},
    )
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})

    def __post_init__(self) -> None:
        self.validate()

    # ---------------------------------------------------------------- checks
    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid field."""

        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"SegmentGRPOConfig.{name}: {why} (got {getattr(self, name)!r})")

        if self.model_name_or_path is None:
            if isinstance(self.model_config, str) and self.model_config not in MODEL_PRESETS:
                raise bad("model_config", f"must be one of {MODEL_PRESETS} or a dict")
            if not isinstance(self.model_config, (str, dict)):
                raise bad("model_config", "must be a preset name or a dict")
        bpe_size = self.tokenizer.startswith("bpe:") and self.tokenizer[4:].isdigit() and int(self.tokenizer[4:]) >= 300
        if self.tokenizer not in TOKENIZERS and not bpe_size and not Path(self.tokenizer).expanduser().exists():
            raise bad("tokenizer", f"must be one of {TOKENIZERS}, 'bpe:<vocab size >= 300>' or an existing local path")
        if self.dtype not in DTYPES:
            raise bad("dtype", f"must be one of {DTYPES}")
        if self.split not in ("train", "test", "all"):
            raise bad("split", "must be train, test or all")
        if self.backend not in ("auto", "npu", "cuda", "interpreter"):
            raise bad("backend", "must be auto, npu, cuda or interpreter")
        if self.reward_mode not in ("improvement", "score", "terminal"):
            raise bad("reward_mode", "must be improvement, score or terminal")
        if self.advantage not in ESTIMATORS:
            raise bad("advantage", f"must be one of {ESTIMATORS}")
        choices = {
            "loss_aggregation": AGGREGATIONS,
            "kl_estimator": KL_ESTIMATORS,
            "truncated_answers": TRUNCATED_ANSWERS,
            "generation_engine": GENERATION_ENGINES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise bad(name, f"must be one of {allowed}")
        if self.loss_constant is not None and (isinstance(self.loss_constant, bool) or self.loss_constant < 1):
            raise bad("loss_constant", "must be an integer >= 1 or null")
        if self.truncation_penalty < 0:
            raise bad("truncation_penalty", "must be >= 0")
        if self.master_weights is not None and not isinstance(self.master_weights, bool):
            raise bad("master_weights", "must be true, false or null")
        positive_ints = (
            "tasks_per_iteration",
            "max_turns",
            "max_steps_per_episode",
            "max_new_tokens",
            "generation_batch_size",
            "iterations",
            "mini_batches",
            "max_tokens_per_micro_batch",
            "keep_checkpoints",
            "rollout_waves",
        )
        for name in positive_ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(name, "must be an integer >= 1")
        for name in ("save_every", "warmup_iterations", "top_k", "seed", "init_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(name, "must be an integer >= 0")
        if isinstance(self.group_size, bool) or not isinstance(self.group_size, int) or self.group_size < 2:
            raise bad("group_size", "must be an integer >= 2 (the baselines compare episodes of a group)")
        if not 0.0 <= self.gamma <= 1.0:
            raise bad("gamma", "must be in [0, 1]")
        if not 0.0 <= self.clip_low < 1.0:
            raise bad("clip_low", "must be in [0, 1)")
        if self.clip_high < 0.0:
            raise bad("clip_high", "must be >= 0")
        if self.kl_coef < 0.0:
            raise bad("kl_coef", "must be >= 0")
        if self.mismatch_eps is not None and not 0.0 < self.mismatch_eps < 1.0:
            raise bad("mismatch_eps", "must be in (0, 1) or null")
        if self.temperature < 0.0:
            raise bad("temperature", "must be >= 0")
        if not 0.0 < self.top_p <= 1.0:
            raise bad("top_p", "must be in (0, 1]")
        if self.learning_rate <= 0.0:
            raise bad("learning_rate", "must be > 0")
        if self.weight_decay < 0.0:
            raise bad("weight_decay", "must be >= 0")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0.0:
            raise bad("max_grad_norm", "must be > 0 or null")
        if self.max_context_tokens is not None and self.max_context_tokens < 1:
            raise bad("max_context_tokens", "must be >= 1 or null")
        for name in ("env_kwargs",):
            if not isinstance(getattr(self, name), dict):
                raise bad(name, "must be a mapping")
        for name in ("compaction", "kb", "choice", "lora"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise bad(name, "must be a mapping or null")
        if self.lora is not None:
            unknown = set(self.lora) - {"r", "alpha", "dropout", "target_modules"}
            if unknown:
                raise bad("lora", f"unknown keys {sorted(unknown)}")

    # ---------------------------------------------------------------- I/O
    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Field name -> help text."""
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}

    @property
    def uses_master_weights(self) -> bool:
        """Whether the optimizer keeps float32 master weights (``master_weights``, null resolved by ``dtype``)."""
        return self.dtype != "float32" if self.master_weights is None else self.master_weights

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> SegmentGRPOConfig:
        """A config with :data:`PRESETS` ``[name]`` applied, then ``overrides``."""
        return cls.from_dict({"preset": name, **overrides})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SegmentGRPOConfig:
        """Build from a mapping; unknown keys raise ``ValueError`` listing the known ones.

        A ``preset`` key names one of :data:`PRESETS`: its values are applied first, the mapping's other
        keys override them.
        """
        if not isinstance(data, dict):
            raise ValueError(f"a config must be a mapping, got {type(data).__name__}")
        data = dict(data)
        preset = data.pop("preset", None)
        if preset is not None:
            if preset not in PRESETS:
                raise ValueError(f"unknown preset {preset!r}; presets: {sorted(PRESETS)}")
            data = {**PRESETS[preset], **data}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
        return cls(**data)

    @classmethod
    def from_yaml(cls, path: str | Path, preset: str | None = None) -> SegmentGRPOConfig:
        """Load a YAML file (a mapping of field names to values); ``preset`` overrides the file's ``preset`` key."""
        import yaml

        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"config file {p} does not exist")
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        if preset is not None and isinstance(data, dict):
            data = {**data, "preset": preset}
        try:
            return cls.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{p}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self, path: str | Path) -> None:
        import yaml

        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False), encoding="utf-8")
