"""Cost of the OS sandbox per evaluator child, against a plain fork in the same run.

    python bench/bench_os_sandbox.py [--repeats 40] [--backend interpreter|cuda] [--kernel-repeats 8] [--out ...]

The process imports torch and triton first (as a zygote does), then forks children round-robin
over the variants below. Each child enters its sandbox (or not), writes one byte to a pipe and
exits. Per child: ``ready`` is fork -> byte read (what a spare child adds before it can take a
job), ``reaped`` is fork -> ``waitpid`` done (the PID-namespace variant has one more process to
end), ``inside`` is the time ``enter_os_sandbox`` itself reports. Medians and 90th percentiles,
and the ratio of each median to the plain fork's.

The second table does what an evaluation child does next: initialise the device (CUDA on
``--backend cuda``), import a Triton kernel from its scratch directory (whose Triton cache is a
copy of a warm one, as the evaluator's is) and run it, and tries three escapes (read
``/etc/hostname``, connect to ``127.0.0.1``, run ``/bin/sh``). On CUDA this checks that Triton's
compiler toolchain and the driver work inside the sandbox. Runs without gymnasium (GPU images).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _bootstrap import import_package_without_gymnasium  # noqa: E402

import_package_without_gymnasium()

from ascend_kernel_gym.evaluation.os_sandbox import (  # noqa: E402
    LAYERS,
    SandboxPolicy,
    default_policy,
    enter_os_sandbox,
    probe_os_sandbox,
)

PLAIN = "plain fork (no sandbox)"
VARIANTS: dict[str, frozenset[str] | None] = {
    PLAIN: None,
    "all layers": frozenset(LAYERS),
    "all layers, no PID namespace": frozenset(LAYERS) - {"pid_ns"},
    "namespaces + new root only": frozenset({"user_ns", "mount_ns", "net_ns", "ipc_ns", "uts_ns", "pid_ns"}),
    "Landlock + seccomp only": frozenset({"capabilities", "no_new_privs", "not_dumpable", "landlock", "seccomp"}),
}
COLD = "all layers, cold Triton cache"
KERNEL_VARIANTS = (PLAIN, "all layers", "all layers, no PID namespace", COLD)
KERNEL_MODULE = "akg_bench_kernel"
KERNEL_SOURCE = """
import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def run(device):
    x = torch.arange(1000, dtype=torch.float32, device=device)
    y = torch.empty_like(x)
    add_one[(triton.cdiv(1000, 256),)](x, y, 1000, BLOCK=256)
    return bool(torch.equal(y.cpu(), torch.arange(1000, dtype=torch.float32) + 1))
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _refused(action: Any) -> bool:
    try:
        action()
    except Exception:
        return True
    return False


def kernel_workload(backend: str, scratch: str) -> dict[str, Any]:
    """What an evaluation child does after its set-up: device, candidate import, one launch; escapes."""
    import torch

    started = time.perf_counter()
    device = "cpu"
    if backend == "cuda":
        torch.cuda.init()
        torch.empty(1, device="cuda")
        device = "cuda"
    device_s = time.perf_counter() - started
    sys.path.insert(0, scratch)
    cache = os.environ["TRITON_CACHE_DIR"]
    before = {name for _, _, files in os.walk(cache) for name in files}
    warnings: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage()[:200])  # type: ignore[method-assign]
    logging.getLogger().addHandler(handler)
    kernel = __import__(KERNEL_MODULE)
    ok = kernel.run(device)
    kernel_s = time.perf_counter() - started - device_s
    new = sorted({name for _, _, files in os.walk(cache) for name in files} - before)
    escapes = {
        "read /etc/hostname": _refused(lambda: open("/etc/hostname").read()),
        "connect 127.0.0.1": _refused(lambda: socket.create_connection(("127.0.0.1", 22), timeout=1).close()),
        "run /bin/sh": _refused(lambda: subprocess.run(["/bin/sh", "-c", "true"], check=True)),
    }
    return {
        "ok": ok,
        "device_ms": device_s * 1000,
        "kernel_ms": kernel_s * 1000,
        "new_files": len(new),
        "new_names": new,
        "warnings": warnings,
        "refused": escapes,
    }


