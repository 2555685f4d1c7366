"""Rollout records (agents/samples.py): per-token list checks, returns, segments, groups, JSON view."""

from __future__ import annotations

import json

import pytest

from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord


def sample(n: int = 3, **overrides) -> SegmentSample:
    values = dict(
        group=0,
        episode=0,
        member=0,
        segment=0,
        task_id="t",
        prompt_ids=[1, 2],
        response_ids=list(range(n)),
        loss_mask=[1, 0, 1][:n] + [1] * max(0, n - 3),
        summary_mask=[0] * n,
        rollout_logprobs=[-0.5] * n,
    )
    values.update(overrides)
    return SegmentSample(**values)


def test_a_consistent_sample_passes_and_counts_its_policy_tokens() -> None:
    s = sample()
    s.check()
    assert s.num_policy_tokens == 2 and s.length == 5
    s.advantages = [0.1, 0.0, 0.1]
    s.check()


@pytest.mark.parametrize("name", ["loss_mask", "summary_mask", "rollout_logprobs", "advantages"])
def test_a_per_token_list_of_the_wrong_length_is_named(name: str) -> None:
    s = sample()
    setattr(s, name, getattr(s, name)[:2] if name != "advantages" else [0.0, 0.0])
    with pytest.raises(ValueError, match=rf"SegmentSample\.{name} has 2 entries, response_ids has 3"):
        s.check()


def test_empty_advantages_mean_not_assigned_yet() -> None:
    sample(advantages=[]).check()


def test_episode_return_sums_every_turn_and_segments_count_from_the_last_turn() -> None:
    episode = EpisodeRecord(group=0, member=1, task_id="t")
    assert episode.episode_return == 0.0 and episode.num_segments == 1
    episode.turns = [
        TurnRecord(index=0, segment=0, is_summary=False, reward=-0.5),
        TurnRecord(index=1, segment=0, is_summary=True, reward=0.0),
        TurnRecord(index=2, segment=2, is_summary=False, reward=1.25),
    ]
    assert episode.episode_return == pytest.approx(0.75) and episode.num_segments == 3


def test_groups_are_ordered_by_group_then_member_whatever_the_episode_order() -> None:
    episodes = [EpisodeRecord(group=g, member=m, task_id=f"t{g}") for g, m in [(1, 1), (0, 1), (1, 0), (0, 0)]]
    batch = RolloutBatch(episodes=episodes, group_size=2)
    assert [[(e.group, e.member) for e in group] for group in batch.groups()] == [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    assert RolloutBatch().groups() == []


def test_to_dict_is_plain_json_with_every_episode_and_sample() -> None:
    episode = EpisodeRecord(group=0, member=0, task_id="t", samples=[0], best_score=0.5)
    episode.turns.append(TurnRecord(index=0, segment=0, is_summary=False, reward=0.5, span=(0, 3), sample=0))
    batch = RolloutBatch(episodes=[episode], samples=[sample()], group_size=1, stats={"env_s": 1.5})
    data = json.loads(json.dumps(batch.to_dict()))
    assert data["group_size"] == 1 and data["stats"] == {"env_s": 1.5}
    assert data["episodes"][0]["turns"][0]["span"] == [0, 3] and data["episodes"][0]["best_score"] == 0.5
    assert data["samples"][0]["response_ids"] == [0, 1, 2] and data["samples"][0]["loss_mask"] == [1, 0, 1]
    batch.stats["env_s"] = 2.0
    assert data["stats"]["env_s"] == 1.5  # a copy, not a view
