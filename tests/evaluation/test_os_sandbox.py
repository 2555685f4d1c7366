"""The OS-level sandbox of evaluator children, tried as an attacker would.

Each test forks a child, puts it in the sandbox and makes it attempt something; the child
reports each attempt's outcome through a pipe and the test checks, from outside, that nothing
got through (sentinel files absent, the parent's memory and processes untouched). A test that
needs a layer this machine lacks skips with the probe's reason.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ascend_kernel_gym.evaluation import os_sandbox_calls as calls
from ascend_kernel_gym.evaluation.os_sandbox import (
    LAYERS,
    SandboxError,
    SandboxPolicy,
    SandboxReport,
    default_policy,
    enter_os_sandbox,
    probe_os_sandbox,
)

NAMESPACES_ONLY = frozenset({"user_ns", "mount_ns", "pid_ns"})
LANDLOCK_ONLY = frozenset({"no_new_privs", "landlock"})
SECCOMP_ONLY = frozenset({"no_new_privs", "seccomp"})
LAYER_SETS = {"all": frozenset(LAYERS), "namespaces": NAMESPACES_ONLY, "landlock": LANDLOCK_ONLY}

KERNEL_SOURCE = """
import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def run():
    x = torch.arange(10, dtype=torch.float32)
    y = torch.empty_like(x)
    add_one[(1,)](x, y, 10, BLOCK=16)
    return y.tolist()
"""


# --- helpers ----------------------------------------------------------------------------------
def need(*layers: str) -> None:
    """Skip unless every layer works on this machine (as the probe found)."""
    report = probe_os_sandbox()
    for layer in layers:
        if not report.active(layer):
            pytest.skip(f"sandbox layer {layer} is off on this machine: {report.layers.get(layer)}")


def attempt(action: Callable[[], Any]) -> str:
    """``ok: <result>`` or ``denied: <exception> <errno name>``, as the child saw it."""
    try:
        return f"ok: {action()!r}"[:300]
    except BaseException as exc:
        number = getattr(exc, "errno", None)
        return f"denied: {type(exc).__name__} {errno.errorcode.get(number or 0, '')}".strip()


def in_sandbox(policy: SandboxPolicy, body: Callable[[], dict[str, Any]], timeout: float = 120) -> dict[str, Any]:
    """Fork, enter the sandbox with ``policy``, run ``body`` there; its dict (plus ``report``) comes back."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_fd)
            out: dict[str, Any] = {"report": enter_os_sandbox(policy.replace(keep_fds=(write_fd,))).to_dict()}
            out.update(body())
        except BaseException:
            out = {"error": traceback.format_exc()}
        data = json.dumps(out).encode()
        while data:
            data = data[os.write(write_fd, data) :]
        os._exit(0)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"sandboxed child ended with status {status}"
    out = json.loads(b"".join(chunks))
    assert "error" not in out, out.get("error")
    return out


def denied(outcome: str) -> bool:
    return outcome.startswith("denied")


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "scratch"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside every allowed path, with a secret file in it."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text(f"secret-{secrets.token_hex(8)}\nsecond line\n")
    return path


def policy(scratch: Path, layers: frozenset[str] = frozenset(LAYERS), backend: str = "interpreter") -> SandboxPolicy:
    return default_policy(backend, str(scratch)).replace(layers=layers)


# --- the report -------------------------------------------------------------------------------
def test_probe_names_every_layer_with_a_state() -> None:
    report = probe_os_sandbox()
    assert list(report.layers) == list(LAYERS)
    for name, value in report.layers.items():
        assert value.startswith(("active", "off: ")), (name, value)
    assert report is probe_os_sandbox()  # cached
    again = SandboxReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report
    for name in report.off():
        assert name in report.summary()


def test_layers_left_out_by_the_policy_are_reported_off(scratch: Path) -> None:
    need("landlock")
    out = in_sandbox(policy(scratch, LANDLOCK_ONLY), lambda: {})
    layers = out["report"]["layers"]
    assert layers["landlock"].startswith("active")
    assert layers["mount_ns"] == "off: disabled by the policy"
    assert layers["seccomp"] == "off: disabled by the policy"


