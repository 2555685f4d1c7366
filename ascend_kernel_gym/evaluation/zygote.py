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
reaped), classification of deaths (timeout, signal, exit without a result), and removal of
the child's temporary directory.

Protocol with the calling process (over the zygote's stdin / stdout, :mod:`.wire` messages;
both ends are harness code): a config dict first, then ``{"job": Job, "timeout": s}`` per
evaluation, answered by a result dict; ``None`` shuts the zygote down.
"""

from __future__ import annotations

import gc
import json
import os
import secrets
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.evaluation.wire import (
    GO,
    JOB_TAKEN,
    QUIET,
    QUIET_MAX_S,
    READY,
    RESULT,
    decode_result,
    encode_message,
    read_message,
    write_message,
)

#: the longest a job waits for earlier children to finish exiting before it is handed out anyway
SETTLE_MAX_S = 30.0
RSS_POLL_S = 0.05


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def device_touched() -> bool:
    """Whether torch or Triton initialised a device in this process (it must not, before fork)."""
    import torch

    touched = bool(torch.cuda.is_initialized())
    try:
        import triton

        config = triton.runtime.driver  # a DriverConfig: its drivers are created lazily
        touched = touched or any(getattr(config, name, None) is not None for name in ("_default", "_active"))
    except Exception:  # noqa: BLE001, S110 - other triton layouts
        pass
    return touched


@dataclass
class _Child:
    """A forked evaluation child, seen from the zygote."""

    pid: int
    job_fd: int  # the zygote writes the job (and later GO) here
    result_fd: int  # the child writes its control bytes and its result here
    sandbox: str
    #: READY seen (or its pipe closed): it no longer starts a device context
    ready: bool = False


class _Run:
    """What one child has written on its result pipe so far (control bytes, then the result)."""

    def __init__(self, child: _Child, token: str) -> None:
        self.child = child
        self.token = token
        self.taken = False
        self.quiet_asked = False
        self.result_bytes: bytearray | None = None  # from RESULT on
        self.garbled = False
        self.status: int | None = None
        self.reason = ""

    def feed(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view and self.result_bytes is None:
            byte, view = bytes(view[:1]), view[1:]
            if byte == READY:
                self.child.ready = True
            elif byte == JOB_TAKEN:
                self.taken = True
            elif byte == QUIET:
                self.quiet_asked = True
            else:  # RESULT; anything else is a broken stream, and no result will be accepted
                self.garbled = byte != RESULT
                self.result_bytes = bytearray()
        if view and self.result_bytes is not None:
            self.result_bytes += view

    def reply(self) -> dict[str, Any] | None:
        """The child's result, once complete, well-formed and carrying the job's token."""
        if not self.taken or self.garbled or self.result_bytes is None:
            return None
        return decode_result(self.result_bytes, self.token)


class Zygote:
    """State of one fork server (lives in the zygote process)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.backend: str = config["backend"]
        self.root = tempfile.mkdtemp(prefix="akg-pool-", dir=config.get("tmp_root"))
        self.torch_threads = int(config.get("torch_threads", 1))
        self.prefork = bool(config.get("prefork", True))
        self.warm_cache: str | None = None
        self.compiler_warm = False
        self.baseline_rss = 0
        #: the child forked ahead for the next job (``prefork``)
        self.spare: _Child | None = None
        #: children that reported (or were killed) and are not reaped yet
        self.exiting: list[int] = []
        #: the zygote's own pipe ends, closed in every child
        self.harness_fds: set[int] = set()

    # --- warm-up ------------------------------------------------------------------------------
    def warm(self) -> dict[str, Any]:
        started = time.perf_counter()
        import torch
        import triton
        import triton.language  # noqa: F401

        torch.set_num_threads(self.torch_threads)
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
            self._warm_device()
        # Everything imported so far is permanent: children's collections (the harness runs one
        # before every reference call) then scan only their own objects, and pages stay shared.
        gc.collect()
        gc.freeze()
        self.baseline_rss = _rss_bytes(os.getpid())
        return {
            "warm_s": round(time.perf_counter() - started, 3),
            "pid": os.getpid(),
            "warm_cache": self.warm_cache is not None,
            "compiler_warm": self.compiler_warm,
            "device_touched": device_touched(),
        }

    def _warm_device(self) -> None:
        """Pre-import the device compiler paths and fill a Triton cache the children copy.

        The cache is filled by a throw-away child (CUDA must not be initialised in the zygote):
        it compiles Triton's driver utilities and a small kernel, so each evaluation child only
        compiles the candidate's own kernels.
        """
        if self.backend == "cuda":
            for name in ("triton.backends.nvidia.driver", "triton.backends.nvidia.compiler"):
                try:
                    __import__(name)
                except Exception:  # noqa: BLE001, S110
                    pass
            try:
                from triton.backends.nvidia import driver as nvidia_driver

                if hasattr(nvidia_driver, "libcuda_dirs"):
                    nvidia_driver.libcuda_dirs()  # runs ldconfig once, here, instead of in every child
            except Exception:  # noqa: BLE001, S110
                pass
        warm_dir = os.path.join(self.root, "warm_triton_cache")
        os.makedirs(warm_dir, exist_ok=True)
        target_file = os.path.join(self.root, "target.json")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.environ["TRITON_CACHE_DIR"] = warm_dir
                from ascend_kernel_gym.evaluation import warmup

                warmup.run_device_warmup(self.backend, target_file)
                code = 0
            finally:
                os._exit(code)
        deadline = time.monotonic() + 300
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = -1
                break
            time.sleep(0.05)
        if status == 0:
            self.warm_cache = warm_dir
            self.compiler_warm = self._warm_compiler(target_file)

    def _warm_compiler(self, target_file: str) -> bool:
        """Compile the warm-up kernels here, for the device's target but without the device."""
        try:
            with open(target_file) as handle:
                target = json.load(handle)
        except (OSError, ValueError):
            return False
        scratch = os.path.join(self.root, "zygote_triton_cache")
        previous = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = scratch
        try:
            from ascend_kernel_gym.evaluation import warmup

            warmup.run_compile_warmup(target)
            return not device_touched()
        except Exception:  # noqa: BLE001 - an optimisation: children compile cold without it
            return False
        finally:
            if previous is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = previous
            shutil.rmtree(scratch, ignore_errors=True)

    # --- children -----------------------------------------------------------------------------
    def _fork_child(self) -> _Child:
        """Fork a child that sets itself up, initialises the device and waits for its job."""
        sandbox = tempfile.mkdtemp(prefix="akg-sandbox-", dir=self.root)
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: keeps only its own two pipe ends
            for fd in (0, 1, self.proto_in, self.proto_out, job_write, result_read, *self.harness_fds):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                from ascend_kernel_gym.evaluation.child import child_entry
                from ascend_kernel_gym.evaluation.process import ChildSetup

                setup = ChildSetup(sandbox, self.backend, self.warm_cache, self.torch_threads)
                child_entry(setup, job_read, result_write)
            finally:
                os._exit(70)
        os.close(job_read)
        os.close(result_write)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self.harness_fds |= {job_write, result_read}
        return _Child(pid, job_write, result_read, sandbox)

    def _take_spare(self) -> _Child | None:
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        try:
            done, _ = os.waitpid(spare.pid, os.WNOHANG)
        except ChildProcessError:
            done = spare.pid
        if done:  # it died while waiting (it never had a job): start over with a fresh child
            self._discard(spare, reaped=True)
            return None
        return spare

    def _send(self, child: _Child, message: dict[str, Any], deadline: float) -> bool:
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

    def _discard(self, child: _Child, reaped: bool = False) -> None:
        """Kill a child and release its pipes and sandbox (it is reaped now or later).

        ``reaped``: already waited for; its pid may belong to another process by now.
        """
        if not reaped:
            self._kill(child.pid)
            self.exiting.append(child.pid)
        self._release_pipes(child)
        shutil.rmtree(child.sandbox, ignore_errors=True)

    def _release_pipes(self, child: _Child) -> None:
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
        if self.prefork and self.spare is None:
            self.spare = self._fork_child()

    def shutdown(self) -> None:
        if self.spare is not None:
            self._discard(self.spare)
            self.spare = None
        for pid in self.exiting:
            self._kill(pid)
        self._reap(block=True)

    # --- one job ------------------------------------------------------------------------------
    def run_job(self, job: Any, timeout: float, memory_mb: int) -> dict[str, Any]:
        started = time.perf_counter()
        deadline = started + timeout
        token = secrets.token_hex(16)
        self._settle(min(deadline, time.perf_counter() + SETTLE_MAX_S))
        child = self._take_spare() or self._fork_child()
        for attempt in range(2):
            job.sandbox = child.sandbox
            job.warm_cache = self.warm_cache
            job.torch_threads = self.torch_threads
            sent = self._send(child, {"job": job, "token": token, "sent_at": time.monotonic()}, deadline)
            if attempt == 0:
                self.start_spare()  # the next job's child gets ready while this one runs
            run = _Run(child, token) if not sent else self._supervise(child, deadline, memory_mb, token)
            if run.taken or run.reason or attempt:
                break
            # The child died (or would not read) before it took the job: a spare killed or broken
            # while it waited is the harness's problem, never the candidate's. Once more, fresh.
            self._discard(child, reaped=run.status is not None)
            child = self._fork_child()
        wall = time.perf_counter() - started
        reply = run.reply()
        if not run.taken and not run.reason:
            run.reason = "timeout" if time.perf_counter() > deadline else "not_started"
            self._discard(child, reaped=run.status is not None)
        self._release_pipes(child)
        output_tail = ""
        if reply is None:
            output_tail = self._output_tail(child.sandbox, job.output_cap)
        shutil.rmtree(child.sandbox, ignore_errors=True)
        return {
            "result": reply,
            "status": run.status,
            "reason": run.reason,
            "wall_s": round(wall, 4),
            "output_tail": output_tail,
            "sandbox": child.sandbox,
        }

    def _supervise(self, child: _Child, deadline: float, memory_mb: int, token: str) -> _Run:
        """Follow one child until its result is in or it is gone.

        Returns as soon as a complete, valid result has arrived: the child only exits after
        that, and its teardown (the device context above all) need not delay the reply; it is
        killed and reaped later. Meanwhile answers the child's QUIET request once the spare is
        ready and earlier children are reaped, and enforces the deadline and the memory cap.
        """
        run = _Run(child, token)
        pid, read_fd = child.pid, child.result_fd
        eof = False
        quiet_since: float | None = None
        rss_limit = self.baseline_rss + memory_mb * 1024 * 1024 if memory_mb > 0 else 0
        last_poll = 0.0
        while True:
            now = time.perf_counter()
            if now > deadline and run.status is None:
                run.reason = "timeout"
                self._kill(pid)
            spare = self.spare if self.spare is not None and not self.spare.ready else None
            watched = ([] if eof else [read_fd]) + ([spare.result_fd] if spare is not None else [])
            ready, _, _ = select.select(watched, [], [], 0.02) if watched else ([], [], [])
            if not watched:
                time.sleep(0.005)
            if spare is not None and spare.result_fd in ready:
                spare.ready = True  # READY, or its pipe closed: either way it starts no context now
                os.read(spare.result_fd, 1)
            if read_fd in ready:
                chunk = os.read(read_fd, 1 << 20)
                if chunk:
                    run.feed(chunk)
                    if run.quiet_asked and quiet_since is None:
                        quiet_since = now
                    if run.status is None and not run.reason and run.reply() is not None:
                        self._kill_group(pid)
                        self.exiting.append(pid)
                        break
                else:
                    eof = True
            if quiet_since is not None and (self._quiet() or now - quiet_since > QUIET_MAX_S):
                quiet_since = None
                run.quiet_asked = False
                try:
                    os.write(child.job_fd, GO)
                except OSError:
                    pass
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
            if rss_limit and now - last_poll > RSS_POLL_S and run.status is None:
                last_poll = now
                if _rss_bytes(pid) > rss_limit:
                    run.reason = "memory"
                    self._kill(pid)
        return run

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
        self._reap()
        return not self.exiting and (self.spare is None or self.spare.ready)

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

    @staticmethod
    def _output_tail(sandbox: str, cap: int) -> str:
        path = os.path.join(sandbox, "output.txt")
        try:
            with open(path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - cap))
                return handle.read(cap).decode("utf-8", errors="replace")
        except OSError:
            return ""

    proto_in = -1
    proto_out = -1


