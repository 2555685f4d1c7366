"""Compiling a candidate's kernels ahead in a device-free child (:mod:`.precompile`,
:mod:`.precompile_run`): what it compiles is what the candidate's own launches look up, what it
hands over is only a plain cache entry, and the candidate's child is never left waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from ascend_kernel_gym.evaluation import precompile_run as pr
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.precompile import (
    EXIT_DEVICE_REACHABLE,
    ConstantDraws,
    device_reachable,
)
from ascend_kernel_gym.evaluation.wire import OUTPUT_FILENAME
from ascend_kernel_gym.tasks.suite import get_task

TARGET = {"backend": "cuda", "arch": 90, "warp_size": 32}
SOLUTIONS = Path(__file__).resolve().parents[2] / "ascend_kernel_gym" / "tasks" / "suites" / "core" / "solutions"


def _job(task_id: str, code: str | None = None) -> Job:
    task = get_task(task_id)
    if code is None:
        code = (SOLUTIONS / f"{task_id.split('/', 1)[1]}.py").read_text()
    return Job(task=task, code=code, code_hash="x", backend="cuda", profile="full")


# A process like the candidate's child: the same launches, with the copied cache. A cache miss
# would build the kernel's IR: that raises, and the compile-only launch records it.
HIT_SCRIPT = r"""
import json, os, sys
os.environ["TRITON_CACHE_DIR"] = sys.argv[1]
import torch
from ascend_kernel_gym.evaluation import precompile
precompile.install_compile_only(json.loads(sys.argv[2]))
import triton.compiler.compiler as compiler
misses = []
def no_ir(*args, **kwargs):
    misses.append(1)
    raise RuntimeError("cache miss")
compiler.ASTSource.make_ir = no_ir
from ascend_kernel_gym.evaluation.compile_stage import import_candidate
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.shape_trials import extra_cases
from ascend_kernel_gym.tasks.runtime import instantiate
from ascend_kernel_gym.tasks.suite import get_task
task = get_task(sys.argv[3])
code = open(sys.argv[4]).read()
module = import_candidate(code, sys.argv[4])
job = Job(task=task, code=code, code_hash="x", backend="cuda", profile="full")
cases = [None] + extra_cases(job, "full")
for case in cases:
    precompile.call_once(module.ModelNew, instantiate(task, "full", case) if case else instantiate(task, "full"))
print(json.dumps({"cases": len(cases), "misses": len(misses)}))
"""


# The zygote's side, in a process of its own (as a zygote: torch's thread pools started before
# any fork, so the forked child has one thread and can enter the OS sandbox).
PRECOMPILE_SCRIPT = r"""
import json, os, sys, tempfile, time
import torch
torch.set_num_threads(1)
torch.get_num_threads()
from ascend_kernel_gym.evaluation import precompile_run as pr
from ascend_kernel_gym.evaluation.job import Job
from ascend_kernel_gym.evaluation.precompile import start_precompile
from ascend_kernel_gym.tasks.suite import get_task
root, task_id, kernel = sys.argv[1], sys.argv[2], sys.argv[3]
candidate = tempfile.mkdtemp(prefix="akg-sandbox-", dir=root)
os.makedirs(os.path.join(candidate, pr.CACHE_DIRNAME))
job = Job(task=get_task(task_id), code=open(kernel).read(), code_hash="x", backend="cuda", profile="full")
run = start_precompile(root, job, json.loads(sys.argv[4]), candidate, (), 1, time.perf_counter() + 240)
while not run.over:
    run.poll()
    time.sleep(0.02)
marks = [os.path.exists(os.path.join(candidate, m)) for m in (pr.READY, pr.ENDED)]
print(json.dumps({"status": run.status, "marks": marks, "sandbox_left": os.path.exists(run.sandbox),
                  "entries": run.summary()["precompile.entries"], "cache": os.path.join(candidate, pr.CACHE_DIRNAME)}))
