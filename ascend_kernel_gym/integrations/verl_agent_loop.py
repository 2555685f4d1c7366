"""veRL adapter: AscendTriton episodes as a veRL agent loop, one training sample per compaction segment.

veRL (0.9.x) runs an ``AgentLoopBase`` subclass once per rollout: ``run(sampling_params, **row)``
gets a dataset row, talks to the rollout servers through ``self.server_manager.generate(...)``
(token ids in, :class:`~verl.workers.rollout.replica.TokenOutput` out) and returns
``AgentLoopOutput`` records. :class:`AscendTritonAgentLoop`, registered as ``ascend_triton``:

* starts an ``AscendTriton-v0`` episode on the row's task in the package's standard wrapper stack
  (:func:`~ascend_kernel_gym.agents.rollout.make_env`: compaction and KB tips when configured),
  graded by the package's evaluator (the process-wide pool, or an ``EvaluatorServer`` address
  passed as ``env_kwargs.evaluator``);
* generates every turn from the exact token stream of the current segment and appends the
  environment's reply as the chat template renders it (masked out of the loss), the same
  bookkeeping as :func:`~ascend_kernel_gym.agents.rollout.collect_rollouts`;
* returns one ``AgentLoopOutput`` per compaction segment (``prompt_ids``, ``response_ids``,
  ``response_mask``, ``response_logprobs``, ``reward_score``) with the turn and segment metadata
  in ``extra_fields`` (``akg_*`` keys) that the advantage estimators of
  :mod:`ascend_kernel_gym.integrations.verl_advantages` read.

veRL's v1 trainer (``trainer.use_v1=true``, its default) stores every output of a list as its own
row; the legacy ``AgentLoopWorker`` takes one output per rollout, so there set
``return_segments: false`` (which needs compaction off: one segment per episode).

Importing this module imports veRL, torch and transformers.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verl.experimental.agent_loop import agent_loop as verl_agent_loop
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from ascend_kernel_gym.agents.rollout import env_delta_text, make_env
from ascend_kernel_gym.integrations.verl_advantages import register_verl_estimators

__all__ = ["AGENT_NAME", "AscendTritonAgentLoop", "TokenizerView", "dataset_rows", "task_id_of_row"]

#: The name the loop is registered under (a dataset row's ``agent_name``).
AGENT_NAME = "ascend_triton"

Message = dict[str, str]


class TokenizerView:
    """The text operations of segment bookkeeping over a Hugging Face tokenizer (its chat template)."""

    def __init__(self, tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None = None) -> None:
        self.tokenizer = tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        eos = tokenizer.eos_token_id
        self.stop_ids: list[int] = [int(eos)] if eos is not None else []

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt, **self.chat_template_kwargs
        )

    def encode_text(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int], keep_special: bool = False) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=not keep_special)


def task_id_of_row(row: Mapping[str, Any]) -> str | None:
    """The task of a dataset row: ``task_id``, else ``extra_info["task_id"]``, else ``tools_kwargs["task_id"]``."""
    for source in (row, row.get("extra_info") or {}, row.get("tools_kwargs") or {}):
        if isinstance(source, Mapping) and source.get("task_id"):
            return str(source["task_id"])
    return None


def dataset_rows(
    task_ids: Sequence[str], env_kwargs: Mapping[str, Any] | None = None, repeat: int = 1
) -> list[dict[str, Any]]:
    """Rows of a veRL RL dataset (``RLHFDataset`` parquet) for the ``ascend_triton`` loop, one per task and repeat.

    ``prompt`` is the env's opening context for the task (what the loop starts the episode with,
    so veRL's prompt-length filter sees the real length), ``agent_name`` picks the loop, and
    ``extra_info`` carries ``task_id`` and ``index``.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    env = make_env(env_kwargs)
    try:
        rows = []
        for task_id in task_ids:
            _obs, info = env.reset(options={"task_id": task_id})
            prompt = [{"role": str(m["role"]), "content": str(m["content"])} for m in info["messages"]]
            for _ in range(repeat):
                rows.append(
                    {
                        "data_source": "ascend_triton",
                        "agent_name": AGENT_NAME,
                        "prompt": prompt,
                        "extra_info": {"task_id": task_id, "index": len(rows)},
                    }
                )
        return rows
    finally:
        env.close()


def _plain(value: Any) -> Any:
    """An OmegaConf node (what hydra passes from a YAML config) as plain Python containers."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - veRL depends on omegaconf
        return value
    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


class _EnvPool:
    """Idle envs per configuration, shared by the loops of one worker process (building one loads the suite)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[Any]] = {}

    def acquire(self, key: str, options: Mapping[str, Any]) -> Any:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return make_env(options.get("env_kwargs"), **{k: options.get(k) for k in ("compaction", "kb", "choice")})

    def release(self, key: str, env: Any) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(env)


_POOL = _EnvPool()


@dataclass
class _Segment:
    index: int
    prompt_ids: list[int]
    text: str
    context: list[Message]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    messages: int = 1


