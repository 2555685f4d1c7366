"""The job a worker runs: plain data sent from the calling process to an evaluator child."""

from __future__ import annotations

from dataclasses import dataclass, field

from ascend_kernel_gym.evaluation.result import EvalResult, Stage
from ascend_kernel_gym.tasks.task import Task


@dataclass
class Job:
    """Everything a child needs (pickled by the calling process, trusted)."""

    task: Task
    code: str
    code_hash: str
    backend: str
    profile: str
    num_trials: int = 5
    measure_performance: bool = True
    seed: int | None = None
    sandbox: str = ""
    memory_mb: int = 4096
    output_cap: int = 16384
    ascend_checks: str = "warn"
    ascend_profile: str = "910B3"
    profile_reps: int = 100
    profile_warmup: int = 3
    #: bound the timed repetitions by time (see ``Evaluator(profile_budget_s=...)``); None: off
    profile_budget_s: float | None = None
    static_warnings: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    #: dotted paths the static stage resolved (the child checks them against the live modules)
    paths: list[str] = field(default_factory=list)
    #: imported names used as values; the child refuses the ones that are modules
    escaping: list[str] = field(default_factory=list)
    warm_cache: str | None = None
    #: correctness trials draw only from the task's own input distribution: set when the task's
    #: reference broke the device on a varied one (a device-side assert, e.g. binary_cross_entropy
    #: on values outside [0, 1]), which no process can recover from
    task_inputs_only: bool = False
    torch_threads: int = 1
    #: the share of the device's free memory this evaluation may plan its timing buffers with:
    #: 1 / the workers sharing the device (eight workers on an 80 GB H100 each planning with a
    #: quarter of the free memory left neighbours' references without any, 2026-12-05)
    device_share: float = 1.0
    #: device bytes the evaluation's reservation on a shared device holds idle during its timing
    #: stage (its judge let go of the reference's outputs by then: :meth:`.memory_book.MemoryBook.idle_in_timing`),
    #: which the checked rounds' output copies may take (:class:`.timing_stage.KeptOutputs`); 0: none known
    keep_device_bytes: int = 0
    #: the verdict comes from the judge in the zygote (set by the zygote: the interpreter backend);
    #: otherwise the child judges in its own process (device backends, stand-alone children)
    judge_in_zygote: bool = False
    #: how the trials' tensors reach that judge: ``bytes`` (copied through the zygote) or ``ipc``
    #: (cuda: device tensors by CUDA IPC handle to the judge in the reference child)
    judge_transport: str = "bytes"
    #: set by the zygote when a precompile child compiles this job's kernels ahead
    #: (:mod:`.precompile`): the longest the candidate's child waits for it before importing the
    #: candidate; 0: none runs
    precompile_wait_s: float = 0.0
    #: set by the zygote: the reference child builds the plan (the reference's runs on the device)
    #: only once the candidate's child asks for it, after trial 1's first call; a candidate that
    #: fails before then costs the device no reference run (``AKG_DEFER_REFERENCE``)
    defer_plan: bool = False
    #: set by the zygote where the reference child judges: a varied trial's moved runs of the
    #: reference (its sensitivity to one rounding step, :func:`.reference_run.build_plan`) are made
    #: only when a candidate's output needs the slack they add (``AKG_LAZY_SENSITIVITY``)
    lazy_sensitivity: bool = False
    #: Test hook: run the timing stage on the interpreter with wall-clock timers and a small
    #: cache flush, to exercise that code without a device. Its numbers mean nothing.
    cpu_timing: bool = False
    #: seconds without progress before the child is cut (None: the backend's floor plus a multiple
    #: of the reference's time, ``wire.WATCHDOG_FLOOR_S``); the time limit stays the ceiling
    stall_limit_s: float | None = None

    def first_result(self) -> EvalResult:
        """The result as an evaluation of this job starts: past the static stage, compiling."""
        return EvalResult(
            task_id=self.task.id,
            backend=self.backend,
            profile=self.profile,
            code_hash=self.code_hash,
            stage=Stage.COMPILE,
            format_ok=True,
            static_ok=True,
            warnings=list(self.static_warnings),
        )
