"""Whether a kernel launch overwrote PyTorch's copy of the data, or copied it on (child only).

The recorder (:mod:`.recorder`) taints memory PyTorch copied an input's data into; an output
holding tainted memory is ``torch_fallback``. :class:`OverwriteProbe` refines that at each
recorded launch of the candidate's own kernels that is given such memory: memory the kernel
overwrote entirely, from other data, is PyTorch's no longer (``out = x.clone()`` as a lazy
allocation before a kernel that writes all of ``out``), and memory the kernel filled with a
verbatim run of PyTorch's rearranged or converted copy is PyTorch's work handed on (a copy that reaches the
output by a path with no verbatim step is :mod:`.copy_samples`'s).

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from ascend_kernel_gym.evaluation.input_copies import copied_input_piece

_PLAIN = (bool, int, float, str)


class OverwriteProbe:
    """Whether a launch overwrote every element of memory PyTorch had copied data into, with values
    that do not come from that data (``out = x.clone()``, then a kernel writes all of ``out``).

    Such memory is *tainted* (``Recorder.record_write``): an output holding it is PyTorch's work.
    A kernel that overwrites all of it has done the work itself, unless it only wrote PyTorch's
    values back (or a part of them). The probe tells the two apart by running the launch a second
    time on scratch copies of all its tensor arguments as they were before the launch, with the
    copied memory's elements in a random order: every element of it that the kernel wrote
    independently of what it held comes out the same in both runs; an element it left alone, or
    wrote from its old values, comes out differently (a kernel cannot undo an order it does not
    know without computing the answer itself). Only memory the real launch changed is run again
    (unchanged memory was not written, or written back as it was); launches with tensors nested in
    tuples or descriptors are not (that memory stays tainted), and a failing second run settles
    nothing. The shuffle keeps every value of the memory (an index read from it stays valid).

    :meth:`kernel_copies` needs no second run: memory the launch changed that now holds a verbatim
    run of a tainted copy (one that is not itself an unchanged run of an input) takes on its taint.
    """

    def __init__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], snapshots: dict[int, Any], copied: dict[int, int]
    ) -> None:
        self.args = args
        self.kwargs = kwargs
        #: storage pointer -> (storage, its bytes before the launch) for every tensor argument
        self.snapshots = snapshots
        #: storage pointer -> element size, for the tainted (copied) storages
        self.copied = copied
        #: whether :meth:`overwritten` may run the launch again (bounded per call by the recorder)
        self.second_run = True
        #: the copied storages the launch changed (:meth:`changed`), once compared
        self._changed: list[int] | None = None
        #: every tensor of the launch, also those nested in tuples and descriptors
        self.tensors: list[torch.Tensor] = [
            v for v in [*args, *kwargs.values()] if type(v) in (torch.Tensor, torch.nn.Parameter)
        ]

    def kernel_copies(self, input_bytes: list[torch.Tensor], tainted: dict[int, str]) -> dict[int, str]:
        """Memory the launch wrote that now holds a verbatim run of the PyTorch copies it was given,
        with the copy's taint: a kernel that copies PyTorch's rearranged or converted data into a
        fresh buffer hands on PyTorch's work. A copy that is itself an unchanged run of an input is
        no source (copying it is copying the input, the kernel's own work); neither is memory that
        the launch wrote in place (the overwrite check above decides that one)."""
        sources: list[tuple[int, torch.Tensor, str]] = []
        for tensor in self._tensors():
            ptr = torch.Tensor.untyped_storage(tensor).data_ptr()
            if ptr not in self.copied or ptr not in tainted or type(tensor) is not torch.Tensor:
                continue
            before = torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(
                self.snapshots[ptr][1],
                torch.Tensor.storage_offset(tensor),
                torch.Tensor.size(tensor),
                torch.Tensor.stride(tensor),
            )
            if not copied_input_piece(before, input_bytes):
                whole = torch.tensor([], dtype=torch.uint8, device=tensor.device).set_(self.snapshots[ptr][1])
                sources.append((ptr, whole, tainted[ptr]))
        found: dict[int, str] = {}
        if not sources:
            return found
        for tensor in self._tensors():
            storage = torch.Tensor.untyped_storage(tensor)
            ptr = storage.data_ptr()
            if ptr in found or _same_bytes(storage, self.snapshots[ptr][1]):
                continue  # unchanged by the launch
            for source, whole, taint in sources:
                if source != ptr and (copied_input_piece(tensor, [whole]) or _storage_copies(tensor, whole)):
                    found[ptr] = taint
                    break
        return found

    def _tensors(self) -> list[torch.Tensor]:
        return self.tensors

    @classmethod
    def prepare(cls, args: tuple[Any, ...], kwargs: dict[str, Any], tainted: dict[int, str]) -> OverwriteProbe | None:
        """Snapshot the launch's tensor arguments (also those inside tuples, namedtuples and tensor
        descriptors) when one of them is tainted memory (not an input). Call after the argument
        check (:class:`LaunchArgumentPolicy`) passed them: no value's own code runs here."""
        tensors: list[torch.Tensor] = []
        nested = False
        for value in [*args, *kwargs.values()]:
            if type(value) in (torch.Tensor, torch.nn.Parameter):
                tensors.append(value)
            elif not _holds_no_memory(value):
                found = _nested_tensors(value)
                if found is None:
                    return None
                tensors.extend(found)
                nested = True  # the second run could not rebuild them: it would reach the real memory
        copied: dict[int, int] = {}
        for tensor in tensors:
            if tensor.layout != torch.strided:
                return None
            ptr = torch.Tensor.untyped_storage(tensor).data_ptr()
            if tainted.get(ptr, "an input") != "an input":
                copied.setdefault(ptr, torch.Tensor.element_size(tensor))
        if not copied:
            return None
        snapshots = {}
        for tensor in tensors:
            storage = torch.Tensor.untyped_storage(tensor)
            if storage.data_ptr() not in snapshots:
                snapshots[storage.data_ptr()] = (storage, storage.clone())
        probe = cls(args, kwargs, snapshots, copied)
        probe.tensors = tensors
        probe.second_run = not nested
        return probe

    def changed(self) -> list[int]:
        """The copied storages the launch changed (in any byte); compared once per launch."""
        if self._changed is None:
            self._changed = [
                ptr for ptr in self.copied if not _same_bytes(self.snapshots[ptr][0], self.snapshots[ptr][1])
            ]
        return list(self._changed)

    def overwritten(self, launch: Callable[[tuple[Any, ...], dict[str, Any]], Any]) -> list[int]:
        """The copied storages the launch overwrote entirely and independently; ``launch`` runs the
        kernel again on given arguments."""
        if not self.second_run:
            return []
        changed = self.changed()
        scratch: dict[int, Any] = {}
        for ptr, (_, before) in self.snapshots.items():
            copy = before.clone()
            if ptr in changed and not _shuffle(copy, self.copied[ptr]):
                changed.remove(ptr)  # all elements alike (or no whole elements): nothing to learn
            scratch[ptr] = copy
        if not changed:
            return []

        def rebuilt(value: Any) -> Any:
            if type(value) not in (torch.Tensor, torch.nn.Parameter):
                return value
            storage = scratch[torch.Tensor.untyped_storage(value).data_ptr()]
            return torch.empty(0, dtype=value.dtype, device=value.device).set_(
                storage, torch.Tensor.storage_offset(value), torch.Tensor.size(value), torch.Tensor.stride(value)
            )

        try:
            launch(tuple(rebuilt(a) for a in self.args), {k: rebuilt(v) for k, v in self.kwargs.items()})
        except Exception:  # noqa: BLE001 - the second run settles nothing; the memory stays tainted
            return []
        return [ptr for ptr in changed if _same_bytes(self.snapshots[ptr][0], scratch[ptr])]


