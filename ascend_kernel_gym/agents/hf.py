"""A local Hugging Face causal LM as a :class:`~ascend_kernel_gym.agents.policy.Policy`.

Besides the messages-in interface, :class:`HFPolicy` exposes the token-level operations that
rollout collection needs to build training samples whose tokens are exactly what the model saw
(:meth:`HFPolicy.render`, :meth:`HFPolicy.encode_text`, :meth:`HFPolicy.decode`,
:meth:`HFPolicy.generate_from_ids`).

Two generation engines (``engine``):

- ``loop`` (default): the package's own batched, left-padded decoding loop with a dynamic KV cache;
  the prefill computes logits for the last position only (``logits_to_keep=1``), not for every
  prompt position.
- ``generate``: ``transformers``' own ``generate``, optionally with a static KV cache
  (``static_cache=True``, ``cache_implementation="static"``) and a ``torch.compile``'d decoding step
  (``compile_decode=True``; on CUDA). A logits processor placed before the sampling warpers records
  the log-probabilities, one ``[B, V]`` distribution at a time.

The log-probability recorded for each sampled token is ``log_softmax(logits / temperature)`` at
that token: the full temperature-scaled distribution, before top-k / top-p truncation, which is what
the trainer recomputes (with the same temperature) for the importance ratio.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.agents.policy import Generation, Message, Policy


@dataclass
class SamplingParams:
    """Sampling settings.

    Attributes:
        temperature: softmax temperature; 0 means greedy decoding.
        top_p: nucleus sampling mass (1.0 = off).
        top_k: keep the k most likely tokens (0 = off).
        max_new_tokens: maximum tokens per answer.
        seed: seed of the sampling generator (``None``: not reseeded).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 512
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass
class LoraSettings:
    """LoRA adapter settings (through peft).

    Attributes:
        r: rank.
        alpha: scaling numerator (``lora_alpha``).
        dropout: dropout on the adapter input.
        target_modules: module names to adapt (``"all-linear"`` for every linear layer).
    """

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: list[str] | str = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])


def _load_model(path: str, dtype: Any, trust_remote_code: bool) -> Any:
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
    except TypeError:  # transformers < 4.56 names it torch_dtype
        return AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, **kwargs)


def _cache_argument(model: Any) -> str:
    """The forward() keyword that takes the KV cache: ``cache`` (transformers >= 5.x) or ``past_key_values``."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _cache_of(result: Any) -> Any:
    cache = getattr(result, "cache", None)
    return cache if cache is not None else result.past_key_values


def _logits_to_keep_argument(model: Any) -> str | None:
    """The forward() keyword that limits which positions get logits, if the model has one."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    parameters = inspect.signature(base.forward).parameters
    return next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in parameters), None)


ENGINES = ("loop", "generate")
#: With a static cache, prompts are left-padded to a multiple of this many tokens.
STATIC_WIDTH_MULTIPLE = 128


class _LogprobRecorder:
    """A logits processor for ``generate`` that records each sampled token's log-probability.

    At step ``s`` it sees the token sampled at step ``s - 1`` (the last column of ``input_ids``) and
    reads its log-probability from the distribution it kept at step ``s - 1``; it then keeps this
    step's ``log_softmax(scores / T)``. The last token's log-probability is read by :meth:`finish`.
    Placed first in the processor list, it sees the raw logits, before temperature / top-k / top-p.
    """

    def __init__(self, temperature: float) -> None:
        self.temperature = temperature if temperature > 0 else 1.0
        self.previous: Any = None
        self.logprobs: list[Any] = []

    def _take(self, tokens: Any) -> None:
        self.logprobs.append(self.previous.gather(-1, tokens[:, None]).squeeze(-1))

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.previous is not None:
            self._take(input_ids[:, -1])
        self.previous = torch.log_softmax(scores.float() / self.temperature, -1)
        return scores

    def finish(self, last_tokens: Any) -> Any:
        """``[B, steps]`` log-probabilities once generation is over (``last_tokens``: the final column)."""
        import torch

        self._take(last_tokens)
        self.previous = None
        return torch.stack(self.logprobs, 1)


