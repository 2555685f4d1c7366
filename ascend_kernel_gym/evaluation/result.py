"""Typed evaluation request and result.

These types are the contract between the evaluator, the environment, the reward presets, the
wrappers and the leaderboard. Everything here is plain data: it imports neither torch nor
triton, pickles across process boundaries and round-trips through JSON.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ascend_kernel_gym.tasks.task import Task


class Stage(str, Enum):
    """The furthest stage of the cascade an evaluation reached."""

    FORMAT = "format"
    STATIC = "static"
    COMPILE = "compile"
    CORRECTNESS = "correctness"
    PERFORMANCE = "performance"
    DONE = "done"


class ErrorType(str, Enum):
    """Why an evaluation failed. One closed set; ``NONE`` for a passing kernel."""

    NONE = "none"
    # format / static
    NO_CODE = "no_code"
    SYNTAX = "syntax"
    FORBIDDEN = "forbidden"
    MISSING_MODEL_NEW = "missing_model_new"
    NO_TRITON_KERNEL = "no_triton_kernel"
    # compile / run
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    OOM = "oom"
    SANDBOX_VIOLATION = "sandbox_violation"
    #: a kernel touched memory outside its launch's tensors (the interpreter's memory check); a
    #: hack when it wrote (``EvalResult.hack``), a plain failure when it only read
    OUT_OF_BOUNDS = "out_of_bounds"
    # correctness
    WRONG_OUTPUT_TYPE = "wrong_output_type"
    SHAPE_MISMATCH = "shape_mismatch"
    DTYPE_MISMATCH = "dtype_mismatch"
    DEVICE_MISMATCH = "device_mismatch"
    VALUE_MISMATCH = "value_mismatch"
    NAN_OR_INF = "nan_or_inf"
    NONDETERMINISTIC = "nondeterministic"
    INPUT_INDEPENDENT = "input_independent"
    # hacks
    NO_KERNEL_LAUNCHED = "no_kernel_launched"
    TORCH_FALLBACK = "torch_fallback"
    INPUT_MUTATED = "input_mutated"
    OUTPUT_ALIASES_INPUT = "output_aliases_input"
    # Ascend rules in enforce mode
    ASCEND_CONSTRAINT = "ascend_constraint"
    # triton-ascend's own compiler (its ttir / ttadapter stages) refused the kernel, or its on-chip
    # allocations overflow the chip's buffers (the ascend_lower stage in enforce mode)
    ASCEND_COMPILE_ERROR = "ascend_compile_error"
    # the harness itself failed (never the candidate's fault)
    HARNESS_ERROR = "harness_error"


#: Error types that mean the candidate tried to game the harness. ``out_of_bounds`` is not one of
#: them: an out-of-bounds write makes its result a hack, an out-of-bounds read does not.
HACK_ERROR_TYPES = frozenset(
    {
        ErrorType.NO_KERNEL_LAUNCHED,
        ErrorType.TORCH_FALLBACK,
        ErrorType.INPUT_MUTATED,
        ErrorType.OUTPUT_ALIASES_INPUT,
        ErrorType.FORBIDDEN,
        ErrorType.SANDBOX_VIOLATION,
        ErrorType.INPUT_INDEPENDENT,
    }
)


@dataclass
class LaunchRecord:
    """One launch of one of the candidate's own Triton kernels."""

    kernel: str
    grid: list[int]
    constexprs: dict[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None
    #: (shape, dtype) of each tensor argument, in order, e.g. [[1024, 1024], "float32"].
    tensor_args: list[list[Any]] = field(default_factory=list)


@dataclass
class EvalRequest:
    """What to evaluate.

    Args:
        task: the task the candidate answers.
        code: the candidate's Python source (defines ``ModelNew``).
        profile: shape profile; ``None`` means the backend's default (``small`` on the
            interpreter, ``full`` on devices).
        num_trials: correctness trials, each with fresh inputs; ``None`` uses the evaluator's
            ``num_trials``. A number given here always wins over the evaluator's.
        measure_performance: run the timing stage where the backend can time kernels.
        timeout_s: wall-clock limit for the whole child; ``None`` uses the evaluator's default.
        seed: fixes the hidden input seeds (for reproducible tests); ``None`` draws them secretly.
    """

    task: Task
    code: str
    profile: str | None = None
    num_trials: int | None = None
    measure_performance: bool = True
    timeout_s: float | None = None
    seed: int | None = None


@dataclass
class EvalResult:
    """The outcome of one evaluation. JSON round-trips through :meth:`to_dict` / :meth:`from_dict`."""

    task_id: str
    backend: str
    profile: str
    code_hash: str
    stage: Stage = Stage.FORMAT
    format_ok: bool = False
    static_ok: bool = False
    compiled: bool = False
    correct: bool = False
    hack: bool = False
    hack_reasons: list[str] = field(default_factory=list)
    error_type: ErrorType = ErrorType.NONE
    error_message: str = ""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    trials_passed: int = 0
    trials_total: int = 0
    ref_ms: float | None = None
    kernel_ms: float | None = None
    speedup: float | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    launches: list[LaunchRecord] = field(default_factory=list)
    torch_ops: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ascend_checks: list[dict[str, Any]] = field(default_factory=list)
    #: Cost-model estimate (``est_ms``, ``est_roofline_fraction``, ...); empty when none was made.
    #: Always a dict so that vectorised envs can merge ``info["eval"]`` across sub-envs.
    estimate: dict[str, Any] = field(default_factory=dict)
    stage_durations: dict[str, float] = field(default_factory=dict)
    #: Peak device memory in MiB that the evaluation's processes reserved: ``candidate`` (as its
    #: child reports it) and ``reference`` (the judging reference child's); empty on the CPU. It
    #: sizes later evaluations of the task on a shared device (:mod:`.memory_book`).
    device_memory_mb: dict[str, float] = field(default_factory=dict)
    device: str = ""
    cache_hit: bool = False
    #: The tail of what the candidate printed (stdout and stderr), scrubbed of harness paths.
    output_tail: str = ""

    @property
    def ok(self) -> bool:
        """True when the kernel is correct and not a hack."""
        return self.correct and not self.hack

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["stage"] = self.stage.value
        data["error_type"] = self.error_type.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"EvalResult.from_dict: unknown fields {sorted(unknown)}")
        values = dict(data)
        values["stage"] = Stage(values.get("stage", Stage.FORMAT.value))
        values["error_type"] = ErrorType(values.get("error_type", ErrorType.NONE.value))
        values["launches"] = [LaunchRecord(**launch) for launch in values.get("launches", [])]
        values["estimate"] = values.get("estimate") or {}
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> EvalResult:
        return cls.from_dict(json.loads(text))


