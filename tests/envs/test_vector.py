"""Many envs, one evaluator pool: SyncVectorEnv in one process, AsyncVectorEnv across processes."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
from env_helpers import RELU, fenced

import ascend_kernel_gym  # noqa: F401 - registers the envs
from ascend_kernel_gym.evaluation import EvaluatorServer, get_shared_evaluator
from ascend_kernel_gym.tasks import get_task

SOURCE = get_task(RELU).solution_source()
BROKEN = fenced("class ModelNew:\n    def forward(self, x):\n        return x +\n")


def solution(tag: str) -> str:
    """The reference solution with a distinct comment, so the evaluator's result cache cannot answer it."""
    return fenced(f"{SOURCE}\n# {tag} {os.getpid()}\n")


def _make_env(evaluator):
    return lambda: gym.make("AscendTriton-v0", task_ids=[RELU], backend="interpreter", max_turns=2, evaluator=evaluator)


def test_async_vector_env_workers_share_one_pool() -> None:
    with EvaluatorServer(backend="interpreter") as server:
        assert server.evaluator is get_shared_evaluator("interpreter")  # the parent's own shared pool
        evaluations_before = server.evaluator.stats["evaluations"]
        client = server.client()
        # spawn: the parent runs server and pool threads, and forking a multi-threaded process can deadlock
        envs = gym.vector.AsyncVectorEnv([_make_env(client), _make_env(client)], shared_memory=False, context="spawn")
        try:
            obs, infos = envs.reset(seed=0)
            assert all(RELU in o for o in obs)
            rewards = []
            for actions in [(solution("async-0"), BROKEN), (BROKEN, solution("async-1"))]:
                obs, reward, terminated, truncated, infos = envs.step(actions)
                rewards.append(reward)
                assert list(infos["evaluator_id"]) == [server.evaluator_id] * 2
                assert list(infos["evaluated"]) == [True, True]
            assert list(truncated) == [True, True] and not terminated.any()
            returns = np.sum(rewards, axis=0)
            assert np.allclose(returns, [0.5, 0.5])  # each episode's best: the correct reference kernel
            stats = server.stats()
            assert stats["requests_served"] == 4  # every evaluation of both workers went to this pool
            assert stats["clients_seen"] == 2  # one connection per worker process
            assert stats["pid"] == os.getpid()
            # ... and were evaluated there (the BROKEN answers are the same code, the second may be a cache hit)
            assert server.evaluator.stats["evaluations"] - evaluations_before >= 3
        finally:
            envs.close(terminate=True)  # never wait on workers after a failure: that can hang


def test_sync_vector_env_envs_share_the_default_pool() -> None:
    envs = gym.vector.SyncVectorEnv([_make_env(None), _make_env(None)])
    try:
        envs.reset(seed=0)
        _, reward, _, _, infos = envs.step((solution("sync-0"), solution("sync-1")))
        evaluators = [env.unwrapped.evaluator for env in envs.envs]
        assert evaluators[0] is evaluators[1] is get_shared_evaluator("interpreter")
        assert infos["evaluator_id"][0] == infos["evaluator_id"][1]
        assert list(reward) == [0.5, 0.5]
    finally:
        envs.close()


def test_envs_in_threads_share_the_default_pool() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def episode(index: int) -> tuple[object, str]:
        env = _make_env(None)()
        env.reset(seed=index)
        _, _, _, _, info = env.step(BROKEN)
        evaluator = env.unwrapped.evaluator
        env.close()
        return evaluator, info["evaluator_id"]

    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(episode, range(3)))
    shared = get_shared_evaluator("interpreter")
    assert all(evaluator is shared for evaluator, _ in outcomes)
    assert len({evaluator_id for _, evaluator_id in outcomes}) == 1
