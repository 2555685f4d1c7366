"""The veRL-side advantage estimators on hand-built rows (no veRL needed): one row per compaction segment."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.agents.advantages import group_advantages
from ascend_kernel_gym.integrations.verl_advantages import (
    REQUIRED_COLUMNS,
    VERL_ESTIMATORS,
    row_turn_advantages,
    token_advantages,
)

# Group "a": episode e1 has two segments (turns 0-1 in segment 0, turn 2 in segment 1), e2 one segment.
# Group "b": a single episode (no baseline: advantages 0).
E1 = [[0, -0.4], [0, 0.5], [1, 0.25]]
E2 = [[0, -0.2], [0, 0.0]]
E3 = [[0, 0.5]]
ROWS = {
    "index": ["a", "a", "a", "b"],
    "episodes": ["e1", "e1", "e2", "e3"],
    "row_turns": [
        [{"index": 0, "span": [0, 3]}, {"index": 1, "span": [5, 7]}],
        [{"index": 2, "span": [0, 2]}],
        [{"index": 0, "span": [0, 1]}, {"index": 1, "span": [4, 8]}],
        [{"index": 0, "span": [0, 2]}],
    ],
    "episode_turns": [E1, E1, E2, E3],
}


@pytest.mark.parametrize("estimator", ["segment", "turn", "trajectory"])
@pytest.mark.parametrize("normalize_std", [False, True])
def test_rows_get_the_turn_advantages_of_their_episode(estimator, normalize_std):
    per_row = row_turn_advantages(**ROWS, estimator=estimator, normalize_std=normalize_std)
    pairs = lambda turns: [(int(s), float(r)) for s, r in turns]
    expected_a = group_advantages([pairs(E1), pairs(E2)], estimator, normalize_std=normalize_std)
    assert per_row[0] == pytest.approx(expected_a[0][:2])
    assert per_row[1] == pytest.approx(expected_a[0][2:])
    assert per_row[2] == pytest.approx(expected_a[1])
    assert per_row[3] == [0.0]  # a group of one episode has no baseline


def test_segment_rows_by_hand():
    per_row = row_turn_advantages(**ROWS, estimator="segment")
    # V_e1(0) = 0.35, V_e2(0) = -0.2 -> segment 0 of e1: 0.35 - (-0.2); e2: -0.2 - 0.35.
    assert per_row[0] == pytest.approx([0.55, 0.55])
    assert per_row[2] == pytest.approx([-0.55, -0.55])
    # Segment 1 of e1: no other episode reached it -> pooled over e2's segments: 0.25 - (-0.2).
    assert per_row[1] == pytest.approx([0.45])


def test_token_advantages_fill_each_turn_span_and_keep_environment_tokens_at_zero():
    import torch

    mask = torch.tensor([[1, 1, 1, 0, 0, 1, 1, 0], [1, 1, 0, 0, 0, 0, 0, 0]])
    out = token_advantages(mask, ROWS["row_turns"][:2], [[0.5, -1.0], [2.0]])
    assert out.tolist() == [[0.5, 0.5, 0.5, 0, 0, -1.0, -1.0, 0], [2.0, 2.0, 0, 0, 0, 0, 0, 0]]
    masked = token_advantages(torch.tensor([[1, 0, 1, 0, 0, 1, 1, 0]]), ROWS["row_turns"][:1], [[0.5, -1.0]])
    assert masked.tolist() == [[0.5, 0, 0.5, 0, 0, -1.0, -1.0, 0]]  # only policy tokens carry an advantage


def test_rows_that_disagree_on_their_episode_or_point_outside_it_are_refused():
    bad = {**ROWS, "episode_turns": [E1, E2, E2, E3]}
    with pytest.raises(ValueError, match="disagree"):
        row_turn_advantages(**bad)
    outside = {**ROWS, "row_turns": [[{"index": 5, "span": [0, 1]}], *ROWS["row_turns"][1:]]}
    with pytest.raises(ValueError, match="outside its episode"):
        row_turn_advantages(**outside)
    with pytest.raises(ValueError, match="estimator"):
        row_turn_advantages(**ROWS, estimator="gae")


def test_the_names_map_to_the_package_estimators():
    assert VERL_ESTIMATORS == {"akg_segment": "segment", "akg_turn": "turn", "akg_trajectory": "trajectory"}
    assert set(REQUIRED_COLUMNS) == {"akg_episode", "akg_episode_turns", "akg_turns"}