# --- reading outside the allowed paths ----------------------------------------------------------
@pytest.mark.parametrize("layers", ["all", "namespaces", "landlock"])
def test_reads_outside_the_allowed_paths_fail(scratch: Path, outside: Path, layers: str) -> None:
    need(*{"all": ("mount_ns", "landlock"), "namespaces": ("mount_ns",), "landlock": ("landlock",)}[layers])
    secret_file = outside / "secret.txt"
    secret = secret_file.read_text().splitlines()[0]
    # A package outside the allowed paths, imported before the sandbox: its resources stay unreadable.
    package = outside / "akg_outside_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "data.txt").write_text(secret)
    sys.path.insert(0, str(outside))
    try:
        import akg_outside_pkg  # noqa: F401
    finally:
        sys.path.remove(str(outside))
    path = str(secret_file)

    def body() -> dict[str, Any]:
        import importlib.resources
        import linecache
        import tokenize
        import warnings

        linecache.clearcache()
        return {
            "open": attempt(lambda: open(path).read()),
            "os_open": attempt(lambda: os.read(os.open(path, os.O_RDONLY), 100)),
            "hostname": attempt(lambda: open("/etc/hostname").read()),
            "passwd": attempt(lambda: open("/etc/passwd").read()),
            "linecache": linecache.getline(path, 1),
            "warning": warnings.formatwarning("boo", UserWarning, path, 1),
            "tokenize": attempt(lambda: tokenize.open(path).read()),
            "resources": attempt(lambda: importlib.resources.files("akg_outside_pkg").joinpath("data.txt").read_text()),
            "listdir": attempt(lambda: os.listdir(str(outside))),
            "proc_root": attempt(lambda: open(f"/proc/1/root{path}").read()),
            "proc_root_host": attempt(lambda: open("/proc/1/root/etc/hostname").read()),
        }

    out = in_sandbox(policy(scratch, LAYER_SETS[layers]), body)
    text = json.dumps(out)
    assert secret not in text
    for key in ("open", "os_open", "hostname", "passwd", "tokenize", "resources", "listdir"):
        assert denied(out[key]), (key, out[key])
    assert out["linecache"] == ""
    assert "second line" not in out["warning"]
    assert denied(out["proc_root"]) and denied(out["proc_root_host"])


def test_the_task_solutions_are_hidden(scratch: Path) -> None:
    need("mount_ns")
    pol = policy(scratch)
    assert pol.hidden_paths, "the package's solutions directory should be hidden by default"
    hidden = pol.hidden_paths[0]
    assert os.listdir(hidden)  # there are solutions outside the sandbox
    out = in_sandbox(pol, lambda: {"listing": attempt(lambda: os.listdir(hidden))})
    assert out["listing"] in ("ok: []",) or denied(out["listing"])


# --- writing outside the scratch directory ------------------------------------------------------
@pytest.mark.parametrize("layers", ["all", "namespaces", "landlock"])
def test_writes_outside_the_scratch_directory_fail(scratch: Path, outside: Path, layers: str) -> None:
    need(*{"all": ("mount_ns", "landlock"), "namespaces": ("mount_ns",), "landlock": ("landlock",)}[layers])
    import triton  # noqa: F401 - its directory is readable in the sandbox

    triton_dir = Path(sys.modules["triton"].__file__).parent
    targets = {
        "outside": outside / "sentinel.txt",
        "library": triton_dir / "akg_sentinel.txt",
        "scratch_parent": scratch.parent / "akg_sentinel.txt",
        "tmp": Path("/tmp") / f"akg_sentinel_{secrets.token_hex(4)}.txt",
    }
    link = scratch / "escape"

    def body() -> dict[str, Any]:
        results = {name: attempt(lambda p=p: Path(p).write_text("escaped")) for name, p in targets.items()}
        results["scratch"] = attempt(lambda: (scratch / "mine.txt").write_text("inside"))
        results["symlink"] = attempt(lambda: (os.symlink(str(targets["outside"]), str(link)), link.write_text("x")))
        results["hardlink"] = attempt(lambda: os.link(str(outside / "secret.txt"), str(scratch / "hard")))
        results["rename_out"] = attempt(lambda: os.rename(str(scratch / "mine.txt"), str(targets["outside"])))
        results["shm"] = attempt(lambda: Path("/dev/shm/akg").write_text("private"))
        return results

    out = in_sandbox(policy(scratch, LAYER_SETS[layers]), body)
    for name in (*targets, "symlink", "hardlink", "rename_out"):
        assert denied(out[name]), (name, out[name])
    for path in targets.values():
        assert not path.exists(), f"a write escaped the sandbox: {path}"
    assert out["scratch"].startswith("ok")
    assert (scratch / "mine.txt").read_text() == "inside"
    assert not (scratch / "hard").exists()
    if layers == "all":
        assert out["shm"].startswith("ok")  # a private /dev/shm, gone with the child
        assert not Path("/dev/shm/akg").exists()


