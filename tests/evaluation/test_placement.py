"""The timing stage's input arena: a fresh random place in device memory for every timed call."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from ascend_kernel_gym.evaluation import placement
from ascend_kernel_gym.evaluation.placement import PLACEMENT_ALIGN, InputArena


def _offset(arena: InputArena, tensor: torch.Tensor) -> int:
    assert arena.arena is not None
    return tensor.data_ptr() - arena.arena.data_ptr()


@pytest.mark.parametrize("seed", range(5))
def test_random_layout_keeps_blocks_aligned_disjoint_and_inside_the_arena(seed) -> None:
    rng = random.Random(seed)
    sizes = [PLACEMENT_ALIGN * n for n in (1, 7, 3, 64)]
    slack = 40 * PLACEMENT_ALIGN
    for _ in range(50):
        offsets = placement.random_layout(sizes, slack, rng)
        spans = sorted((o, o + s) for o, s in zip(offsets, sizes, strict=True))
        assert all(o % PLACEMENT_ALIGN == 0 and o >= 0 for o in offsets)
        assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))
        assert spans[-1][1] <= sum(sizes) + slack


def test_random_layout_varies_order_and_gaps() -> None:
    rng = random.Random(1)
    layouts = [tuple(placement.random_layout([512, 1024], 512 * 1000, rng)) for _ in range(200)]
    assert len(set(layouts)) > 190
    first_before_second = sum(a < b for a, b in layouts)
    assert 50 < first_before_second < 150  # both orders occur
    assert placement.random_layout([512, 1024], 0, rng) in ([0, 512], [1024, 0])  # no slack: packed


def test_every_call_gets_its_own_set_at_a_fresh_place() -> None:
    sets = [[torch.full((1000,), float(k)), torch.full((3, 5), 10.0 + k, dtype=torch.float64), 7] for k in range(3)]
    seen: list[tuple[int, int, float, float]] = []

    def model(x, y, n):
        seen.append((x.data_ptr(), y.data_ptr(), float(x[0]), float(y[0, 0])))
        return x * n

    arena = InputArena(model, sets, random.Random(0), slack=1 << 20, output_ring=3)
    outputs = [arena.prepare(rep % 3)() for rep in range(30)]
    assert [float(out[-1]) for out in outputs] == [7.0 * (rep % 3) for rep in range(30)]
    assert [(a, b) for _, _, a, b in seen] == [(float(r % 3), 10.0 + r % 3) for r in range(30)]
    places = [(x, y) for x, y, _, _ in seen]
    assert len(set(places)) == 30  # no place came back: an address cache would not have hit
    for x_ptr, y_ptr in places:
        x_off, y_off = x_ptr - arena.arena.data_ptr(), y_ptr - arena.arena.data_ptr()
        assert x_off % PLACEMENT_ALIGN == 0 and y_off % PLACEMENT_ALIGN == 0
        assert (x_off + 4000 <= y_off) or (y_off + 120 <= x_off)  # the two inputs never overlap
        assert max(x_off + 4000, y_off + 120) <= arena.arena.numel()
    assert {p for p in places for p in p}.isdisjoint({t.data_ptr() for s in sets for t in s[:2]})


def test_the_arena_holds_nothing_but_the_placed_inputs() -> None:
    # Freed memory of the process (reference outputs among it) would otherwise be readable
    # through the input's storage.
    sets = [[torch.full((300,), 7.0)] for _ in range(3)]
    arena = InputArena(lambda x: x, sets, random.Random(8), slack=64 * PLACEMENT_ALIGN)
    (buffer,) = arena.load(1)
    storage = torch.empty(0, dtype=torch.uint8).set_(buffer.untyped_storage())
    start = _offset(arena, buffer)
    assert storage.numel() == arena.arena.numel()
    assert int(storage[:start].count_nonzero()) == 0 and int(storage[start + 1200 :].count_nonzero()) == 0


def test_inputs_that_cannot_be_placed_keep_a_private_buffer_with_their_layout() -> None:
    base = [torch.randn(6, 8) for _ in range(3)]
    sets = [[b.t(), [b + 1, b + 2], torch.randn(0), 2.5] for b in base]  # strided view, list, empty, float
    arena = InputArena(lambda *args: args[0] * 1, sets, random.Random(2), slack=4096)
    assert arena.placed == [] and arena.arena is None
    for k in (1, 0, 2, 1):
        buffers = arena.load(k)
        assert buffers[0].stride() == sets[k][0].stride() and torch.equal(buffers[0], sets[k][0])
        assert buffers[0].data_ptr() != sets[k][0].data_ptr()
        assert all(torch.equal(b, s) and b.data_ptr() != s.data_ptr() for b, s in zip(buffers[1], sets[k][1]))
        assert buffers[3] == 2.5
    sets[0][1][0].fill_(99.0)  # the arena's copies are private
    assert float(arena.load(0)[1][0][0, 0]) == 99.0 and float(sets[1][1][0][0, 0]) != 99.0


def test_the_ring_keeps_the_last_outputs_alive() -> None:
    sets = [[torch.full((256,), float(k))] for k in range(3)]
    arena = InputArena(lambda x: x + 1, sets, random.Random(3), slack=1 << 16, output_ring=4)
    ptrs = [arena.prepare(rep % 3)().data_ptr() for rep in range(20)]  # the caller drops each output
    assert len(arena.outputs) == 4 and float(arena.last_output[0]) == 1.0 + 19 % 3
    # five consecutive calls never write to one output allocation (four kept + the new one)
    assert all(len(set(ptrs[i : i + 5])) == 5 for i in range(len(ptrs) - 4))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.complex64])
def test_every_dtype_is_placed_and_copied_exactly(dtype) -> None:
    sets = [[(torch.arange(24).reshape(2, 3, 4) % (k + 2)).to(dtype)] for k in range(2)]
    arena = InputArena(lambda x: x, sets, random.Random(5), slack=8192)
    assert arena.placed == [0]
    for k in (0, 1, 0):
        (buffer,) = arena.load(k)
        assert buffer.dtype == dtype and buffer.shape == (2, 3, 4) and buffer.is_contiguous()
        assert torch.equal(buffer, sets[k][0]) and _offset(arena, buffer) % PLACEMENT_ALIGN == 0


def test_bad_sizes_are_refused() -> None:
    sets = [[torch.zeros(4)]]
    with pytest.raises(ValueError):
        InputArena(lambda x: x, [], random.Random(0))
    with pytest.raises(ValueError):
        InputArena(lambda x: x, sets, random.Random(0), slack=-1)
    with pytest.raises(ValueError):
        InputArena(lambda x: x, sets, random.Random(0), output_ring=0)


def test_timing_memory_shrinks_to_fit_device_memory(monkeypatch) -> None:
    sets = [[torch.zeros(1 << 20, dtype=torch.uint8)] for _ in range(3)]  # 1 MiB in
    out = torch.zeros(1 << 20, dtype=torch.uint8)  # 1 MiB out; spacer 1 MiB
    ring, slack = placement.timing_memory(sets, out, torch.device("cpu"), 0.25)
    assert (ring, slack) == (placement.MAX_OUTPUT_RING, placement.DEFAULT_ARENA_SLACK)

    class FakeDevice:
        free = 0

        @classmethod
        def mem_get_info(cls):
            return cls.free, 1 << 40

    monkeypatch.setattr(torch, "fakedev", FakeDevice, raising=False)
    device = type("D", (), {"type": "fakedev"})()
    mib = 1 << 20
    least = placement.MIN_ARENA_SLACK // mib
    # a quarter of the free memory for two models: each model may use free / 8
    cases = [
        (8 * 1 << 40, (8, placement.MAX_ARENA_SLACK)),  # plenty: the slack is capped
        (8 * (least + 20) * mib, (8, (least + 11) * mib)),  # 1 in + 8 out, the rest is slack
        (8 * (least + 9) * mib, (8, least * mib)),
        (8 * (least + 8) * mib, (4, (least + 3) * mib)),  # the ring shrinks before the slack does
        (8 * (least + 4) * mib, (2, (least + 1) * mib)),
        (8 * (least + 2) * mib, (1, least * mib)),
        (8 * 2 * mib, (1, least * mib)),  # short: the least slack all the same
        (0, (1, least * mib)),
    ]
    for free, (expected_ring, expected_slack) in cases:
        FakeDevice.free = free
        ring, slack = placement.timing_memory(sets, out, device, 0.25)
        assert (ring, slack) == (expected_ring, expected_slack), free
        assert slack % PLACEMENT_ALIGN == 0


def test_local_memory_moves_only_on_cuda() -> None:
    from ascend_kernel_gym.evaluation.placement import LocalMemory

    assert LocalMemory.for_device(torch.device("cpu"), random.Random(0)) is None

    class Driver:  # the two calls of the CUDA driver API it makes
        def __init__(self) -> None:
            self.limits: list[int] = []

        def cuCtxSetLimit(self, kind: int, value) -> int:
            assert kind == 0  # CU_LIMIT_STACK_SIZE
            self.limits.append(value.value)
            return 0

    driver = Driver()
    local = LocalMemory(driver, 1024, random.Random(3), synchronize=lambda: None)
    assert all(local.move() for _ in range(50)) and local.moves == 50
    assert all(1024 < limit <= 2048 and limit % 16 == 0 for limit in driver.limits)
    assert all(a != b for a, b in zip(driver.limits, driver.limits[1:]))  # every move is a change
    local.restore()
    assert driver.limits[-1] == 1024 and local.moves == 50


def test_the_arena_tells_which_input_set_its_last_output_was_computed_on() -> None:
    sets = [[torch.full((8,), float(k))] for k in range(3)]
    arena = placement.InputArena(lambda x: x * 2, sets, random.Random(0), slack=0, output_ring=2)
    assert arena.last_output_on(0) is None  # no call yet
    arena.prepare(1)()
    assert torch.equal(arena.last_output_on(1), torch.full((8,), 2.0))
    assert arena.last_output_on(0) is None
    loaded = arena.prepare(2)  # loaded, not called: the last output is still set 1's
    assert arena.last_output_on(2) is None and arena.last_output_on(1) is not None
    loaded()
    assert torch.equal(arena.last_output_on(2), torch.full((8,), 4.0)) and arena.last_output_on(1) is None
