"""The OS sandbox wired into the evaluator: every child enters it (evaluation/process.py), the
zygote probes it and watches the sandboxed process tree (zygote.py), the pool reports missing
layers once (pool.py), the evaluator's switch and cache key (evaluator.py), and red-team
candidates that defeat every Python-level layer still cannot read, write, run or connect outside.
"""

from __future__ import annotations

import json
import os
import socket
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator
from ascend_kernel_gym.evaluation import evaluator as evaluator_module
from ascend_kernel_gym.evaluation import pool as pool_module
from ascend_kernel_gym.evaluation.child_stream import rss_bytes
from ascend_kernel_gym.evaluation.os_sandbox import LAYER_DISABLED, LAYERS, SandboxReport, probe_os_sandbox
from ascend_kernel_gym.evaluation.process import ChildSetup, prepare
from ascend_kernel_gym.evaluation.static import StaticReport

REDTEAM = Path(__file__).parent / "redteam"
#: red-team files whose attack only the OS sandbox stops once the static stage is defeated (the
#: audit guard allows reads and cannot see PyTorch's C++ file writer)
OS_ATTACKS = ("os_read_formatwarning.py", "os_write_torch_save.py")
#: red-team files that try to switch the audit guard off first (through the closure of the
#: ``__import__`` it installed, which held the guard until 2026-12-05): the guard holds, with or
#: without the OS sandbox (tests/evaluation/test_os_sandbox.py attacks the OS layers alone)
GUARD_ATTACKS = ("os_connect_loopback.py", "os_exec_and_write_guard_off.py")
SENTINELS = ("/tmp/akg_redteam_pwned_os_save",)
GUARD_SENTINELS = ("/tmp/akg_redteam_pwned_os_exec", "/tmp/akg_redteam_pwned_os_open")


def need_every_layer() -> None:
    probe = probe_os_sandbox("interpreter")
    if probe.missing():
        pytest.skip(f"OS sandbox layers off on this machine: {probe.summary()}")


# --- the child's set-up -----------------------------------------------------------------------
def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _try(action: Any) -> str:
    try:
        return f"ok: {action()}"
    except OSError as exc:
        return f"denied: {type(exc).__name__}"


def _run_prepared_child(setup: ChildSetup, job_fd: int, result_fd: int, stray_fd: int, outside: str) -> None:
    """In a forked child: prepare (entering the OS sandbox), then report what it can still reach."""
    report: dict[str, Any] = {}
    try:
        prepared = prepare(setup)
        report["error"] = repr(prepared.error) if prepared.error is not None else None
        report["durations"] = prepared.durations
        report["layers"] = prepared.os_sandbox.layers if prepared.os_sandbox is not None else None
        report["job"] = os.read(job_fd, 64).decode()  # relayed by the outer process in a PID namespace
        report["stray_fd_open"] = _is_open(stray_fd)
        report["warm_cache"] = _try(lambda: open(os.path.join(setup.warm_cache or "", "index.json")).read())
        report["outside"] = _try(lambda: open(os.path.join(outside, "secret.txt")).read())
        report["write_outside"] = _try(lambda: open(os.path.join(outside, "pwned.txt"), "w").write("x"))
        report["device"] = str(prepared.device)
    except BaseException as exc:
        report["error"] = repr(exc)
    data = json.dumps(report).encode()
    while data:
        data = data[os.write(result_fd, data) :]
    os._exit(0)


def test_prepare_enters_the_os_sandbox_before_the_device_and_keeps_only_its_pipes(tmp_path: Path) -> None:
    need_every_layer()
    torch.get_num_threads()  # settles torch's thread pools: a fork must leave the child single-threaded
    sandbox, warm, outside = (tmp_path / name for name in ("sandbox", "warm", "outside"))
    for path in (sandbox, warm, outside):
        path.mkdir()
    (warm / "index.json").write_text("warm")
    (outside / "secret.txt").write_text("secret")
    job_read, job_write = os.pipe()
    result_read, result_write = os.pipe()
    stray_read, stray_write = os.pipe()  # a descriptor the child inherits but must not keep
    setup = ChildSetup(str(sandbox), "interpreter", str(warm), os_sandbox=True, keep_fds=(job_read, result_write))
    pid = os.fork()
    if pid == 0:
        try:
            _run_prepared_child(setup, job_read, result_write, stray_read, str(outside))
        finally:
            os._exit(70)
    for fd in (job_read, result_write, stray_read, stray_write):
        os.close(fd)
    os.write(job_write, b"the job")
    chunks = []
    while chunk := os.read(result_read, 1 << 16):
        chunks.append(chunk)
    os.close(result_read)
    os.close(job_write)
    _, status = os.waitpid(pid, 0)
    report = json.loads(b"".join(chunks))
    assert report["error"] is None, report
    assert os.waitstatus_to_exitcode(status) == 0
    assert all(state.startswith("active") for state in report["layers"].values()), report["layers"]
    assert report["durations"]["os_sandbox"] > 0 and "device_init" in report["durations"]
    assert report["job"] == "the job" and report["device"] == "cpu"
    assert not report["stray_fd_open"]
    assert report["warm_cache"] == "ok: warm"  # Triton's cache index names the warm cache's files
    assert report["outside"].startswith("denied") and report["write_outside"].startswith("denied")
    assert not (outside / "pwned.txt").exists()
    assert (sandbox / "output.txt").exists()  # opened before the sandbox, in the scratch directory


