"""The static stage out of the caller's process, under a time limit.

:func:`check_source_bounded` runs :func:`.static.check_source` in a helper process (a fresh
interpreter that imports only the static stage) and waits for its answer at most ``timeout_s``
seconds. The caller's thread only writes the source to a pipe and waits on another: a source
built to make the checker slow (100 KB of deep attribute chains) costs the helper's CPU, not the
caller's, and no more wall time than the limit. A helper that runs past the limit is killed (a
new one starts for the next check) and the verdict is a static ``timeout`` (not a hack); one that
dies is a static failure too. Helpers are reused (one per concurrent check; a few are kept idle).

Where no helper process can be started at all, the check runs in the caller as before, with a
warning, once per process.

Imports neither torch nor triton.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.evaluation.static import StaticReport, Violation, check_source

#: seconds one static check may take (``AKG_STATIC_TIMEOUT_S`` overrides)
DEFAULT_TIMEOUT_S = 5.0
TIMEOUT_ENV = "AKG_STATIC_TIMEOUT_S"
#: the longest source the static stage accepts (characters)
MAX_SOURCE_CHARS = 1_000_000
#: address space of a helper process (parsing is the only thing it does)
HELPER_MEMORY_BYTES = 4 << 30
#: the longest a helper may take to start (a fresh interpreter importing the static stage)
START_TIMEOUT_S = 60.0
#: idle helpers kept for the next checks
MAX_IDLE = 4
_HEADER_BYTES = 8

BOOTSTRAP = """
import os, sys, types
root = sys.argv[1]
sys.path.insert(0, root)
pkg = types.ModuleType("ascend_kernel_gym")  # a bare package: the static stage needs nothing else
pkg.__path__ = [os.path.join(root, "ascend_kernel_gym")]
sys.modules["ascend_kernel_gym"] = pkg
from ascend_kernel_gym.evaluation.static_runner import helper_main
helper_main()
"""


class HelperError(Exception):
    """A helper process could not be started, or stopped answering."""


def default_timeout_s() -> float:
    """The time limit of one static check: ``AKG_STATIC_TIMEOUT_S`` or :data:`DEFAULT_TIMEOUT_S`."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


# --- the helper's side --------------------------------------------------------------------------
def report_to_dict(report: StaticReport) -> dict[str, Any]:
    """A JSON-ready form of ``report`` (the helper's answer)."""
    return {
        "violations": [
            {"error_type": v.error_type.value, "message": v.message, "line": v.line, "hack": v.hack}
            for v in report.violations
        ],
        "warnings": list(report.warnings),
        "kernels": list(report.kernels),
        "paths": sorted(report.paths),
        "escaping": sorted(report.escaping),
    }


def report_from_dict(data: dict[str, Any]) -> StaticReport:
    """The inverse of :func:`report_to_dict`."""
    return StaticReport(
        violations=[
            Violation(ErrorType(v["error_type"]), str(v["message"]), v["line"], v.get("hack") is not False)
            for v in data["violations"]
        ],
        warnings=[str(w) for w in data["warnings"]],
        kernels=[str(k) for k in data["kernels"]],
        paths={str(p) for p in data["paths"]},
        escaping={str(p) for p in data["escaping"]},
    )


