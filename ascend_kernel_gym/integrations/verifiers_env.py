"""verifiers adapter: ``load_environment()`` returning AscendTriton as a verifiers ``MultiTurnEnv``.

verifiers (0.2.x, the environment-module API that ``vf-eval`` and prime-rl load) finds an
environment by module name and calls its ``load_environment(**env_args)``::

    vf.load_environment("ascend_kernel_gym.integrations.verifiers_env", backend="interpreter")
    vf-eval ascend_kernel_gym.integrations.verifiers_env -a '{"backend": "interpreter"}' ...

Each dataset row is one task: ``prompt`` is the env's own opening context (system message and
task prompt, exactly what ``AscendTriton-v0`` shows after ``reset``), ``info["task_id"]`` names
the task. A rollout runs one episode: every model answer is one env step graded by the package's
evaluator, the feedback comes back as the next user message, and the episode ends when the env
ends it (``max_turns`` answers, or the target speedup). With compaction on, the context the model
sees next is the env's compacted one. The rubric's reward is the best score of the episode
(metrics: ``correct``, ``kernel_turns``); each trajectory step also carries its env step reward.

Importing this module imports verifiers (and ``datasets``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import verifiers as vf
from datasets import Dataset

from ascend_kernel_gym.agents.rollout import make_env

__all__ = ["AscendTritonVerifiersEnv", "load_environment", "task_rows"]

#: The key of the per-rollout episode record in a verifiers ``State``.
STATE_KEY = "akg"


def _to_vf(messages: Iterable[Mapping[str, Any]]) -> list[Any]:
    kinds = {"system": vf.SystemMessage, "user": vf.UserMessage, "assistant": vf.AssistantMessage}
    return [kinds[str(m["role"])](content=str(m["content"])) for m in messages]


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text", "") if isinstance(p, Mapping) else getattr(p, "text", "") for p in content]
        return "".join(str(p or "") for p in parts)
    return "" if content is None else str(content)


def task_rows(
    task_ids: Iterable[str], env_kwargs: Mapping[str, Any] | None = None, repeat: int = 1
) -> list[dict[str, Any]]:
    """Dataset rows, one per task (``repeat`` times): the env's opening ``prompt`` and ``info["task_id"]``."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    env = make_env(env_kwargs)
    try:
        rows = []
        for task_id in task_ids:
            _obs, info = env.reset(options={"task_id": task_id})
            prompt = [{"role": str(m["role"]), "content": str(m["content"])} for m in info["messages"]]
            rows += [{"prompt": prompt, "info": {"task_id": task_id}, "answer": ""} for _ in range(repeat)]
        return rows
    finally:
        env.close()


def best_score(state: Any, **_: Any) -> float:
    """The rubric's reward: the best kernel score of the episode (the no-code score if nothing was graded)."""
    record = state.get(STATE_KEY) or {}
    best = record.get("best_score")
    return float(best if best is not None else record.get("no_code_score", 0.0))


def correct(state: Any, **_: Any) -> float:
    """Metric: 1.0 when some kernel of the episode passed correctness and was not a hack."""
    return 1.0 if (state.get(STATE_KEY) or {}).get("correct") else 0.0


def kernel_turns(state: Any, **_: Any) -> float:
    """Metric: answers the evaluator graded."""
    return float(len((state.get(STATE_KEY) or {}).get("scores", [])))