def test_without_the_os_sandbox_prepare_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    """The switch off: no report and no ``os_sandbox`` part (the child forks nothing, closes nothing)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            prepared = prepare(ChildSetup(str(tmp_path), "interpreter"))
            out = {"report": prepared.os_sandbox is None, "parts": sorted(prepared.durations), "pid": os.getpid()}
            os.write(write_fd, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    out = json.loads(os.read(read_fd, 1 << 16))
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert out == {"report": True, "parts": ["device_init", "setup"], "pid": pid}


# --- the zygote's memory watch ----------------------------------------------------------------
def _own_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


def test_memory_watch_sees_the_largest_process_of_the_childs_tree() -> None:
    """In a PID namespace the zygote's child only relays; the evaluation's memory is in its child."""
    ready_read, ready_write = os.pipe()
    hold_read, hold_write = os.pipe()
    relay = os.fork()
    if relay == 0:
        os.close(ready_read)
        os.close(hold_write)  # the inner process must see the end of the hold pipe once the test closes it
        inner = os.fork()
        if inner == 0:
            big = bytearray(96 * 1024 * 1024)  # touched: resident
            os.write(ready_write, str(os.getpid()).encode())
            os.read(hold_read, 1)
            del big
            os._exit(0)
        os.waitpid(inner, 0)
        os._exit(0)
    os.close(ready_write)
    os.close(hold_read)
    try:
        inner = int(os.read(ready_read, 32))
        assert _own_rss(inner) >= _own_rss(relay) + 64 * 1024 * 1024
        assert rss_bytes(relay) >= _own_rss(inner) - 4 * 1024 * 1024
    finally:
        os.close(hold_write)
        os.close(ready_read)
        os.waitpid(relay, 0)
    assert rss_bytes(relay) == 0  # gone: nothing to count


# --- the pool and the evaluator ---------------------------------------------------------------
def _probe_info(**off: str) -> dict[str, Any]:
    layers = {name: "active" for name in LAYERS}
    layers.update(off)
    return {"ready": True, "os_sandbox": SandboxReport(layers=layers).to_dict()}


def test_missing_layers_leave_out_those_the_policy_turns_off() -> None:
    info = _probe_info(pid_ns=LAYER_DISABLED, landlock="off: landlock_create_ruleset: ENOSYS")
    assert pool_module.missing_sandbox_layers(info) == {"landlock": "off: landlock_create_ruleset: ENOSYS"}
    assert pool_module.missing_sandbox_layers(_probe_info(pid_ns=LAYER_DISABLED)) == {}
    assert pool_module.missing_sandbox_layers({"ready": True, "os_sandbox": None}) == {}


def test_the_pool_warns_once_per_backend_and_set_of_missing_layers(monkeypatch) -> None:
    monkeypatch.setattr(pool_module, "_REPORTED_LAYERS", set())
    missing = {"seccomp": "off: the pyseccomp package is not installed"}
    with pytest.warns(RuntimeWarning, match=r"without these layers on this machine: seccomp \(the pyseccomp"):
        pool_module.report_missing_layers("interpreter", missing)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pool_module.report_missing_layers("interpreter", missing)  # a restarted worker: no second warning
        pool_module.report_missing_layers("interpreter", {})
    with pytest.warns(RuntimeWarning, match="cuda"):
        pool_module.report_missing_layers("cuda", missing)


def test_the_switch_defaults_on_and_the_environment_turns_it_off(monkeypatch) -> None:
    monkeypatch.delenv("AKG_OS_SANDBOX", raising=False)
    ev = Evaluator(backend="interpreter", workers=2, start=False)
    assert ev.os_sandbox and all(handle.os_sandbox for handle in ev._handles)
    for off in ("0", "false", "OFF", " no "):
        monkeypatch.setenv("AKG_OS_SANDBOX", off)
        assert not Evaluator(backend="interpreter", workers=1, start=False).os_sandbox
    monkeypatch.setenv("AKG_OS_SANDBOX", "0")
    forced = Evaluator(backend="interpreter", workers=1, start=False, os_sandbox=True)
    assert forced.os_sandbox and forced._handles[0].os_sandbox  # an explicit argument wins
    monkeypatch.setenv("AKG_OS_SANDBOX", "1")
    assert not Evaluator(backend="interpreter", workers=1, start=False, os_sandbox=False)._handles[0].os_sandbox


def test_results_with_and_without_the_sandbox_never_share_a_cache_entry(relu_task, relu_solution) -> None:
    request = EvalRequest(task=relu_task, code=relu_solution)
    keys = {
        flag: Evaluator(backend="interpreter", workers=1, start=False, os_sandbox=flag)._cache_key(
            request, "small", "hash", 3
        )
        for flag in (True, False)
    }
    assert keys[True] != keys[False]
    again = Evaluator(backend="interpreter", workers=1, start=False, os_sandbox=True)._cache_key(
        request, "small", "hash", 3
    )
    assert again == keys[True]


def test_a_result_names_the_layers_this_machine_lacks(relu_task, relu_solution) -> None:
    ev = Evaluator(backend="interpreter", workers=1, start=False, cache=False)
    handle = ev._handles[0]

    def fake_run(job, timeout, memory_mb):
        result = EvalResult(task_id=job.task.id, backend="interpreter", profile=job.profile, code_hash="x")
        result.correct = True
        return {"result": result.to_dict(), "status": 0, "wall_s": 0.1}

    handle.run = fake_run  # type: ignore[method-assign]
    try:
        handle.missing_layers = {}
        clean = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution))
        assert not any(w.startswith("os_sandbox:") for w in clean.warnings)
        handle.missing_layers = {"landlock": "off: ENOSYS", "seccomp": "off: no libseccomp"}
        noted = ev.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# again\n"))
        assert [w for w in noted.warnings if w.startswith("os_sandbox:")] == [
            "os_sandbox: layers off on this machine: landlock, seccomp (see `akg doctor`)"
        ]
    finally:
        ev.close()


# --- end to end: the Python layers defeated, the OS layer holds --------------------------------
def _attack(name: str, port: int) -> str:
    return (REDTEAM / name).read_text().replace("PORT = 47613", f"PORT = {port}")


def _run_attacks(tmp_path: Path, relu_task, relu_solution, os_sandbox: bool) -> dict[str, Any]:
    """Evaluate the OS attacks with the static stage waved through; what got out, seen from here."""
    for path in (*SENTINELS, *GUARD_SENTINELS):
        if os.path.exists(path):
            os.remove(path)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    ev = Evaluator(
        backend="interpreter", workers=1, cache=False, timeout_s=120, tmp_root=str(tmp_path), os_sandbox=os_sandbox
    )
    try:
        requests = [
            EvalRequest(task=relu_task, code=_attack(name, port), num_trials=1, measure_performance=False, seed=3)
            for name in (*OS_ATTACKS, *GUARD_ATTACKS)
        ]
        requests.append(EvalRequest(task=relu_task, code=relu_solution, num_trials=1, seed=3))
        results = ev.evaluate_many(requests)
        info = ev._handles[0].info
    finally:
        ev.close()
    received = []
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            break
        conn.settimeout(5)
        received.append(conn.recv(64))
        conn.close()
    listener.close()
    written = [path for path in (*SENTINELS, *GUARD_SENTINELS) if os.path.exists(path)]
    for path in written:
        os.remove(path)
    return {
        "results": dict(zip([*OS_ATTACKS, *GUARD_ATTACKS, "honest"], results)),
        "received": received,
        "written": written,
        "info": info,
    }


@pytest.fixture
def static_stage_defeated(monkeypatch) -> None:
    """As if a candidate had found a hole in the static stage: every source goes to a child."""
    monkeypatch.setattr(evaluator_module, "check_source", lambda code: StaticReport(kernels=["relu_kernel"]))


def test_the_os_sandbox_holds_when_the_python_layers_are_defeated(
    static_stage_defeated, tmp_path: Path, relu_task, relu_solution
) -> None:
    need_every_layer()
    seen = _run_attacks(tmp_path, relu_task, relu_solution, os_sandbox=True)
    results = seen["results"]
    assert seen["written"] == [] and seen["received"] == []
    for name in OS_ATTACKS:
        result = results[name]
        # The OS refused: the candidate's own call failed (the guard let it through).
        assert result.error_type.value == "runtime_error" and not result.correct, (name, result.error_message)
    for name in GUARD_ATTACKS:
        assert results[name].error_type.value == "sandbox_violation", (name, results[name].error_message)
    assert "could not be read" in results["os_read_formatwarning.py"].error_message
    honest = results["honest"]
    assert honest.ok, honest.error_message
    assert honest.stage_durations["ahead.os_sandbox"] > 0
    # The harness's own reads work in the sandbox: the Ascend checks load their chip profiles.
    assert not any("could not run" in w or w.startswith("os_sandbox:") for w in honest.warnings), honest.warnings
    assert SandboxReport.from_dict(seen["info"]["os_sandbox"]).missing() == {}


def test_without_the_os_sandbox_the_same_attacks_get_out(
    static_stage_defeated, tmp_path: Path, relu_task, relu_solution
) -> None:
    """The control: the OS attacks really get out without the OS sandbox (so the test above is not
    vacuous), and the attacks on the guard fail there too."""
    seen = _run_attacks(tmp_path, relu_task, relu_solution, os_sandbox=False)
    assert sorted(seen["written"]) == sorted(SENTINELS)
    for name in OS_ATTACKS:
        assert seen["results"][name].correct, (name, seen["results"][name].error_message)
    # the candidate cannot switch the audit guard off: without the OS sandbox it still refuses
    assert seen["received"] == []
    for name in GUARD_ATTACKS:
        assert seen["results"][name].error_type.value == "sandbox_violation", name
    assert seen["info"]["os_sandbox"] is None