def main() -> None:
    """Zygote entry point (started by :mod:`.pool` with a clean environment)."""
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints from libraries go to stderr, not into the protocol
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the calling process decides when we stop
    config = read_message(proto_in)
    if not isinstance(config, dict):
        return
    zygote = Zygote(config)
    zygote.proto_in = proto_in
    zygote.proto_out = proto_out
    try:
        info = zygote.warm()
        zygote.start_spare()
        write_message(proto_out, {"ready": True, "prefork": zygote.prefork, **info})
        while True:
            message = read_message(proto_in)
            if message is None:
                break
            reply = zygote.run_job(message["job"], float(message["timeout"]), int(message.get("memory_mb", 0)))
            write_message(proto_out, reply)
    finally:
        zygote.shutdown()
        shutil.rmtree(zygote.root, ignore_errors=True)


BOOTSTRAP = """
import os, sys, types
root = sys.argv[1]
sys.path.insert(0, root)
if "ascend_kernel_gym" not in sys.modules:
    # A bare package module: the evaluator needs neither gymnasium nor the environment registration.
    pkg = types.ModuleType("ascend_kernel_gym")
    pkg.__path__ = [os.path.join(root, "ascend_kernel_gym")]
    pkg.__version__ = sys.argv[2]
    sys.modules["ascend_kernel_gym"] = pkg
from ascend_kernel_gym.evaluation.zygote import main
main()
"""

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
