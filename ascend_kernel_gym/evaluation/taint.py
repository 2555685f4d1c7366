"""Where the data in a candidate's call came from: the recorder's taint (child only).

Storages of a call's inputs start out *tainted*; PyTorch's copies of tainted data are tainted in
turn, kernels that copy such data verbatim hand the taint on (``overwrite_probe``), and an
output holding tainted memory is PyTorch's work (``torch_fallback``, decided in the correctness
stage). Fills are remembered per view. Every copy of tainted data also leaves pieces of itself
(:mod:`.copy_samples`), looked for in the output whatever path the data took. In a task whose
reference only moves data, PyTorch may not rearrange or convert data at all
(:data:`MOVED_BY_PYTORCH`).

:class:`TaintTracking` is the part of :class:`.recorder.Recorder` that keeps this; the recorder
calls :meth:`TaintTracking.record_write` for every operator of the candidate's it dispatches.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

from typing import Any, NoReturn

import torch

from ascend_kernel_gym.evaluation.copy_samples import CopySamples
from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.input_copies import copied_input_piece, widened_from
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.sandbox_rules import DATA_TORCH_OPS, FILL_TORCH_OPS, REARRANGING_TORCH_OPS
from ascend_kernel_gym.evaluation.view_cover import View, covers_storage, spans_meet, view_of

#: the refusal of a PyTorch copy that rearranges, converts or copies part of a tensor in a task
#: that only moves data: PyTorch would do the task's whole work, also on data a kernel merely
#: encoded (red team of 2026-12-05, ``launder_encoded_torch_transpose``) or one element at a time
#: (``launder_elementwise_copies_transpose``)
MOVED_BY_PYTORCH = (
    "this task only moves data (its reference computes nothing), and PyTorch moved data inside ModelNew.forward "
    "({op}: a copy that rearranges, converts, broadcasts or reads or writes part of a tensor): that is the task's "
    "whole work; do the data movement in your Triton kernel (copying whole tensors is fine; to drop a padded "
    "buffer's padding, return the slice as a view)"
)


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors in ``value`` (a tensor, or tuples and lists of them), meta tensors left out."""
    if isinstance(value, torch.Tensor):
        return [value] if value.device.type != "meta" else []
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors_of(item)]
    return []


def storage_ptrs_of(value: Any) -> set[int]:
    """The storage pointers of the tensors in ``value``."""
    return {torch.Tensor.untyped_storage(t).data_ptr() for t in tensors_of(value)}