@pytest.mark.parametrize("layers", ["landlock", "all_without_pid_ns"])
def test_only_its_own_proc_entries_are_writable(scratch: Path, layers: str) -> None:
    # Without a PID namespace (the device backends) the new root carries the host's /proc: it must
    # stay writable for the process's own entries (CUDA fails with error 304 on a read-only one).
    need("landlock", *(("mount_ns",) if layers != "landlock" else ()))
    chosen = LANDLOCK_ONLY if layers == "landlock" else frozenset(LAYERS) - {"pid_ns"}
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        out = in_sandbox(
            policy(scratch, chosen).replace(pid_namespace=False),
            lambda: {
                "own": attempt(lambda: Path("/proc/self/comm").write_text("akg-child")),
                "other": attempt(lambda: Path(f"/proc/{sleeper.pid}/comm").write_text("pwned")),
                "sysctl": attempt(lambda: Path("/proc/sys/kernel/hostname").write_text("pwned")),
            },
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    assert out["own"].startswith("ok"), out["own"]  # CUDA writes its own /proc entries
    assert denied(out["other"]) and denied(out["sysctl"]), out


# --- network ----------------------------------------------------------------------------------
@pytest.mark.parametrize("layers", ["all", "net_ns", "landlock"])
def test_connecting_to_a_host_listener_fails(scratch: Path, layers: str) -> None:
    sets = {"all": frozenset(LAYERS), "net_ns": frozenset({"user_ns", "net_ns"}), "landlock": LANDLOCK_ONLY}
    need(*{"all": ("net_ns",), "net_ns": ("net_ns",), "landlock": ("landlock",)}[layers])
    if layers == "landlock" and calls.landlock_abi() < 4:
        pytest.skip(f"Landlock ABI {calls.landlock_abi()} has no TCP rules (needs 4)")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]

    def body() -> dict[str, Any]:
        def connect() -> str:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                conn.sendall(b"escaped")
            return "connected"

        return {"connect": attempt(connect)}

    try:
        out = in_sandbox(policy(scratch, sets[layers]), body)
        assert denied(out["connect"]), out["connect"]
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()


