"""Proof that Triton did the work: records kernel launches and PyTorch operators (child only).

Launches are recorded by wrapping ``JITFunction.run`` (compiled backends) and
``InterpretedFunction.run`` (the CPU interpreter) at class level, before the candidate is
imported; only kernels whose Python function lives in the candidate's module are counted.
A callable grid is evaluated by the wrapper, outside the operator blind spot, so PyTorch work
hidden in a grid lambda is still seen.

Operators are recorded with a ``TorchDispatchMode`` that is active only around the candidate's
``forward``. Triton's interpreter copies kernel arguments with PyTorch operators
(``GridExecutor._init_args_hst`` / ``_restore_args_dev``) and the autotuner benchmarks
configurations with PyTorch operators; recording is suspended inside exactly those harness
functions and nowhere else (the kernel body itself stays visible in the interpreter). Candidate
code must not run there: kernel arguments that imitate tensors and autotune hooks that are not
Triton's are refused before those functions are entered.

Imports torch and triton: use only in evaluator children.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import torch
import triton
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_kernel_gym.evaluation.copy_samples import CopySamples
from ascend_kernel_gym.evaluation.errors import StageError, find_out_of_bounds, harness_check_failure
from ascend_kernel_gym.evaluation.input_copies import conversion_dtypes, tensor_bytes
from ascend_kernel_gym.evaluation.launch_args import (
    MAX_RECORD_STRING,
    LaunchArgumentPolicy,
    cut_string,
    named_arguments,
    type_name,
)
from ascend_kernel_gym.evaluation.overwrite_probe import OverwriteProbe
from ascend_kernel_gym.evaluation.result import ErrorType, LaunchRecord
from ascend_kernel_gym.evaluation.sandbox_rules import (
    ALLOWED_TORCH_OPS,
    PRE_RUN_HOOK_REFUSED,
    UNINITIALISED_TORCH_OPS,
)
from ascend_kernel_gym.evaluation.taint import TaintTracking, storage_ptrs_of, tensors_of
from ascend_kernel_gym.evaluation.view_cover import View, view_of

MAX_LAUNCH_RECORDS = 64
#: launches per forward call whose overwrite of a PyTorch copy is checked by a second run (see
#: ``OverwriteProbe``; past them such memory stays tainted)
MAX_OVERWRITE_PROBES = 8
#: Tensor methods that run a Python function per element, outside the dispatcher
PYTHON_MAP_METHODS = ("map_", "map2_", "apply_")
#: the operator name under which printing a tensor is recorded
PRINT_OP = "print (tensor values read into Python text)"


_PLAIN = (bool, int, float, str)
#: how many constexprs one launch record keeps
MAX_RECORD_CONSTEXPRS = 32
#: operators that move a tensor's data to new memory without a dispatched copy (the taint goes along)
STORAGE_MOVING_TORCH_OPS = frozenset({"resize_"})
#: this package's directory: frames in it are the harness's own
_HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _jsonable(value: Any) -> Any:
    """A JSON value for a launch record, without running any code of the value's own (no
    ``repr``, no attribute lookups that a class of the candidate's could intercept)."""
    kind = type(value)
    if kind is str:
        return cut_string(value)
    if kind in _PLAIN or value is None:
        return value
    if kind is torch.dtype:
        return str(value).replace("torch.", "")
    if str(getattr(kind, "__module__", "")).split(".")[0] == "triton":
        try:
            state = object.__getattribute__(value, "__dict__")
        except AttributeError:
            state = {}
        for field in ("value", "name"):  # tl.constexpr(v), tl.dtype
            if type(state.get(field)) in _PLAIN:
                return _jsonable(state[field])
    return f"<{type_name(kind)}>"


#: modules whose functions may run while the autotuner benchmarks (recording suspended)
_TRUSTED_HOOK_MODULES = ("triton", "ascend_kernel_gym")
#: where the source of a pre-run hook may live: Triton's package and this one
_TRUSTED_HOOK_DIRS = (os.path.dirname(os.path.abspath(triton.__file__)) + os.sep, _HARNESS_DIR)