class AscendTritonVerifiersEnv(vf.MultiTurnEnv):
    """AscendTriton episodes as a verifiers multi-turn environment (build it with :func:`load_environment`).

    Args:
        env_kwargs: arguments of ``AscendTritonEnv`` for every rollout (``backend``, ``max_turns``, ...).
        compaction: ``CompactionWrapper`` arguments (``None``: off).
        kb: ``KBRetrievalWrapper`` arguments (``None``: off).
        **kwargs: ``vf.MultiTurnEnv`` arguments (``dataset``, ``eval_dataset``, ...).
    """

    def __init__(
        self,
        env_kwargs: Mapping[str, Any] | None = None,
        compaction: Mapping[str, Any] | None = None,
        kb: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        rubric = vf.Rubric(funcs=[best_score], weights=[1.0])
        rubric.add_metric(correct)
        rubric.add_metric(kernel_turns)
        super().__init__(rubric=rubric, max_turns=-1, **kwargs)
        self.gym_env_kwargs = dict(env_kwargs or {})
        self.compaction = None if compaction is None else dict(compaction)
        self.kb = None if kb is None else dict(kb)
        self._envs: dict[str, Any] = {}

    async def setup_state(self, state: Any) -> Any:
        """Start the episode of this rollout on the row's task."""
        info = state.get("info") or {}
        task_id = info.get("task_id") if isinstance(info, Mapping) else None
        env = await asyncio.to_thread(make_env, self.gym_env_kwargs, compaction=self.compaction, kb=self.kb)
        self._envs[state["trajectory_id"]] = env
        _obs, reset_info = await asyncio.to_thread(env.reset, options={"task_id": task_id} if task_id else None)
        state[STATE_KEY] = {
            "task_id": reset_info.get("task_id", task_id),
            "scores": [],
            "rewards": [],
            "best_score": None,
            "correct": False,
            "done": False,
            "no_code_score": _no_code_score(self.gym_env_kwargs.get("reward", "default"), env.unwrapped.task),
        }
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Grade the last answer (one env step) and return the feedback as the next user message."""
        env = self._envs[state["trajectory_id"]]
        answer = _text(messages[-1]) if messages else ""
        _obs, reward, terminated, truncated, info = await asyncio.to_thread(env.step, answer)
        record = state[STATE_KEY]
        result = info.get("eval") if isinstance(info.get("eval"), Mapping) else {}
        score = info.get("score")
        if isinstance(score, (int, float)):
            record["scores"].append(float(score))
        record["rewards"].append(float(reward))
        record["best_score"] = info.get("best_score", record["best_score"])
        record["correct"] = record["correct"] or (bool(result.get("correct")) and not bool(result.get("hack")))
        record["done"] = bool(terminated or truncated)
        record["messages"] = [{"role": str(m["role"]), "content": str(m["content"])} for m in info["messages"]]
        state["trajectory"][-1]["reward"] = float(reward)
        reply = [vf.UserMessage(content=str(info["messages"][-1]["content"]))]
        if record["done"]:
            state["final_env_response"] = reply
        return reply

    async def get_prompt_messages(self, state: Any) -> Any:
        """The next context: the conversation plus the feedback, or the env's own after a compaction."""
        if not state["trajectory"]:
            return state["prompt"]
        last = state["trajectory"][-1]
        messages = [*last["prompt"], *last["completion"]]
        reply = await self.env_response(messages, state)
        env_messages = state[STATE_KEY]["messages"]
        linear = len(env_messages) == len(messages) + 1 and [m["role"] for m in env_messages[:-1]] == [
            getattr(m, "role", None) for m in messages
        ]
        return [*messages, *reply] if linear else _to_vf(env_messages)

    @vf.stop
    async def episode_over(self, state: Any) -> bool:
        """The env ended the episode."""
        return bool((state.get(STATE_KEY) or {}).get("done"))

    @vf.cleanup
    async def close_episode(self, state: Any) -> None:
        """Close this rollout's env (the shared evaluator pool stays up)."""
        env = self._envs.pop(state.get("trajectory_id"), None)
        if env is not None:
            await asyncio.to_thread(env.close)


def _no_code_score(reward: Any, task: Any) -> float:
    """The preset's score of an answer without code (the reward of a rollout the env never graded)."""
    from ascend_kernel_gym.envs.rewards import format_failure_result, resolve_reward

    _, reward_fn = resolve_reward(reward)
    return float(reward_fn(format_failure_result(getattr(task, "id", ""), "", "", "no answer"), task))


def load_environment(
    suite: str = "core",
    split: str = "train",
    eval_split: str = "test",
    task_ids: list[str] | None = None,
    levels: list[int] | None = None,
    repeat: int = 1,
    backend: str = "auto",
    max_turns: int = 4,
    reward: str = "default",
    reward_mode: str = "improvement",
    num_trials: int | None = None,
    evaluator: str | None = None,
    compaction: dict[str, Any] | None = None,
    kb: dict[str, Any] | None = None,
    **kwargs: Any,
) -> AscendTritonVerifiersEnv:
    """The verifiers environment of AscendTriton (what ``vf.load_environment`` and ``vf-eval`` call).

    Args:
        suite: a bundled suite name or a suite directory.
        split: split of the training dataset (``train``, ``test``, ``all``).
        eval_split: split of the evaluation dataset.
        task_ids: these tasks in both datasets instead of the splits.
        levels: keep only these levels.
        repeat: rows per task.
        backend: ``auto``, ``npu``, ``cuda`` or ``interpreter``.
        max_turns: answers per episode.
        reward: reward preset.
        reward_mode: ``improvement``, ``score`` or ``terminal`` (the per-step rewards).
        num_trials: correctness trials per evaluation.
        evaluator: ``host:port`` of an ``EvaluatorServer`` (default: this process's pool).
        compaction: ``CompactionWrapper`` arguments (``None``: off).
        kb: ``KBRetrievalWrapper`` arguments (``None``: off).
        **kwargs: ``vf.MultiTurnEnv`` arguments.
    """
    from ascend_kernel_gym.tasks import load_suite

    env_kwargs: dict[str, Any] = {
        "suite": suite,
        "backend": backend,
        "max_turns": max_turns,
        "reward": reward,
        "reward_mode": reward_mode,
    }
    if num_trials is not None:
        env_kwargs["num_trials"] = num_trials
    if evaluator:
        env_kwargs["evaluator"] = evaluator

    def rows_of(which: str) -> Any:
        def build() -> Dataset:
            which_split = which if task_ids is None else "all"  # explicit tasks: both datasets hold them
            tasks = load_suite(suite, split=which_split, levels=levels, task_ids=task_ids)
            if not tasks:
                raise ValueError(f"no task in suite {suite!r} split {which!r} levels {levels!r}")
            return Dataset.from_list(task_rows([t.id for t in tasks], {**env_kwargs, "split": which_split}, repeat))

        return build

    return AscendTritonVerifiersEnv(
        env_kwargs=env_kwargs,
        compaction=compaction,
        kb=kb,
        dataset=rows_of(split),
        eval_dataset=rows_of(eval_split),
        **kwargs,
    )