#: the largest result, as JSON (:meth:`EvalResult.to_json`), that :func:`bound_result` lets through
MAX_RESULT_BYTES = 512 * 1024
#: how :func:`bound_result`'s warning starts
RESULT_CUT_NOTE = "result cut to fit"
#: (characters kept of a string, items kept of a list or dict), tried in order until the result fits
_CUTS = ((8000, 64), (2000, 16), (400, 4), (100, 1), (0, 0))
#: room left for the warning that says what was cut
_NOTE_ROOM = 512
#: the fields :func:`bound_result` may cut, in the order they are cut
_CUT_FIELDS = (
    "launches",
    "ascend_checks",
    "timing",
    "estimate",
    "torch_ops",
    "output_tail",
    "warnings",
    "hack_reasons",
    "stage_durations",
    "error_message",
)


def bound_result(result: EvalResult, max_bytes: int = MAX_RESULT_BYTES) -> EvalResult:
    """Cut ``result`` in place until its JSON takes at most ``max_bytes``, with a warning that
    says which fields were cut (a 16 MB constexpr string in every launch record, a flood of
    warnings or printed output must not make a result of hundreds of megabytes).

    Fields are cut one at a time, each first to long strings and lists and then shorter ones:
    strings keep their start (``output_tail`` its end, which is what the candidate printed
    last), lists and dicts their first items. Verdict fields (flags, error type, numbers) stay.
    """
    if len(result.to_json()) <= max_bytes:
        return result
    cut: list[str] = []
    for chars, items, name in [(c, i, n) for c, i in _CUTS for n in _CUT_FIELDS]:
        if len(result.to_json()) + _NOTE_ROOM <= max_bytes:
            break
        value = getattr(result, name)
        if name == "launches":
            shrunk: Any = [_cut_launch(launch, chars, items) for launch in value[:items]]
        elif name == "output_tail":
            shrunk = _cut_text(value, chars, keep_end=True)
        elif name == "error_message":  # the verdict's explanation keeps its start
            shrunk = _cut_text(value, max(chars, 400))
        else:
            shrunk = _cut_value(value, chars, items)
        if shrunk != value:
            setattr(result, name, shrunk)
            if name not in cut:
                cut.append(name)
    result.warnings.append(f"{RESULT_CUT_NOTE} {max_bytes // 1024} KB: cut {', '.join(cut)}")
    return result


def _cut_text(text: str, chars: int, keep_end: bool = False) -> str:
    if len(text) <= chars:
        return text
    note = f"[... {len(text) - chars} characters cut ...]"
    return f"{note}\n{text[len(text) - chars :]}" if keep_end else f"{text[:chars]}{note}"


def _cut_value(value: Any, chars: int, items: int) -> Any:
    if isinstance(value, str):
        return _cut_text(value, chars)
    if isinstance(value, list):
        return [_cut_value(v, chars, items) for v in value[:items]]
    if isinstance(value, dict):
        return {k: _cut_value(v, chars, items) for k, v in list(value.items())[:items]}
    return value


def _cut_launch(launch: LaunchRecord, chars: int, items: int) -> LaunchRecord:
    return LaunchRecord(
        kernel=_cut_text(launch.kernel, max(chars, 40)),
        grid=launch.grid[:8],
        constexprs=_cut_value(launch.constexprs, chars, items),
        num_warps=launch.num_warps,
        num_stages=launch.num_stages,
        tensor_args=_cut_value(launch.tensor_args, chars, items),
    )
