"""Summary turns and the kernel-turn clock in the advantage estimators, against numbers worked out by hand.

Turns are ``(segment, reward, is_summary)``. A summary turn is credited only with what follows it (it
opens the next segment for credit), and neither the discount nor the turn index counts it.
"""

from __future__ import annotations

import pytest

from ascend_kernel_gym.agents.advantages import (
    assign_advantages,
    credit_segments,
    discounted_returns,
    segment_advantages,
    segment_values,
    trajectory_advantages,
    turn_advantages,
)
from ascend_kernel_gym.agents.samples import EpisodeRecord, RolloutBatch, SegmentSample, TurnRecord

S = True  # a summary turn
K = False  # a kernel turn


def approx(values):
    return pytest.approx(values, abs=1e-9)


def test_discount_clock_skips_summary_turns():
    # kernel rewards [1, 0, 2] with a summary (reward 0) between the 2nd and 3rd kernel turn, gamma 0.5:
    #   G(k3) = 2; G(S) = 0 + 1 * 2 = 2 (no clock step); G(k2) = 0 + 0.5 * 2 = 1; G(k1) = 1 + 0.5 * 1 = 1.5
    assert discounted_returns([1, 0, 0, 2], 0.5, [K, K, S, K]) == approx([1.5, 1.0, 2.0, 2.0])
    # the same kernel turns without the summary: the same values at the kernel turns
    assert discounted_returns([1, 0, 2], 0.5) == approx([1.5, 1.0, 2.0])
    with pytest.raises(ValueError, match="is_summary"):
        discounted_returns([1.0], 0.5, [K, K])


def test_summary_opens_the_next_segment_for_credit():
    turns = [(0, 1.0, K), (0, 0.0, S), (1, 2.0, K)]
    assert credit_segments(turns) == [0, 1, 1]
    # gamma 1: G = [3, 2, 2]; V(0) = G(turn 0) = 3, V(1) = G(summary) = 2 (not the 1 earned before it)
    assert segment_values(turns) == approx({0: 3.0, 1: 2.0})


def test_segment_summary_gets_only_what_follows_it():
    # gamma 1.
    #   E0: k(0, r1) k(0, r0) S(0) k(1, r4)  G = [5, 4, 4, 4]  V(0) = 5, V(1) = G(S) = 4
    #   E1: k(0, r0) S(0) k(1, r2) k(1, r1)  G = [3, 3, 3, 1]  V(0) = 3, V(1) = G(S) = 3
    #   E2: k(0, r1) k(0, r0) k(0, r0)       G = [1, 0, 0]     V(0) = 1 (no compaction)
    # E0 seg0: 5 - mean(3, 1) = 3;  seg1: 4 - 3 (only E1 has a segment 1) = 1
    # E1 seg0: 3 - mean(5, 1) = 0;  seg1: 3 - 4 = -1
    # E2 seg0: 1 - mean(5, 3) = -3
    # The summary turns take their *next* segment's advantage: E0's summary 1 (not seg0's 3), E1's -1 (not 0).
    group = [
        [(0, 1.0, K), (0, 0.0, K), (0, 0.0, S), (1, 4.0, K)],
        [(0, 0.0, K), (0, 0.0, S), (1, 2.0, K), (1, 1.0, K)],
        [(0, 1.0, K), (0, 0.0, K), (0, 0.0, K)],
    ]
    adv = segment_advantages(group)
    assert adv[0] == approx([3.0, 3.0, 1.0, 1.0])
    assert adv[1] == approx([0.0, -1.0, -1.0, -1.0])
    assert adv[2] == approx([-3.0, -3.0, -3.0])


def test_segment_summary_that_ends_the_episode_is_worth_zero():
    # gamma 1. E0: k(0, r1) S(0) and the episode ends: V(0) = 1, V(1) = G(S) = 0
    #          E1: k(0, r0) S(0) k(1, r2):              V(0) = 2, V(1) = 2
    # E0: seg0 1 - 2 = -1, summary (seg1) 0 - 2 = -2;  E1: seg0 2 - 1 = 1, seg1 2 - 0 = 2
    adv = segment_advantages([[(0, 1.0, K), (0, 0.0, S)], [(0, 0.0, K), (0, 0.0, S), (1, 2.0, K)]])
    assert adv == [approx([-1.0, -2.0]), approx([1.0, 2.0, 2.0])]


def test_segment_unequal_segment_counts_pooled_fallback():
    # gamma 1.
    #   E0: k(0, r1) S(0) k(1, r0) S(1) k(2, r3)  G = [4, 3, 3, 3, 3]  V = {0: 4, 1: 3, 2: 3}
    #   E1: k(0, r2)                               G = [2]              V = {0: 2}
    #   E2: k(0, r0) S(0) k(1, r1)                 G = [1, 1, 1]        V = {0: 1, 1: 1}
    # E0 seg0: 4 - mean(2, 1) = 2.5; seg1: 3 - 1 (E2) = 2;
    #    seg2: nobody else has a segment 2 -> pooled over E1 and E2's segments {2, 1, 1}, mean 4/3 -> 3 - 4/3 = 5/3
    # E1 seg0: 2 - mean(4, 1) = -0.5
    # E2 seg0: 1 - mean(4, 2) = -2; seg1: 1 - 3 = -2
    group = [
        [(0, 1.0, K), (0, 0.0, S), (1, 0.0, K), (1, 0.0, S), (2, 3.0, K)],
        [(0, 2.0, K)],
        [(0, 0.0, K), (0, 0.0, S), (1, 1.0, K)],
    ]
    adv = segment_advantages(group)
    assert adv[0] == approx([2.5, 2.0, 2.0, 5 / 3, 5 / 3])
    assert adv[1] == approx([-0.5])
    assert adv[2] == approx([-2.0, -2.0, -2.0])