"""


def _last_json(args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # as the cuda zygote runs
    out = subprocess.run([sys.executable, "-c", *args], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


@pytest.mark.slow
def test_kernels_compiled_ahead_are_found_by_the_candidates_own_launches(tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text((SOLUTIONS / "L1" / "relu.py").read_text())
    root = tmp_path / "pool"
    root.mkdir()
    done = _last_json([PRECOMPILE_SCRIPT, str(root), "core/L1/relu", str(kernel), json.dumps(TARGET)])
    assert done["status"] == 0 and done["marks"] == [True, True] and not done["sandbox_left"]
    cubins = [f for _, _, files in os.walk(done["cache"]) for f in files if f.endswith(".cubin")]
    # the two warm-up kernels, relu on the main case and on the odd-sized case (other divisibility)
    assert len(cubins) >= 4 and done["entries"] == len(cubins)
    seen = _last_json([HIT_SCRIPT, done["cache"], json.dumps(TARGET), "core/L1/relu", str(kernel)])
    assert seen["cases"] == 4 and seen["misses"] == 0


def test_a_child_that_can_open_a_device_node_runs_no_candidate_code(tmp_path: Path) -> None:
    from ascend_kernel_gym.evaluation.precompile import precompile_entry
    from ascend_kernel_gym.evaluation.process import ChildSetup

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = "print('CANDIDATE RAN')\nclass ModelNew:\n    pass\n"
    job = _job("core/L1/relu", code)
    pid = os.fork()
    if pid == 0:
        try:
            setup = ChildSetup(str(scratch), "cuda", None, 1, os_sandbox=False, keep_fds=None, devices=False)
            precompile_entry(setup, job, TARGET, "full", devices=("/dev/null",))  # /dev/null opens: refused
        finally:
            os._exit(70)
    status = os.waitpid(pid, 0)[1]
    assert os.waitstatus_to_exitcode(status) == EXIT_DEVICE_REACHABLE
    output_file = scratch / OUTPUT_FILENAME
    output = output_file.read_text() if output_file.exists() else ""
    assert "CANDIDATE RAN" not in output and not (scratch / "kernel.py").exists()


def test_the_child_takes_only_cpu_time_nobody_else_wants() -> None:
    from ascend_kernel_gym.evaluation.precompile import lower_priority

    pid = os.fork()
    if pid == 0:
        got = lower_priority()
        ok = os.sched_getscheduler(0) == os.SCHED_IDLE if got == "idle" else os.nice(0) == 19
        os._exit(0 if ok else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert os.sched_getscheduler(0) != os.SCHED_IDLE  # the parent is untouched


def test_device_reachable_tries_to_open_each_node() -> None:
    assert device_reachable(("/dev/null",))
    assert not device_reachable(("/dev/akg-no-such-node*",))


def _entry(root: Path, name: str, files: dict[str, bytes], group: dict[str, str] | None = None) -> Path:
    entry = root / name
    entry.mkdir(parents=True)
    for file_name, data in files.items():
        (entry / file_name).write_bytes(data)
    if group is not None:
        (entry / "__grp__k.json").write_text(json.dumps({"child_paths": group}))
    return entry


NAME = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRST"


def test_a_finished_entry_is_copied_with_its_group_index_pointing_at_the_copy(tmp_path: Path) -> None:
    src = tmp_path / "src"
    entry = _entry(
        src, NAME, {"k.cubin": b"\x7fELF", "k.json": b"{}"}, {"k.cubin": "/elsewhere/k.cubin", "k.json": "/x/k.json"}
    )
    dst = tmp_path / "dst"
    dst.mkdir()
    assert pr.copy_entry(str(entry), str(dst), NAME, 1 << 20) == 4 + 2 + len((entry / "__grp__k.json").read_bytes())
    group = json.loads((dst / NAME / "__grp__k.json").read_text())
    assert group == {"child_paths": {"k.cubin": str(dst / NAME / "k.cubin"), "k.json": str(dst / NAME / "k.json")}}
    assert (dst / NAME / "k.cubin").read_bytes() == b"\x7fELF"
    assert not [p for p in dst.iterdir() if p.name.startswith(".akg-")]


def test_an_entry_already_there_is_never_overwritten(tmp_path: Path) -> None:
    src = _entry(tmp_path / "src", NAME, {"k.cubin": b"forged"}, {"k.cubin": "/a/k.cubin"})
    dst = tmp_path / "dst"
    _entry(dst, NAME, {"k.cubin": b"warm"}, {"k.cubin": "/b/k.cubin"})
    assert pr.copy_entry(str(src), str(dst), NAME, 1 << 20) == 0
    assert (dst / NAME / "k.cubin").read_bytes() == b"warm"


@pytest.mark.parametrize(
    "problem", ["unfinished", "symlink", "odd_name", "outside_group", "too_big", "bad_json", "subdir"]
)
def test_anything_but_a_plain_finished_entry_is_not_copied(tmp_path: Path, problem: str) -> None:
    src = tmp_path / "src"
    files = {"k.cubin": b"x" * 64}
    group: dict[str, str] | None = {"k.cubin": "/a/k.cubin"}
    if problem == "unfinished":
        group = None
    if problem == "odd_name":
        files["-rf"] = b""
    if problem == "outside_group":
        group = {"k.cubin": "/a/k.cubin", "evil": "/etc/passwd"}
    entry = _entry(src, NAME, files, group)
    if problem == "symlink":
        os.symlink("/etc/passwd", entry / "k.json")
    if problem == "bad_json":
        (entry / "__grp__k.json").write_text("{not json")
    if problem == "subdir":
        (entry / "nested").mkdir()
    dst = tmp_path / "dst"
    dst.mkdir()
    budget = 10 if problem == "too_big" else 1 << 20
    assert pr.copy_entry(str(entry), str(dst), NAME, budget) is None
    assert list(dst.iterdir()) == []


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _sleeper() -> int:
    """A stand-in for the precompile child: its own process group, asleep."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    return proc.pid