class TaintTracking:
    """The taint of one recorder (see the module docstring); :meth:`_init_taint` sets it up."""

    def _init_taint(self) -> None:
        #: (operator, storage pointer, the view it filled) for the filling operators during the
        #: current forward call
        self.writes: list[tuple[str, int, View]] = []
        #: storage pointer -> where its data came from (inputs, Python data) for this forward call
        self.tainted: dict[int, str] = {}
        #: storage pointer -> the byte spans that hold the tainted data, where that is not the whole
        #: storage (a staging copy in one part of an allocation whose other part a kernel writes)
        self.taint_spans: dict[int, list[tuple[int, int]]] = {}
        #: tainted storages holding nothing but plain copies of inputs (whole, same dtype, same
        #: arrangement): a kernel that changes such memory in place computed from it (``out =
        #: residual.clone()`` before a kernel adds a product into it), see :meth:`reworked`
        self.plain: set[int] = set()
        #: the bytes of the current forward call's dense inputs (uint8 views of their memory)
        self.input_bytes: list[torch.Tensor] = []
        #: dtypes a kernel's copy of an input could be converted back to (see ``conversion_dtypes``)
        self.input_dtypes: tuple[torch.dtype, ...] = ()
        #: the current call's pieces of PyTorch's copies (``copy_samples``)
        self.samples = CopySamples()
        #: (storage pointer, view) of the current forward call's tensor inputs, exactly as passed
        self.input_views: set[tuple[int, View]] = set()
        #: the task only moves data (its reference computes nothing, :func:`.recorder.moves_data_only`):
        #: PyTorch may not rearrange or convert data in it
        self.moving_task = False

    def refuse(self, refusal: StageError) -> NoReturn:
        """Raise ``refusal`` (the recorder keeps the first one)."""
        raise refusal

    def taint_of(self, value: Any) -> str | None:
        """Where the data of ``value``'s storage came from, if it is tainted."""
        return next((self.tainted[ptr] for ptr in storage_ptrs_of(value) if ptr in self.tainted), None)

    def tensor_taint(self, tensor: torch.Tensor) -> str | None:
        """The taint of the bytes ``tensor`` reaches (None: none of them is tainted)."""
        if tensor.layout != torch.strided:
            return None
        ptr = torch.Tensor.untyped_storage(tensor).data_ptr()
        taint = self.tainted.get(ptr)
        spans = self.taint_spans.get(ptr)
        if taint is None or spans is None:
            return taint
        reach = view_of(tensor).byte_span()
        return taint if any(spans_meet(span, reach) for span in spans) else None

    def carry_taint(self, value: Any, taint: str) -> None:
        """``value``'s storage now holds data tainted as ``taint`` (an operator moved it there)."""
        for ptr in storage_ptrs_of(value):
            self.taint(ptr, taint)

    def taint(self, ptr: int, label: str, span: tuple[int, int] | None = None) -> None:
        """Storage ``ptr`` holds tainted data: in the byte ``span`` of it, or (None) anywhere."""
        self.plain.discard(ptr)
        whole = ptr in self.tainted and ptr not in self.taint_spans
        self.tainted[ptr] = label
        if span is None or whole:
            self.taint_spans.pop(ptr, None)
        else:
            self.taint_spans.setdefault(ptr, []).append(span)

    def record_fill(self, name: str, tensor: torch.Tensor) -> None:
        """``tensor``'s elements were set to a constant (or made fresh in place): remembered with
        the view, and the storage's taint dropped when the view covers every byte of it (counted
        by the view's own geometry: an overlapping or strided view writes fewer bytes than it has
        elements)."""
        if tensor.layout != torch.strided:
            return
        ptr = torch.Tensor.untyped_storage(tensor).data_ptr()
        self.writes.append((name, ptr, view_of(tensor)))
        if covers_storage(tensor):
            self.untaint(ptr)

    def untaint(self, ptr: int) -> None:
        self.tainted.pop(ptr, None)
        self.taint_spans.pop(ptr, None)
        self.plain.discard(ptr)

    def reworked(self, ptr: int) -> bool:
        """Whether a kernel that changed storage ``ptr`` in place made it its own: memory holding
        only plain copies of inputs (a clone moves nothing: what a kernel writes there it computed,
        as from the input itself). Copies that rearranged or converted stay PyTorch's work until
        overwritten independently of what they held (``OverwriteProbe.overwritten``)."""
        return ptr in self.plain

    def forget(self, out: Any) -> None:
        """Drop the taint of storages an allocation just returned (new memory, maybe at an old address)."""
        for tensor in tensors_of(out):
            if tensor.layout == torch.strided:  # sparse and other layouts have no single storage
                self.untaint(torch.Tensor.untyped_storage(tensor).data_ptr())

    def record_write(self, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        """Track data PyTorch moves during forward.

        Storages of the inputs are *tainted*; a data-carrying operator (copy, clone, cast, cat, ...)
        whose source is tainted taints what it produces or writes, and ``torch.tensor(data)``
        (``lift_fresh``) always taints (the data was computed in Python). Memory a kernel writes
        is never tainted, so casting or concatenating kernel results is fine, while an output
        that holds a PyTorch copy of the inputs is not. One exception: a copy that rearranges or
        converts memory holding a verbatim piece of an input (``copied_input_piece``) is tainted,
        so a kernel that only copies its input cannot hand the task's data movement (a transpose,
        a permute, a concatenation) to PyTorch. Fills are remembered in ``writes`` with the view
        they filled, and a copy's taint with the bytes it wrote (``taint_spans``): what decides is
        what lands on the output's own elements, not on the rest of its allocation.
        """
        name = op.partition(".")[2]
        if name not in DATA_TORCH_OPS and name not in FILL_TORCH_OPS:
            return
        if "out" in kwargs:
            targets, sources = kwargs["out"], [*args, *(v for k, v in kwargs.items() if k != "out")]
        elif name.endswith("_") and args:
            targets, sources = args[0], [*args[1:], *kwargs.values()]
        else:
            targets, sources = out, [*args, *kwargs.values()]
        if name in FILL_TORCH_OPS:
            for tensor in tensors_of(targets):
                self.record_fill(name, tensor)
            if not tensors_of(sources):
                return
            # ``fill_`` given a 0-d tensor copies that element into every element of its target: a
            # copy like any other (red team of 2026-12-05, one input element moved per fill)
        rearranging = self._rearranges(name, sources, targets)
        converting = self._converts(sources, targets)
        if self.moving_task and (rearranging or converting) and tensors_of(sources):
            # the input's data as much as a kernel's: in pieces too small to sample, then encoded and
            # decoded by kernels, PyTorch's moving of the input would leave no trace in the output
            self.refuse(StageError(ErrorType.TORCH_FALLBACK, MOVED_BY_PYTORCH.format(op=f"aten.{name}")))
        source_taint = "Python data" if name.startswith("lift_fresh") and not _initial_value(out) else None
        for tensor in tensors_of(sources):
            found = self.tensor_taint(tensor)
            if found is not None:
                source_taint = found
                break
        if source_taint is None and (rearranging or converting):
            source_taint = self._copied_input(sources, rearranging)
        if source_taint is None:
            return
        # Only rearranged data leaves pieces: a conversion alone (an upcast before an elementwise
        # kernel that is the identity on part of the values, as relu on positive inputs) is honest
        # code whose output may hold long runs of it, and laundering a conversion gains a task
        # nothing but a conversion, which the data-movement rule refuses.
        plain = not rearranging and not converting and all(self._plain_source(t) for t in tensors_of(sources))
        for tensor in tensors_of(targets):
            if tensor.layout == torch.strided:
                ptr = torch.Tensor.untyped_storage(tensor).data_ptr()
                fresh = ptr not in self.tainted
                self.taint(ptr, f"aten.{name} of {source_taint}", view_of(tensor).byte_span())
                if plain and fresh:
                    self.plain.add(ptr)
                if rearranging:
                    self.samples.add(tensor, f"aten.{name} of {source_taint}")

    def _plain_source(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` is an input as passed, unwritten by PyTorch in this call, or memory
        holding only plain copies of inputs. An input PyTorch copied something into is not: a
        transpose written into the input's own storage, then cloned, was no plain copy (red team
        of 2026-12-05, night)."""
        if type(tensor) is not torch.Tensor or tensor.layout != torch.strided:
            return False
        ptr = torch.Tensor.untyped_storage(tensor).data_ptr()
        if ptr in self.plain:
            return True
        return self._input_as_passed(tensor) and self.tainted.get(ptr) == "an input"

    def _input_as_passed(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` is one of the call's inputs, the very view that was passed."""
        return (torch.Tensor.untyped_storage(tensor).data_ptr(), view_of(tensor)) in self.input_views

    def _copied_input(self, sources: list[Any], rearranging: bool) -> str | None:
        """Whether a copy that rearranges or converts (the caller decides which) reads memory holding a
        verbatim piece of an input.

        Rearranging: see :meth:`_rearranges` (a strided view, ``cat`` / ``stack`` / padding, a
        broadcast, part of an allocation); converting: another dtype on the target. A copy of a
        whole allocation into a whole allocation, of the same dtype, is left alone, so an honest
        kernel whose result happens to equal an input is never refused for a clone. A
        rearranging copy also counts when its source, converted back to an input's dtype, holds
        such a piece: a kernel that only widened the input (fp16 to fp32, or its bits into int32)
        before PyTorch's transposing cast changed no value.
        """
        tensors = [t for t in tensors_of(sources) if type(t) is torch.Tensor]
        if any(copied_input_piece(t, self.input_bytes) for t in tensors):
            return "an unchanged copy of an input"
        if rearranging and any(
            copied_input_piece(t, self.input_bytes, as_dtypes=widened_from(t.dtype, self.input_dtypes)) for t in tensors
        ):
            return "a copy of an input in another dtype"
        return None

    def _rearranges(self, name: str, sources: list[Any], targets: Any) -> bool:
        """A copy that rearranges: ``cat`` / ``stack`` / padding, a strided view on either side, a
        source broadcast to a target of more elements (``copy_`` from a row, ``fill_`` from a 0-d
        tensor: both sides contiguous, the data repeated all the same), or a copy that reads or
        writes part of an allocation (:meth:`_partial`)."""
        tensors = [t for t in tensors_of(sources) if type(t) is torch.Tensor]
        if name in REARRANGING_TORCH_OPS:
            return True
        ends = tensors_of(targets)
        if not all(type(t) is torch.Tensor and torch.Tensor.is_contiguous(t) for t in [*tensors, *ends]):
            return True
        if any(torch.Tensor.numel(o) != torch.Tensor.numel(t) for o in ends for t in tensors):
            return True
        return self._partial(tensors, ends)

    @staticmethod
    def _converts(sources: list[Any], targets: Any) -> bool:
        """A copy that converts: another dtype on the target, or a conjugate or negative view on
        either side (the copy changes values: ``x.conj()`` copied is not ``x``)."""
        tensors = [t for t in tensors_of(sources) if type(t) is torch.Tensor]
        ends = tensors_of(targets)
        if any(torch.Tensor.is_conj(t) or torch.Tensor.is_neg(t) for t in [*tensors, *ends]):
            return True
        return any(o.dtype != t.dtype for o in ends for t in tensors)

    def _partial(self, sources: list[torch.Tensor], targets: list[torch.Tensor]) -> bool:
        """Whether a copy reads or writes part of an allocation (other than an input as passed).

        Contiguous copies of single elements or rows, each to another place, rearrange as surely
        as one strided copy or a ``cat`` does (red team of 2026-12-05: a transpose in one 0-d
        ``copy_`` per element, rows repeated one ``copy_`` each). Copies of whole allocations (and
        of the call's inputs) move nothing.
        """
        for tensor in [*sources, *targets]:
            if type(tensor) is not torch.Tensor or tensor.layout != torch.strided:
                return True
            if torch.Tensor.numel(tensor) == 0 or self._input_as_passed(tensor):
                continue
            if not covers_storage(tensor):
                return True
        return False


def _initial_value(value: Any) -> bool:
    """Whether ``value`` (what ``torch.tensor(data)`` made) holds one value an accumulator starts
    from, in every element: 0, 1, an infinity or its dtype's extreme (``torch.tensor([0.0])``
    before a kernel adds into it is a fill, not an answer computed in Python)."""
    if not isinstance(value, torch.Tensor) or torch.Tensor.numel(value) == 0 or value.dtype == torch.bool:
        return False
    if value.dtype.is_complex:
        return False
    info = torch.finfo(value.dtype) if value.dtype.is_floating_point else torch.iinfo(value.dtype)
    first = torch.Tensor.reshape(value, (-1,))[0]
    if not bool(torch.all(torch.eq(value, first))):
        return False
    start = float(first)
    return start in (0.0, 1.0, float("inf"), float("-inf"), float(info.min), float(info.max))
