"""Rollout collection: groups of episodes through the wrapped env, cut into segment samples.

For every task, G episodes run through an env built by ``env_factory`` (by default
:func:`make_env`: ``AscendTritonEnv`` in the standard wrapper stack). All live
episodes generate in one batched call per round; their env steps run concurrently on a thread
pool, so their evaluations go to the shared evaluator pool together.

Token bookkeeping (policies with a tokenizer, see :class:`TokenPolicy`): each segment keeps a
token *stream*. It starts as the chat-template rendering of the context at the segment's start
(the sample's ``prompt_ids``). Each turn appends the sampled tokens (loss mask 1) and then the
environment's reply as the template renders it (loss mask 0). The policy always generates from
the stream's ids, so the training sample is token for token what the model conditioned on.
A new stream (a new sample) starts when the compaction wrapper starts a new segment, or when a
wrapper rewrote earlier context so that the new context no longer extends the stream.

Policies without a tokenizer (HTTP, scripted) are called with chat messages; their samples carry
no token ids (useful for evaluation and tests, not for training).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ascend_kernel_gym.agents.policy import Generation, Message, Policy
from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord


@runtime_checkable
class TokenPolicy(Protocol):
    """What rollout collection needs from a policy to build token-level samples (see :class:`HFPolicy`)."""

    stop_ids: list[int]

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str: ...

    def encode_text(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int], keep_special: bool = False) -> str: ...

    def generate_from_ids(self, prompts: Sequence[Sequence[int]]) -> list[Generation]: ...


EnvFactory = Callable[[], Any]


def make_env(
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    compaction: Mapping[str, Any] | None = None,
    kb: Mapping[str, Any] | None = None,
    choice: Mapping[str, Any] | None = None,
) -> Any:
    """Build the training env: ``AscendTritonEnv(**env_kwargs)`` in the standard wrapper stack.

    The wrappers are put on by :func:`~ascend_kernel_gym.wrappers.stack.build_stack`, in its one
    order (inside out: kernel choice, compaction, knowledge base).

    Args:
        env_kwargs: arguments of ``AscendTritonEnv`` (``backend``, ``max_turns``, ``reward``, ...).
        compaction: arguments of ``CompactionWrapper`` (``None``: no compaction).
        kb: arguments of ``KBRetrievalWrapper`` (``None``: no knowledge base).
        choice: arguments of :class:`~ascend_kernel_gym.wrappers.choice.KernelChoiceWrapper` (``None``: off).
    """
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
    from ascend_kernel_gym.wrappers.stack import build_stack

    env = AscendTritonEnv(**dict(env_kwargs or {}))
    return build_stack(env, choice=choice, compaction=compaction, kb=kb)


class EnvPool:
    """A growing list of envs from one factory, reused across rollout calls (and closed together)."""

    def __init__(self, factory: EnvFactory) -> None:
        self.factory = factory
        self.envs: list[Any] = []

    def get(self, n: int) -> list[Any]:
        while len(self.envs) < n:
            self.envs.append(self.factory())
        return self.envs[:n]

    def close(self) -> None:
        for env in self.envs:
            try:
                env.close()
            except Exception as exc:  # noqa: BLE001 - closing is best effort
                warnings.warn(f"closing an env failed: {exc!r}", RuntimeWarning, stacklevel=2)
        self.envs = []


@dataclass
class _Stream:
    sample_index: int
    segment: int
    text: str
    context: list[Message]


@dataclass
class _Live:
    env: Any
    episode: EpisodeRecord
    episode_index: int
    messages: list[Message]
    segment: int
    stream: _Stream | None = None
    done: bool = False
    steps: int = 0
    extras: dict[str, Any] = field(default_factory=dict)


def _task_id(task: Any) -> str:
    return task if isinstance(task, str) else str(task.id)


def _messages(info: Mapping[str, Any], fallback: list[Message]) -> list[Message]:
    messages = info.get("messages")
    if not isinstance(messages, list):
        return fallback
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def _segment_info(info: Mapping[str, Any]) -> dict[str, Any]:
    seg = info.get("segment")
    return dict(seg) if isinstance(seg, Mapping) else {}


def _eval_facts(info: Mapping[str, Any]) -> tuple[bool | None, float | None]:
    result = info.get("eval")
    if not isinstance(result, Mapping) or not result:  # {} on summary turns: nothing was evaluated
        return None, None
    correct = bool(result.get("correct")) and not bool(result.get("hack"))
    speedup = result.get("speedup")
    return correct, (float(speedup) if isinstance(speedup, (int, float)) and not isinstance(speedup, bool) else None)


def env_delta_text(
    policy: TokenPolicy,
    stream_text: str,
    context: Sequence[Message],
    new_messages: Sequence[Message],
    ended_with_stop: bool,
) -> str | None:
    """The text of the environment's reply to append to a token stream, or ``None`` to start a new stream.

    ``context`` is the conversation the policy answered; ``new_messages`` must extend it with the
    assistant's message and the env's reply. The exact template text is used when the stream's
    text is a prefix of the template's rendering of ``new_messages``; otherwise (the env stored a
    cleaned-up version of the answer, or the generation stopped without an end-of-turn token) the
    reply is the template's text after the assistant message, preceded by the end of the
    assistant turn.
    """
    n = len(context)
    if len(new_messages) <= n or list(new_messages[:n]) != list(context) or new_messages[n]["role"] != "assistant":
        return None
    target = policy.render(new_messages, True)
    if target.startswith(stream_text):
        return target[len(stream_text) :]
    head = policy.render(new_messages[: n + 1], False)
    if not target.startswith(head):
        return None
    content = new_messages[n]["content"]
    pos = head.rfind(content) if content else -1
    closing = head[pos + len(content) :] if pos >= 0 else ""
    stop_text = policy.decode(policy.stop_ids[:1], keep_special=True) if policy.stop_ids else ""
    if ended_with_stop:
        if stop_text and closing.startswith(stop_text):
            closing = closing[len(stop_text) :]
    elif pos < 0:
        closing = stop_text
    return closing + target[len(head) :]


def collect_rollouts(
    policy: Policy,
    tasks: Sequence[Any],
    group_size: int,
    *,
    env_factory: EnvFactory | None = None,
    env_pool: EnvPool | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    compaction: Mapping[str, Any] | None = None,
    kb: Mapping[str, Any] | None = None,
    seed: int = 0,
    max_steps: int = 64,
    max_context_tokens: int | None = None,
    env_workers: int | None = None,
    progress: bool = False,
    waves: int = 1,
) -> RolloutBatch:
    """Run ``group_size`` episodes per task and return the episodes and their segment samples.

    Args:
        policy: any :class:`Policy`; token-level samples need a :class:`TokenPolicy` (e.g. ``HFPolicy``).
        tasks: tasks (``Task`` objects or ids); each becomes one group.
        group_size: G, episodes per task (>= 1; advantages need >= 2).
        env_factory: builds one wrapped env; default: :func:`make_env` with ``env_kwargs`` /
            ``compaction`` / ``kb``.
        env_pool: reuse the envs of this pool (its factory wins over ``env_factory``).
        env_kwargs: see :func:`make_env`.
        compaction: see :func:`make_env`.
        kb: see :func:`make_env`.
        seed: episode ``e`` of the batch resets with ``seed * 100003 + e``.
        max_steps: safety cap on steps per episode (the env's ``max_turns`` normally ends it first).
        max_context_tokens: end an episode (marked overlong) whose token stream would exceed this.
        env_workers: threads stepping envs concurrently (default: one per live episode, at most 32).
        progress: show a tqdm bar of finished episodes.
        waves: split the episodes into this many waves (episode ``e`` in wave ``e % waves``): while one
            wave's answers are evaluated on the thread pool, the next wave generates, so evaluation
            overlaps generation. 1: generate for all, then evaluate all. ``stats["env_s"]`` is the time
            spent waiting for evaluations.
    """
    if waves < 1:
        raise ValueError(f"waves must be >= 1, got {waves}")
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    if not tasks:
        raise ValueError("tasks must not be empty")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    token_policy = policy if isinstance(policy, TokenPolicy) else None
    own_pool = env_pool is None
    if env_pool is None:
        factory = env_factory or (lambda: make_env(env_kwargs, compaction=compaction, kb=kb))
        env_pool = EnvPool(factory)
    n_episodes = len(tasks) * group_size
    envs = env_pool.get(n_episodes)
    batch = RolloutBatch(group_size=group_size)
    stats = {
        "generation_s": 0.0,
        "env_s": 0.0,
        "generated_tokens": 0,
        "generate_calls": 0,
        "steps": 0,
        "context_overflows": 0,
        "stream_restarts": 0,
    }
    started = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_episodes, desc="rollouts", unit="ep", leave=False)
    try:
        live: list[_Live] = []
        for g, task in enumerate(tasks):
            for member in range(group_size):
                index = g * group_size + member
                env = envs[index]
                task_id = _task_id(task)
                _obs, info = env.reset(seed=seed * 100003 + index, options={"task_id": task_id})
                episode = EpisodeRecord(group=g, member=member, task_id=task_id)
                batch.episodes.append(episode)
                seg = _segment_info(info)
                state = _Live(
                    env=env,
                    episode=episode,
                    episode_index=index,
                    messages=_messages(info, []),
                    segment=int(seg.get("next_index", seg.get("index", 0))),
                )
                if not state.messages:
                    raise RuntimeError("env.reset returned no info['messages']: the env contract requires them")
                _open_stream(state, batch, token_policy)
                live.append(state)
        workers = env_workers or min(32, max(1, n_episodes))
        n_waves = max(1, min(waves, len(live)))
        wave_members = [live[w::n_waves] for w in range(n_waves)]
        pending: list[list[tuple[_Live, Generation, Future[Any]]] | None] = [None] * n_waves
        with ThreadPoolExecutor(max_workers=workers) as pool:
            # Each pass visits the waves in turn: collect the wave's env steps (evaluated meanwhile, while the
            # other waves generated), then generate its next answers and hand their steps to the pool.
            while True:
                for w, members in enumerate(wave_members):
                    if pending[w] is not None:
                        t0 = time.perf_counter()
                        for state, gen, future in pending[w]:
                            result = future.result()
                            _record_step(state, gen, result, batch, token_policy, max_steps, max_context_tokens, stats)
                            if state.done and bar is not None:
                                bar.update(1)
                        stats["env_s"] += time.perf_counter() - t0
                        pending[w] = None
                    active = [s for s in members if not s.done]
                    if not active:
                        continue
                    gens = _generate(policy, token_policy, active, batch, stats)
                    pending[w] = [(s, g, pool.submit(s.env.step, g.text)) for s, g in zip(active, gens, strict=True)]
                if all(p is None for p in pending):
                    break
    finally:
        if bar is not None:
            bar.close()
        if own_pool:
            env_pool.close()
    for episode in batch.episodes:
        if episode.overlong:
            for index in episode.samples:
                batch.samples[index].overlong = True
    stats["wall_s"] = time.perf_counter() - started
    stats["episodes"] = n_episodes
    stats["samples"] = len(batch.samples)
    batch.stats = stats
    return batch


def _generate(
    policy: Policy,
    token_policy: TokenPolicy | None,
    active: Sequence[_Live],
    batch: RolloutBatch,
    stats: dict[str, Any],
) -> list[Generation]:
    """One batched generation for the live episodes ``active`` (from their token streams when the policy has ids)."""
    t0 = time.perf_counter()
    if token_policy is not None:
        prompts = [_stream_ids(batch.samples[s.stream.sample_index]) for s in active]  # type: ignore[union-attr]
        gens = token_policy.generate_from_ids(prompts)
    else:
        gens = policy.generate([s.messages for s in active])
    stats["generation_s"] += time.perf_counter() - t0
    stats["generate_calls"] += 1
    stats["generated_tokens"] += sum(len(g.token_ids) for g in gens)
    if len(gens) != len(active):
        raise RuntimeError(f"policy returned {len(gens)} generations for {len(active)} contexts")
    return gens


def _stream_ids(sample: SegmentSample) -> list[int]:
    return sample.prompt_ids + sample.response_ids


def _open_stream(state: _Live, batch: RolloutBatch, policy: TokenPolicy | None) -> None:
    episode = state.episode
    sample = SegmentSample(
        group=episode.group,
        episode=state.episode_index,
        member=episode.member,
        segment=state.segment,
        task_id=episode.task_id,
    )
    text = ""
    if policy is not None:
        text = policy.render(state.messages, True)
        sample.prompt_ids = policy.encode_text(text)
    batch.samples.append(sample)
    episode.samples.append(len(batch.samples) - 1)
    state.stream = _Stream(
        sample_index=len(batch.samples) - 1, segment=state.segment, text=text, context=list(state.messages)
    )


def _record_step(
    state: _Live,
    gen: Generation,
    result: tuple[Any, ...],
    batch: RolloutBatch,
    policy: TokenPolicy | None,
    max_steps: int,
    max_context_tokens: int | None,
    stats: dict[str, Any],
) -> None:
    _obs, reward, terminated, truncated, info = result
    stream = state.stream
    assert stream is not None
    sample = batch.samples[stream.sample_index]
    episode = state.episode
    seg = _segment_info(info)
    correct, speedup = _eval_facts(info)
    score = info.get("score")
    turn = TurnRecord(
        index=len(episode.turns),
        segment=stream.segment,
        is_summary=bool(seg.get("is_summary_turn", False)),
        reward=float(reward),
        score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
        correct=correct,
        speedup=speedup,
        text=gen.text,
        sample=stream.sample_index,
        truncated=gen.meta.get("finish_reason") == "length",
    )
    start = len(sample.response_ids)
    if policy is not None:
        if len(gen.logprobs) != len(gen.token_ids):
            raise RuntimeError("the policy returned token ids without one log-prob each")
        sample.response_ids.extend(gen.token_ids)
        sample.loss_mask.extend([1] * len(gen.token_ids))
        sample.summary_mask.extend([1 if turn.is_summary else 0] * len(gen.token_ids))
        sample.rollout_logprobs.extend(float(x) for x in gen.logprobs)
        stream.text += policy.decode(gen.token_ids, keep_special=True)
    turn.span = (start, len(sample.response_ids))
    sample.turns.append(len(episode.turns))
    episode.turns.append(turn)
    state.steps += 1
    stats["steps"] += 1
    if turn.score is not None and (episode.best_score is None or turn.score > episode.best_score):
        episode.best_score = turn.score
        episode.best_correct = bool(correct)
        episode.best_speedup = speedup if correct else None
    elif correct and not episode.best_correct:
        episode.best_correct = True
    episode.compactions = int(seg.get("compactions", episode.compactions))
    episode.overlong = episode.overlong or bool(seg.get("overlong", False))
    episode.terminated = bool(terminated)
    episode.truncated = bool(truncated)
    if terminated or truncated or state.steps >= max_steps:
        state.done = True
        episode.truncated = episode.truncated or (not terminated and state.steps >= max_steps)
        return
    new_messages = _messages(info, state.messages)
    # ``next_index`` is the segment of the returned observation (``index`` is the turn's own segment).
    new_segment = int(seg.get("next_index", seg.get("index", state.segment)))
    state.messages = new_messages
    delta: str | None = None
    if new_segment == stream.segment and policy is not None:
        ended_with_stop = bool(gen.token_ids) and gen.token_ids[-1] in set(policy.stop_ids)
        delta = env_delta_text(policy, stream.text, stream.context, new_messages, ended_with_stop)
    elif new_segment == stream.segment and policy is None:
        delta = ""  # text-only policies keep one sample per segment
    if delta is None:
        if new_segment == stream.segment:
            stats["stream_restarts"] += 1
        state.segment = new_segment
        _open_stream(state, batch, policy)
    else:
        if policy is not None:
            ids = policy.encode_text(delta)
            sample.response_ids.extend(ids)
            sample.loss_mask.extend([0] * len(ids))
            sample.summary_mask.extend([0] * len(ids))
            sample.rollout_logprobs.extend([0.0] * len(ids))
            stream.text += delta
        stream.context = list(new_messages)
    if policy is not None and max_context_tokens is not None:
        current = batch.samples[state.stream.sample_index]  # type: ignore[union-attr]
        if current.length > max_context_tokens:
            stats["context_overflows"] += 1
            state.done = True
            episode.truncated = True
            episode.overlong = True