# veRL's worker loads the entries of `agent_loop_config_path` into its registry *before* hydra imports
# this module; a plain @register would then replace a configured `ascend_triton` entry (options and
# all) by the bare class for every later rollout. The configured entry is put back after registering.
_CONFIGURED = dict(getattr(verl_agent_loop, "_agent_loop_registry", {})).get(AGENT_NAME)


@register(AGENT_NAME)
class AscendTritonAgentLoop(AgentLoopBase):
    """One AscendTriton episode per rollout; one ``AgentLoopOutput`` per compaction segment.

    Options come from the agent loop config (``actor_rollout_ref.rollout.agent.agent_loop_config_path``
    lists ``{name, _target_, **options}``; hydra passes the options here):

    Args:
        env_kwargs: arguments of ``AscendTritonEnv`` (``backend``, ``max_turns``, ``reward``,
            ``reward_mode``, ``num_trials``, ``suite``, ``evaluator`` ("host:port" of an
            ``EvaluatorServer``), ...).
        compaction: ``CompactionWrapper`` arguments (``None``: no compaction, one segment per episode).
        kb: ``KBRetrievalWrapper`` arguments (``None``: no knowledge-base tips).
        choice: ``KernelChoiceWrapper`` arguments (``None``: off).
        return_segments: return a list of per-segment outputs (veRL's v1 trainer); ``False``
            returns the one output of a single-segment episode (the legacy ``AgentLoopWorker``).
        max_tokens_per_turn: cap on the tokens of one answer (``None``: what is left of
            ``rollout.response_length`` in the segment).
        max_steps: safety cap on env steps (``env_kwargs.max_turns`` normally ends the episode first).
        seed: episodes reset with ``seed`` plus a per-rollout offset (``None``: not seeded).
    """

    def __init__(
        self,
        *args: Any,
        env_kwargs: Mapping[str, Any] | None = None,
        compaction: Mapping[str, Any] | None = None,
        kb: Mapping[str, Any] | None = None,
        choice: Mapping[str, Any] | None = None,
        return_segments: bool = True,
        max_tokens_per_turn: int | None = None,
        max_steps: int = 64,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.options = {
            "env_kwargs": dict(_plain(env_kwargs) or {}),
            "compaction": _plain(compaction),
            "kb": _plain(kb),
            "choice": _plain(choice),
        }
        self.return_segments = bool(return_segments)
        if not self.return_segments and self.options["compaction"] is not None:
            raise ValueError(
                "return_segments=False returns one output per rollout, so it needs compaction off "
                "(a compacted episode has one training sample per segment)"
            )
        if max_tokens_per_turn is not None and int(max_tokens_per_turn) < 1:
            raise ValueError(f"max_tokens_per_turn must be >= 1, got {max_tokens_per_turn}")
        self.max_tokens_per_turn = None if max_tokens_per_turn is None else int(max_tokens_per_turn)
        self.max_steps = int(max_steps)
        self.seed = seed
        self.response_length = int(self.rollout_config.response_length)
        self.view = TokenizerView(self.tokenizer, self.apply_chat_template_kwargs)
        self._pool_key = json.dumps(self.options, sort_keys=True, default=repr)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput] | AgentLoopOutput:
        """Run one episode on the row's task and return its per-segment outputs."""
        task_id = task_id_of_row(kwargs)
        episode_key = f"{kwargs.get('uid', '')}/{uuid.uuid4().hex}"
        env = await self._in_thread(_POOL.acquire, self._pool_key, self.options)
        try:
            segments, turns, facts = await self._episode(env, task_id, sampling_params, kwargs)
        finally:
            _POOL.release(self._pool_key, env)
        outputs = self._outputs(segments, turns, facts, episode_key)
        if self.return_segments:
            return outputs
        if len(outputs) != 1:
            raise RuntimeError(f"return_segments=False but the episode has {len(outputs)} segments")
        return outputs[0]

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def _episode(
        self, env: Any, task_id: str | None, sampling_params: dict[str, Any], row: Mapping[str, Any]
    ) -> tuple[list[_Segment], list[dict[str, Any]], dict[str, Any]]:
        seed = None
        if self.seed is not None:
            seed = int(self.seed) + int(row.get("index", 0) or 0) * 1009 + int(row.get("session_id", 0) or 0)
        options = {"task_id": task_id} if task_id else None
        _obs, info = await self._in_thread(lambda: env.reset(seed=seed, options=options))
        messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in info["messages"]]
        seg_info = info.get("segment") or {}
        segment = self._open(int(seg_info.get("next_index", seg_info.get("index", 0))), messages)
        segments, turns = [segment], []
        facts: dict[str, Any] = {
            "task_id": info.get("task_id", task_id),
            "overlong": False,
            "best_score": None,
            "generate_s": 0.0,
            "env_s": 0.0,
            "num_preempted": -1,
        }
        request_id = uuid.uuid4().hex
        for _ in range(self.max_steps):
            budget = self.response_length - len(segment.response_ids)
            if self.max_tokens_per_turn is not None:
                budget = min(budget, self.max_tokens_per_turn)
            if budget < 1:
                facts["overlong"] = True
                break
            t0 = time.perf_counter()
            out = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=segment.prompt_ids + segment.response_ids,
                sampling_params={**sampling_params, "max_tokens": budget},
            )
            facts["generate_s"] += time.perf_counter() - t0
            if out.num_preempted is not None:
                facts["num_preempted"] = max(facts["num_preempted"], int(out.num_preempted))
            token_ids = [int(t) for t in out.token_ids][:budget]
            logprobs = [float(x) for x in out.log_probs][: len(token_ids)] if out.log_probs else []
            text = self.view.decode(token_ids)
            t0 = time.perf_counter()
            _obs, reward, terminated, truncated, info = await self._in_thread(env.step, text)
            facts["env_s"] += time.perf_counter() - t0

            start = len(segment.response_ids)
            segment.response_ids += token_ids
            segment.response_mask += [1] * len(token_ids)
            segment.logprobs += logprobs if len(logprobs) == len(token_ids) else [0.0] * len(token_ids)
            segment.text += self.view.decode(token_ids, keep_special=True)
            segment.messages += 1
            turn = _turn_record(len(turns), segment.index, float(reward), info, (start, len(segment.response_ids)))
            turns.append(turn)
            segment.turns.append(turn)
            if turn["score"] is not None and (facts["best_score"] is None or turn["score"] > facts["best_score"]):
                facts["best_score"] = turn["score"]
            seg_info = info.get("segment") or {}
            facts["overlong"] = facts["overlong"] or bool(seg_info.get("overlong", False))
            if terminated or truncated:
                break

            new_messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in info["messages"]]
            new_index = int(seg_info.get("next_index", seg_info.get("index", segment.index)))
            delta = None
            if new_index == segment.index:
                stopped = bool(token_ids) and token_ids[-1] in self.view.stop_ids
                delta = env_delta_text(self.view, segment.text, segment.context, new_messages, stopped)
            if delta is None:
                segment = self._open(new_index, new_messages)
                segments.append(segment)
            else:
                ids = self.view.encode_text(delta)
                segment.response_ids += ids
                segment.response_mask += [0] * len(ids)
                segment.logprobs += [0.0] * len(ids)
                segment.text += delta
                segment.context = new_messages
                segment.messages += 1
        else:
            facts["overlong"] = True
        return segments, turns, facts

    def _open(self, index: int, messages: list[Message]) -> _Segment:
        text = self.view.render(messages, True)
        prompt_ids = self.view.encode_text(text)
        return _Segment(index=index, prompt_ids=self._cap_text_prompt_length(prompt_ids), text=text, context=messages)

    def _outputs(
        self, segments: list[_Segment], turns: list[dict[str, Any]], facts: dict[str, Any], episode_key: str
    ) -> list[AgentLoopOutput]:
        episode_return = float(sum(t["reward"] for t in turns))
        episode_turns = [[t["segment"], t["reward"]] for t in turns]
        with_logprobs = any(any(s.logprobs) for s in segments)
        kept = [s for s in segments if s.turns] or segments[:1]
        outputs = []
        for n, seg in enumerate(kept):
            length = self.response_length
            metrics = AgentLoopMetrics(
                generate_sequences=facts["generate_s"] if n == 0 else 0.0,
                tool_calls=facts["env_s"] if n == 0 else 0.0,
                num_preempted=facts["num_preempted"],
            )
            outputs.append(
                AgentLoopOutput(
                    prompt_ids=seg.prompt_ids,
                    response_ids=seg.response_ids[:length],
                    response_mask=seg.response_mask[:length],
                    response_logprobs=seg.logprobs[:length] if with_logprobs else None,
                    reward_score=episode_return,
                    num_turns=seg.messages,
                    metrics=metrics,
                    extra_fields={
                        "turn_scores": [t["reward"] for t in seg.turns],
                        "akg_episode": episode_key,
                        "akg_task_id": facts["task_id"],
                        "akg_segment": seg.index,
                        "akg_num_segments": len(kept),
                        "akg_turns": [_clip_span(t, length) for t in seg.turns],
                        "akg_episode_turns": episode_turns,
                        "akg_best_score": facts["best_score"],
                        "akg_overlong": bool(facts["overlong"]),
                    },
                )
            )
        return outputs


def _turn_record(
    index: int, segment: int, reward: float, info: Mapping[str, Any], span: tuple[int, int]
) -> dict[str, Any]:
    seg_info = info.get("segment") or {}
    result = info.get("eval") if isinstance(info.get("eval"), Mapping) else {}
    score = info.get("score")
    return {
        "index": index,
        "segment": segment,
        "reward": reward,
        "score": float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
        "correct": (bool(result.get("correct")) and not bool(result.get("hack"))) if result else None,
        "is_summary": bool(seg_info.get("is_summary_turn", False)),
        "span": [span[0], span[1]],
    }


def _clip_span(turn: dict[str, Any], length: int) -> dict[str, Any]:
    start, end = turn["span"]
    return {**turn, "span": [min(start, length), min(end, length)]}


if _CONFIGURED is not None:
    verl_agent_loop._agent_loop_registry[AGENT_NAME] = _CONFIGURED
register_verl_estimators()
