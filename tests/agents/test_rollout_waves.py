"""Rollout waves: while one wave's answers are evaluated, the next wave generates; records are unchanged."""

from __future__ import annotations

import threading

from ascend_kernel_gym.agents.policy import Generation, Policy
from ascend_kernel_gym.agents.rollout import collect_rollouts


class EchoEnv:
    """Two turns; reward = the answer's number; the first step of each episode waits until ``gate`` is set."""

    gate: threading.Event | None = None

    def reset(self, seed=None, options=None):
        self.seed, self.turn = seed, 0
        self.messages = [{"role": "user", "content": f"episode {seed}"}]
        self.saw_gate = None
        return None, {"messages": list(self.messages), "segment": {"index": 0, "next_index": 0}}

    def step(self, text):
        if self.turn == 0 and self.gate is not None:
            self.saw_gate = self.gate.wait(timeout=10)
        self.turn += 1
        self.messages = [*self.messages, {"role": "assistant", "content": text}, {"role": "user", "content": "ok"}]
        info = {"messages": list(self.messages), "segment": {"index": 0, "next_index": 0}}
        return None, float(text), self.turn == 2, False, info

    def close(self):
        pass


class CountingPolicy(Policy):
    """Answers with the number of the episode's seed; records the batch sizes; opens ``gate`` on its 2nd call."""

    name = "counting"

    def __init__(self, gate=None):
        self.batches = []
        self.gate = gate

    def generate(self, batch):
        self.batches.append(len(batch))
        if self.gate is not None and len(self.batches) == 2:
            self.gate.set()
        return [Generation(text=str(int(m[0]["content"].split()[1]) % 7)) for m in batch]


def run(waves, gate=None):
    envs = []

    def factory():
        env = EchoEnv()
        env.gate = gate
        envs.append(env)
        return env

    policy = CountingPolicy(gate)
    batch = collect_rollouts(policy, ["a", "b"], 2, env_factory=factory, seed=3, waves=waves)
    return batch, policy, envs


def test_waves_overlap_evaluation_with_generation_and_keep_the_records():
    gate = threading.Event()
    batch2, policy2, envs = run(2, gate)
    # wave 0's first env steps were still running when wave 1 generated (the gate opens on the 2nd generate call)
    assert [env.saw_gate for env in envs[0::2]] == [True, True]
    assert policy2.batches == [2, 2, 2, 2]  # 4 episodes in two waves of 2, two turns each
    batch1, policy1, _ = run(1)
    assert policy1.batches == [4, 4]
    for a, b in zip(batch1.episodes, batch2.episodes, strict=True):
        assert [t.reward for t in a.turns] == [t.reward for t in b.turns]
        assert (a.group, a.member, a.terminated) == (b.group, b.member, b.terminated)
    assert batch2.stats["steps"] == 8 and batch2.stats["generate_calls"] == 4