# --- other processes --------------------------------------------------------------------------
@pytest.mark.parametrize("layers", ["all", "seccomp"])
def test_ptrace_and_process_vm_writev_on_the_parent_fail(scratch: Path, layers: str) -> None:
    need(*{"all": ("pid_ns", "seccomp"), "seccomp": ("seccomp",)}[layers])
    original = b"original-bytes!!"
    buffer = ctypes.create_string_buffer(original)
    address = ctypes.addressof(buffer)
    parent = os.getpid()

    def body() -> dict[str, Any]:
        libc = ctypes.CDLL(None, use_errno=True)

        class IoVec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

        payload = ctypes.create_string_buffer(b"HACKED-BY-CHILD!")
        local = IoVec(ctypes.addressof(payload), len(original))
        remote = IoVec(address, len(original))
        libc.process_vm_writev.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_ulong,
            ctypes.c_void_p,
            ctypes.c_ulong,
            ctypes.c_ulong,
        ]
        written = libc.process_vm_writev(parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        writev_errno = ctypes.get_errno()
        attached = libc.ptrace(16, parent, None, None)  # PTRACE_ATTACH
        ptrace_errno = ctypes.get_errno()

        def poke_mem() -> int:
            with open(f"/proc/{parent}/mem", "r+b", buffering=0) as mem:
                mem.seek(address)
                return mem.write(b"HACKED-BY-PROCFS")

        return {
            "writev": [written, errno.errorcode.get(writev_errno)],
            "ptrace": [attached, errno.errorcode.get(ptrace_errno)],
            # With seccomp alone /proc/<pid>/mem stays open to a same-uid process: the other layers close it.
            "mem": attempt(poke_mem) if layers == "all" else "denied: not tried",
        }

    out = in_sandbox(policy(scratch, frozenset(LAYERS) if layers == "all" else SECCOMP_ONLY), body)
    assert out["writev"][0] == -1, out
    assert out["ptrace"][0] == -1, out
    if layers == "seccomp":
        assert out["writev"][1] == out["ptrace"][1] == "EPERM"
    assert denied(out["mem"]), out["mem"]
    assert buffer.raw[: len(original)] == original


@pytest.mark.parametrize("layers", ["all", "landlock"])
def test_host_processes_cannot_be_signalled(scratch: Path, layers: str) -> None:
    need("pid_ns" if layers == "all" else "landlock")
    if layers == "landlock" and calls.landlock_abi() < 6:
        pytest.skip(f"Landlock ABI {calls.landlock_abi()} has no signal scoping (needs 6)")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        out = in_sandbox(
            policy(scratch, frozenset(LAYERS) if layers == "all" else LANDLOCK_ONLY),
            lambda: {"kill": attempt(lambda: os.kill(sleeper.pid, signal.SIGKILL))},
        )
        assert denied(out["kill"]), out["kill"]
        assert sleeper.poll() is None, "the sandboxed child killed a host process"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_host_processes_are_invisible_in_proc(scratch: Path) -> None:
    need("pid_ns", "mount_ns")
    parent = os.getpid()

    def body() -> dict[str, Any]:
        pids = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
        cmdlines = []
        for pid in pids:
            if pid == os.getpid():
                continue  # itself: a fork of pytest
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    cmdlines.append(handle.read().decode(errors="replace"))
            except OSError:
                pass
        return {"pids": pids, "cmdlines": cmdlines, "me": os.getpid()}

    out = in_sandbox(policy(scratch), body)
    assert out["me"] == 1
    assert out["pids"] == [1]
    assert parent not in out["pids"]
    assert not any("pytest" in line for line in out["cmdlines"])


# --- executables ------------------------------------------------------------------------------
@pytest.mark.parametrize("layers", ["all", "seccomp", "landlock"])
def test_exec_is_refused_when_the_policy_allows_none(scratch: Path, outside: Path, layers: str) -> None:
    need({"all": "seccomp", "seccomp": "seccomp", "landlock": "landlock"}[layers])
    sentinel = outside / "exec_sentinel"
    sets = {"all": frozenset(LAYERS), "seccomp": SECCOMP_ONLY, "landlock": LANDLOCK_ONLY}

    def body() -> dict[str, Any]:
        return {
            "system": os.system(f"touch {sentinel}"),
            "subprocess": attempt(lambda: subprocess.run(["/bin/true"], check=True)),
            "python": attempt(lambda: subprocess.run([sys.executable, "-c", f"open({str(sentinel)!r}, 'w')"])),
        }

    out = in_sandbox(policy(scratch, sets[layers]), body)
    assert out["system"] != 0
    assert denied(out["subprocess"]) and denied(out["python"]), out
    assert not sentinel.exists()


def test_exec_is_limited_to_the_toolchain(scratch: Path, outside: Path) -> None:
    need("landlock")
    cc = calls.expand_globs(["/usr/bin/cc"])
    if not cc:
        pytest.skip("no C compiler (cc) on this machine")
    pol = policy(scratch, backend="cuda")
    assert pol.allow_exec
    sentinel = outside / "exec_sentinel"
    copied = scratch / "mytrue"
    copied.write_bytes(Path("/bin/true").read_bytes())
    copied.chmod(0o755)

    def body() -> dict[str, Any]:
        return {
            "cc": attempt(lambda: subprocess.run(["cc", "--version"], capture_output=True, check=True).returncode),
            "sh": attempt(lambda: subprocess.run(["/bin/sh", "-c", f"touch {sentinel}"], check=True)),
            "python": attempt(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True)),
            "scratch_binary": attempt(lambda: subprocess.run([str(copied)], check=True)),
        }

    out = in_sandbox(pol, body)
    assert out["cc"] == "ok: 0", out["cc"]
    for name in ("sh", "python", "scratch_binary"):
        assert denied(out[name]), (name, out[name])
    assert not sentinel.exists()