def one_child(
    policy: SandboxPolicy | None, scratch: str, workload: bool, backend: str, warm: str | None
) -> dict[str, Any]:
    """Fork one child; its timings (ms) and, with ``workload``, what it did."""
    if workload:
        os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "cache")
        if warm is not None:
            shutil.copytree(warm, os.environ["TRITON_CACHE_DIR"], dirs_exist_ok=True)
        Path(scratch, f"{KERNEL_MODULE}.py").write_text(KERNEL_SOURCE)
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        out: dict[str, Any] = {"inside_ms": 0.0}
        try:
            os.close(read_fd)
            if workload:  # as the evaluator's child: temporary files and home in the scratch directory
                os.makedirs(os.path.join(scratch, "tmp"), exist_ok=True)
                os.environ.update(TMPDIR=os.path.join(scratch, "tmp"), HOME=scratch)
                tempfile.tempdir = os.environ["TMPDIR"]
            if policy is not None:
                out["inside_ms"] = enter_os_sandbox(policy.replace(keep_fds=(write_fd,))).seconds * 1000
            os.chdir(scratch)
            if workload:
                out.update(kernel_workload(backend, scratch))
        except BaseException as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"[:500]
        finally:
            data = json.dumps(out).encode()
            while data:
                data = data[os.write(write_fd, data) :]
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
        if not workload:
            break  # "ready": the first bytes
    ready = time.perf_counter()
    os.close(read_fd)
    os.waitpid(pid, 0)
    reaped = time.perf_counter()
    out = json.loads(b"".join(chunks))
    out.update(ready_ms=(ready - started) * 1000, reaped_ms=(reaped - started) * 1000)
    return out


