"""Advantage estimators against numbers worked out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from ascend_kernel_gym.agents.advantages import (
    assign_advantages,
    discounted_returns,
    group_advantages,
    segment_advantages,
    trajectory_advantages,
    turn_advantages,
)
from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord

# One group of three episodes; each turn is (segment index, reward).
#   E0: rewards [1, 0, 2], segments [0, 0, 1]
#   E1: rewards [0, 1, 1], segments [0, 1, 2]
#   E2: rewards [3],       segments [0]
GROUP = [
    [(0, 1.0), (0, 0.0), (1, 2.0)],
    [(0, 0.0), (1, 1.0), (2, 1.0)],
    [(0, 3.0)],
]
GAMMA = 0.5
# Reward-to-go G(t) = r_t + 0.5 * G(t+1):
#   E0: G(2) = 2;  G(1) = 0 + 0.5*2 = 1;    G(0) = 1 + 0.5*1 = 1.5
#   E1: G(2) = 1;  G(1) = 1 + 0.5*1 = 1.5;  G(0) = 0 + 0.5*1.5 = 0.75
#   E2: G(0) = 3


def approx(values):
    return pytest.approx(values, abs=1e-6)


def test_discounted_returns():
    assert discounted_returns([1.0, 0.0, 2.0], 0.5) == approx([1.5, 1.0, 2.0])
    assert discounted_returns([0.0, 1.0, 1.0], 0.5) == approx([0.75, 1.5, 1.0])
    assert discounted_returns([1.0, 1.0, 1.0], 1.0) == approx([3.0, 2.0, 1.0])
    assert discounted_returns([], 0.9) == []


def test_trajectory_broadcast_mean_baseline():
    # R = [1.5, 0.75, 3]; mean = 5.25 / 3 = 1.75; A = R - 1.75 = [-0.25, -1.0, 1.25], one value per episode.
    adv = trajectory_advantages(GROUP, gamma=GAMMA)
    assert adv[0] == approx([-0.25] * 3)
    assert adv[1] == approx([-1.0] * 3)
    assert adv[2] == approx([1.25])


def test_trajectory_std_normalised():
    # squared deviations 0.0625 + 1.0 + 1.5625 = 2.625; / 3 = 0.875; std = sqrt(0.875) = 0.9354143
    std = math.sqrt(0.875)
    adv = trajectory_advantages(GROUP, gamma=GAMMA, normalize_std=True, eps=0.0)
    assert adv[0][0] == pytest.approx(-0.25 / std)  # -0.2672612
    assert adv[1][0] == pytest.approx(-1.0 / std)  # -1.0690450
    assert adv[2][0] == pytest.approx(1.25 / std)  # 1.3363062


def test_segment_leave_one_out_and_pooled_fallback():
    # V_i(k) = G at the first turn of segment k:
    #   E0: V(0) = 1.5, V(1) = G(2) = 2
    #   E1: V(0) = 0.75, V(1) = G(1) = 1.5, V(2) = G(2) = 1
    #   E2: V(0) = 3
    # E0 seg0: others reaching seg0 = {0.75, 3}, mean 1.875 -> 1.5 - 1.875 = -0.375
    # E0 seg1: others reaching seg1 = {E1: 1.5}       -> 2 - 1.5 = 0.5
    # E1 seg0: others = {1.5, 3}, mean 2.25          -> 0.75 - 2.25 = -1.5
    # E1 seg1: others = {E0: 2}                       -> 1.5 - 2 = -0.5
    # E1 seg2: nobody else reached seg 2 -> pooled = every segment of E0 and E2 = {1.5, 2, 3}, mean 6.5/3
    #                                                  -> 1 - 2.1666667 = -1.1666667
    # E2 seg0: others = {1.5, 0.75}, mean 1.125       -> 3 - 1.125 = 1.875
    adv = segment_advantages(GROUP, gamma=GAMMA)
    assert adv[0] == approx([-0.375, -0.375, 0.5])  # turns 0 and 1 share segment 0
    assert adv[1] == approx([-1.5, -0.5, 1.0 - 6.5 / 3])
    assert adv[2] == approx([1.875])


def test_segment_std_normalised():
    # E0 seg0 compares {0.75, 3} with its own 1.5: mean 1.75, sq devs 1 + 1.5625 + 0.0625 = 2.625, /3,
    #   std = 0.9354143 -> -0.375 / 0.9354143 = -0.4008919
    # E0 seg1 compares {1.5} with own 2: std of {1.5, 2} = 0.25 -> 0.5 / 0.25 = 2.0
    # E1 seg2 (pooled) compares {1.5, 2, 3} with own 1: mean 1.875, sq devs
    #   0.140625 + 0.015625 + 1.265625 + 0.765625 = 2.1875, /4 = 0.546875, std = 0.7395100
    #   -> -1.1666667 / 0.7395100 = -1.5776212
    adv = segment_advantages(GROUP, gamma=GAMMA, normalize_std=True, eps=0.0)
    assert adv[0][0] == pytest.approx(-0.375 / math.sqrt(0.875))
    assert adv[0][2] == pytest.approx(2.0)
    assert adv[1][2] == pytest.approx((1.0 - 6.5 / 3) / math.sqrt(0.546875))


def test_segment_gamma_one_is_plain_reward_to_go():
    # gamma = 1: E0 V(0) = 3, V(1) = 2; E1 V(0) = 2, V(1) = 2, V(2) = 1; E2 V(0) = 3
    # E0 seg0: others {2, 3} mean 2.5 -> 0.5;  E0 seg1: others {2} -> 0
    adv = segment_advantages(GROUP, gamma=1.0)
    assert adv[0] == approx([0.5, 0.5, 0.0])


def test_turn_trloo():
    # G: E0 [1.5, 1, 2], E1 [0.75, 1.5, 1], E2 [3]
    # t=0: E0 1.5 - mean(0.75, 3) = 1.5 - 1.875 = -0.375; E1 0.75 - mean(1.5, 3) = -1.5; E2 3 - mean(1.5, .75) = 1.875
    # t=1: E0 1 - 1.5 = -0.5; E1 1.5 - 1 = 0.5
    # t=2: E0 2 - 1 = 1; E1 1 - 2 = -1
    adv = turn_advantages(GROUP, gamma=GAMMA)
    assert adv[0] == approx([-0.375, -0.5, 1.0])
    assert adv[1] == approx([-1.5, 0.5, -1.0])
    assert adv[2] == approx([1.875])


def test_turn_pooled_fallback():
    # A: rewards [1, 1] (G = [2, 1]); B: rewards [0] (G = [0]); gamma 1
    # A t0: 2 - 0 = 2; A t1: no other episode has turn 1 -> pooled over B's turns {0} -> 1 - 0 = 1
    # B t0: 0 - 2 = -2
    adv = turn_advantages([[(0, 1.0), (0, 1.0)], [(0, 0.0)]], gamma=1.0)
    assert adv == [approx([2.0, 1.0]), approx([-2.0])]


def test_loo_differs_from_plain_mean_by_n_over_n_minus_1():
    # Dr. Kernel's remark: leave-one-out = N/(N-1) * (G_i - mean of all). Returns [1, 2, 6]: mean 3;
    # LOO for episode 0: 1 - mean(2, 6) = -3 = 3/2 * (1 - 3).
    group = [[(0, 1.0)], [(0, 2.0)], [(0, 6.0)]]
    assert segment_advantages(group)[0] == approx([-3.0])
    assert trajectory_advantages(group)[0] == approx([-2.0])


def test_single_episode_group_has_zero_advantage():
    for estimator in ("trajectory", "segment", "turn"):
        assert group_advantages([[(0, 1.0), (1, 2.0)]], estimator) == [[0.0, 0.0]]


def test_misuse_is_loud():
    with pytest.raises(ValueError, match="estimator"):
        group_advantages(GROUP, "ppo")
    with pytest.raises(ValueError, match="gamma"):
        group_advantages(GROUP, gamma=1.5)
    with pytest.raises(ValueError, match="decrease"):
        segment_advantages([[(1, 0.0), (0, 1.0)]])


def test_assign_advantages_fills_turn_spans_only():
    # Two episodes of one group, one segment each, two turns each, segment estimator, gamma 1:
    # E0 rewards [1, 0] -> V(0) = 1; E1 rewards [0, 0] -> V(0) = 0. A_E0 = 1 - 0 = 1, A_E1 = -1.
    # Sample 0 response: [a a e e a] -> policy spans (0, 2) and (4, 5); env tokens at 2..3 get 0.
    batch = RolloutBatch(group_size=2)
    for member, rewards in enumerate(([1.0, 0.0], [0.0, 0.0])):
        episode = EpisodeRecord(group=0, member=member, task_id="t")
        episode.turns = [
            TurnRecord(index=0, segment=0, is_summary=False, reward=rewards[0], span=(0, 2), sample=member),
            TurnRecord(index=1, segment=0, is_summary=False, reward=rewards[1], span=(4, 5), sample=member),
        ]
        episode.samples = [member]
        batch.episodes.append(episode)
        batch.samples.append(
            SegmentSample(
                group=0,
                episode=member,
                member=member,
                segment=0,
                task_id="t",
                prompt_ids=[9],
                response_ids=[1, 2, 3, 4, 5],
                loss_mask=[1, 1, 0, 0, 1],
                summary_mask=[0] * 5,
                rollout_logprobs=[0.0] * 5,
            )
        )
    per_turn = assign_advantages(batch, "segment", gamma=1.0)
    assert per_turn == [approx([1.0, 1.0]), approx([-1.0, -1.0])]
    assert batch.samples[0].advantages == approx([1.0, 1.0, 0.0, 0.0, 1.0])
    assert batch.samples[1].advantages == approx([-1.0, -1.0, 0.0, 0.0, -1.0])