# --- mounts and namespaces --------------------------------------------------------------------
def test_mounting_and_new_namespaces_are_refused(scratch: Path) -> None:
    need("mount_ns", "capabilities")
    pol = policy(scratch)
    hidden = pol.hidden_paths[0] if pol.hidden_paths else None
    target = scratch / "mnt"
    target.mkdir()

    def body() -> dict[str, Any]:
        def mount_tmpfs() -> None:
            calls.mount("tmpfs", str(target), "tmpfs", 0)

        def unmask() -> None:
            if hidden is None:
                raise PermissionError(errno.EPERM, "nothing hidden")
            calls.umount2(hidden, calls.MNT_DETACH)

        return {
            "mount": attempt(mount_tmpfs),
            "remount_rw": attempt(lambda: calls.mount(None, "/usr/lib", None, calls.MS_REMOUNT | calls.MS_BIND)),
            "unmask": attempt(unmask),
            "unshare": attempt(lambda: calls.unshare(calls.CLONE_NEWUSER | calls.CLONE_NEWNS)),
            "listing": os.listdir(hidden) if hidden else [],
        }

    out = in_sandbox(pol, body)
    for key in ("mount", "remount_rw", "unmask", "unshare"):
        assert denied(out[key]), (key, out[key])
    assert out["listing"] == []