def _storage_copies(tensor: torch.Tensor, source_bytes: torch.Tensor) -> bool:
    """Whether all of ``tensor``'s storage, read in its dtype, is a verbatim run of the source,
    when the tensor is a smaller view of it: a kernel given a one-element view writes wherever its
    pointer arithmetic takes it (red team of 2026-12-05, ``launder_tiny_view_argument``)."""
    storage = torch.Tensor.untyped_storage(tensor)
    size = torch.Tensor.element_size(tensor)
    if size <= 0 or storage.nbytes() < size:
        return False
    whole = torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(storage, 0, (storage.nbytes() // size,))
    if torch.Tensor.numel(whole) == torch.Tensor.numel(tensor):
        return False  # the view already spans it: searched as it is
    return copied_input_piece(whole, [source_bytes])


def _nested_tensors(value: Any, depth: int = 0) -> list[torch.Tensor] | None:
    """The tensors inside a tuple, namedtuple or tensor descriptor argument (read as a tuple and
    from the descriptor's ``__dict__``), or None for anything else that may hold memory."""
    kind = type(value)
    if kind in (torch.Tensor, torch.nn.Parameter):
        return [value]
    if _holds_no_memory(value):
        return []
    if depth >= 8:
        return None
    if issubclass(kind, tuple):
        found: list[torch.Tensor] = []
        for item in tuple.__iter__(value):
            inner = _nested_tensors(item, depth + 1)
            if inner is None:
                return None
            found.extend(inner)
        return found
    module = type.__dict__["__dict__"].__get__(kind, type).get("__module__")
    if type(module) is str and module.startswith("triton.tools.tensor_descriptor"):
        base = object.__getattribute__(value, "__dict__").get("base")
        return [base] if type(base) is torch.Tensor else None
    return None


def _holds_no_memory(value: Any) -> bool:
    """A launch argument that is a plain value, a Triton dtype, a ``tl.constexpr`` of a plain value
    or a Triton function (read without running any code of the value's)."""
    kind = type(value)
    if kind in (*_PLAIN, type(None), torch.dtype):
        return True
    module = type.__dict__["__dict__"].__get__(kind, type).get("__module__")
    if type(module) is not str:
        return False
    if module.startswith("triton.language"):  # tl.constexpr, tl.dtype
        try:
            state = object.__getattribute__(value, "__dict__")
        except AttributeError:
            return False
        return type(state.get("value")) in (*_PLAIN, type(None))
    return module.startswith("triton.runtime")  # @triton.jit functions handed over as constexprs


def _shuffle(storage: Any, itemsize: int) -> bool:
    """Put the elements of ``storage`` (``itemsize`` bytes each) in a random order, from a generator
    of its own; False when that changes no byte."""
    nbytes = storage.nbytes()
    if itemsize <= 0 or nbytes % itemsize or nbytes // itemsize < 2:
        return False
    rows = torch.tensor([], dtype=torch.uint8, device=storage.device).set_(storage).view(-1, itemsize)
    generator = torch.Generator(device=rows.device)
    generator.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    order = torch.randperm(rows.shape[0], generator=generator, device=rows.device)
    shuffled = rows[order]
    if torch.equal(shuffled, rows):
        return False
    rows.copy_(shuffled)
    return True


def _same_bytes(a: Any, b: Any) -> bool:
    """Whether two untyped storages hold the same bytes."""
    if a.nbytes() != b.nbytes():
        return False
    left = torch.tensor([], dtype=torch.uint8, device=a.device).set_(a)
    right = torch.tensor([], dtype=torch.uint8, device=b.device).set_(b)
    return bool(torch.equal(left, right))
