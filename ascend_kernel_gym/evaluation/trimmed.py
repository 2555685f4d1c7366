"""The summary of timed calls: a trimmed mean, shared by the child's timing stage (which reports
it) and the zygote's cross-check (which recomputes it from the reported samples). No torch."""

from __future__ import annotations

import statistics

#: the share of the fastest and of the slowest timed calls left out of the mean (each side)
TRIM = 0.1


def trimmed_mean(values: list[float], trim: float) -> float:
    """Mean of ``values`` without the lowest and the highest ``trim`` share (at least one value kept)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    drop = min(int(len(ordered) * trim), (len(ordered) - 1) // 2)
    return statistics.fmean(ordered[drop : len(ordered) - drop])
