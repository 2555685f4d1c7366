"""Where the timing stage puts each model's inputs in device memory: a fresh random place per call.

The speed of some kernels depends on where their data lies in device memory. On an H200,
PyTorch's strided transpose copy ran 1.836 to 1.903 ms on inputs 512 B to 3 MB apart in one
allocation, and the buffers a process allocates one after another tend to share one level, which
moved from one process to the next. Timing every call on the same few buffers therefore gives a
speedup that depends on the buffers a child happened to get. :class:`InputArena` gives each
model one allocation (its inputs plus ``MIN_ARENA_SLACK`` to ``MAX_ARENA_SLACK`` bytes of slack) and, before
every timed call, copies the call's input set to a fresh random place in it (tensors in random
order, with random gaps, each start a multiple of ``PLACEMENT_ALIGN``), so an evaluation's time
averages over as many input places as it has timed calls. The last ``output_ring`` outputs are
kept alive, so consecutive calls never write to one output allocation. Parameters and what a
model allocates during a call stay where the allocator puts them.

Places are drawn from millions of 512 B steps (2 GB of slack), so a model that caches results
by input address almost never gets a hit, and a hit on another input set returns stale data.
Inputs that cannot be placed (strided views that are not dense, tensors nested in list inputs,
non-tensors) keep one private buffer each, reloaded per call.

Register spills live in the device context's *local memory*, one allocation the driver makes per
context. On an H200 the ``attention_head`` solution (1668 spilled registers per thread) ran at
one level per process, 29.0 to 30.9 ms, and moved to another level each time that allocation was
made afresh, and only then. :class:`LocalMemory` remakes it (CUDA: a changed stack-size limit
makes the driver reallocate it), so the timing stage can sample its place as it samples the
inputs'.
"""

from __future__ import annotations

import contextlib
import ctypes
import random
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from ascend_kernel_gym.evaluation.inputs import clone_inputs, copy_into

#: placed tensors start a multiple of this many bytes into the arena: every alignment a kernel
#: may rely on (Triton specialises pointers on divisibility by 16) is kept
PLACEMENT_ALIGN = 512
#: the most slack an arena gets beyond its inputs (less when device memory is short)
MAX_ARENA_SLACK = 2 << 30
#: the least slack an arena gets, however short device memory is: with none, every call of an
#: evaluation used the one place its allocation happened to get, and the reference transpose's
#: speedup moved by up to 26 % between evaluations at eight workers on an H100 (their share of a
#: busy device's free memory held the inputs and one output, nothing more; 2026-12-06)
MIN_ARENA_SLACK = 64 << 20
#: slack when the device's free memory cannot be queried (and on the CPU)
DEFAULT_ARENA_SLACK = 64 << 20
#: the most outputs a model keeps alive in the timing stage
MAX_OUTPUT_RING = 8

_TENSOR = torch.Tensor


def nbytes(x: torch.Tensor) -> int:
    return _TENSOR.numel(x) * _TENSOR.element_size(x)


def min_bytes(inputs: list[Any], outputs: Any) -> int:
    """Bytes any implementation must move at least: read every input once, write every output once."""
    total = 0

    def add(value: Any) -> None:
        nonlocal total
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
        elif isinstance(value, (tuple, list)):
            for item in value:
                add(item)

    add(inputs)
    add(outputs)
    return total


