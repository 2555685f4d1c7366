"""A clock that only the test moves: the timing protocol's fake models advance it by their call's time."""

from __future__ import annotations


class FakeClock:
    """Seconds that pass only when a fake model's call says so."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms / 1e3
