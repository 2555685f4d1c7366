"""The ``ascend_lower`` stage: the candidate's launched kernels lowered through triton-ascend (issue 23).

Runs in the calling process after the evaluation child returned (:meth:`Evaluator.evaluate`), on
the ``interpreter`` and ``cuda`` backends (on ``npu`` the real compile already did it), when the
compile stage passed and kernels launched. The lowering itself
(:func:`ascend_kernel_gym.ascend.lowering.lower_launches`) runs in a process of the triton-ascend
environment (``akg ascend setup``) that :class:`WorkerRunner` starts: a fresh launcher process
(this module, run with ``-m``) enters the OS sandbox (:mod:`.os_sandbox`: namespaces, a read-only
view of that environment, the system libraries and a private scratch directory, no network,
Landlock, seccomp, a memory limit) and then executes the environment's interpreter on the worker
script. The candidate's module never runs there: only its ``@triton.jit`` functions are rebuilt,
as source Triton reads.

Modes, as for the Ascend checks: ``off``; ``warn`` (default: findings go to
``EvalResult.ascend_checks``, errors also to the warnings the agent sees); ``enforce`` (a kernel
that does not lower or overflows UB / L1 fails an otherwise passing evaluation with
``ascend_compile_error``). Where a rule of the Ascend checks and the lowering disagree, the
lowering wins (:data:`SUPERSEDED_RULES`). Without the environment the stage adds an ``info``
finding saying so and nothing else: it never fails a kernel for that.

Imports neither torch nor triton.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ascend_kernel_gym
from ascend_kernel_gym.ascend.lower_env import LowerEnv, load_env
from ascend_kernel_gym.ascend.lower_worker import REPLY_MARK
from ascend_kernel_gym.ascend.lowering import WORKER_PATH, LoweringReport, lower_launches
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.os_sandbox import SandboxPolicy, enter_os_sandbox
from ascend_kernel_gym.evaluation.os_sandbox_paths import BASE_DEVICES, SYSTEM_READ
from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult

LOWER_MODES = ("off", "warn", "enforce")
#: address-space limit of the lowering process (the adapter reserves a lot of virtual memory)
MEMORY_MB = 8192
NOT_SET_UP = "the triton-ascend environment is not set up on this machine (run `akg ascend setup`)"
#: rules of the Ascend checks that the lowering can prove wrong for a kernel it lowered: the front
#: end accepting a construct the rule says it rejects, or allocations that fit where the rule's
#: single-tile estimate said they would not
SUPERSEDED_RULES = {
    "tensor_slicing": "triton-ascend's front end accepted this kernel",
    "break_continue": "triton-ascend's front end accepted this kernel",
    "dtype_call_cast": "triton-ascend's front end accepted this kernel",
    "arange_too_long": "triton-ascend's front end accepted this kernel",
    "ub_overflow": "the lowered kernel's allocations fit in UB",
}
_LAUNCHER_MARK = "AKG-LOWER-SANDBOX "
#: what the caller keeps of the lowering worker's output: its replies, and the start and end of what
#: it printed (the rest is dropped as it arrives)
MAX_REPLY_BYTES = 16 << 20
KEEP_ERROR_BYTES = 64 << 10
#: seconds the caller still reads a killed worker's pipes
DRAIN_AFTER_KILL_S = 5.0
_log = logging.getLogger(__name__)
_WARNED: set[str] = set()


def compile_error_type() -> ErrorType:
    """The error type of a kernel that does not lower (or overflows UB / L1) in ``enforce`` mode."""
    return ErrorType.ASCEND_COMPILE_ERROR


# --- the worker process -------------------------------------------------------------------------
class WorkerRunner:
    """Runs the lowering worker in ``env``'s interpreter, in the OS sandbox unless ``sandbox`` is False.

    Calling it with ``(request, timeout_s)`` returns the replies of the kernels that finished
    (see :mod:`ascend_kernel_gym.ascend.lower_worker`). ``last`` keeps the last run's details:
    seconds, the sandbox layers that were off, the worker's stderr tail.
    """

    def __init__(self, env: LowerEnv, sandbox: bool = True, memory_mb: int = MEMORY_MB) -> None:
        self.env = env
        self.sandbox = sandbox
        self.memory_mb = memory_mb
        self.last: dict[str, Any] = {}

    def spec(self, scratch: str) -> dict[str, Any]:
        """What the launcher needs: interpreter, worker, scratch, sandbox paths, environment."""
        loader = [os.path.realpath(p) for p in glob.glob("/lib64/ld-linux*.so*") + glob.glob("/lib/ld-linux*.so*")]
        return {
            "python": str(self.env.python),
            "worker": str(WORKER_PATH),
            "scratch": scratch,
            "sandbox": self.sandbox,
            "read": [*self.env.read_paths, *SYSTEM_READ, str(WORKER_PATH)],
            "exec": [*self.env.exec_paths, *loader],
            "memory_mb": self.memory_mb,
            "env": {
                "PATH": "/usr/bin:/bin",
                "HOME": scratch,
                "TMPDIR": os.path.join(scratch, "tmp"),
                "TRITON_CACHE_DIR": os.path.join(scratch, "cache"),
                "TRITON_HOME": scratch,
                "TRITON_DISABLE_LINE_INFO": "0",  # locations in the adapter's IR: lines of allocations
                "PYTHONDONTWRITEBYTECODE": "1",
                "LANG": "C.UTF-8",
            },
        }

    def __call__(self, request: dict[str, Any], timeout_s: float) -> list[dict[str, Any]]:
        started = time.perf_counter()
        scratch = tempfile.mkdtemp(prefix="akg-lower-")
        for sub in ("tmp", "cache"):
            os.mkdir(os.path.join(scratch, sub))
        package_parent = str(Path(ascend_kernel_gym.__file__).resolve().parents[1])
        launcher_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": package_parent,
            "LANG": "C.UTF-8",
            # The launcher imports the package (numpy through it): no BLAS thread pool, it must stay
            # single-threaded to enter the sandbox.
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        command = [sys.executable, "-m", __name__, json.dumps(self.spec(scratch))]
        timed_out = False
        try:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=scratch,
                env=launcher_env,
                start_new_session=True,
            )
            out, err, timed_out = _bounded_communicate(proc, json.dumps(request).encode(), timeout_s)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        replies = []
        for line in out.decode("utf-8", "replace").splitlines():
            if line.startswith(REPLY_MARK):
                try:
                    replies.append(json.loads(line[len(REPLY_MARK) :]))
                except ValueError:
                    continue
        errors = err.decode("utf-8", "replace")
        if not replies and not timed_out and proc.returncode != 0:
            tail = errors.strip().splitlines()[-3:]
            raise RuntimeError(f"the lowering process exited with {proc.returncode}: {' | '.join(tail)[-400:]}")
        off: dict[str, str] = {}
        for line in errors.splitlines():
            if line.startswith(_LAUNCHER_MARK):
                off = json.loads(line[len(_LAUNCHER_MARK) :])
        self.last = {
            "seconds": round(time.perf_counter() - started, 4),
            "returncode": proc.returncode,
            "timed_out": timed_out,
            "sandbox_off": off,
            "stderr_tail": errors[-2000:],
        }
        return replies


def _bounded_communicate(proc: subprocess.Popen[bytes], data: bytes, timeout_s: float) -> tuple[bytes, bytes, bool]:
    """``proc.communicate(data)`` that keeps at most :data:`MAX_REPLY_BYTES` of standard output and
    the first and last :data:`KEEP_ERROR_BYTES` of standard error: what Triton prints while it lowers
    a kernel (``tl.static_print`` in an unrolled loop) must not fill this process's memory. Kills the
    worker's process group past ``timeout_s``; returns (stdout, stderr, timed out)."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, head, tail = bytearray(), bytearray(), bytearray()
    cut = 0
    pending = memoryview(data)
    streams = {proc.stdout.fileno(): True, proc.stderr.fileno(): False}  # fd -> is stdout
    writer = proc.stdin.fileno()
    os.set_blocking(writer, False)
    deadline = time.monotonic() + timeout_s
    timed_out = False
    while streams:
        left = deadline - time.monotonic()
        if left <= 0:
            if timed_out:
                break  # killed, and its pipes still open after the grace period: stop reading
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            deadline = time.monotonic() + DRAIN_AFTER_KILL_S
            continue
        readable, writable, _ = select.select(list(streams), [writer] if pending else [], [], min(left, 1.0))
        if writable:
            try:
                pending = pending[os.write(writer, pending) :]
            except BlockingIOError:
                pass
            except BrokenPipeError:
                pending = memoryview(b"")
            if not pending:
                proc.stdin.close()
        for fd in readable:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                del streams[fd]
            elif streams[fd]:
                out += chunk[: max(0, MAX_REPLY_BYTES - len(out))]
            elif len(head) < KEEP_ERROR_BYTES:
                head += chunk[: KEEP_ERROR_BYTES - len(head)]
            else:
                tail += chunk
                if len(tail) > KEEP_ERROR_BYTES:
                    cut += len(tail) - KEEP_ERROR_BYTES
                    del tail[: len(tail) - KEEP_ERROR_BYTES]
    if not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(timeout=DRAIN_AFTER_KILL_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    err = bytes(head) + (f"\n[... {cut} bytes cut ...]\n".encode() if cut else b"") + bytes(tail)
    return bytes(out), err, timed_out


def launch(spec: dict[str, Any]) -> None:
    """The launcher (run as ``python -m ascend_kernel_gym.evaluation.lower_stage SPEC``): enter the OS
    sandbox (unless ``spec["sandbox"]`` is false), limit memory and core dumps, then execute the
    worker in the triton-ascend environment. Never returns."""
    if spec.get("sandbox"):
        policy = SandboxPolicy(
            scratch=spec["scratch"],
            read_paths=tuple(spec["read"]),
            exec_paths=tuple(spec["exec"]),
            device_paths=BASE_DEVICES,
            pid_namespace=True,
            keep_fds=(),
        )
        report = enter_os_sandbox(policy)
        os.write(2, (_LAUNCHER_MARK + json.dumps(report.missing()) + "\n").encode())
    limit = int(spec.get("memory_mb") or 0) * 1024 * 1024
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(spec["scratch"])
    os.execve(spec["python"], [spec["python"], "-I", spec["worker"]], dict(spec["env"]))  # noqa: S606


# --- the stage ----------------------------------------------------------------------------------
def lower_result(
    code: str, launches: list[Any], chip: str, *, sandbox: bool = True, env: LowerEnv | None = None
) -> LoweringReport:
    """The lowering report of ``code``'s launches (an unavailable report without the environment)."""
    env = env or load_env()
    if env is None:
        return LoweringReport(chip, "", False, NOT_SET_UP)
    return lower_launches(code, launches, chip, WorkerRunner(env, sandbox))


def run_lower_stage(result: EvalResult, job: Job, mode: str, sandbox: bool = True) -> EvalResult:
    """Add the lowering of the launched kernels to ``result`` (the hook of :meth:`Evaluator.evaluate`).

    Skipped when ``mode`` is ``off``, on ``npu``, when the compile stage failed or no kernel of
    the candidate launched. Never raises: a failure of the stage itself becomes a warning.
    """
    if mode not in LOWER_MODES:
        raise ValueError(f"ascend_lower must be one of {LOWER_MODES}, got {mode!r}")
    if mode == "off" or job.backend == "npu" or not result.compiled or not result.launches:
        return result
    started = time.perf_counter()
    try:
        report = lower_result(job.code, list(result.launches), job.ascend_profile, sandbox=sandbox)
        apply_report(result, report, mode)
    except Exception as exc:  # noqa: BLE001 - a bug of the stage must not fail the candidate
        result.warnings.append(f"ascend_lower could not run: {type(exc).__name__}: {str(exc)[:200]}")
    result.stage_durations["ascend_lower"] = round(time.perf_counter() - started, 4)
    return result


def apply_report(result: EvalResult, report: LoweringReport, mode: str) -> None:
    """Put ``report`` into ``result``: findings, warnings, superseded rule errors, ``enforce``."""
    findings = report.findings()
    if not report.available and report.reason not in _WARNED:
        _WARNED.add(report.reason)
        _log.info("ascend_lower: %s", report.reason)
    result.ascend_checks.extend(findings)
    for finding in findings:
        if finding["severity"] in ("error", "warning"):
            result.warnings.append(f"ascend[{finding['rule']}] {finding['message']}")
    _supersede(result, report)
    errors = [f for f in findings if f["severity"] == "error"]
    if mode == "enforce" and errors and result.error_type == ErrorType.NONE:
        first = errors[0]
        result.correct = False
        result.error_type = compile_error_type()
        lines = [
            f"the kernel does not get through triton-ascend {report.arch} lowering: "
            + "; ".join(str(f["message"]) for f in errors[:3])
        ]
        if first.get("compiler_output"):
            lines.append(f"{first.get('kernel')}: the compiler said:\n{first['compiler_output']}")
        result.error_message = "\n".join(lines)


def _supersede(result: EvalResult, report: LoweringReport) -> None:
    """Rule errors the lowering contradicts become warnings (the lowering wins); an evaluation that
    failed only because of them (``ascend_checks="enforce"``) passes again."""
    fine: dict[str, bool] = {}
    for item in report.kernels:
        ok = item.status == "lowered" and not item.over_budget
        fine[item.kernel] = fine.get(item.kernel, True) and ok
    changed = False
    for finding in result.ascend_checks:
        rule = str(finding.get("rule"))
        if finding.get("layer") or finding.get("severity") != "error" or rule not in SUPERSEDED_RULES:
            continue
        if fine.get(str(finding.get("kernel"))):
            finding["severity"] = "warning"
            finding["superseded_by"] = f"triton-ascend lowering: {SUPERSEDED_RULES[rule]}"
            changed = True
    still_errors = any(f.get("severity") == "error" and not f.get("layer") for f in result.ascend_checks)
    passed_trials = result.trials_total > 0 and result.trials_passed == result.trials_total
    if changed and result.error_type == ErrorType.ASCEND_CONSTRAINT and not still_errors and passed_trials:
        result.correct = not result.hack
        result.error_type = ErrorType.NONE
        result.warnings.append(
            "ascend: the rule errors that failed this kernel are contradicted by the triton-ascend lowering, "
            f"which wins: {result.error_message[:200]}"
        )
        result.error_message = ""


def main(argv: list[str] | None = None) -> None:
    """Entry point of the launcher process."""
    args = sys.argv[1:] if argv is None else argv
    launch(json.loads(args[0]))


if __name__ == "__main__":
    main()
