"""The warm fork server behind each evaluator worker.

One zygote process per worker imports torch and triton once (with ``TRITON_INTERPRET=1`` on the
interpreter backend), warms Triton's lazy paths, and then, for every job, forks a fresh child
that runs :func:`.child.child_entry`. The zygote never runs candidate code and never initialises
a device (CUDA / NPU must not be initialised before ``fork``), so every child starts from the
same clean, warm state. Every child serves exactly one job.

With ``prefork`` (the default) the zygote keeps one spare child forked ahead: it sets itself up
and initialises the device while the previous job runs, then blocks on its job pipe. A job goes
to the spare, and the next spare is forked at once. A spare that died while waiting is replaced.

The zygote supervises each child: wall-clock deadline (``SIGKILL`` to the child's process
group), resident-memory cap (polled from ``/proc``), collection of the one result message
(answered as soon as it is complete: the child's exit and device teardown happen after the
reply, while the caller reads it, and the next job is handed out only once that child is
reaped; where workers share a device its lease is held until then, :meth:`Zygote.end_job`),
classification of deaths (timeout, signal, exit without a result), and removal of the child's
temporary directory.

Protocol with the calling process (:mod:`.zygote_main`, over the zygote's stdin / stdout,
:mod:`.wire` messages; both ends are harness code): a config dict first, then ``{"job": Job, "timeout": s}`` per
evaluation, answered by a result dict; ``None`` shuts the zygote down.
"""

from __future__ import annotations

import gc
import os
import secrets
import select
import shutil
import signal
import tempfile
import time
from typing import Any

from ascend_kernel_gym.evaluation.child_stream import (
    GARBLED_STREAM,
    Child,
    ChildStream,
    die_with_parent,
    harness_failure,
    name_process,
    read_output_tail,
    rss_bytes,
)
from ascend_kernel_gym.evaluation.device_lease import (
    PAUSE_MAX_S,
    DeviceLease,
    LeaseKeeper,
    device_key,
    lease_enabled,
    switch,
)
from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.precompile_run import PRECOMPILE_MAX_S, PrecompileRun
from ascend_kernel_gym.evaluation.remote_judge import RemoteJudge
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.verdict import final_reply
from ascend_kernel_gym.evaluation.wire import (
    BUILD_PLAN,
    CONTINUE,
    DEFAULT_JUDGE,
    END_OF_JOB,
    FREED,
    GO,
    JUDGE_MAX_JOBS,
    JUDGE_MODES,
    LEASE_EXTRA_MAX_S,
    OUTPUT_FILENAME,
    PROBE,
    QUIET_MAX_S,
    WATCHDOG_FLOOR_S,
    WATCHDOG_REF_FACTOR,
    encode_message,
    write_all,
)
from ascend_kernel_gym.evaluation.zygote_warm import device_touched, warm_device

#: the longest a job waits for earlier children to finish exiting before it is handed out anyway
SETTLE_MAX_S = 30.0
#: the longest the zygote waits for a judging child to give its memory back after a job
#: (:data:`.wire.FREED`); one that takes longer is replaced
FREE_MAX_S = 10.0
RSS_POLL_S = 0.05


