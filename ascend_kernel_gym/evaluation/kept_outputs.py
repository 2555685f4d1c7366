"""The checked rounds' outputs of the timing stage, kept until the timed calls are over.

In some random rounds of the timing stage (:mod:`.timing`) the candidate's output is checked
against the reference's on the same inputs. The reference's output of the same round is at hand
there: an output within the plain tolerance of it passes at once (:meth:`KeptOutputs.agrees`, a
comparison of at most a sample, in the round). Any other output (and the audited calls' outputs,
whose candidate code ran after the reference's call) needs the reference run again, untimed,
which the device's lease should not pay for; so it is kept (:class:`KeptOutputs`) and compared
once the timed calls are over and the lease went back (:func:`kept_matches`).

What is kept of an output tensor: the whole tensor when that takes no more memory than a sample,
else :data:`SAMPLE_ELEMENTS` elements at random positions, drawn after the call from the harness's
own generator (the candidate's code can neither see nor predict them: the static checks keep it
from the harness's state). A timed call that skipped work, returned a cached result or changed
its precision gets a share of its elements wrong; half a million random ones miss a share of
``f`` with probability ``(1 - f) ** 524288`` per checked round (``f = 1e-5``: 0.5 %, and a
stage checks 10 to 20 rounds), and a call that skips a millionth of its work gains nothing
measurable. Copying a whole 256 MB output to keep it cost eight workers on an H100 most of the
device's memory share, so most checks were made inside the lease (4 s of the burst's 34 s).

Where a copy waits: in device memory while the copies fit ``device_bytes``, else in host memory
while they fit the child's allowance and copying costs less than checking (:meth:`KeptOutputs.worth_host`),
else nowhere (:meth:`KeptOutputs.keep` returns None): the caller then compares the whole output
at once, inside the lease.

Imports torch: only the zygote's children (and tests) import this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from ascend_kernel_gym.evaluation import placement
from ascend_kernel_gym.evaluation.compare import outputs_close, quick_close
from ascend_kernel_gym.evaluation.outputs import detach_copy
from ascend_kernel_gym.evaluation.process import device_reserved_bytes, own_rss_bytes
from ascend_kernel_gym.evaluation.state import ChildState
from ascend_kernel_gym.evaluation.timing import FLUSH_BYTES

#: an output tensor larger than a sample of this many elements (its values and their places) is
#: kept as that sample
SAMPLE_ELEMENTS = 1 << 19
#: bytes of one sampled element's place (``torch.take`` takes int64 positions)
INDEX_BYTES = 8
#: share of the device's free memory (when the stage starts, times the evaluation's share of the
#: device) that the copies of the checked rounds' outputs may take until the timed calls are over
KEEP_DEVICE_SHARE = 0.1
#: at most this share of the device's free memory goes to copies kept in the bytes an evaluation's
#: reservation holds idle while it times (``Job.keep_device_bytes``): eight workers of an H100
#: compared 567 of 880 checked outputs inside the lease, which then lasted 24 % longer than one
#: worker's (2026-12-06)
KEEP_FREE_CAP = 0.5
#: where the free memory cannot be read (the CPU), the copies may take this many device bytes
KEEP_DEFAULT_BYTES = 1 << 30
#: bytes per second of a copy from device memory to (pageable) host memory, on the low side: eight
#: workers copying at once share the host's memory bandwidth (an H100 call on 2026-12-06 whose
#: workers of eight copied every output that missed the device share ran level 1 about 3x slower
#: than another H100 had with the old code: most likely the copies, the host not ruled out)
HOST_COPY_BYTES_PER_S = 2e9
#: bytes per second of a check's comparison on the device (a 256 MB float16 output: 18 ms, H100)
COMPARE_BYTES_PER_S = 15e9
#: share of what is left of the child's host-memory cap (``Job.memory_mb`` less what the child grew
#: since it started) that copies moved to host memory may take
KEEP_HOST_SHARE = 0.5
_TENSOR = torch.Tensor


class Sample:
    """The elements of an output tensor at ``index`` (positions in its row-major order), and the
    tensor's shape and dtype (the reference's output must have the same)."""

    __slots__ = ("dtype", "index", "shape", "values")

    def __init__(self, index: Any, values: Any, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        self.index = index
        self.values = values
        self.shape = shape
        self.dtype = dtype

    def map(self, fn: Callable[[Any], Any]) -> Sample:
        """The same sample with ``fn`` applied to its places and its values."""
        return Sample(fn(self.index), fn(self.values), self.shape, self.dtype)


class KeptOutputs:
    """Where the checked and audited rounds' outputs wait for the end of the timed calls (see the
    module docstring). ``seed`` draws the sampled elements' places."""

    def __init__(
        self, device: torch.device, device_bytes: int, host_bytes: int, rerun_s: float = 0.0, seed: int = 0
    ) -> None:
        self.device = device
        self.device_bytes = max(0, device_bytes)
        self.host_bytes = max(0, host_bytes)
        self.rerun_s = max(0.0, rerun_s)
        self.seed = seed
        self.on_device = 0
        self.on_host = 0
        self.counts = {"agreed": 0, "device": 0, "host": 0, "at_once": 0, "sampled": 0}
        self._generators: dict[torch.device, torch.Generator] = {}

    @classmethod
    def for_stage(cls, state: ChildState, device: torch.device, rerun_s: float, seed: int) -> KeptOutputs:
        """The budgets of one evaluation's timing stage (see the constants above); ``rerun_s``: one
        untimed run of the reference through the harness's path (a check's re-run)."""
        share = min(1.0, max(0.0, state.job.device_share))
        free = placement.free_memory(device)
        device_bytes = int(KEEP_DEFAULT_BYTES if free is None else KEEP_DEVICE_SHARE * free * share)
        if free is not None and state.job.keep_device_bytes > 0:
            # The evaluation's reservation holds its judge's share idle now, less what this child
            # holds beyond its trials' peak (its arenas, the flush buffer): the copies then take no
            # more than the trials and the judge did together. Never more than part of the free memory.
            reserved = device_reserved_bytes(device.type) or 0
            held = reserved + FLUSH_BYTES - state.memory_phases.get("correctness", 0)
            idle = state.job.keep_device_bytes - max(0, held)
            device_bytes = int(max(device_bytes, min(idle, KEEP_FREE_CAP * free)))
        # on the CPU the device's memory is the host's: nothing to gain by moving copies
        host_bytes = host_allowance(state.job.memory_mb, state.start_rss) if device.type != "cpu" else 0
        return cls(device, device_bytes, host_bytes, rerun_s, seed)

    def worth_host(self, size: int) -> bool:
        """Whether copying ``size`` bytes to host memory costs the lease less than checking at once
        (the reference's re-run and a comparison)."""
        return size / HOST_COPY_BYTES_PER_S < self.rerun_s + size / COMPARE_BYTES_PER_S

    def keep(self, output: Any) -> Any | None:
        """What is kept of ``output`` to compare later (:func:`kept_matches` after :meth:`back`),
        or None: compare the whole output now."""
        kept = _map_leaves(output, self._shrink)
        leaves = list(_leaves(kept))
        size = sum(_leaf_bytes(leaf) for leaf in leaves)
        if self.on_device + size <= self.device_bytes:
            self.on_device += size
            where = "device"
        elif self.on_host + size <= self.host_bytes and self.worth_host(size):
            self.on_host += size
            where = "host"
            kept = _map_leaves(kept, _leaf_to_host)
        else:
            self.counts["at_once"] += 1
            return None
        self.counts[where] += 1
        self.counts["sampled"] += sum(isinstance(leaf, Sample) for leaf in leaves)
        return kept

    def agrees(self, output: Any, ref_output: Any, atol: float, rtol: float) -> bool:
        """Whether ``output`` is within the plain tolerance of ``ref_output``, the reference's
        output on the same inputs in the same round, checked now: every tensor whole where it is no
        larger than a sample, else at :data:`SAMPLE_ELEMENTS` places drawn now (as :meth:`keep`
        draws them). True spares the check a re-run of the reference after the timed calls; False
        means nothing (anything but tensors of one shape and dtype on both sides, or any element
        beyond the bound): the caller keeps the output for the full check."""
        cands, refs = list(_leaves(output)), list(_leaves(ref_output))
        if len(cands) != len(refs) or _structure(output) != _structure(ref_output):
            return False
        for cand, ref in zip(cands, refs, strict=True):
            if type(cand) is not torch.Tensor or type(ref) is not torch.Tensor:
                return False
            if cand.shape != ref.shape or cand.dtype != ref.dtype or cand.device != ref.device:
                return False
            count = _TENSOR.numel(ref)
            if count > SAMPLE_ELEMENTS:
                generator = self._generator(ref.device)
                index = torch.randint(count, (SAMPLE_ELEMENTS,), generator=generator, device=ref.device)
                cand, ref = _TENSOR.take(cand, index), _TENSOR.take(ref, index)
            if not quick_close(cand, ref, atol, rtol):
                return False
        self.counts["agreed"] += 1
        return True

    def _shrink(self, value: Any) -> Any:
        """A private copy of an output tensor, or its :class:`Sample` when that is smaller."""
        if not isinstance(value, torch.Tensor):
            return value
        tensor = _TENSOR.detach(value)
        count = _TENSOR.numel(tensor)
        if count * tensor.element_size() <= SAMPLE_ELEMENTS * (INDEX_BYTES + tensor.element_size()):
            return detach_copy(tensor)  # no larger than its sample would be
        index = torch.randint(count, (SAMPLE_ELEMENTS,), generator=self._generator(tensor.device), device=tensor.device)
        return Sample(index, _TENSOR.take(tensor, index), tuple(tensor.shape), tensor.dtype)

    def _generator(self, device: torch.device) -> torch.Generator:
        if device not in self._generators:
            generator = torch.Generator(device=device)
            generator.manual_seed(self.seed)
            self._generators[device] = generator
        return self._generators[device]

    @staticmethod
    def back(kept: Any) -> Any:
        """A kept output with every tensor on the device it came from."""
        return _map_leaves(kept, _leaf_from_host)

    def summary(self) -> dict[str, int]:
        """How many outputs agreed with the reference's in their round, were kept on the device,
        in host memory, compared at once, and how many tensors among the kept ones were sampled."""
        return dict(self.counts)


