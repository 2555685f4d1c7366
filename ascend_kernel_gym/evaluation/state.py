"""The state of one evaluation inside its child, and the one result message it ends with.

Imports torch (through the recorder): only the zygote's children import this module.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ascend_kernel_gym.evaluation.errors import StageError, record_failure
from ascend_kernel_gym.evaluation.feedback import scrub_text
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.memory_book import CANDIDATE_PHASES, MIB
from ascend_kernel_gym.evaluation.process import device_peak_bytes
from ascend_kernel_gym.evaluation.recorder import Recorder
from ascend_kernel_gym.evaluation.result import EvalResult, Stage, bound_result
from ascend_kernel_gym.evaluation.snapshot import LibrarySnapshot
from ascend_kernel_gym.evaluation.wire import OUTPUT_FILENAME, ZygoteLink, encode_result, write_all

MAX_MESSAGE_CHARS = 4000


class ResultWriter:
    """Writes the one result message (length + JSON) to the zygote and ends the process.

    ``marker``: bytes written first (the zygote's RESULT marker; empty for a stand-alone child).
    """

    def __init__(self, fd: int, token: str, marker: bytes = b"") -> None:
        self.fd = fd
        self.token = token
        self.marker = marker
        self.done = False

    def emit(self, result: EvalResult) -> NoReturn:
        """Write ``result`` (only the first time) and end the process."""
        if not self.done:
            self.done = True
            write_all(self.fd, self.marker, encode_result(self.token, result.to_dict()))
        os._exit(0)


class PartTimer:
    """Records the seconds since the previous mark as ``<stage>.<part>`` (latency work only)."""

    def __init__(self, durations: dict[str, float], stage: str) -> None:
        self.durations = durations
        self.stage = stage
        self.last = time.perf_counter()

    def __call__(self, part: str) -> None:
        now = time.perf_counter()
        self.durations[f"{self.stage}.{part}"] = round(now - self.last, 4)
        self.last = now


@dataclass
class ChildState:
    """What the stages of one evaluation share: the job, the result so far, the harness's tools."""

    job: Job
    result: EvalResult
    writer: ResultWriter
    sandbox: str = ""
    candidate_file: str = ""
    recorder: Recorder | None = None
    snapshot: LibrarySnapshot | None = None
    redirect: Any = None
    #: the reference's rounding slack for float16 / bfloat16 outputs (set by the compile stage)
    slack: Any = None
    link: ZygoteLink | None = None
    #: who judges the correctness trials: the zygote (through ``link``) or a judge in this process
    judge: Any = None
    #: the candidate's ``ModelNew`` class and the seed models are built with (the compile stage's;
    #: shape cases construct more instances)
    model_cls: Any = None
    init_seed: int = 0
    #: the process's resident set when it started (:attr:`.process.Prepared.start_rss`)
    start_rss: int = 0
    t_stage: float = field(default_factory=time.perf_counter)
    #: the peak device memory of each phase of the evaluation that ended (:meth:`memory_phase`)
    memory_phases: dict[str, int] = field(default_factory=dict)

    def stage(self, stage: Stage) -> None:
        """Add the time since the last stage change to the current stage's duration; enter ``stage``."""
        now = time.perf_counter()
        previous = self.result.stage.value
        self.result.stage_durations[previous] = round(
            self.result.stage_durations.get(previous, 0.0) + now - self.t_stage, 4
        )
        self.t_stage = now
        self.result.stage = stage

    def memory_phase(self, phase: str) -> None:
        """End the memory phase ``phase`` (one of :data:`.memory_book.CANDIDATE_PHASES`): keep the
        most device memory this process reserved during it, and start the next phase's count."""
        peak = device_peak_bytes(self.job.backend, reset=True)
        if peak is not None:
            self.memory_phases[phase] = peak

    def finish(self) -> NoReturn:
        """Complete the result (launches, operators, scrubbed texts, printed output), send it, exit.

        A kernel argument the recorder refused ends the evaluation as that refusal (a hack) even
        where the candidate's code swallowed the exception, unless the result is a hack already.
        The result is cut to :data:`MAX_RESULT_BYTES` (with a warning that says what was cut).
        """
        self.stage(self.result.stage)
        if self.recorder is not None:
            self.result.launches = list(self.recorder.launches)
            self.result.torch_ops = sorted(self.recorder.ops)
            self.result.warnings.extend(self.recorder.notes)
            refusal = self.recorder.refusal
            if refusal is not None and not self.result.hack:
                apply_failure(self, refusal)
        self.result.error_message = scrub_text(self.result.error_message, self.sandbox)[:MAX_MESSAGE_CHARS]
        # Warnings and hack reasons may quote exception texts of candidate code (sandbox paths).
        self.result.warnings = [scrub_text(w, self.sandbox)[:MAX_MESSAGE_CHARS] for w in self.result.warnings]
        self.result.hack_reasons = [scrub_text(r, self.sandbox) for r in self.result.hack_reasons]
        self.result.output_tail = _read_output(self.sandbox, self.job.output_cap)
        ongoing = next((p for p in CANDIDATE_PHASES if p not in self.memory_phases), None)
        if ongoing is not None:
            self.memory_phase(ongoing)
        if self.memory_phases:
            memory = self.result.device_memory_mb
            memory["candidate"] = round(max(self.memory_phases.values()) / MIB, 1)
            for phase, peak in self.memory_phases.items():
                memory[f"candidate_{phase}"] = round(peak / MIB, 1)
        bound_result(self.result)
        self.writer.emit(self.result)


def _read_output(sandbox: str, cap: int) -> str:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    path = os.path.join(sandbox, OUTPUT_FILENAME)
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - cap))
            data = handle.read(cap)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > cap:
        text = f"[... {size - cap} bytes cut ...]\n" + text
    return scrub_text(text, sandbox)


def apply_failure(state: ChildState, failure: StageError) -> None:
    """Record ``failure`` in the evaluation's result (see :func:`.errors.record_failure`)."""
    record_failure(state.result, failure)