def helper_main() -> None:
    """The helper process: answer one framed source on stdin with one framed JSON report on stdout, until EOF."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (HELPER_MEMORY_BYTES, HELPER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = stdin.read(_HEADER_BYTES)
        if len(header) < _HEADER_BYTES:
            return
        payload = stdin.read(int.from_bytes(header, "little"))
        try:
            report = check_source(payload.decode("utf-8", errors="surrogatepass"))
            answer = report_to_dict(report)
        except MemoryError:
            answer = {"error": "the code needs too much memory to check"}
        data = json.dumps(answer).encode("utf-8", errors="surrogatepass")
        stdout.write(len(data).to_bytes(_HEADER_BYTES, "little") + data)
        stdout.flush()


# --- the caller's side --------------------------------------------------------------------------
class _Helper:
    """One helper process and its pipes."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT") if k in os.environ}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", BOOTSTRAP, root],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                close_fds=True,
                start_new_session=True,  # Ctrl-C in a terminal does not hit it
            )
        except OSError as exc:
            raise HelperError(f"could not start the static checker's process: {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)

    def check(self, code: str, timeout_s: float) -> dict[str, Any] | None:
        """The helper's answer for ``code``, or None when it ran past ``timeout_s`` (then it is killed).

        Raises:
            HelperError: the helper died or answered garbage.
        """
        data = code.encode("utf-8", errors="surrogatepass")
        pending = memoryview(len(data).to_bytes(_HEADER_BYTES, "little") + data)
        deadline = time.monotonic() + timeout_s
        answer = bytearray()
        needed: int | None = None
        poller = select.poll()
        poller.register(self._out, select.POLLIN)
        poller.register(self._in, select.POLLOUT)
        while needed is None or len(answer) < needed + _HEADER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return None
            events = dict(poller.poll(max(1, int(left * 1000))))
            readable = events.get(self._out, 0) & (select.POLLIN | select.POLLHUP | select.POLLERR)
            writable = events.get(self._in, 0) & (select.POLLOUT | select.POLLERR)
            if writable:
                try:
                    pending = pending[os.write(self._in, pending) :]
                except BlockingIOError:
                    pass
                except OSError as exc:
                    raise HelperError(f"the static checker's process stopped reading ({exc})") from exc
                if not pending:
                    poller.unregister(self._in)
            if readable:
                chunk = os.read(self._out, 1 << 16)
                if not chunk:
                    raise HelperError(f"the static checker's process ended ({self._exit_text()})")
                answer += chunk
                if needed is None and len(answer) >= _HEADER_BYTES:
                    needed = int.from_bytes(answer[:_HEADER_BYTES], "little")
        try:
            return json.loads(bytes(answer[_HEADER_BYTES:]).decode("utf-8", errors="surrogatepass"))
        except ValueError as exc:
            raise HelperError("the static checker's process answered garbage") from exc

    def _exit_text(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "no exit status"
        if code < 0:
            try:
                return signal.Signals(-code).name
            except ValueError:
                return f"signal {-code}"
        return f"exit status {code}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class StaticRunner:
    """Runs static checks in helper processes, one per concurrent check, each under a time limit."""

    def __init__(self) -> None:
        self._idle: list[_Helper] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        #: checks that ran past their limit (their helper was killed)
        self.timeouts = 0
        self._warned = False

    def check(self, code: str, timeout_s: float | None = None) -> StaticReport:
        """:func:`.static.check_source` in a helper process, at most ``timeout_s`` seconds. Never raises."""
        limit = default_timeout_s() if timeout_s is None else float(timeout_s)
        if not isinstance(code, str):
            code = ""
        if len(code) > MAX_SOURCE_CHARS:
            return _failure(
                ErrorType.TIMEOUT,
                f"the code is too large to check ({len(code)} characters; the static stage takes at most "
                f"{MAX_SOURCE_CHARS}); submit a shorter kernel file",
            )
        try:
            helper = self._acquire()
        except HelperError as exc:
            self._warn_in_process(exc)
            return check_source(code)
        try:
            answer = helper.check(code, limit)
        except HelperError as exc:
            helper.kill()
            return _failure(ErrorType.SYNTAX, f"the code could not be checked: {exc}")
        if answer is None:
            with self._lock:
                self.timeouts += 1
            return _failure(
                ErrorType.TIMEOUT,
                f"the static check did not finish within {limit:g} s (the code is too large or too deeply nested "
                "to check); submit a shorter, flatter kernel file",
            )
        self._release(helper)
        if "error" in answer:
            return _failure(ErrorType.SYNTAX, f"the code could not be checked: {answer['error']}")
        try:
            return report_from_dict(answer)
        except (KeyError, TypeError, ValueError):
            return _failure(ErrorType.SYNTAX, "the code could not be checked: the checker's answer was malformed")

    def _acquire(self) -> _Helper:
        if self._pid != os.getpid():  # a forked copy: the idle helpers' pipes are the parent's
            self._idle, self._lock, self._pid = [], threading.Lock(), os.getpid()
        with self._lock:
            while self._idle:
                helper = self._idle.pop()
                if helper.alive():
                    return helper
                helper.kill()
        return _Helper()

    def _release(self, helper: _Helper) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE and helper.alive():
                self._idle.append(helper)
                return
        helper.kill()

    def _warn_in_process(self, exc: HelperError) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(
            f"{exc}; the static stage runs in this process, without its time limit", RuntimeWarning, stacklevel=3
        )

    def close(self) -> None:
        """Stop the idle helpers (a check in flight finishes with its own)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for helper in idle:
            helper.kill()


def _failure(kind: ErrorType, message: str) -> StaticReport:
    return StaticReport(violations=[Violation(kind, message)])


_RUNNER = StaticRunner()
atexit.register(_RUNNER.close)


def check_source_bounded(code: str, timeout_s: float | None = None) -> StaticReport:
    """The static stage for ``code``, run out of this process under a time limit. Never raises.

    Args:
        code: the candidate's source.
        timeout_s: the limit in seconds; ``None`` uses :func:`default_timeout_s`.
    """
    return _RUNNER.check(code, timeout_s)
