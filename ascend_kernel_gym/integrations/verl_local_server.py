"""A local Hugging Face model behind veRL's rollout-server interface, for CPU runs without vLLM / SGLang.

veRL's agent loops call ``await server_manager.generate(request_id, prompt_ids=..., sampling_params=...)``
and get a :class:`~verl.workers.rollout.replica.TokenOutput` (sampled token ids and their
log-probs). :class:`LocalHFServerClient` is that client (a subclass of veRL's ``LLMServerClient``)
answering with ``transformers`` generation on a model in this process, so an agent loop, or
veRL's ``AgentLoopWorker`` driving it, runs end to end on a laptop or in CI.

Sampling follows veRL's parameters: ``temperature`` (0: greedy), ``top_p``, ``top_k`` (-1: off),
``repetition_penalty``, ``max_tokens`` (default ``max_tokens``), ``logprobs`` (return log-probs).
The log-prob of a token is taken from the distribution it was sampled from (after temperature,
top-k / top-p and any ``generation_kwargs`` such as ``suppress_tokens``).

Importing this module imports veRL.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.rollout.replica import TokenOutput

__all__ = ["LocalHFServerClient"]


class LocalHFServerClient(LLMServerClient):
    """veRL's ``generate`` interface over a local causal LM (one request at a time).

    Args:
        model: a ``transformers`` causal LM.
        tokenizer: its tokenizer (for the end-of-sequence and padding ids).
        config: veRL's whole config (kept as ``self.config``, as veRL's client does); may be ``None``.
        generation_kwargs: extra ``model.generate`` arguments for every request (e.g. ``suppress_tokens``).
        max_tokens: tokens per request when ``sampling_params`` has no ``max_tokens``.
        seed: seeds torch's generator once, before the first request.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        config: Any = None,
        generation_kwargs: Mapping[str, Any] | None = None,
        max_tokens: int = 256,
        seed: int | None = None,
    ) -> None:
        super().__init__(config, None)
        self.model = model
        self.tokenizer = tokenizer
        self.generation_kwargs = dict(generation_kwargs or {})
        self.max_tokens = int(max_tokens)
        self.seed = seed
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._seeded = False

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        **kwargs: Any,
    ) -> TokenOutput:
        """Sample a continuation of ``prompt_ids`` (multi-modal arguments are not supported and must be empty)."""
        media = [k for k in ("image_data", "video_data", "audio_data") if kwargs.get(k)]
        if media:
            raise ValueError(f"LocalHFServerClient serves text only; got {media}")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, self._generate, str(request_id), list(prompt_ids), dict(sampling_params)
        )

    def _generate(self, request_id: str, prompt_ids: list[int], params: dict[str, Any]) -> TokenOutput:
        import torch

        temperature = float(params.get("temperature", 1.0) or 0.0)
        max_new = int(params.get("max_tokens") or params.get("max_new_tokens") or self.max_tokens)
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        kwargs: dict[str, Any] = {
            "max_new_tokens": max(1, max_new),
            "do_sample": temperature > 0,
            "output_scores": True,
            "return_dict_in_generate": True,
            "eos_token_id": eos,
            "pad_token_id": pad,
            "repetition_penalty": float(params.get("repetition_penalty", 1.0) or 1.0),
        }
        if temperature > 0:
            top_k = int(params.get("top_k", -1) or -1)
            kwargs.update(temperature=temperature, top_p=float(params.get("top_p", 1.0) or 1.0), top_k=max(top_k, 0))
        kwargs.update(self.generation_kwargs)
        device = next(self.model.parameters()).device
        input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
        with self._lock, torch.no_grad():
            if self.seed is not None and not self._seeded:
                torch.manual_seed(self.seed)
                self._seeded = True
            out = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        tokens = [int(t) for t in out.sequences[0, len(prompt_ids) :].tolist()]
        if eos is not None and eos in tokens:
            tokens = tokens[: tokens.index(eos) + 1]
        logprobs = [
            float(torch.log_softmax(score[0].float(), dim=-1)[token].item())
            for score, token in zip(out.scores, tokens, strict=False)
        ]
        self.requests.append({"request_id": request_id, "prompt_ids": prompt_ids, "token_ids": tokens})
        finished = bool(tokens) and tokens[-1] == eos
        return TokenOutput(
            token_ids=tokens,
            log_probs=logprobs if params.get("logprobs", True) else None,
            stop_reason="completed" if finished else None,
        )