def warm_cache(backend: str, root: str) -> str | None:
    """Compile the kernel once, unsandboxed, into a cache that every child copies (as the evaluator does)."""
    if backend == "interpreter":
        return None
    scratch = tempfile.mkdtemp(dir=root)
    result = one_child(None, scratch, True, backend, None)
    if not result.get("ok"):
        raise SystemExit(f"the unsandboxed warm-up failed: {result}")
    return os.path.join(scratch, "cache")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=40, help="children per variant (default 40)")
    parser.add_argument("--kernel-repeats", type=int, default=8, help="children per variant with the kernel")
    parser.add_argument("--backend", default="interpreter", choices=("interpreter", "cuda"))
    parser.add_argument("--out", default=None, help="Markdown output (default bench/results/os_sandbox_<cpu|h200>.md)")
    args = parser.parse_args()
    if args.backend == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    out_path = Path(
        args.out or ROOT / "bench" / "results" / f"os_sandbox_{'cpu' if args.backend == 'interpreter' else 'h200'}.md"
    )

    t0 = time.perf_counter()
    import torch  # a zygote has both loaded before it forks
    import triton

    import_s = time.perf_counter() - t0
    if args.backend == "cuda":
        # As the zygote should: Triton finds libcuda by running ldconfig (a shell script on Ubuntu,
        # which the sandbox does not run); found once here (no device touched), inherited by every child.
        from triton.backends.nvidia.driver import libcuda_dirs

        libcuda_dirs()
    t0 = time.perf_counter()
    probe = probe_os_sandbox()
    probe_ms = (time.perf_counter() - t0) * 1000
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
    kernel_samples: dict[str, list[dict[str, Any]]] = {name: [] for name in KERNEL_VARIANTS}
    with tempfile.TemporaryDirectory(prefix="akg-bench-sandbox-") as root:
        t0 = time.perf_counter()
        base = default_policy(args.backend, root)
        policy_ms = (time.perf_counter() - t0) * 1000
        for _ in range(args.repeats):
            for name, layers in VARIANTS.items():
                scratch = tempfile.mkdtemp(dir=root)
                policy = None if layers is None else base.replace(scratch=scratch, layers=layers)
                samples[name].append(one_child(policy, scratch, False, args.backend, None))
        warm = warm_cache(args.backend, root)
        if warm is not None:
            # Triton's cache index names its files by absolute path: a copied cache still reads
            # the warm one, which the policy must therefore let the child read (as the evaluator's must).
            base = base.replace(read_paths=(*base.read_paths, warm))
        for _ in range(args.kernel_repeats):
            for name in KERNEL_VARIANTS:
                scratch = tempfile.mkdtemp(dir=root)
                layers = VARIANTS["all layers"] if name == COLD else VARIANTS[name]
                policy = None if layers is None else base.replace(scratch=scratch, layers=layers)
                # The cold variant compiles in the sandbox: ptxas and the C compiler run there.
                cache = None if name == COLD else warm
                kernel_samples[name].append(one_child(policy, scratch, True, args.backend, cache))

    def med(values: list[dict[str, Any]], key: str) -> float:
        return statistics.median(float(v.get(key, float("nan"))) for v in values)

    plain = med(samples[PLAIN], "ready_ms")
    rows = []
    for name, values in samples.items():
        ready = [v["ready_ms"] for v in values]
        cells = [statistics.median(ready), percentile(ready, 0.9), med(values, "reaped_ms"), med(values, "inside_ms")]
        rows.append(f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {cells[0] / plain:.1f}x |")
    kernel_rows = []
    plain_total = med(kernel_samples[PLAIN], "ready_ms") if args.kernel_repeats else float("nan")
    for name, values in kernel_samples.items():
        if not values:
            continue
        errors = sorted({v["error"] for v in values if "error" in v})
        ok = sum(bool(v.get("ok")) for v in values)
        refused = {k: sum(v.get("refused", {}).get(k, False) for v in values) for k in values[0].get("refused", {})}
        total = med(values, "ready_ms")
        cells = [
            total,
            med(values, "inside_ms"),
            med(values, "device_ms"),
            med(values, "kernel_ms"),
            med(values, "new_files"),
        ]
        kernel_rows.append(
            f"| {name} | {ok}/{len(values)} | "
            + " | ".join(f"{c:.1f}" for c in cells)
            + f" | {total / plain_total:.2f}x | "
            + ", ".join(f"{k} {n}/{len(values)}" for k, n in refused.items())
            + (f" | {'; '.join(errors)} |" if errors else " | |")
        )
    load = os.getloadavg()
    device = torch.cuda.get_device_name(0) if args.backend == "cuda" else "CPU (Triton interpreter)"
    lines = [
        "# OS sandbox: cost per evaluator child",
        "",
        f"Command: `python bench/bench_os_sandbox.py --repeats {args.repeats} --kernel-repeats {args.kernel_repeats} "
        f"--backend {args.backend}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, {device}, Python {platform.python_version()}, "
        f"torch {torch.__version__}, triton {triton.__version__}, load average at the end "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}  ",
        f"The parent imported torch and triton first ({import_s:.1f} s), as a zygote does; children forked "
        "round-robin over the variants.  ",
        f"Layers on this machine (probe, {probe_ms:.0f} ms once per process): {probe.summary()}  ",
        f"Default {args.backend} policy computed once: {policy_ms:.1f} ms; "
        f"{len(base.read_paths)} read paths, {len(base.exec_paths)} exec paths.",
        "",
        "## Entering the sandbox",
        "",
        "| variant | ready p50 (ms) | ready p90 (ms) | reaped p50 (ms) | inside enter_os_sandbox p50 (ms) "
        "| ready vs plain fork |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "`ready`: fork until the child has entered its sandbox and said so (what a spare child adds before it",
        "can take a job; the zygote forks spares ahead, so an evaluation waits for it only when jobs come",
        "back to back). `reaped`: until `waitpid` returns (with a PID namespace the outer process ends last).",
        "",
        "## Then the device, a kernel and three escapes",
        "",
        "| variant | kernel correct | child total p50 (ms) | sandbox p50 (ms) | device init p50 (ms) "
        "| import + launch p50 (ms) | files compiled into the cache p50 | total vs plain fork | escapes refused "
        "| errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
        *kernel_rows,
        "",
        "Each child's Triton cache is a copy of one warmed outside the sandbox (as the evaluator's is); the",
        "plain fork refuses the escapes only where the machine itself does.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    for name, values in kernel_samples.items():  # what was compiled or warned about, once per variant
        if values and (values[0].get("new_names") or values[0].get("warnings")):
            print(f"{name}: compiled {values[0].get('new_names')}; warnings {values[0].get('warnings')}")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