def kept_matches(kept: Any, ref_out: Any, atol: float, rtol: float, slack_of: Callable[[], Any]) -> bool:
    """Whether a kept output (:meth:`KeptOutputs.back`) is within tolerance of the reference's
    whole output ``ref_out``: a sampled tensor is compared at its places, and its reference must
    have the candidate's shape and dtype."""
    picks: list[torch.Tensor | None] = []
    narrowed = _narrow(kept, ref_out, picks)
    if narrowed is None:
        return False
    cand, ref = narrowed

    def slack() -> Any:
        whole = slack_of()
        return None if whole is None else [_pick(s, p) for s, p in zip(whole, picks, strict=False)]

    return matches_reference(cand, ref, atol, rtol, slack)


def matches_reference(out: Any, ref_out: Any, atol: float, rtol: float, slack_of: Callable[[], Any]) -> bool:
    """Whether ``out`` is within tolerance of ``ref_out``; the reference's rounding slack
    (``slack_of()``, a reference call in float32) is asked for only when the plain tolerance
    refuses ``out``: it only widens the tolerance."""
    if outputs_close(out, ref_out, atol, rtol):
        return True
    slack = slack_of()
    return slack is not None and outputs_close(out, ref_out, atol, rtol, slack)


def _narrow(kept: Any, ref: Any, picks: list[torch.Tensor | None]) -> tuple[Any, Any] | None:
    """``(kept, ref)`` with every sampled tensor's reference taken at its places (``picks`` gets
    one entry per tensor of ``ref`` in depth-first order: the places, or None for a whole one);
    None where the two differ in structure, or a sampled tensor's reference in shape or dtype."""
    if isinstance(kept, Sample):
        if type(ref) is not torch.Tensor or tuple(ref.shape) != kept.shape or ref.dtype != kept.dtype:
            return None
        index = kept.index.to(ref.device)
        picks.append(index)
        return kept.values.to(ref.device), _TENSOR.take(ref, index)
    if isinstance(kept, (tuple, list)):
        if not isinstance(ref, (tuple, list)) or len(kept) != len(ref):
            return None
        cands, refs = [], []
        for k, r in zip(kept, ref, strict=True):
            pair = _narrow(k, r, picks)
            if pair is None:
                return None
            cands.append(pair[0])
            refs.append(pair[1])
        return type(kept)(cands), type(ref)(refs)
    if isinstance(kept, torch.Tensor) and isinstance(ref, torch.Tensor) and kept.dtype != ref.dtype:
        return None
    if ref is not None:  # a whole tensor or a scalar: one slack entry (.compare.precision_slack)
        picks.append(None)
    return kept, ref