def _refuse_foreign_hooks(autotuner: Any, config: Any) -> None:
    """The autotuner's hooks and benchmark function run with recording suspended: any that is not
    Triton's (or the harness's) own is refused (the static stage refuses the spellings it sees)."""
    hooks = [getattr(config, "pre_hook", None)]
    state = getattr(autotuner, "__dict__", {})
    hooks += [state.get(name) for name in ("pre_hook", "post_hook", "_do_bench", "do_bench")]
    for hook in hooks:
        if hook is None:
            continue
        module = str(getattr(hook, "__module__", None) or "")
        if module.split(".")[0] not in _TRUSTED_HOOK_MODULES:
            raise StageError(
                ErrorType.FORBIDDEN,
                "an autotune hook or benchmark function of yours would run while Triton benchmarks "
                "configurations, where the operator recorder cannot follow; autotune over configs and key only",
            )


def _trusted_pre_run_hooks(kernel: Any) -> bool:
    """Whether every pre-run hook of ``kernel`` is a plain function of Triton's (or the harness's)
    own source. Hooks run inside Triton's launch, also in the overwrite probe's unrecorded second
    run, and a chain of C callables (``partial``, ``map``) leaves no frame of the candidate's to
    tell them apart (``__module__`` would not do: ``functools.wraps`` copies it)."""
    hooks = getattr(kernel, "__dict__", {}).get("pre_run_hooks") or []
    for hook in hooks if type(hooks) is list else [hooks]:
        code = hook.__code__ if type(hook) is types.FunctionType else None
        if code is None or not code.co_filename.startswith(_TRUSTED_HOOK_DIRS):
            return False
    return True


def _is_constexpr_annotation(annotation: Any) -> bool:
    if annotation is inspect.Parameter.empty:
        return False
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return getattr(annotation, "__name__", "") == "constexpr"