IDENTICAL = [
    # the same kernel turns (rewards 1, 0, 2); the summary after the 2nd kernel turn in E0, after the 1st in E1
    [(0, 1.0, K), (0, 0.0, K), (0, 0.0, S), (1, 2.0, K)],
    [(0, 1.0, K), (0, 0.0, S), (1, 0.0, K), (1, 2.0, K)],
    [(0, 0.0, K), (0, 0.0, K), (0, 0.0, K)],
]


def test_turn_index_and_discount_count_kernel_turns():
    # gamma 0.5. G0 = [1.5, 1, 2, 2] (see test_discount_clock_skips_summary_turns)
    #            G1: k(r2) 2; k(r0) 0 + 0.5 * 2 = 1; S 0 + 1 = 1; k(r1) 1 + 0.5 * 1 = 1.5 -> [1.5, 1, 1, 2]
    #            G2 = [0, 0, 0]
    # kernel-turn values K(c): E0 and E1 {0: 1.5, 1: 1, 2: 2}, E2 {0: 0, 1: 0, 2: 0}
    # E0: c0 1.5 - mean(1.5, 0) = 0.75; c1 1 - mean(1, 0) = 0.5; summary (c2) 2 - mean(2, 0) = 1; c2 1
    # E1: c0 0.75; summary (c1) 1 - mean(1, 0) = 0.5; c1 0.5; c2 1
    # E2: c0 0 - 1.5 = -1.5; c1 0 - 1 = -1; c2 0 - 2 = -2
    adv = turn_advantages(IDENTICAL, gamma=0.5)
    assert adv[0] == approx([0.75, 0.5, 1.0, 1.0])
    assert adv[1] == approx([0.75, 0.5, 0.5, 1.0])
    assert adv[2] == approx([-1.5, -1.0, -2.0])
    kernel = [[a for a, t in zip(row, ep) if not t[2]] for row, ep in zip(adv, IDENTICAL)]
    assert kernel[0] == kernel[1]  # identical episodes, identical advantages


def test_trajectory_return_counts_kernel_turns():
    # R = G(0) = 1.5 for E0 and E1 (the summary adds no discount step), 0 for E2: mean 1 -> [0.5, 0.5, -1]
    adv = trajectory_advantages(IDENTICAL, gamma=0.5)
    assert adv[0] == approx([0.5] * 4)
    assert adv[1] == approx([0.5] * 4)
    assert adv[2] == approx([-1.0] * 3)


def test_turn_summary_after_the_last_kernel_turn():
    # gamma 1. E0: k(r1) S (ends): G = [1, 0]; kernel values {0: 1}; E1: k(r3) k(r1): G = [4, 1], {0: 4, 1: 1}
    # E0: c0 1 - 4 = -3; summary at c1: 0 - 1 = -1.  E1: c0 4 - 1 = 3; c1: no other kernel turn 1 ->
    #   pooled {1} -> 1 - 1 = 0
    adv = turn_advantages([[(0, 1.0, K), (0, 0.0, S)], [(0, 3.0, K), (0, 1.0, K)]])
    assert adv == [approx([-3.0, -1.0]), approx([3.0, 0.0])]


def test_assign_advantages_truncation_penalty_and_summary_spans():
    # One group, two episodes, each: kernel turn (tokens 0..2), env tokens 2..3, summary turn (3..4) in sample 0,
    # then a kernel turn in sample 1 (segment 1, tokens 0..1). Rewards: E0 [1, 0, 1], E1 [0, 0, 1];
    # E1's first kernel answer was cut at max_new_tokens and is penalised by 0.5 -> E1 rewards [-0.5, 0, 1].
    # gamma 1: E0 V(0) = 2, V(1) = 1; E1 V(0) = 0.5, V(1) = 1.
    # E0: seg0 2 - 0.5 = 1.5, seg1 1 - 1 = 0; E1: seg0 0.5 - 2 = -1.5, seg1 0
    batch = RolloutBatch(group_size=2)
    for member, rewards in enumerate(([1.0, 0.0, 1.0], [0.0, 0.0, 1.0])):
        first, second = 2 * member, 2 * member + 1
        episode = EpisodeRecord(group=0, member=member, task_id="t", samples=[first, second])
        episode.turns = [
            TurnRecord(0, 0, False, rewards[0], span=(0, 2), sample=first, truncated=member == 1),
            TurnRecord(1, 0, True, rewards[1], span=(3, 4), sample=first),
            TurnRecord(2, 1, False, rewards[2], span=(0, 1), sample=second),
        ]
        batch.episodes.append(episode)
        for segment, n in ((0, 4), (1, 1)):
            batch.samples.append(
                SegmentSample(
                    group=0,
                    episode=member,
                    member=member,
                    segment=segment,
                    task_id="t",
                    response_ids=[1] * n,
                    loss_mask=[1] * n,
                    summary_mask=[0] * n,
                    rollout_logprobs=[0.0] * n,
                )
            )
    per_turn = assign_advantages(batch, "segment", truncation_penalty=0.5)
    assert per_turn == [approx([1.5, 0.0, 0.0]), approx([-1.5, 0.0, 0.0])]
    assert batch.samples[0].advantages == approx([1.5, 1.5, 0.0, 0.0])
    assert batch.samples[2].advantages == approx([-1.5, -1.5, 0.0, 0.0])
    # without the penalty: E1 V(0) = 1 -> E0 seg0 2 - 1 = 1
    assert assign_advantages(batch, "segment")[0][0] == pytest.approx(1.0)
