"""The warm fork server behind each evaluator worker.

One zygote process per worker imports torch and triton once (with ``TRITON_INTERPRET=1`` on the
interpreter backend), warms Triton's lazy paths, and then, for every job, forks a fresh child
that runs :func:`.child.child_main`. The zygote never runs candidate code and never initialises
a device (CUDA / NPU must not be initialised before ``fork``), so every child starts from the
same clean, warm state.

The zygote supervises each child: wall-clock deadline (``SIGKILL`` to the child's process
group), resident-memory cap (polled from ``/proc``), collection of the one result message,
classification of deaths (timeout, signal, exit without a result), and removal of the child's
temporary directory.

Protocol with the calling process (over the zygote's stdin / stdout, 8-byte length + pickle;
both ends are harness code): a config dict first, then ``{"job": Job, "timeout": s}`` per
evaluation, answered by a result dict; ``None`` shuts the zygote down.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import secrets
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
from typing import Any

_HEADER = struct.Struct("<Q")
RSS_POLL_S = 0.05


def read_message(fd: int) -> Any:
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    payload = _read_exact(fd, size)
    if payload is None:
        return None
    return pickle.loads(payload)  # noqa: S301 - both ends are the harness


def write_message(fd: int, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _device_touched() -> bool:
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


class Zygote:
    """State of one fork server (lives in the zygote process)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.backend: str = config["backend"]
        self.root = tempfile.mkdtemp(prefix="akg-pool-", dir=config.get("tmp_root"))
        self.torch_threads = int(config.get("torch_threads", 1))
        self.warm_cache: str | None = None
        self.compiler_warm = False
        self.baseline_rss = 0

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

        import ascend_kernel_gym.evaluation.child
        import ascend_kernel_gym.evaluation.correctness
        import ascend_kernel_gym.evaluation.profiling
        import ascend_kernel_gym.evaluation.recorder  # noqa: F401

        for optional in ("typing_extensions", "triton.language.extra", "triton.language.extra.libdevice"):
            try:
                __import__(optional)
            except Exception:  # noqa: BLE001, S110 - optional modules
                pass
        for optional in ("ascend_kernel_gym.evaluation.ascend_checks", "ascend_kernel_gym.evaluation.cost_model"):
            try:
                __import__(optional)
            except Exception:  # noqa: BLE001, S110 - written by another part; absent is fine
                pass
        from ascend_kernel_gym.evaluation.child import _settle_lazy_imports

        _settle_lazy_imports()  # imports torch._dynamo once here instead of in every child
        if self.backend == "interpreter":
            from ascend_kernel_gym.evaluation import _warmup, interpreter_compat

            interpreter_compat.install()  # NumPy >= 2.4 with triton <= 3.6
            _warmup.run_interpreter_warmup()
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
            "device_touched": _device_touched(),
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
                from ascend_kernel_gym.evaluation import _warmup

                _warmup.run_device_warmup(self.backend, target_file)
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
            from ascend_kernel_gym.evaluation import _warmup

            _warmup.run_compile_warmup(target)
            return not _device_touched()
        except Exception:  # noqa: BLE001 - an optimisation: children compile cold without it
            return False
        finally:
            if previous is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = previous
            shutil.rmtree(scratch, ignore_errors=True)

    # --- one job ------------------------------------------------------------------------------
    def run_job(self, job: Any, timeout: float, memory_mb: int) -> dict[str, Any]:
        sandbox = tempfile.mkdtemp(prefix="akg-sandbox-", dir=self.root)
        job.sandbox = sandbox
        job.warm_cache = self.warm_cache
        job.torch_threads = self.torch_threads
        token = secrets.token_hex(16)
        read_fd, write_fd = os.pipe()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_fd)
            for fd in (0, 1, self.proto_in, self.proto_out):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                from ascend_kernel_gym.evaluation.child import child_main

                child_main(job, write_fd, token)
            finally:
                os._exit(70)
        os.close(write_fd)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        data, status, reason = self._supervise(pid, read_fd, started + timeout, memory_mb)
        os.close(read_fd)
        wall = time.perf_counter() - started
        reply = self._decode(data, token)
        output_tail = ""
        if reply is None:
            output_tail = self._output_tail(sandbox, job.output_cap)
        shutil.rmtree(sandbox, ignore_errors=True)
        return {
            "result": reply,
            "status": status,
            "reason": reason,
            "wall_s": round(wall, 4),
            "output_tail": output_tail,
            "sandbox": sandbox,
        }

    def _supervise(self, pid: int, read_fd: int, deadline: float, memory_mb: int) -> tuple[bytes, int | None, str]:
        chunks: list[bytes] = []
        reason = ""
        status: int | None = None
        eof = False
        rss_limit = self.baseline_rss + memory_mb * 1024 * 1024 if memory_mb > 0 else 0
        last_poll = 0.0
        while True:
            now = time.perf_counter()
            if now > deadline and status is None:
                reason = "timeout"
                self._kill(pid)
            if not eof:
                ready, _, _ = select.select([read_fd], [], [], 0.02)
                if ready:
                    chunk = os.read(read_fd, 1 << 20)
                    if chunk:
                        chunks.append(chunk)
                    else:
                        eof = True
            if status is None:
                done, wait_status = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = wait_status
                    self._kill_group(pid)
            if status is not None and eof:
                break
            if status is not None and not eof:
                # The child is gone; whatever is left in the pipe is all there is.
                ready, _, _ = select.select([read_fd], [], [], 0.2)
                if not ready:
                    break
                continue
            if eof and status is None:
                time.sleep(0.005)
                if time.perf_counter() > deadline + 5:
                    self._kill(pid)
            if rss_limit and now - last_poll > RSS_POLL_S and status is None:
                last_poll = now
                if _rss_bytes(pid) > rss_limit:
                    reason = "memory"
                    self._kill(pid)
        return b"".join(chunks), status, reason

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
    def _decode(data: bytes, token: str) -> dict[str, Any] | None:
        if len(data) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack(data[: _HEADER.size])
        payload = data[_HEADER.size : _HEADER.size + size]
        if len(payload) != size:
            return None
        try:
            message = json.loads(payload)
        except ValueError:
            return None
        if (
            not isinstance(message, dict)
            or message.get("token") != token
            or not isinstance(message.get("result"), dict)
        ):
            return None
        return message["result"]

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
        write_message(proto_out, {"ready": True, **info})
        while True:
            message = read_message(proto_in)
            if message is None:
                break
            reply = zygote.run_job(message["job"], float(message["timeout"]), int(message.get("memory_mb", 0)))
            write_message(proto_out, reply)
    finally:
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