class Recorder(TaintTracking):
    """Records the candidate's kernel launches and the PyTorch operators it runs.

    Args:
        candidate_module: ``__name__`` of the candidate's module; only kernels defined there count.
    """

    def __init__(self, candidate_module: str, candidate_file: str = "") -> None:
        self.candidate_module = candidate_module
        #: the candidate's source path (its code objects' ``co_filename``): operators its code
        #: issues while the harness has recording suspended are still the candidate's
        self.candidate_file = candidate_file
        self.recording = False
        self._suspended = 0
        self._bench_depth = 0
        self.launches: list[LaunchRecord] = []
        self.launch_count = 0
        #: allocations filled by :meth:`poison` so far
        self.poisoned = 0
        self.ops: Counter[str] = Counter()
        self._init_taint()
        #: called before every Triton launch (any module) when set: the timing stage uses it to
        #: see launches on a stream other than the timing stream
        self.stream_probe: Callable[[], None] | None = None
        #: the most registers any compiled kernel launched so far spilled to local memory
        self.max_spills = 0
        #: called with the stream handle of every compiled launch when set (same purpose)
        self.stream_handle_probe: Callable[[Any], None] | None = None
        #: the first refused kernel argument: raised where it was seen, and kept so that a
        #: candidate that swallows the exception (a ``with`` block) still ends as a hack
        self.refusal: StageError | None = None
        #: errors raised by the candidate's own kernel launches (recorded calls only)
        self.launch_errors: list[str] = []
        #: the first failure of the harness's own checks inside a recorded call (out of device
        #: memory while searching a copy, say): the call ends as the harness's error whether or
        #: not the candidate's code caught it, so a check that failed never leaves a copy unchecked
        self.check_failure: StageError | None = None
        #: what the launch records left out (cut strings), for the result's warnings
        self.notes: list[str] = []
        self.arguments: LaunchArgumentPolicy | None = None
        self._installed = False
        #: overwrite probes run in the current forward call
        self._probes = 0

    # --- patches --------------------------------------------------------------------------------
    def install(self) -> None:
        """Patch Triton's launch paths. Call once, before the candidate is imported."""
        if self._installed:
            return
        self._installed = True
        from triton.runtime.jit import JITFunction

        self.arguments = LaunchArgumentPolicy()  # before the candidate's module defines any class
        self._wrap_run(JITFunction)
        try:
            from triton.runtime.interpreter import GridExecutor, InterpretedFunction
        except ImportError:  # pragma: no cover - every supported triton has the interpreter
            pass
        else:
            self._wrap_run(InterpretedFunction)
            if hasattr(GridExecutor, "_init_args_hst"):
                GridExecutor._init_args_hst = self._suspending(GridExecutor._init_args_hst, check_args=True)
            if hasattr(GridExecutor, "_restore_args_dev"):
                GridExecutor._restore_args_dev = self._suspending(GridExecutor._restore_args_dev)
        try:
            from triton.runtime.autotuner import Autotuner, Heuristics
        except ImportError:  # pragma: no cover
            pass
        else:
            if hasattr(Autotuner, "_bench"):
                Autotuner._bench = self._benchmarking(Autotuner._bench)
            self._record_heuristics(Heuristics)
        self._record_printing()
        self._record_python_maps()
        try:
            from triton.compiler.compiler import CompiledKernel
        except ImportError:  # pragma: no cover
            pass
        else:
            # Every compiled launch passes here with its stream handle, including launches of a
            # CompiledKernel obtained with kernel.warmup(...) that bypass JITFunction.run.
            if hasattr(CompiledKernel, "launch_metadata"):
                CompiledKernel.launch_metadata = self._probing_stream_handles(CompiledKernel.launch_metadata)

    def check_arguments(self, kernel: Any, named: list[tuple[str, Any]]) -> None:
        """Raise (and keep) the refusal of a kernel argument that is not exactly a tensor or a plain value."""
        if self.arguments is None:
            return
        refusal = self.arguments.check(kernel if type(kernel) is str else "?", named)
        if refusal is not None:
            self.refuse(refusal)

    def refuse(self, refusal: StageError) -> NoReturn:
        """Raise ``refusal``, and keep the first one: a candidate that swallows the exception (a
        ``with`` block whose ``__exit__`` returns true) still ends as that refusal, a hack."""
        if self.refusal is None:
            self.refusal = refusal
        raise StageError(refusal.error_type, refusal.message, hack=refusal.hack)

    def _suspending(self, method: Any, check_args: bool = False) -> Any:
        recorder = self

        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if check_args and len(args) >= 3:  # (executor, args_dev, kwargs): before anything runs unrecorded
                executor = args[0]
                names = list(getattr(executor, "arg_names", None) or [])
                kernel = getattr(getattr(executor, "fn", None), "__name__", "?")
                recorder.check_arguments(kernel, named_arguments(names, args[1], args[2]))
            recorder._suspended += 1
            try:
                return method(*args, **kwargs)
            finally:
                recorder._suspended -= 1

        return wrapper

    def _recorded_callback(self, fn: Any) -> Any:
        """``fn`` (the candidate's code) with recording back on while it runs, also where the
        autotuner's benchmarking has suspended it."""
        recorder = self

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            saved = recorder._suspended, recorder._bench_depth
            recorder._suspended = recorder._bench_depth = 0
            try:
                return fn(*args, **kwargs)
            finally:
                recorder._suspended, recorder._bench_depth = saved

        return call

    def _record_heuristics(self, heuristics_cls: type) -> None:
        """``@triton.heuristics`` functions are the candidate's code: recorded wherever they run
        (under ``@triton.autotune`` they run inside its benchmarking)."""
        original = heuristics_cls.__init__
        recorder = self

        @functools.wraps(original)
        def init(heur_self: Any, fn: Any, arg_names: Any, values: Any, *args: Any, **kwargs: Any) -> None:
            values = {k: recorder._recorded_callback(v) for k, v in dict(values).items()}
            original(heur_self, fn, arg_names, values, *args, **kwargs)

        heuristics_cls.__init__ = init

    def _record_python_maps(self) -> None:
        """``Tensor.map_`` / ``map2_`` / ``apply_`` call a Python function per element without the
        dispatcher: counted as an operator (the static stage refuses the spellings it sees)."""
        recorder = self
        for name in PYTHON_MAP_METHODS:
            original = getattr(torch.Tensor, name, None)
            if original is None:
                continue

            def mapped(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
                recorder.record_op(f"Tensor.{_name} (a Python function per element)")
                return _original(*args, **kwargs)

            functools.update_wrapper(mapped, original)
            setattr(torch.Tensor, name, mapped)

    def _record_printing(self) -> None:
        """Printing a tensor (``repr``, ``str``, f-strings) reads its values into Python with the
        dispatch mode switched off: counted as an operator, like ``.item()``."""
        import torch._tensor_str as tensor_str

        original = tensor_str._str
        recorder = self

        @functools.wraps(original)
        def printed(*args: Any, **kwargs: Any) -> Any:
            recorder.record_op(PRINT_OP)
            return original(*args, **kwargs)

        tensor_str._str = printed

    def _probing_stream_handles(self, method: Any) -> Any:
        recorder = self

        @functools.wraps(method)
        def launch_metadata(kernel: Any, grid: Any, stream: Any, *args: Any) -> Any:
            # Also a compiled kernel launched directly (``kernel.warmup(...)[grid](...)``), past ``run``.
            recorder.check_arguments(getattr(kernel, "name", "?"), named_arguments([], args, {}))
            if recorder.stream_handle_probe is not None:
                recorder.stream_handle_probe(stream)
            spills = getattr(kernel, "n_spills", None)  # set once the kernel was loaded
            if isinstance(spills, int) and spills > recorder.max_spills:
                recorder.max_spills = spills
            return method(kernel, grid, stream, *args)

        return launch_metadata

    def _benchmarking(self, method: Any) -> Any:
        recorder = self

        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            # (autotuner, *kernel args, config=..., **kernel kwargs): its hooks (``reset_to_zero``
            # zeroes arguments) and the launches run with recording suspended
            autotuner = args[0] if args else None
            names = list(getattr(autotuner, "arg_names", None) or [])
            kernel = getattr(getattr(autotuner, "base_fn", None), "__name__", "?")
            meta = {k: v for k, v in kwargs.items() if k not in ("config", "grid", "warmup")}  # not launch options
            recorder.check_arguments(kernel, named_arguments(names, args[1:], meta))
            _refuse_foreign_hooks(autotuner, kwargs.get("config"))
            if recorder.arguments is not None:  # IntEnum members as ints, also in the hooks' view
                plain_args, kwargs = recorder.arguments.plain_arguments(args[1:], kwargs)
                args = (autotuner, *plain_args)
                nargs = getattr(autotuner, "nargs", None)
                if type(nargs) is dict:
                    autotuner.nargs = {k: recorder.arguments.plain(v) for k, v in nargs.items()}
            recorder._suspended += 1
            recorder._bench_depth += 1
            try:
                return method(*args, **kwargs)
            finally:
                recorder._suspended -= 1
                recorder._bench_depth -= 1

        return wrapper

    def _wrap_run(self, cls: type) -> None:
        original = cls.run
        recorder = self

        @functools.wraps(original)
        def run(fn_self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not _trusted_pre_run_hooks(fn_self):
                recorder.refuse(StageError(ErrorType.FORBIDDEN, PRE_RUN_HOOK_REFUSED))
            names = list(getattr(fn_self, "arg_names", None) or [])
            recorder.check_arguments(
                getattr(getattr(fn_self, "fn", None), "__name__", "?"), named_arguments(names, args, kwargs)
            )
            if recorder.arguments is not None:
                args, kwargs = recorder.arguments.plain_arguments(args, kwargs)
            if recorder.stream_probe is not None and not warmup:
                recorder.stream_probe()
            if recorder.recording and recorder._bench_depth:
                # A configuration benchmarked by the autotuner: Triton's timing around it stays
                # unrecorded, the launch itself (grid, compile-time functions, the interpreted
                # kernel body) is the candidate's code and is recorded, though not counted.
                return recorder._recorded_callback(original)(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            if warmup or not recorder.recording:
                return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            python_fn = getattr(fn_self, "fn", None)
            own = getattr(python_fn, "__module__", None) == recorder.candidate_module
            if not own:
                return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            bound = recorder._bind(python_fn, args, kwargs)
            if callable(grid):
                grid = grid(bound)  # evaluated while operators are still being recorded
            grid_tuple = tuple(int(g) for g in grid) if isinstance(grid, (tuple, list)) else (int(grid),)
            recorder._suspended += 1  # the record's own reprs of argument values are the harness's
            try:
                recorder._record_launch(python_fn, bound, grid_tuple, kwargs)
                with recorder.checking("snapshotting a kernel's arguments"):
                    probe = recorder._overwrite_probe(args, kwargs)
            finally:
                recorder._suspended -= 1
            try:
                result = original(fn_self, *args, grid=grid_tuple, warmup=warmup, **kwargs)
            except BaseException as exc:
                # Kept: a candidate that swallows it (a ``with`` block whose ``__exit__`` returns
                # true) learnt something from inside the kernel (an index in an IndexError's text,
                # a failed tl.assume as one bit), see :meth:`swallowed_launch_error`. An access out
                # of bounds has its own record (the memory check's, ``out_of_bounds``).
                if find_out_of_bounds(exc) is None:
                    recorder.launch_errors.append(f"{type(exc).__name__} in kernel `{python_fn.__name__}`")
                raise
            if probe is not None:
                recorder._suspended += 1
                try:
                    with recorder.checking("checking what a kernel wrote over PyTorch's copies"):
                        overwritten = probe.overwritten(
                            lambda a, k: original(fn_self, *a, grid=grid_tuple, warmup=False, **k)
                        )
                        copies = probe.kernel_copies(recorder.input_bytes, recorder.tainted)
                        reworked = [ptr for ptr in probe.changed() if recorder.reworked(ptr)]
                finally:
                    recorder._suspended -= 1
                for ptr in {*overwritten, *reworked}:
                    recorder.untaint(ptr)
                    recorder.writes = [w for w in recorder.writes if w[1] != ptr]
                for ptr, source in copies.items():
                    recorder.taint(ptr, f"a kernel's copy of {source}")
            return result

        cls.run = run

    def _overwrite_probe(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> OverwriteProbe | None:
        """A probe of this launch when one of its arguments is memory PyTorch copied data into (its
        second run only for the first ``MAX_OVERWRITE_PROBES`` of a call; the copy check always)."""
        probe = OverwriteProbe.prepare(args, kwargs, self.tainted)
        if probe is not None:
            probe.second_run = self._probes < MAX_OVERWRITE_PROBES
            self._probes += int(probe.second_run)
        return probe

    @staticmethod
    def _bind(python_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        signature = inspect.signature(python_fn)
        params = signature.parameters
        known = {k: v for k, v in kwargs.items() if k in params}
        try:
            bound = signature.bind_partial(*args, **known)
            bound.apply_defaults()
            values = dict(bound.arguments)
        except TypeError:
            values = dict(zip(params, args, strict=False))
            values.update(known)
        return values

    def _record_launch(
        self, python_fn: Any, bound: dict[str, Any], grid: tuple[int, ...], kwargs: dict[str, Any]
    ) -> None:
        self.launch_count += 1
        if len(self.launches) >= MAX_LAUNCH_RECORDS:
            return
        params = inspect.signature(python_fn).parameters
        constexprs = {
            name: _jsonable(bound[name])
            for name, param in params.items()
            if name in bound and _is_constexpr_annotation(param.annotation)
        }
        cut = [name for name, value in constexprs.items() if type(value) is str and value.endswith(" characters cut]")]
        if len(constexprs) > MAX_RECORD_CONSTEXPRS:
            cut.append(f"{len(constexprs) - MAX_RECORD_CONSTEXPRS} more constexprs")
            constexprs = dict(list(constexprs.items())[:MAX_RECORD_CONSTEXPRS])
        for name in cut:
            note = (
                f"launch records of kernel `{python_fn.__name__}`: {name} cut (a record keeps "
                f"{MAX_RECORD_STRING} characters of a string and {MAX_RECORD_CONSTEXPRS} constexprs)"
            )
            if note not in self.notes and len(self.notes) < 8:
                self.notes.append(note)
        tensor_args = [
            [list(value.shape), str(value.dtype).replace("torch.", "")]
            for value in bound.values()
            if isinstance(value, torch.Tensor)
        ]
        num_warps = kwargs.get("num_warps")
        num_stages = kwargs.get("num_stages")
        self.launches.append(
            LaunchRecord(
                kernel=python_fn.__name__,
                grid=list(grid),
                constexprs=constexprs,
                num_warps=int(num_warps) if isinstance(num_warps, int) else None,
                num_stages=int(num_stages) if isinstance(num_stages, int) else None,
                tensor_args=tensor_args,
            )
        )

    # --- recording ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def recording_forward(self, inputs: Any = ()) -> Iterator[_CallStats]:
        """Record launches and operators for one call of the candidate's forward.

        Args:
            inputs: the call's arguments; their storages start out *tainted* (see ``record_write``).
        """
        stats = _CallStats(self.launch_count, Counter(self.ops))
        mode = _OpRecordingMode(self)
        self.writes = []
        self._probes = 0
        self.tainted = {ptr: "an input" for ptr in storage_ptrs_of(inputs)}
        self.taint_spans = {}
        self.plain = set()
        self.samples = stats.samples
        self.input_bytes = [tensor_bytes(t) for t in tensors_of(inputs) if torch.Tensor.is_contiguous(t)]
        self.input_dtypes = conversion_dtypes(tensors_of(inputs))
        self.input_views = {
            (torch.Tensor.untyped_storage(t).data_ptr(), view_of(t))
            for t in tensors_of(inputs)
            if t.layout == torch.strided
        }
        self.recording = True
        # A collection could start inside the mode's own handler, where PyTorch has the mode off,
        # and run a finaliser of the candidate's there unseen: the collector stays off meanwhile.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with mode:
                yield stats
        finally:
            if collecting:
                gc.enable()
            self.recording = False
            stats.launches = self.launch_count - stats.launches_before
            stats.ops = self.ops - stats.ops_before
            stats.writes = list(self.writes)
            stats.tainted = dict(self.tainted)
            stats.taint_spans = {ptr: list(spans) for ptr, spans in self.taint_spans.items()}
            stats.input_bytes = self.input_bytes
            self.input_bytes = []
            self.samples = CopySamples()
            self.input_dtypes = ()
            self.input_views = set()

    @contextlib.contextmanager
    def checking(self, what: str) -> Iterator[None]:
        """Run one of the harness's checks; an exception of its own (not a refusal) is kept in
        :attr:`check_failure` before it goes on up through the candidate's code."""
        try:
            yield
        except StageError:
            raise
        except Exception as exc:
            if self.check_failure is None:
                self.check_failure = harness_check_failure(exc, what)
            raise

    def swallowed_launch_error(self, before: int) -> StageError | None:
        """The refusal for a call of ``forward`` that returned although one of its kernel launches or
        one of its PyTorch operators raised (errors recorded since ``before``): the candidate's code
        caught the error, and an error carries what the kernel or the operator saw out of it (its
        values, bit by bit, or in its message), or left the operator's work done. Honest code cannot
        catch errors (the static stage refuses ``try``), so this is a hack."""
        if len(self.launch_errors) <= before:
            return None
        return StageError(
            ErrorType.FORBIDDEN,
            f"{self.launch_errors[before]} raised and your code went on: catching the errors of your kernels or "
            "of PyTorch operators (with a context manager whose __exit__ returns true) is not allowed",
        )

    def active(self) -> bool:
        return self.recording and not self._suspended

    def record_op(self, name: str) -> None:
        if self.recording and not self._suspended:
            self.ops[name] += 1

    def counts(self) -> bool:
        """Whether the operator being dispatched is the candidate's: recording and not suspended, or
        suspended (Triton's argument copies, the overwrite probe's second run, the record's reprs)
        but called by the candidate's code, which Triton or the harness may run in such a window
        (a ``triton.constexpr_function``, a method a tensor's instance attribute hides, a finaliser)."""
        if not self.recording:
            return False
        if not self._suspended:
            return True
        return bool(self.candidate_file) and self._called_by_candidate()

    def _called_by_candidate(self) -> bool:
        """Whether the innermost frame that is either the candidate's or the harness's (the operator
        handler's own frames left out) is the candidate's."""
        frame = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if code.co_filename == self.candidate_file:
                return True
            if code.co_filename.startswith(_HARNESS_DIR) and not (
                code in _HANDLER_CODES or code.co_name in _MODE_HANDLERS
            ):
                return False
            frame = frame.f_back
        return False

    def poison(self, out: Any) -> None:
        """Fill memory fresh from ``torch.empty*`` in a recorded call (see ``UNINITIALISED_TORCH_OPS``).

        Floating and complex tensors get NaN; integer and bool tensors get alternating extreme
        values, so an unwritten element also differs between the two calls on the same inputs.
        Runs inside the dispatch mode, so the fill itself is not recorded as the candidate's.
        """
        if not isinstance(out, torch.Tensor) or out.device.type == "meta" or torch.Tensor.numel(out) == 0:
            return
        self.poisoned += 1
        high = self.poisoned % 2 == 1
        try:
            if out.dtype.is_floating_point or out.dtype.is_complex:
                out.fill_(float("nan"))
            elif out.dtype == torch.bool:
                out.fill_(high)
            else:
                info = torch.iinfo(out.dtype)
                out.fill_(info.max if high else info.min)
        except (RuntimeError, TypeError):  # overlapping strides, exotic dtypes: left as they are
            pass

    def disallowed_ops(self) -> list[str]:
        """Operators seen during forward that compute (not allocation, view, metadata or copy)."""
        return sorted(op for op in self.ops if not is_allowed(op))


class _CallStats:
    def __init__(self, launches_before: int, ops_before: Counter[str]) -> None:
        self.launches_before = launches_before
        self.ops_before = ops_before
        self.launches = 0
        self.ops: Counter[str] = Counter()
        self.writes: list[tuple[str, int, View]] = []
        self.tainted: dict[int, str] = {}
        self.taint_spans: dict[int, list[tuple[int, int]]] = {}
        #: uint8 views of the call's dense inputs (for :func:`copied_input_piece` on the output)
        self.input_bytes: list[torch.Tensor] = []
        #: pieces of the PyTorch copies of tainted data made during the call, looked for in the output
        self.samples = CopySamples()


#: factory operators whose result is new memory (besides ``UNINITIALISED_TORCH_OPS``)
FRESH_MEMORY_TORCH_OPS = frozenset(
    {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "arange"}
)


def moves_data_only(ops: frozenset[str] | set[str]) -> bool:
    """Whether a reference that dispatched ``ops`` only moves data (allocation, views, metadata and
    copies, no operator that computes): its whole task is the data movement."""
    return bool(ops) and all(is_allowed(op) for op in ops)


def is_allowed(op: str) -> bool:
    """Whether the PyTorch operator ``op`` (``aten.empty_like``) may run inside the candidate's call."""
    namespace, _, name = op.partition(".")
    return namespace == "aten" and name in ALLOWED_TORCH_OPS


class _OpRecordingMode(TorchDispatchMode):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self._recorder = recorder

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        # While this runs PyTorch has taken the mode off its stack: an operator called from here
        # is seen by nobody. No finaliser of the candidate's runs here (the collector is off while
        # the mode records, see ``Recorder.recording_forward``), and nothing below calls a tensor
        # method through the instance (an instance attribute can hide one).
        return self._dispatch(func, args, kwargs or {})

    def _dispatch(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        recorder = self._recorder
        packet = getattr(func, "overloadpacket", None)
        name = getattr(packet, "__name__", None) or str(func).split(".")[1]
        namespace = getattr(func, "namespace", None) or str(func).split(".")[0]
        counted = recorder.counts()
        moved = recorder.taint_of(args[0]) if counted and name in STORAGE_MOVING_TORCH_OPS and args else None
        op = f"{namespace}.{name}"
        try:
            out = func(*args, **kwargs)
        except BaseException as exc:
            if counted:
                # It ran before it raised: it read its inputs (an index error's text carries the
                # index, an input's bits) and may have written most of its output (index_add_
                # raising at its last index). Counted, and refused if forward goes on regardless.
                recorder.ops[op] += 1
                recorder.launch_errors.append(f"{type(exc).__name__} in the PyTorch operator `{op}`")
            raise
        if counted:
            recorder.ops[op] += 1
            if namespace == "aten":
                with recorder.checking(f"following the data of the PyTorch operator `{op}`"):
                    if name in UNINITIALISED_TORCH_OPS or name in FRESH_MEMORY_TORCH_OPS:
                        if "out" in kwargs:  # ``torch.zeros(..., out=t)``: a fill of old memory
                            for tensor in tensors_of(kwargs["out"]):
                                recorder.record_fill(name, tensor)
                        else:
                            recorder.forget(out)  # the allocator may hand back a tainted address
                    if name in UNINITIALISED_TORCH_OPS:
                        recorder.poison(out)
                    recorder.record_write(op, args, kwargs, out)
                    if moved is not None:
                        recorder.carry_taint(args[0], moved)  # resize_ copied the bytes to new memory
        return out


#: the harness's own PyTorch modes (the device redirect of the inputs): frames that only pass an
#: operator on, between it and the code that called it
_MODE_HANDLERS = frozenset({"__torch_function__", "__torch_dispatch__"})
#: the frames of the operator handler itself, between an operator and the code that called it
_HANDLER_CODES = frozenset(
    function.__code__
    for function in (
        _OpRecordingMode.__torch_dispatch__,
        _OpRecordingMode._dispatch,
        Recorder.counts,
        Recorder._called_by_candidate,
    )
)