def test_the_candidate_stops_waiting_when_no_kernel_is_finished_for_a_while(tmp_path: Path) -> None:
    pre, cand = tmp_path / "pre", tmp_path / "cand"
    (pre / pr.CACHE_DIRNAME).mkdir(parents=True)
    (cand / pr.CACHE_DIRNAME).mkdir(parents=True)
    clock = _Clock()
    run = pr.PrecompileRun(_sleeper(), str(pre), str(cand), deadline=clock.now + 50, clock=clock)
    try:
        run.poll()
        assert not (cand / pr.READY).exists()
        _entry(pre / pr.CACHE_DIRNAME, NAME, {"k.cubin": b"1"}, {"k.cubin": "/p/k.cubin"})
        clock.now += pr.STALL_S - 1
        run.poll()  # a new kernel: progress, and it is copied at once
        assert (cand / pr.CACHE_DIRNAME / NAME / "k.cubin").exists() and not (cand / pr.READY).exists()
        clock.now += pr.STALL_S + 0.5
        run.poll()
        assert (cand / pr.READY).exists() and not (cand / pr.ENDED).exists() and not run.over
        clock.now = run.deadline + 1  # past its deadline: killed, the candidate told it is over
        run.poll()
        assert run.over and (cand / pr.ENDED).exists() and not pre.exists()
    finally:
        run.finish()


def test_the_main_case_done_lets_the_candidate_go_on_and_finish_kills_a_running_child(tmp_path: Path) -> None:
    pre, cand = tmp_path / "pre", tmp_path / "cand"
    (pre / pr.CACHE_DIRNAME).mkdir(parents=True)
    cand.mkdir()
    clock = _Clock()
    pid = _sleeper()
    run = pr.PrecompileRun(pid, str(pre), str(cand), deadline=clock.now + 50, clock=clock)
    (pre / pr.MAIN_DONE).write_text("1")
    clock.now += pr.POLL_S
    run.poll()
    assert (cand / pr.READY).exists() and run.summary()["precompile.ready"] == pytest.approx(pr.POLL_S)
    run.finish()
    assert run.over and not pre.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_retargeted_run_that_is_over_marks_the_new_candidate_at_once(tmp_path: Path) -> None:
    pre, first, second = tmp_path / "pre", tmp_path / "c1", tmp_path / "c2"
    (pre / pr.CACHE_DIRNAME).mkdir(parents=True)
    for c in (first, second):
        (c / pr.CACHE_DIRNAME).mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc.wait()  # reaped here: the run sees it gone
    run = pr.PrecompileRun(proc.pid, str(pre), str(first), deadline=time.perf_counter() + 50)
    run.status = 0
    run.retarget(str(second))
    assert (second / pr.READY).exists() and (second / pr.ENDED).exists()


def test_one_look_copies_a_bounded_amount_and_the_rest_at_the_next(tmp_path: Path, monkeypatch) -> None:
    pre, cand = tmp_path / "pre", tmp_path / "cand"
    (cand / pr.CACHE_DIRNAME).mkdir(parents=True)
    for i in range(3):
        name = f"{NAME[:-1]}{i}"
        _entry(pre / pr.CACHE_DIRNAME, name, {"k.cubin": b"x" * 1000}, {"k.cubin": "/p/k.cubin"})
    monkeypatch.setattr(pr, "POLL_COPY_BYTES", 1500)  # a look stops once past it: after its second entry
    run = pr.PrecompileRun(os.getpid(), str(pre), str(cand), deadline=time.perf_counter() + 50)
    assert [run.copy_new(), run.copy_new(), run.copy_new(), run.copy_new()] == [2, 1, 0, 0]
    assert len(list((cand / pr.CACHE_DIRNAME).iterdir())) == 3


def test_wait_for_mark_returns_when_the_mark_appears_or_at_its_limit(tmp_path: Path) -> None:
    assert pr.wait_for_mark(str(tmp_path), pr.READY, 0.05) >= 0.05
    (tmp_path / pr.READY).write_text("1")
    assert pr.wait_for_mark(str(tmp_path), pr.READY, 5.0) < 1.0


def test_constant_draws_keep_shapes_and_dtypes_and_fill_constants() -> None:
    with ConstantDraws():
        a = torch.randn(3, 4)
        b = torch.rand(5, dtype=torch.float16)
        c = torch.randint(7, 9, (6,))
        d = torch.randperm(5)
        e = torch.empty(4).uniform_(-2.0, 3.0)
        f = torch.empty(4).normal_(1.5, 2.0)
        g = torch.randn_like(torch.ones(2, 2, dtype=torch.bfloat16))
        linear = torch.nn.Linear(8, 4)
    assert a.shape == (3, 4) and bool((a == 0).all())
    assert b.dtype == torch.float16 and bool((b == 0).all())
    assert c.tolist() == [7] * 6
    assert d.tolist() == [0, 1, 2, 3, 4]
    assert e.tolist() == [-2.0] * 4 and f.tolist() == [1.5] * 4
    assert g.dtype == torch.bfloat16 and g.shape == (2, 2)
    assert linear.weight.shape == (4, 8) and torch.unique(linear.weight).numel() == 1
    assert torch.randn(1000).std() > 0.5  # only inside the mode