def aligned(n: int) -> int:
    return -(-n // PLACEMENT_ALIGN) * PLACEMENT_ALIGN


def placeable(x: Any) -> bool:
    """Whether input ``x`` can be copied into a byte arena: a dense contiguous tensor of a byte-viewable dtype."""
    if type(x) is not torch.Tensor or x.requires_grad:
        return False
    if x.device.type == "meta" or x.layout != torch.strided or _TENSOR.numel(x) == 0:
        return False
    if not _TENSOR.is_contiguous(x):
        return False
    try:
        torch.empty(_TENSOR.element_size(x), dtype=torch.uint8, device="meta").view(x.dtype)
    except (RuntimeError, TypeError):
        return False
    return True


def random_layout(sizes: list[int], slack: int, rng: random.Random) -> list[int]:
    """Start offsets for blocks of ``sizes`` bytes (each a multiple of ``PLACEMENT_ALIGN``) in an
    arena of ``sum(sizes) + slack`` bytes: blocks in a random order, the slack split into random gaps."""
    units = slack // PLACEMENT_ALIGN
    cuts = sorted(rng.randint(0, units) for _ in range(len(sizes)))
    order = list(range(len(sizes)))
    rng.shuffle(order)
    offsets = [0] * len(sizes)
    used = 0
    for cut, index in zip(cuts, order, strict=True):
        offsets[index] = used + cut * PLACEMENT_ALIGN
        used += sizes[index]
    return offsets


class InputArena:
    """Input buffers of one model in the timing stage, placed afresh for every call.

    ``prepare(k)`` copies input set ``k`` to a random place in the arena (outside the timed
    window) and returns the call; the call keeps its output in a ring of the last
    ``output_ring`` outputs. ``load(k)`` only places and copies the inputs.
    """

    def __init__(
        self,
        model: Callable[..., Any],
        sets: list[list[Any]] | RoundInputs,
        rng: random.Random,
        *,
        slack: int = DEFAULT_ARENA_SLACK,
        output_ring: int = MAX_OUTPUT_RING,
    ) -> None:
        if isinstance(sets, list) and not sets:
            raise ValueError("at least one input set is needed")
        if slack < 0 or output_ring < 1:
            raise ValueError(f"bad arena sizes: slack={slack}, output_ring={output_ring}")
        self.model = model
        self.sets = sets
        self.rng = rng
        first = sets[0]
        self.placed = [i for i, x in enumerate(first) if placeable(x)]
        device = _first_device([first[i] for i in self.placed])
        self.placed = [i for i in self.placed if first[i].device == device]  # one arena, one device
        self.sizes = [aligned(nbytes(first[i])) for i in self.placed]
        self.slack = (slack // PLACEMENT_ALIGN) * PLACEMENT_ALIGN
        self.arena: torch.Tensor | None = None
        if self.placed:
            # zeroed: memory the process freed earlier (the reference outputs of this stage's
            # input sets among it) must not be readable through an input's storage
            self.arena = torch.zeros(sum(self.sizes) + self.slack, dtype=torch.uint8, device=device)
        placed = set(self.placed)
        # inputs that cannot be placed keep a private buffer each, with the layout of the original
        self.fixed = [None if i in placed else clone_inputs([x])[0] for i, x in enumerate(first)]
        self.outputs: deque[Any] = deque(maxlen=output_ring)
        #: the input set each kept output was computed on
        self.output_sets: deque[int] = deque(maxlen=output_ring)
        self.last_offsets: list[int] = []

    def load(self, k: int) -> list[Any]:
        """Copy input set ``k`` to a fresh random place and return the buffers holding it."""
        source = self.sets[k]
        buffers = list(self.fixed)
        if self.arena is not None:
            self.last_offsets = random_layout(self.sizes, self.slack, self.rng)
            for index, offset in zip(self.placed, self.last_offsets, strict=True):
                x = source[index]
                view = self.arena[offset : offset + nbytes(x)].view(x.dtype).view(x.shape)
                _TENSOR.copy_(view, x)
                buffers[index] = view
        fixed = [i for i, b in enumerate(self.fixed) if b is not None]
        copy_into([buffers[i] for i in fixed], [source[i] for i in fixed])
        return buffers

    def prepare(self, k: int) -> Callable[[], Any]:
        buffers = self.load(k)

        def call() -> Any:
            out = self.model(*buffers)
            self.outputs.append(out)  # the oldest kept output is freed only now
            self.output_sets.append(k)
            return out

        return call

    @property
    def last_output(self) -> Any:
        return self.outputs[-1] if self.outputs else None

    def last_output_on(self, k: int) -> Any:
        """The last call's output when that call ran on input set ``k``, else None."""
        return self.outputs[-1] if self.output_sets and self.output_sets[-1] == k else None


class RoundInputs:
    """A fresh input set for every timed round, drawn from the task when first asked for.

    ``source[k]`` is set ``k`` (the same values every time it is asked for: its seed derives from
    ``base_seed`` and ``k``); only the set asked for last is kept, so a round's two models and
    its checks share one set while the memory holds one. Fresh inputs in every round leave a
    model that caches results by input content (a fingerprint of the values, kept on the device)
    nothing to hit.
    """

    def __init__(self, make: Callable[[int], list[Any]], base_seed: int) -> None:
        self.make = make
        self.base_seed = base_seed
        self._key: int | None = None
        self._set: list[Any] = []

    def seed(self, k: int) -> int:
        return (self.base_seed ^ ((k + 1) * 0x9E3779B97F4A7C15)) & ((1 << 62) - 1)

    def __getitem__(self, k: int) -> list[Any]:
        if k != self._key:
            self._set = []  # the previous set is freed before the next is drawn
            self._set = self.make(self.seed(k))
            self._key = k
        return self._set


def _first_device(values: list[Any]) -> torch.device | None:
    for value in values:
        if isinstance(value, torch.Tensor):
            return value.device
    return None


def timing_memory(sets: list[list[Any]], outputs: Any, device: torch.device, share: float) -> tuple[int, int]:
    """``(output_ring, slack)`` for each of the two models' arenas, within ``share`` of free memory,
    the slack never below :data:`MIN_ARENA_SLACK` (the ring shrinks first; past one output the
    arenas take the minimum whatever the share).

    Without a memory query (CPU, a device without ``mem_get_info``) the defaults are used.
    """
    inputs = sum(aligned(nbytes(x)) for x in sets[0] if placeable(x))
    inputs += min_bytes([x for x in sets[0] if not placeable(x)], [])
    out_bytes = min_bytes([], outputs)
    free = free_memory(device)
    if free is None:
        return MAX_OUTPUT_RING, DEFAULT_ARENA_SLACK
    per_model = share * free / 2
    for ring in (MAX_OUTPUT_RING, 4, 2, 1):
        left = per_model - inputs - ring * out_bytes
        if left >= MIN_ARENA_SLACK:
            return ring, int(min(MAX_ARENA_SLACK, left)) // PLACEMENT_ALIGN * PLACEMENT_ALIGN
    return 1, MIN_ARENA_SLACK


def free_memory(device: torch.device) -> int | None:
    """Free bytes on ``device``, or None where that cannot be queried (the CPU, some backends)."""
    module = getattr(torch, device.type, None) if device.type != "cpu" else None
    mem_get_info = getattr(module, "mem_get_info", None)
    if mem_get_info is None:
        return None
    try:
        return int(mem_get_info()[0])
    except Exception:  # noqa: BLE001  (no memory query on this device)
        return None


#: ``CU_LIMIT_STACK_SIZE`` of the CUDA driver API (``cuCtxGetLimit`` / ``cuCtxSetLimit``)
_CU_LIMIT_STACK_SIZE = 0
#: the stack limit moves in steps of this many bytes per thread (the driver's granularity)
STACK_STEP = 16
#: at most this many steps above the context's own limit (at most 1 KB more per thread)
MAX_STACK_STEPS = 64


class LocalMemory:
    """Remakes the CUDA context's local memory (where register spills live) at a new place.

    Each :meth:`move` sets the per-thread stack limit to the context's own limit plus a random
    number of ``STACK_STEP`` bytes (never the current value), which makes the driver reallocate
    the local memory; :meth:`restore` puts the context's own limit back. Use :meth:`for_device`,
    which gives None where this cannot work (not CUDA, no driver library, no current context).
    """

    def __init__(
        self, driver: Any, own_limit: int, rng: random.Random, synchronize: Callable[[], None] | None = None
    ) -> None:
        self._driver = driver
        self._synchronize = synchronize or torch.cuda.synchronize
        self.own_limit = own_limit
        self._rng = rng
        self._current = own_limit
        self.moves = 0

    @classmethod
    def for_device(cls, device: torch.device, rng: random.Random) -> LocalMemory | None:
        if device.type != "cuda":
            return None
        try:
            driver = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        limit = ctypes.c_size_t(0)
        if driver.cuCtxGetLimit(ctypes.byref(limit), _CU_LIMIT_STACK_SIZE) != 0 or limit.value == 0:
            return None  # no current context on this thread
        return cls(driver, int(limit.value), rng)

    def move(self) -> bool:
        """Reallocate the local memory (synchronises the device); False if the driver refused."""
        steps = [k for k in range(1, MAX_STACK_STEPS + 1) if self.own_limit + k * STACK_STEP != self._current]
        moved = self._set(self.own_limit + self._rng.choice(steps) * STACK_STEP)
        self.moves += moved
        return moved

    def restore(self) -> None:
        """The context's own limit again; never raises (the context may be broken by then)."""
        if self._current != self.own_limit:
            with contextlib.suppress(Exception):  # a failed kernel leaves a sticky device error
                self._set(self.own_limit)

    def _set(self, limit: int) -> bool:
        self._synchronize()
        if self._driver.cuCtxSetLimit(_CU_LIMIT_STACK_SIZE, ctypes.c_size_t(limit)) != 0:
            return False
        self._current = limit
        return True