def _pick(slack: Any, index: torch.Tensor | None) -> Any:
    if slack is None or index is None:
        return slack
    return _TENSOR.take(slack, index.to(slack.device))


def _map_leaves(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` with ``fn`` applied to everything in it that is not a tuple or a list."""
    if isinstance(value, tuple):
        return tuple(_map_leaves(v, fn) for v in value)
    if isinstance(value, list):
        return [_map_leaves(v, fn) for v in value]
    return fn(value)


def _structure(value: Any) -> Any:
    """The nesting of tuples and lists in ``value``, leaves left out."""
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_structure(v) for v in value))
    return None


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _leaf_bytes(leaf: Any) -> int:
    if isinstance(leaf, Sample):
        return _leaf_bytes(leaf.index) + _leaf_bytes(leaf.values)
    return _TENSOR.numel(leaf) * leaf.element_size() if isinstance(leaf, torch.Tensor) else 0


class _OnHost:
    """A tensor copied to host memory, and the device it came from."""

    __slots__ = ("device", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.device = tensor.device
        self.tensor = _TENSOR.to(_TENSOR.detach(tensor), "cpu", copy=True)


def _leaf_to_host(leaf: Any) -> Any:
    if isinstance(leaf, Sample):
        return leaf.map(_OnHost)
    return _OnHost(leaf) if isinstance(leaf, torch.Tensor) else leaf


def _leaf_from_host(leaf: Any) -> Any:
    if isinstance(leaf, Sample):
        return leaf.map(_leaf_from_host)
    return _TENSOR.to(leaf.tensor, leaf.device) if isinstance(leaf, _OnHost) else leaf


def host_allowance(memory_mb: int, start_rss: int) -> int:
    """Bytes of host memory the harness may add to the child: :data:`KEEP_HOST_SHARE` of its cap
    less its growth since it started; 0 without a cap or a reading of the resident set."""
    now = own_rss_bytes()
    if memory_mb <= 0 or start_rss <= 0 or now <= 0:
        return 0
    return int(KEEP_HOST_SHARE * max(0, memory_mb * 1024 * 1024 - (now - start_rss)))