# --- what keeps working -----------------------------------------------------------------------
def test_preimported_torch_and_triton_work_and_an_interpreter_kernel_runs(scratch: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    (scratch / "kernel.py").write_text(KERNEL_SOURCE)
    torch_init = torch.__file__

    def body() -> dict[str, Any]:
        os.environ.update(TRITON_INTERPRET="1", TRITON_CACHE_DIR=str(scratch / "cache"), HOME=str(scratch))
        sys.path.insert(0, str(scratch))
        import fractions  # noqa: F401 - a module first imported in the sandbox (standard library)

        import kernel  # the candidate's file, in the scratch directory

        return {
            "sum": float(torch.ones(3).sum()),
            "site_packages": attempt(lambda: len(open(torch_init).read())),
            "kernel": kernel.run(),
            "cwd": os.getcwd(),
        }

    out = in_sandbox(policy(scratch), body)
    assert out["sum"] == 3.0
    assert out["site_packages"].startswith("ok")
    assert out["kernel"] == [float(i + 1) for i in range(10)]
    assert out["cwd"] == str(scratch.resolve())


@pytest.mark.slow
def test_a_fresh_interpreter_imports_torch_and_triton_in_the_sandbox(scratch: Path) -> None:
    pytest.importorskip("torch")
    (scratch / "kernel.py").write_text(KERNEL_SOURCE)
    script = textwrap.dedent(
        f"""
        import json, os, sys
        from ascend_kernel_gym.evaluation.os_sandbox import default_policy, enter_os_sandbox
        assert "torch" not in sys.modules and "triton" not in sys.modules
        scratch = {str(scratch)!r}
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.environ.update(TRITON_INTERPRET="1", TRITON_CACHE_DIR=scratch + "/cache", HOME=scratch)
            try:
                report = enter_os_sandbox(default_policy("interpreter", scratch, keep_fds=(write_fd,)))
                sys.path.insert(0, scratch)
                import torch, triton, kernel
                out = {{"summary": report.summary(), "kernel": kernel.run()}}
            except BaseException as exc:
                out = {{"error": repr(exc)}}
            os.write(write_fd, json.dumps(out).encode())
            os._exit(0)
        os.close(write_fd)
        print(os.read(read_fd, 1 << 20).decode())
        os.waitpid(pid, 0)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in out, out
    assert out["kernel"] == [float(i + 1) for i in range(10)]


# --- degraded machines and misuse -------------------------------------------------------------
def test_without_user_namespaces_the_other_layers_still_hold(scratch: Path, outside: Path) -> None:
    need("landlock", "seccomp")
    import pyseccomp

    secret_path = str(outside / "secret.txt")

    def body() -> dict[str, Any]:
        return {"read": attempt(lambda: open(secret_path).read())}

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            # What a machine without user namespaces (and without privileges) answers.
            no_unshare = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
            no_unshare.add_rule(pyseccomp.ERRNO(errno.EPERM), "unshare")
            no_unshare.load()
            report = enter_os_sandbox(policy(scratch).replace(keep_fds=(write_fd,)))
            out = {"report": report.to_dict(), **body()}
        except BaseException:
            out = {"error": traceback.format_exc()}
        os.write(write_fd, json.dumps(out).encode())
        os._exit(0)
    os.close(write_fd)
    data = b"".join(iter(lambda: os.read(read_fd, 1 << 16), b""))
    os.close(read_fd)
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert "error" not in out, out.get("error")
    report = SandboxReport.from_dict(out["report"])
    for name in ("user_ns", "mount_ns", "net_ns", "pid_ns"):
        assert report.layers[name].startswith("off: "), (name, report.layers[name])
    assert "user namespaces are off" in report.layers["user_ns"]
    assert report.active("landlock") and report.active("seccomp")
    assert denied(out["read"])


def test_misuse_raises_before_anything_changes(tmp_path: Path, scratch: Path) -> None:
    with pytest.raises(SandboxError, match="absolute"):
        enter_os_sandbox(SandboxPolicy(scratch="relative/dir"))
    with pytest.raises(SandboxError, match="absolute"):
        enter_os_sandbox(SandboxPolicy(scratch=str(tmp_path / "missing")))
    with pytest.raises(SandboxError, match="as a whole"):
        enter_os_sandbox(SandboxPolicy(scratch=str(scratch), read_paths=("/",)))
    with pytest.raises(SandboxError, match="unknown sandbox layers"):
        enter_os_sandbox(SandboxPolicy(scratch=str(scratch), layers=frozenset({"chroot"})))
    with pytest.raises(SandboxError, match="unknown backend"):
        default_policy("tpu", str(scratch))


def test_a_threaded_or_second_call_is_refused(scratch: Path) -> None:
    need("landlock")

    out = in_sandbox(
        policy(scratch, LANDLOCK_ONLY), lambda: {"second": attempt(lambda: enter_os_sandbox(policy(scratch)))}
    )
    assert "SandboxError" in out["second"]

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        import threading

        stop = threading.Event()
        worker = threading.Thread(target=stop.wait)
        worker.start()
        outcome = attempt(lambda: enter_os_sandbox(policy(scratch)))
        stop.set()
        worker.join()
        os.write(write_fd, outcome.encode())
        os._exit(0)
    os.close(write_fd)
    outcome = os.read(read_fd, 4096).decode()
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert "SandboxError" in outcome


def test_the_outer_process_ends_as_the_sandboxed_one(tmp_path: Path) -> None:
    need("pid_ns")
    for how, check in (
        ("exit", lambda status: os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7),
        ("segfault", lambda status: os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV),
    ):
        scratch = tmp_path / how
        scratch.mkdir()
        pid = os.fork()
        if pid == 0:
            import faulthandler
            import resource

            faulthandler.disable()  # pytest's handler would print this deliberate crash
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            enter_os_sandbox(policy(scratch))
            if how == "exit":
                os._exit(7)
            ctypes.string_at(0)  # SIGSEGV in the sandboxed process
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert check(status), (how, status)


def test_an_emptied_scratch_directory_is_removed_a_used_one_kept(tmp_path: Path) -> None:
    need("pid_ns", "mount_ns")
    emptied, used = tmp_path / "emptied", tmp_path / "used"
    for scratch in (emptied, used):
        scratch.mkdir()
        (scratch / "output.txt").write_text("before")
        pid = os.fork()
        if pid == 0:
            enter_os_sandbox(policy(scratch))
            if scratch == emptied:  # a spare whose zygote went away cleans up what it can
                os.remove(scratch / "output.txt")
            os._exit(0)
        os.waitpid(pid, 0)
    assert not emptied.exists()  # the sandboxed process cannot remove its own mount point
    assert (used / "output.txt").read_text() == "before"  # what a crashed child left stays readable


def test_killing_the_outer_process_kills_the_sandboxed_one(scratch: Path) -> None:
    need("pid_ns")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        report = enter_os_sandbox(policy(scratch).replace(keep_fds=(write_fd,)))
        os.write(write_fd, str(report.host_pid).encode())
        time.sleep(120)
        os._exit(0)
    os.close(write_fd)
    inner = int(os.read(read_fd, 64))
    os.close(read_fd)
    assert inner != pid and os.path.exists(f"/proc/{inner}")
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{inner}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{inner}"), "the sandboxed process outlived its outer process"


def test_relayed_job_pipe_reaches_the_inner_process_and_nobody_once_the_outer_died(tmp_path: Path) -> None:
    need("pid_ns")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    job_read, job_write = os.pipe()
    result_read, result_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(job_write)
        os.close(result_read)
        pol = policy(scratch).replace(keep_fds=(job_read, result_write), relay_fds=(job_read,))
        report = enter_os_sandbox(pol)
        os.write(result_write, f"{report.host_pid}\n".encode())
        while data := os.read(job_read, 4096):  # echo every job until the end of the pipe
            os.write(result_write, data.upper())
        os._exit(0)
    os.close(job_read)
    os.close(result_write)
    with os.fdopen(result_read, "rb", buffering=0) as results:
        inner = int(results.read(64).split(b"\n")[0])
        os.write(job_write, b"first job")
        assert results.read(64) == b"FIRST JOB"
        os.kill(pid, signal.SIGKILL)  # only the outer process, as a stray kill would
        os.waitpid(pid, 0)
        with pytest.raises(BrokenPipeError):  # nobody can take a job any more
            os.write(job_write, b"second job")
        assert results.read(64) == b""  # and the inner process is gone
    os.close(job_write)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{inner}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{inner}"), "the inner process outlived the outer one"


def test_default_policies_per_backend(scratch: Path) -> None:
    torch_dir = os.path.dirname(pytest.importorskip("torch").__file__)
    interp = default_policy("interpreter", str(scratch))
    assert interp.exec_paths == () and not interp.allow_exec
    assert torch_dir in interp.read_paths
    assert os.getcwd() not in interp.read_paths  # the working directory is no library place
    assert "/dev/null" in interp.device_paths
    assert any(p.endswith(os.path.join("suites", "core", "solutions")) for p in interp.hidden_paths)
    assert interp.pid_namespace
    cuda = default_policy("cuda", str(scratch))
    assert not cuda.pid_namespace  # CUDA does not initialise in a PID namespace of a user namespace
    assert default_policy("cuda", str(scratch), pid_namespace=True).pid_namespace
    assert any(p.endswith(os.path.join("backends", "nvidia", "bin")) for p in cuda.exec_paths)
    assert "/dev/nvidia*" in cuda.device_paths
    assert default_policy("npu", str(scratch)).allow_exec
    assert probe_os_sandbox("cuda").layers["pid_ns"] == "off: disabled by the policy"


def test_default_policy_finds_the_package_behind_a_bare_module() -> None:
    """The zygote's bootstrap installs a bare ``ascend_kernel_gym`` module (no import spec): its
    directory must still be readable (chip profiles, task data) and its solutions still hidden."""
    root = Path(__file__).resolve().parents[2]
    code = textwrap.dedent(
        """
        import json, os, sys, types
        pkg = types.ModuleType("ascend_kernel_gym")
        pkg.__path__ = [os.path.join(sys.argv[1], "ascend_kernel_gym")]
        sys.modules["ascend_kernel_gym"] = pkg
        sys.path.insert(0, sys.argv[1])
        from ascend_kernel_gym.evaluation.os_sandbox import default_policy
        policy = default_policy("interpreter", "/tmp")
        print(json.dumps({"read": policy.read_paths, "hidden": policy.hidden_paths}))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr[-2000:]
    paths = json.loads(proc.stdout.strip().splitlines()[-1])
    assert str(root / "ascend_kernel_gym") in paths["read"]
    assert any(p.endswith(os.path.join("suites", "core", "solutions")) for p in paths["hidden"])


def test_a_read_path_with_locked_mounts_beneath_is_bound_read_only(scratch: Path) -> None:
    """The cuda policy reads /sys; its cgroup mounts are locked in the user namespace, so a plain bind
    fails (EINVAL: the whole new root was lost on an H200). They come along, every one read-only."""
    need("user_ns", "mount_ns")
    with open("/proc/self/mountinfo") as handle:
        beneath = [line.split()[4] for line in handle if line.split()[4].startswith("/sys/")]
    if not beneath:
        pytest.skip("no mount beneath /sys on this machine")
    target = next((p for p in beneath if os.path.isdir(p)), beneath[0])

    def body() -> dict[str, Any]:
        with open("/proc/self/mountinfo") as handle:
            options = {line.split()[4]: line.split()[5] for line in handle}
        probe = os.path.join(target, "akg_probe")
        return {
            "options": options,
            "write": attempt(lambda: open(probe, "w").write("x")),
            "seen": os.path.isdir(target),
        }

    out = in_sandbox(policy(scratch, NAMESPACES_ONLY, backend="cuda"), body)
    assert out["report"]["layers"]["mount_ns"].startswith("active"), out["report"]
    assert any("/sys bound with the mounts beneath it" in note for note in out["report"]["notes"])
    sys_mounts = {point: opts for point, opts in out["options"].items() if point == "/sys" or point.startswith("/sys/")}
    assert target in sys_mounts and out["seen"]
    assert all(opts.split(",")[0] == "ro" for opts in sys_mounts.values()), sys_mounts
    assert denied(out["write"]) and not os.path.exists(os.path.join(target, "akg_probe"))