class Zygote:
    """State of one fork server (lives in the zygote process)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.backend: str = config["backend"]
        self.root = tempfile.mkdtemp(prefix="akg-pool-", dir=config.get("tmp_root"))
        self.torch_threads = int(config.get("torch_threads", 1))
        self.prefork = bool(config.get("prefork", True))
        self.os_sandbox = bool(config.get("os_sandbox", False))
        #: where the verdict is decided (``AKG_JUDGE`` overrides): ``zygote`` (the interpreter:
        #: outputs come here as bytes), ``reference`` (cuda, npu: the reference child judges on
        #: the device, the outputs handed over by CUDA IPC on cuda, as bytes on npu) or ``child``
        #: (the candidate's child judges itself: faster on npu, forgeable)
        self.judge_mode = config.get("judge") or DEFAULT_JUDGE.get(self.backend, "child")
        if self.judge_mode not in JUDGE_MODES:
            raise ValueError(f"unknown judge mode {self.judge_mode!r} (one of {', '.join(JUDGE_MODES)})")
        #: a judge outside the candidate's child, with a reference child per job
        self.judge_here = self.judge_mode != "child"
        self.warm_cache: str | None = None
        self.compiler_warm = False
        self.baseline_rss = 0
        #: the child forked ahead for the next job (``prefork``)
        self.spares: list[Child] = []
        #: the judging reference child of the job running now (it may serve the next one too)
        self.judging: Child | None = None
        #: children that reported (or were killed) and are not reaped yet
        self.exiting: list[int] = []
        #: the children of the job running now (killed if the zygote ends in the middle of it)
        self.running: list[Child] = []
        #: the zygote's own pipe ends, closed in every child
        self.harness_fds: set[int] = set()
        #: the device's lease (several zygotes per device; :mod:`.device_lease`), None when off
        self.lease: DeviceLease | None = None
        if lease_enabled(self.backend, str(config.get("device_lease") or "")):
            self.lease = DeviceLease(device_key(self.backend), config.get("lease_dir"))
        #: the progress watchdog's allowance for the current job (:data:`.wire.WATCHDOG_FLOOR_S`)
        self.stall_floor = WATCHDOG_FLOOR_S.get(self.backend, 45.0)
        self.stall_scaled = True
        #: spares stopped when the last job ended (they resume under the next job's lease)
        self.stopped_spares: list[int] = []
        #: the running (or just answered) job's hold on the device's lease, let go by :meth:`end_job`
        self.keeper: LeaseKeeper | None = None
        self.timing_gate = str(config.get("timing_gate") or "")  # AKG_TIMING_GATE (not in our environment)
        self.cuda_sync = str(config.get("cuda_sync") or "")  # AKG_CUDA_SYNC (likewise)
        #: whether a device-free child compiles each job's kernels ahead (:mod:`.precompile`):
        #: AKG_PRECOMPILE "1" / "0", else on where the device is shared (a job's ``device_share``
        #: below 1); alone on its device, the candidate's child would only wait for it
        self.precompile_setting = str(config.get("precompile") or "")
        #: whether a job's reference child waits for its candidate's first call to go through before
        #: it runs the reference (:attr:`.job.Job.defer_plan`): AKG_DEFER_REFERENCE "1" / "0", else
        #: on where the device is shared; alone on its device, the plan is built next to the compile
        self.defer_setting = str(config.get("defer_reference") or "")
        #: AKG_LAZY_SENSITIVITY "1" / "0" (:attr:`.job.Job.lazy_sensitivity`), else on
        self.lazy_setting = str(config.get("lazy_sensitivity") or "")
        self.compile_target: dict[str, Any] | None = None
        self.pre_run: PrecompileRun | None = None

    # --- warm-up ------------------------------------------------------------------------------
    def warm(self) -> dict[str, Any]:
        started = time.perf_counter()
        import torch
        import triton
        import triton.language  # noqa: F401

        from ascend_kernel_gym.evaluation import cuda_sync, device_gate

        device_gate.configure(self.timing_gate)  # children forked from here inherit it
        cuda_sync.configure(self.cuda_sync)
        torch.set_num_threads(self.torch_threads)
        # Initialises the thread pools now: until then a fork re-creates a pool thread in the child
        # (torch's at-fork handler), and a child with two threads cannot enter the OS sandbox.
        torch.get_num_threads()
        # Modules the child and common candidates use, imported once here.
        import collections  # noqa: F401
        import dataclasses  # noqa: F401
        import enum  # noqa: F401
        import functools  # noqa: F401
        import itertools  # noqa: F401
        import math  # noqa: F401
        import numbers  # noqa: F401
        import operator  # noqa: F401
        import typing  # noqa: F401
        import warnings  # noqa: F401

        import ascend_kernel_gym.evaluation.child  # noqa: F401 - and through it every stage

        for optional in ("typing_extensions", "triton.language.extra", "triton.language.extra.libdevice"):
            try:
                __import__(optional)
            except Exception:  # noqa: BLE001, S110 - optional modules
                pass
        for optional in ("ascend_kernel_gym.ascend.checks", "ascend_kernel_gym.ascend.cost_model"):
            try:
                __import__(optional)
            except Exception:  # noqa: BLE001, S110 - written by another part; absent is fine
                pass
        from ascend_kernel_gym.evaluation.snapshot import settle_lazy_imports

        settle_lazy_imports()  # imports torch._dynamo once here instead of in every child
        if self.backend == "interpreter":
            from ascend_kernel_gym.backends import interpreter_compat
            from ascend_kernel_gym.evaluation import warmup

            interpreter_compat.install()  # NumPy >= 2.4 with triton <= 3.6
            # Every interpreted load / store / atomic checked against its launch's tensors; a
            # zygote without the check serves no job (the pool reports the failed start).
            from ascend_kernel_gym.backends import interpreter_memcheck

            if not interpreter_memcheck.install():
                raise RuntimeError("the interpreter's memory check could not be installed")
            warmup.run_interpreter_warmup()
        else:
            warmed = warm_device(self.backend, self.root)
            self.warm_cache, self.compiler_warm, self.compile_target = warmed
        sandbox_report = self._warm_os_sandbox()  # last: its probe forks as the children will
        # Everything imported so far is permanent: children's collections (the harness runs one
        # before every reference call) then scan only their own objects, and pages stay shared.
        gc.collect()
        gc.freeze()
        self.baseline_rss = rss_bytes(os.getpid())
        return {
            "warm_s": round(time.perf_counter() - started, 3),
            "pid": os.getpid(),
            "warm_cache": self.warm_cache is not None,
            "compiler_warm": self.compiler_warm,
            "device_touched": device_touched(),
            "os_sandbox": sandbox_report,
            "timing_gate": device_gate.wanted(),
            "cuda_sync": cuda_sync.wanted(),
        }

    def _warm_os_sandbox(self) -> dict[str, Any] | None:
        """Load the OS sandbox's modules and default paths once, before any child forks; probe the layers.

        ``pyseccomp`` finds ``libseccomp`` by running ``ldconfig``, which no sandboxed child may
        run; the default policy's paths are computed here once for every child. The probe (a
        throw-away child) says which layers this machine has, for the pool to report once.
        """
        if not self.os_sandbox:
            return None
        from ascend_kernel_gym.evaluation import os_sandbox

        os_sandbox.default_policy(self.backend, self.root)
        return os_sandbox.probe_os_sandbox(self.backend).to_dict()

    # --- children -----------------------------------------------------------------------------
    def _fork_child(self, reference: bool = False) -> Child:
        """Fork a child that sets itself up, initialises the device and waits for its job.

        ``reference``: a child for the reference (and the judge): it runs no Triton kernel of the
        candidate, so it skips the warm cache and the launch warm-up, and its device is ready sooner
        (on a device the next timing waits for every spare's context).
        """
        sandbox = tempfile.mkdtemp(prefix="akg-sandbox-", dir=self.root)
        output_fd = -1
        if not reference:  # its printed output is shown in failed results
            flags = os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            output_fd = os.open(os.path.join(sandbox, OUTPUT_FILENAME), flags, 0o600)
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: keeps only its own two pipe ends
            die_with_parent(parent)
            name_process("akg-reference" if reference else "akg-candidate")
            for fd in (0, 1, self.proto_in, self.proto_out, job_write, result_read, output_fd, *self.harness_fds):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                from ascend_kernel_gym.evaluation.child import child_entry
                from ascend_kernel_gym.evaluation.process import ChildSetup

                setup = ChildSetup(
                    sandbox,
                    self.backend,
                    None if reference else self.warm_cache,
                    self.torch_threads,
                    os_sandbox=self.os_sandbox,
                    keep_fds=(job_read, result_write),  # the job pipe first: relayed in a PID namespace
                )
                child_entry(setup, job_read, result_write)
            finally:
                os._exit(70)
        os.close(job_read)
        os.close(result_write)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self.harness_fds |= {job_write, result_read} | ({output_fd} if output_fd >= 0 else set())
        return Child(pid, job_write, result_read, sandbox, reference=reference, output_fd=output_fd)

    def _take_spare(self, reference: bool = False) -> Child | None:
        """A spare forked for the role (``reference`` or the candidate's) that is still alive and
        whose device could be set up (a spare still setting up is taken as it is)."""
        while True:
            spare = next((child for child in self.spares if child.reference == reference), None)
            if spare is None:
                return None
            self.spares.remove(spare)
            if not spare.ready and spare.result_fd >= 0 and select.select([spare.result_fd], [], [], 0)[0]:
                self._read_readiness(spare)
            try:
                done, _ = os.waitpid(spare.pid, os.WNOHANG)
            except ChildProcessError:
                done = spare.pid
            if not done and not spare.unusable:
                return spare
            # It died while waiting (it never had a job), or its device was full when it set up.
            self._discard(spare, reaped=bool(done))

    @staticmethod
    def _read_readiness(spare: Child) -> None:
        """Read a spare's READY or NOT_READY (or see its pipe closed): either way it starts no
        context now."""
        try:
            spare.mark_ready(os.read(spare.result_fd, 1))
        except OSError:
            spare.mark_ready(b"")

    def _send(self, child: Child, message: dict[str, Any], deadline: float) -> bool:
        """Hand ``child`` its job; False if it died first or would not take it before ``deadline``."""
        data = memoryview(encode_message(message))
        try:
            while data:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return False
                _, ready, _ = select.select([], [child.job_fd], [], min(left, 1.0))
                if ready:
                    data = data[os.write(child.job_fd, data[: select.PIPE_BUF]) :]
        except OSError:
            return False
        return True

    def _discard(self, child: Child, reaped: bool = False) -> None:
        """Kill a child and release its pipes and sandbox (it is reaped now or later).

        ``reaped``: already waited for; its pid may belong to another process by now.
        """
        if not reaped:
            self._kill(child.pid)
            self.exiting.append(child.pid)
        self._release_pipes(child)
        self._remove_sandbox(child)

    def _remove_sandbox(self, child: Child) -> None:
        self._close_fd(child.output_fd)
        child.output_fd = -1
        shutil.rmtree(child.sandbox, ignore_errors=True)

    def _release_pipes(self, child: Child) -> None:
        for fd in (child.job_fd, child.result_fd):
            self._close_fd(fd)
        child.job_fd = child.result_fd = -1

    def _close_fd(self, fd: int) -> None:
        if fd < 0:
            return
        self.harness_fds.discard(fd)
        try:
            os.close(fd)
        except OSError:
            pass

    def _reap(self, block: bool = False) -> None:
        """Collect children that reported and are still tearing down (or were killed)."""
        still = []
        for pid in self.exiting:
            try:
                done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                continue
            if not done:
                still.append(pid)
        self.exiting = still

    def start_spare(self) -> None:
        """Fork the children the next job needs (its candidate's and its reference's), if missing."""
        if not self.prefork:
            return
        for reference in (True, False) if self.judge_here else (False,):
            if reference and self.judging is not None:
                continue  # the running job's judge comes back as the next job's (or is replaced then)
            if not any(child.reference == reference for child in self.spares):
                self.spares.append(self._fork_child(reference))

    def shutdown(self) -> None:
        for child in self.running:
            self._kill_group(child.pid)
        self.running = []
        for spare in self.spares:
            self._discard(spare)
        self.spares = []
        for pid in self.exiting:
            self._kill(pid)
        self._reap(block=True)

    # --- one job ------------------------------------------------------------------------------
    def run_job(self, job: Any, timeout: float, memory_mb: int) -> dict[str, Any]:
        from ascend_kernel_gym.evaluation.judge import Judge

        keeper = LeaseKeeper(self.lease, time.perf_counter) if self.lease is not None else None
        if keeper is not None:  # waits for another zygote's timing on this device to end
            keeper.enter(time.perf_counter() + LEASE_EXTRA_MAX_S, self.stopped_spares)
            self.stopped_spares = []
        started = time.perf_counter()
        deadline = started + timeout
        token = secrets.token_hex(16)
        if job.seed is None:  # both children draw from the same source
            job.seed = int.from_bytes(os.urandom(8), "little")
        self._settle(min(deadline, time.perf_counter() + SETTLE_MAX_S))
        job.judge_in_zygote = self.judge_here
        job.judge_transport = "ipc" if self.judge_mode == "reference" and self.backend == "cuda" else "bytes"
        job.defer_plan = self.judge_here and switch(self.defer_setting, job.device_share < 1.0)
        job.lazy_sensitivity = self.judge_mode == "reference" and switch(self.lazy_setting, True)
        given = getattr(job, "stall_limit_s", None)
        self.stall_floor = float(given) if given else WATCHDOG_FLOOR_S.get(self.backend, 45.0)
        self.stall_scaled = not given
        judge: Any = None
        if self.judge_mode == "zygote":
            judge = Judge(job.task.atol, job.task.rtol, job.num_trials)
        elif self.judge_mode == "reference":  # it waits for verdicts up to the deadline, pauses included
            judge = RemoteJudge(job.num_trials, deadline + PAUSE_MAX_S)
        reference = self._start_reference(job, deadline) if self.judge_here else None
        if isinstance(judge, RemoteJudge):
            judge.attach(reference)
        child = self._take_spare() or self._fork_child()
        ahead = (
            self.backend == "cuda"
            and switch(self.precompile_setting, job.device_share < 1.0)
            and self.os_sandbox
            and self.compile_target is not None
        )
        job.precompile_wait_s = PRECOMPILE_MAX_S if ahead else 0.0
        for attempt in range(2):
            if attempt and self.pre_run is None:
                job.precompile_wait_s = 0.0  # nothing compiles ahead: nothing to wait for
            sent = self._hand_job(child, job, token, deadline) is not None
            if attempt == 0:
                if ahead and sent:
                    from ascend_kernel_gym.evaluation.precompile import start_precompile

                    fds = (0, 1, self.proto_in, self.proto_out, *self.harness_fds)
                    self.pre_run = start_precompile(
                        self.root,
                        job,
                        self.compile_target or {},
                        child.sandbox,
                        fds,
                        self.torch_threads,
                        deadline,
                        self.warm_cache,
                    )
                self.start_spare()  # the next job's children get ready while this one runs
            elif self.pre_run is not None:
                self.pre_run.retarget(child.sandbox)
            run = ChildStream(child, token)
            self.running = [child, *([reference.child] if reference is not None else [])]
            if sent:
                self._supervise(run, deadline, memory_mb, reference, judge, keeper)
            if run.taken or run.reason or attempt or (judge is not None and judge.reference_failure is not None):
                break
            # The child died (or would not read) before it took the job: a spare killed or broken
            # while it waited is the harness's problem, never the candidate's. Once more, fresh.
            self._discard(child, reaped=run.status is not None)
            child = self._fork_child()
        if reference is not None:
            self._end_reference(reference, judge)
        pre, self.pre_run = self.pre_run, None
        if pre is not None:
            pre.finish()
        self.keeper = keeper  # held until the job's children are gone (:meth:`end_job`)
        if keeper is not None:
            deadline += keeper.paused_s
        wall = time.perf_counter() - started
        reply = final_reply(run, job, judge, keeper)
        if reply is not None and pre is not None:
            reply.setdefault("stage_durations", {}).update(pre.summary())
        self.running = []
        if not run.taken and not run.reason and reply is None:
            run.reason = "timeout" if time.perf_counter() > deadline else "not_started"
            self._discard(child, reaped=run.status is not None)
        self._release_pipes(child)
        output_tail = ""
        if reply is None or run.failure is not None or run.reason == "timeout":
            output_tail = read_output_tail(child.output_fd, job.output_cap)
        if reply is not None and (run.failure is not None or run.reason == "timeout"):
            reply["output_tail"] = output_tail
        self._remove_sandbox(child)
        return {
            "result": reply,
            "status": run.status,
            "reason": run.reason,
            "wall_s": round(wall, 4),
            "output_tail": output_tail,
            "sandbox": child.sandbox,
        }

    def _hand_job(
        self, child: Child, job: Any, token: str, deadline: float, role: str = "candidate"
    ) -> dict[str, Any] | None:
        """Send ``child`` its job (in its own sandbox); the message sent, or None if it would not take it."""
        job.sandbox = child.sandbox
        job.warm_cache = self.warm_cache
        job.torch_threads = self.torch_threads
        message = {"job": job, "token": token, "role": role, "sent_at": time.monotonic()}
        return message if self._send(child, message, deadline) else None

    def _start_reference(self, job: Any, deadline: float, retried: bool = False) -> ChildStream | None:
        """Hand a reference child its job: the spare, or a fresh child if the spare will not take it
        (``retried``: a fresh child at once, the spare having died)."""
        token = secrets.token_hex(16)
        role = "judge" if self.judge_mode == "reference" else "reference"
        for attempt in range(1 if retried else 2):
            child = (None if retried or attempt else self._take_spare(True)) or self._fork_child(True)
            message = self._hand_job(child, job, token, deadline, role=role)
            if message is not None:
                run = ChildStream(child, token, payload_result=True)
                run.message, run.retried = message, retried
                run.plan_started = not job.defer_plan  # else once the candidate asks for the plan
                self.judging = child if role == "judge" else None
                return run
            self._discard(child)
        return None

    def _restart_reference(self, reference: ChildStream, deadline: float) -> bool:
        """The reference child died before it took its job (a spare killed while it waited): the
        harness's problem, so once more with a fresh child. False if that fails too."""
        if reference.retried or reference.message is None:
            return False
        self._discard(reference.child, reaped=reference.status is not None)
        fresh = self._start_reference(reference.message["job"], deadline, retried=True)
        if fresh is None:
            return False
        reference.__dict__.update(fresh.__dict__)
        return True

    def _end_reference(self, reference: ChildStream, judge: Any) -> None:
        """The job is over for its reference child: a judging one that finished cleanly goes back
        as the next job's reference spare (:mod:`.reference_judge`); any other is killed and its
        sandbox removed (and, for a judging one, a fresh spare forked)."""
        child = reference.child
        self.judging = None
        if (
            isinstance(judge, RemoteJudge)
            and (judge.reusable or not reference.plan_started)  # unstarted: it waits as it was
            and reference.status is None
            and reference.taken
            and child.jobs + 1 < JUDGE_MAX_JOBS
        ):
            try:
                os.write(child.job_fd, END_OF_JOB)
            except OSError:
                pass
            else:
                child.jobs += 1
                child.freeing = True
                self.spares.insert(0, child)
                return
        if reference.status is None:
            self._retire(child.pid)
        self._release_pipes(child)
        self._remove_sandbox(child)
        if isinstance(judge, RemoteJudge):
            self.start_spare()

    def _supervise(
        self,
        run: ChildStream,
        deadline: float,
        memory_mb: int,
        reference: ChildStream | None,
        judge: Any,
        keeper: LeaseKeeper | None = None,
    ) -> None:
        """Follow one evaluation until its result is in or its child is gone.

        Returns as soon as a complete, valid result has arrived (or the judge failed a trial):
        the child only exits after that, and its teardown (the device context above all) need
        not delay the reply; it is killed and reaped later. Meanwhile feeds the reference child's
        results and the candidate child's trials to the judge, answers the plan request and the
        QUIET request (once the spares are ready and earlier children are reaped), and enforces
        the deadline and the memory cap on both children. With a device lease (``keeper``), the
        QUIET request is answered once this zygote holds the device alone, and the children are
        stopped while another zygote times (that time is added to the deadline).
        """
        child = run.child
        pid, read_fd = child.pid, child.result_fd
        eof = False
        ref_open = reference is not None
        if reference is None and judge is not None:
            judge.reference_failure = judge.reference_failure or harness_failure(
                "the reference child could not be started"
            )
        plan_sent = False
        quiet_since: float | None = None
        rss_limit = self.baseline_rss + memory_mb * 1024 * 1024 if memory_mb > 0 else 0
        last_poll = 0.0
        base_deadline = deadline
        paused_seen = 0.0
        stall_limit = self.stall_floor
        timing_over = False
        while True:
            now = time.perf_counter()
            if self.pre_run is not None:
                self.pre_run.poll()
            if keeper is not None:
                if not timing_over and run.go_at is not None and run.timed_at is not None and self._settled():
                    timing_over = True  # what is left (checks, the result) needs no quiet device
                    keeper.end_timing(lambda: self._pausable(child, reference))
                if (run.go_at is None or timing_over) and quiet_since is None and run.status is None:  # not timing
                    keeper.turn(lambda: self._pausable(child, reference), self._settled)
                deadline = base_deadline + keeper.paused_s
                if run.progress_at is not None:  # stopped time is no lack of progress either
                    run.progress_at += keeper.paused_s - paused_seen
                paused_seen = keeper.paused_s
                if keeper.paused:
                    time.sleep(0.005)
                    continue
            if now > deadline and run.status is None:
                run.reason = "timeout"
                self._kill(pid)
            elif (
                run.status is None
                and not run.reason
                and run.go_at is None  # the timing stage is not watched
                and quiet_since is None
                and run.progress_at is not None
                and not (run.plan_asked and not plan_sent)  # waiting for the reference child is not its stall
                and now - run.progress_at > stall_limit
            ):
                run.reason = "timeout"
                run.stalled_s = stall_limit
                self._kill(pid)
            spares = [spare for spare in self.spares if not spare.ready]
            watched = ([] if eof else [read_fd]) + [spare.result_fd for spare in spares]
            if ref_open and reference is not None:
                watched.append(reference.child.result_fd)
            ready, _, _ = select.select(watched, [], [], 0.02) if watched else ([], [], [])
            if not watched:
                time.sleep(0.005)
            for spare in spares:
                if spare.result_fd in ready:
                    self._read_readiness(spare)
            poll_memory = bool(rss_limit) and now - last_poll > RSS_POLL_S
            if ref_open and reference is not None:
                limit = rss_limit if poll_memory else 0
                ref_open = self._follow_reference(reference, ready, judge, deadline, limit)
            if judge is not None and judge.reference_failure is not None and run.status is None and not run.reason:
                self._retire(pid)
                break
            if read_fd in ready:
                chunk = os.read(read_fd, 1 << 20)
                if chunk:
                    run.feed(chunk)
                    if run.oversized and run.failure is None:
                        run.failure = StageError(ErrorType.SHAPE_MISMATCH, run.oversized)
                        self._retire(pid)
                        break
                    if run.quiet_asked and quiet_since is None:
                        quiet_since = now
                    if run.status is None and not run.reason and run.reply() is not None:
                        run.done_at = time.perf_counter()
                        self._retire(pid)
                        break
                    if run.garbled and run.failure is None and not run.reason:  # the harness never writes that
                        run.failure = StageError(ErrorType.SANDBOX_VIOLATION, GARBLED_STREAM)
                        self._retire(pid)
                        break
                else:
                    eof = True
            if run.plan_asked and reference is not None and not reference.plan_started:
                self._start_plan(reference, judge)
            if (
                run.plan_asked
                and not plan_sent
                and judge is not None
                and judge.ready
                and judge.reference_failure is None
            ):
                plan_sent = self._answer(child, encode_message(judge.plan()))
                run.plan_sent = plan_sent
                run.progress_at = time.perf_counter()
                run.trial_limit = judge.trial_bytes_limit()
                if self.stall_scaled:
                    stall_limit += WATCHDOG_REF_FACTOR.get(self.backend, 0.0) * judge.slowest_ref_s
            if run.trials and judge is not None and self._judge_trials(run, judge):
                self._retire(pid)
                break
            if quiet_since is not None and self._may_time(keeper, run, now - quiet_since):
                quiet_since = None
                run.quiet_asked = False
                run.go_at = time.perf_counter()  # from now on it times: nothing pauses or watches it
                self._answer(child, GO)
            if run.status is None:
                done, wait_status = os.waitpid(pid, os.WNOHANG)
                if done:
                    run.status = wait_status
                    self._kill_group(pid)
            if run.status is not None and eof:
                break
            if run.status is not None and not eof:
                # The child is gone; whatever is left in the pipe is all there is.
                more, _, _ = select.select([read_fd], [], [], 0.2)
                if not more:
                    break
                continue
            if eof and run.status is None and time.perf_counter() > deadline + 5:
                self._kill(pid)
            if poll_memory and run.status is None:
                last_poll = now
                if rss_bytes(pid) > rss_limit:
                    run.reason = "memory"
                    self._kill(pid)

    @staticmethod
    def _start_plan(reference: ChildStream, judge: Any) -> None:
        """The candidate's child asked for the plan: a reference child that waits for that
        (:attr:`.job.Job.defer_plan`) is told to build it."""
        reference.plan_started = True
        if not Zygote._answer(reference.child, BUILD_PLAN) and judge is not None:
            judge.reference_failure = judge.reference_failure or harness_failure("the reference child went away")

    def _may_time(self, keeper: LeaseKeeper | None, run: ChildStream, asked_s: float) -> bool:
        """Whether the child that asked for a quiet device may time now.

        Without a lease: once this worker's own spares and leftovers are quiet (or after
        :data:`QUIET_MAX_S`). With one: once this zygote holds the device alone and its own
        children are quiet; it times anyway (without ``lease_at``) after :data:`LEASE_EXTRA_MAX_S`.
        """
        if keeper is None:
            return self._quiet() or asked_s > QUIET_MAX_S
        now = time.perf_counter()
        if run.lease_at is None:
            # a child of this job still exiting keeps the device held shared until it is gone
            if not self._settled() and asked_s <= LEASE_EXTRA_MAX_S:
                return False
            if not keeper.want_exclusive(lambda: [spare.pid for spare in self.spares if not spare.ready]):
                return keeper.wanted_for() > LEASE_EXTRA_MAX_S
            run.lease_at = now  # this worker's own quiet wait starts now
        return self._quiet() or now - run.lease_at > QUIET_MAX_S

    def _pausable(self, child: Child, reference: ChildStream | None) -> list[int]:
        """This job's processes that work on the device: its children and the spares still starting."""
        pids = [child.pid] + [spare.pid for spare in self.spares if not spare.ready]
        if reference is not None and reference.status is None:
            pids.append(reference.child.pid)
        return pids

    def _follow_reference(
        self, reference: ChildStream, ready: list[int], judge: Any, deadline: float, rss_limit: int
    ) -> bool:
        """Read the reference child's pipe; hand its payload to the judge. False once it is done."""
        child = reference.child
        if child.result_fd in ready:
            chunk = os.read(child.result_fd, 1 << 20)
            if chunk:
                reference.feed(chunk)
                payload = reference.payload()
                if payload is not None:
                    judge.load_reference(*payload)
                    return False
                if not reference.garbled:
                    return True
            return self._reference_gone(reference, judge, deadline)
        if time.perf_counter() > deadline:
            judge.reference_failure = harness_failure(
                "the task's reference did not finish its trials within the time limit", timeout=True
            )
            return False
        if rss_limit and rss_bytes(child.pid) > rss_limit:
            judge.reference_failure = harness_failure("the task's reference ran past the memory limit", oom=True)
            return False
        done, status = os.waitpid(child.pid, os.WNOHANG)
        if done:
            reference.status = status
            more, _, _ = select.select([child.result_fd], [], [], 0.2)
            if more:
                return True  # what it wrote before it went is read on the next turn
            return self._reference_gone(reference, judge, deadline)
        return True

    def _reference_gone(self, reference: ChildStream, judge: Any, deadline: float) -> bool:
        """The reference child ended without its results: restarted if it never took its job
        (True: keep following it), else the evaluation's harness failure (False)."""
        if not reference.taken and self._restart_reference(reference, deadline):
            return True
        judge.reference_failure = harness_failure("the reference child ended without its results")
        return False

    def _judge_trials(self, run: ChildStream, judge: Any) -> bool:
        """Judge the trials that have arrived; True when one failed (the evaluation ends)."""
        while run.trials:
            header, body = run.trials.pop(0)
            if isinstance(header.get("result"), dict):
                run.partial = header["result"]
            verdict = judge.judge(header, body)
            if verdict.action == "fail":
                run.failure = verdict.failure
                return True
            run.judged_at = time.perf_counter()
            if run.progress_at is not None:  # the judge's time is not the candidate's stall
                run.progress_at = run.judged_at
            self._answer(run.child, PROBE if verdict.action == "probe" else CONTINUE)
        return False

    def _retire(self, pid: int) -> None:
        """End a child whose part is over; it is reaped later (``exiting``)."""
        self._kill_group(pid)
        self.exiting.append(pid)

    @staticmethod
    def _answer(child: Child, data: bytes) -> bool:
        """Write ``data`` on the child's job pipe; False if it is gone."""
        try:
            write_all(child.job_fd, data)
        except OSError:
            return False
        return True

    def _settle(self, until: float) -> None:
        """Wait (up to ``until``) until every earlier child has exited.

        The reply went out before the last child's exit; its device memory is free again only
        once it is gone, and the next child must not find it still taken.
        """
        self._reap()
        while self.exiting and time.perf_counter() < until:
            time.sleep(0.002)
            self._reap()

    def _quiet(self) -> bool:
        """No other child of this worker is starting or tearing down a device context."""
        return self._settled() and all(spare.ready for spare in self.spares)

    def _settled(self) -> bool:
        """Every child this worker retired has exited (reaped now where it has)."""
        self._reap()
        return not self.exiting

    def end_job(self) -> None:
        """After the job's reply: hold the device until the job's children have exited and its
        judging child has given its device memory back (a teardown or a free next to a
        neighbour's timing moves it, ``bench/gpu_quiet_probe.py``), then stop the spares still
        starting their contexts and let go of the device (:mod:`.device_lease`). The two are
        waited for together; a judge that has not said :data:`.wire.FREED` within
        :data:`FREE_MAX_S` (or said anything else) is replaced."""
        now = time.perf_counter()
        until, freed_by = now + SETTLE_MAX_S, now + FREE_MAX_S
        while True:
            freeing = [spare for spare in self.spares if spare.freeing]
            said = select.select([spare.result_fd for spare in freeing], [], [], 0)[0] if freeing else []
            for spare in freeing:
                if spare.result_fd in said or time.perf_counter() > freed_by:
                    if not self._read_freed(spare, spare.result_fd in said):
                        self.spares.remove(spare)
                        self._discard(spare)  # its pipe is not what the next job expects
            if (self._settled() and not any(spare.freeing for spare in self.spares)) or time.perf_counter() > until:
                break
            time.sleep(0.002)
        keeper, self.keeper = self.keeper, None
        if keeper is not None:
            self.stopped_spares = [spare.pid for spare in self.spares if not spare.ready]
            keeper.leave(self.stopped_spares)

    @staticmethod
    def _read_freed(child: Child, readable: bool) -> bool:
        """Whether a judging child's next byte is :data:`.wire.FREED` (False where it has none)."""
        child.freeing = False
        if not readable:
            return False
        try:
            return os.read(child.result_fd, 1) == FREED
        except OSError:
            return False

    @staticmethod
    def _kill(pid: int) -> None:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except OSError:
                pass

    @staticmethod
    def _kill_group(pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)  # leftovers (compiler subprocesses) of a finished child
        except OSError:
            pass

    proto_in = -1
    proto_out = -1