class HFPolicy(Policy):
    """A local causal LM with a chat template.

    Args:
        model: a local directory (loaded with ``local_files_only``) or a model object.
        tokenizer: a tokenizer object; defaults to loading it from ``model`` when that is a path.
        sampling: a :class:`SamplingParams` (or a dict of its fields).
        device: torch device; defaults to the model's device (a path loads to ``cuda`` when available).
        dtype: torch dtype (or its name) for a model loaded from a path.
        lora: a :class:`LoraSettings` (or dict) to wrap the model with a fresh LoRA adapter.
        max_batch_size: contexts per forward pass during generation (larger batches are split).
        chat_template: overrides the tokenizer's chat template.
        name: the name in reports.
        trust_remote_code: passed to ``from_pretrained``.
        engine: ``loop`` (the package's sampling loop) or ``generate`` (``transformers``' generate).
        static_cache: with ``engine="generate"``, a static KV cache.
        compile_decode: with a static cache, let ``generate`` compile the decoding step (CUDA only).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        sampling: SamplingParams | dict[str, Any] | None = None,
        device: Any = None,
        dtype: Any = None,
        lora: LoraSettings | dict[str, Any] | None = None,
        max_batch_size: int = 32,
        chat_template: str | None = None,
        name: str | None = None,
        trust_remote_code: bool = False,
        engine: str = "loop",
        static_cache: bool = False,
        compile_decode: bool = False,
    ) -> None:
        import torch

        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")

        if isinstance(model, (str, Path)):
            path = str(model)
            if not Path(path).is_dir():
                raise FileNotFoundError(f"model: {path!r} is not a local directory (nothing is downloaded)")
            if isinstance(dtype, str):
                dtype = getattr(torch, dtype)
            model_obj = _load_model(path, dtype, trust_remote_code)
            if tokenizer is None:
                from ascend_kernel_gym.agents.local_lm import load_tokenizer

                tokenizer = load_tokenizer(path)
            if device is None:
                device = "cuda" if torch.cuda.is_available() else "cpu"
            self.name = name or Path(path).name
        else:
            model_obj = model
            if tokenizer is None:
                raise ValueError("tokenizer is required when model is an object")
            self.name = name or type(model).__name__
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if chat_template is not None:
            tokenizer.chat_template = chat_template
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("tokenizer has no chat template: pass chat_template=...")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if isinstance(sampling, dict):
            sampling = SamplingParams(**sampling)
        self.sampling = sampling or SamplingParams()
        if lora is not None:
            model_obj = self._apply_lora(model_obj, lora)
        if device is not None:
            model_obj = model_obj.to(device)
        self.model = model_obj
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.lora = lora
        self._generator: Any = None
        self._stop_ids = self._find_stop_ids()
        self._cache_arg = _cache_argument(model_obj)
        self._keep_arg = _logits_to_keep_argument(model_obj)
        self.engine = engine
        self.static_cache = static_cache
        self.compile_decode = compile_decode

    # ------------------------------------------------------------------ setup

    @staticmethod
    def _apply_lora(model: Any, lora: LoraSettings | dict[str, Any]) -> Any:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as exc:  # pragma: no cover - peft is in the train extra
            raise ImportError("lora needs peft: pip install 'ascend-kernel-gym[train]'") from exc
        settings = LoraSettings(**lora) if isinstance(lora, dict) else lora
        config = LoraConfig(
            r=settings.r,
            lora_alpha=settings.alpha,
            lora_dropout=settings.dropout,
            target_modules=settings.target_modules,
            task_type="CAUSAL_LM",
        )
        return get_peft_model(model, config)

    def _find_stop_ids(self) -> list[int]:
        ids = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        for token in ("<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>"):
            tid = self.tokenizer.convert_tokens_to_ids(token)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id and tid >= 0:
                ids.add(tid)
        config_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if isinstance(config_eos, int):
            ids.add(config_eos)
        elif isinstance(config_eos, list):
            ids.update(int(i) for i in config_eos)
        if not ids:
            raise ValueError("tokenizer has no eos token: cannot tell when an answer ends")
        return sorted(ids)

    @property
    def stop_ids(self) -> list[int]:
        """Token ids that end an answer."""
        return list(self._stop_ids)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["sampling"] = asdict(self.sampling)
        info["parameters"] = int(sum(p.numel() for p in self.model.parameters()))
        if self.lora is not None:
            info["lora"] = asdict(self.lora) if isinstance(self.lora, LoraSettings) else dict(self.lora)
        return info

    # ------------------------------------------------------------------ text <-> tokens

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The chat template's text for ``messages``."""
        return self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=add_generation_prompt
        )

    def encode_text(self, text: str) -> list[int]:
        """Token ids of ``text`` (special-token strings in it become special tokens; no BOS added)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode_messages(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> list[int]:
        return self.encode_text(self.render(messages, add_generation_prompt))

    def decode(self, ids: Sequence[int], keep_special: bool = False) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=not keep_special)

    # ------------------------------------------------------------------ generation

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        return self.generate_from_ids([self.encode_messages(messages) for messages in batch])

    def generate_from_ids(self, prompts: Sequence[Sequence[int]]) -> list[Generation]:
        """Sample one answer per prompt (token ids, already rendered with the chat template)."""
        out: list[Generation] = []
        chunk_fn = self._generate_chunk_hf if self.engine == "generate" else self._generate_chunk
        for start in range(0, len(prompts), self.max_batch_size):
            out.extend(chunk_fn(prompts[start : start + self.max_batch_size]))
        return out

    def _sampler(self) -> Any:
        import torch

        if self._generator is None:
            self._generator = torch.Generator(device=self.device)
            if self.sampling.seed is not None:
                self._generator.manual_seed(self.sampling.seed)
            else:
                self._generator.seed()
        return self._generator

    def sampler_state(self) -> Any:
        """The sampling generator's state (for checkpoints), or ``None`` before the first sample."""
        return None if self._generator is None else self._generator.get_state()

    def set_sampler_state(self, state: Any) -> None:
        """Restore a state from :meth:`sampler_state`."""
        self._sampler().set_state(state)

    def _pick(self, logits: Any) -> tuple[Any, Any]:
        """Sample next tokens from ``[B, V]`` logits; return (tokens, log-probs under logits / T)."""
        import torch

        params = self.sampling
        logits = logits.float()
        if params.temperature == 0:
            tokens = logits.argmax(-1)
            logprobs = torch.log_softmax(logits, -1).gather(-1, tokens[:, None]).squeeze(-1)
            return tokens, logprobs
        scaled = logits / params.temperature
        logprobs_all = torch.log_softmax(scaled, -1)
        filtered = scaled
        if params.top_k and params.top_k < filtered.shape[-1]:
            kth = torch.topk(filtered, params.top_k, dim=-1).values[:, -1:]
            filtered = filtered.masked_fill(filtered < kth, float("-inf"))
        if params.top_p < 1.0:
            sorted_logits, order = torch.sort(filtered, descending=True, dim=-1)
            cumulative = torch.softmax(sorted_logits, -1).cumsum(-1)
            drop_sorted = cumulative - torch.softmax(sorted_logits, -1) >= params.top_p  # keep the first token always
            drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
            filtered = filtered.masked_fill(drop, float("-inf"))
        probs = torch.softmax(filtered, -1)
        tokens = torch.multinomial(probs, 1, generator=self._sampler()).squeeze(-1)
        return tokens, logprobs_all.gather(-1, tokens[:, None]).squeeze(-1)

    def left_padded(self, prompts: Sequence[Sequence[int]], multiple: int = 1) -> tuple[Any, Any]:
        """``input_ids`` and ``attention_mask``, left-padded to the longest prompt rounded up to ``multiple``."""
        import torch

        for n, prompt in enumerate(prompts):
            if len(prompt) == 0:
                raise ValueError(f"prompts[{n}] is empty")
        device = self.device
        pad = int(self.tokenizer.pad_token_id)
        width = -(-max(len(p) for p in prompts) // multiple) * multiple
        input_ids = torch.full((len(prompts), width), pad, dtype=torch.long, device=device)
        attention = torch.zeros((len(prompts), width), dtype=torch.long, device=device)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long, device=device)
            attention[row, width - len(prompt) :] = 1
        return input_ids, attention

    def _generate_chunk_hf(self, prompts: Sequence[Sequence[int]]) -> list[Generation]:
        """One batch through ``transformers``' ``generate`` (see the module docstring)."""
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        if not prompts:
            return []
        params = self.sampling
        # a static cache (and its compiled step) has one shape per (batch, width): round the width up so shapes repeat
        input_ids, attention = self.left_padded(prompts, STATIC_WIDTH_MULTIPLE if self.static_cache else 1)
        pad = int(self.tokenizer.pad_token_id)
        sample = params.temperature > 0
        config = GenerationConfig(
            do_sample=sample,
            temperature=params.temperature if sample else 1.0,
            top_p=params.top_p,
            top_k=params.top_k,
            repetition_penalty=1.0,
            max_new_tokens=params.max_new_tokens,
            eos_token_id=list(self._stop_ids),
            pad_token_id=pad,
            return_dict_in_generate=True,
            cache_implementation="static" if self.static_cache else None,
            disable_compile=not (self.static_cache and self.compile_decode),
        )
        recorder = _LogprobRecorder(params.temperature)
        # generate samples with the global RNG: seed it from this policy's generator, then restore it
        seed = int(torch.randint(0, 2**62, (1,), generator=self._sampler(), device=self.device).item())
        devices = [self.device] if self.device.type == "cuda" else []
        was_training = self.model.training
        self.model.eval()
        started = time.perf_counter()
        try:
            with torch.random.fork_rng(devices=devices), torch.no_grad():
                torch.manual_seed(seed)
                out = self.model.generate(
                    input_ids=input_ids,
                    attention_mask=attention,
                    generation_config=config,
                    logits_processor=LogitsProcessorList([recorder]),
                )
        finally:
            if was_training:
                self.model.train()
        new_tokens = out.sequences[:, input_ids.shape[1] :]
        logprobs = recorder.finish(new_tokens[:, -1])
        elapsed = time.perf_counter() - started
        return self._generations(prompts, new_tokens.tolist(), logprobs.tolist(), elapsed)

    def _generations(
        self,
        prompts: Sequence[Sequence[int]],
        token_rows: list[list[int]],
        logprob_rows: list[list[float]],
        elapsed: float,
    ) -> list[Generation]:
        """Cut each row after its first stop token and wrap it as a :class:`Generation`."""
        generations = []
        stop_set = set(self._stop_ids)
        for row, prompt in enumerate(prompts):
            ids: list[int] = []
            lps: list[float] = []
            finish = "length"
            for tid, lp in zip(token_rows[row], logprob_rows[row], strict=True):
                ids.append(int(tid))
                lps.append(float(lp))
                if tid in stop_set:
                    finish = "stop"
                    break
            generations.append(
                Generation(
                    text=self.decode(ids),
                    prompt_ids=list(prompt),
                    token_ids=ids,
                    logprobs=lps,
                    meta={"finish_reason": finish, "batch_seconds": elapsed, "batch_size": len(prompts)},
                )
            )
        return generations

    def _generate_chunk(self, prompts: Sequence[Sequence[int]]) -> list[Generation]:
        import torch

        if not prompts:
            return []
        device = self.device
        pad = int(self.tokenizer.pad_token_id)
        batch = len(prompts)
        input_ids, attention = self.left_padded(prompts)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        stop = torch.tensor(self._stop_ids, device=device)
        finished = torch.zeros(batch, dtype=torch.bool, device=device)
        tokens_out: list[Any] = []
        logprobs_out: list[Any] = []
        was_training = self.model.training
        self.model.eval()
        started = time.perf_counter()
        try:
            with torch.no_grad():
                # logits of the last position only: a [B, T, V] prefill is the peak of generation's memory
                keep = {self._keep_arg: 1} if self._keep_arg else {}
                result = self.model(
                    input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True, **keep
                )
                cache = _cache_of(result)
                logits = result.logits[:, -1, :]
                last_pos = positions[:, -1]
                for _ in range(self.sampling.max_new_tokens):
                    tokens, logprobs = self._pick(logits)
                    tokens = torch.where(finished, torch.full_like(tokens, pad), tokens)
                    tokens_out.append(tokens)
                    logprobs_out.append(logprobs)
                    finished = finished | torch.isin(tokens, stop)
                    if bool(finished.all()):
                        break
                    attention = torch.cat([attention, torch.ones((batch, 1), dtype=attention.dtype, device=device)], 1)
                    last_pos = last_pos + 1
                    result = self.model(
                        input_ids=tokens[:, None],
                        attention_mask=attention,
                        position_ids=last_pos[:, None],
                        use_cache=True,
                        **{self._cache_arg: cache},
                    )
                    cache = _cache_of(result)
                    logits = result.logits[:, -1, :]
        finally:
            if was_training:
                self.model.train()
        elapsed = time.perf_counter() - started
        token_rows = torch.stack(tokens_out, 1).tolist()
        logprob_rows = torch.stack(logprobs_out, 1).tolist()
        return self._generations(prompts, token_rows, logprob_rows, elapsed)
