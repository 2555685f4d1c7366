"""Cost of the OS sandbox per evaluator child, against a plain fork in the same run.

    python bench/bench_os_sandbox.py [--repeats 40] [--backend interpreter] [--out bench/results/os_sandbox_cpu.md]

The process imports torch and triton first (as a zygote does), then forks children round-robin
over the variants below. Each child enters its sandbox (or not), writes one byte to a pipe and
exits. Per child: ``ready`` is fork -> byte read (what a spare child adds before it can take a
job), ``reaped`` is fork -> ``waitpid`` done (the PID-namespace variant has one more process to
end), ``inside`` is the time ``enter_os_sandbox`` itself reports. Medians and 90th percentiles,
and the ratio of each median to the plain fork's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

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

VARIANTS: dict[str, frozenset[str] | None] = {
    "plain fork (no sandbox)": None,
    "all layers": frozenset(LAYERS),
    "all layers, no PID namespace": frozenset(LAYERS) - {"pid_ns"},
    "namespaces + new root only": frozenset({"user_ns", "mount_ns", "net_ns", "ipc_ns", "uts_ns", "pid_ns"}),
    "Landlock + seccomp only": frozenset({"capabilities", "no_new_privs", "not_dumpable", "landlock", "seccomp"}),
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def one_child(policy: SandboxPolicy | None) -> tuple[float, float, float]:
    """(ready ms, reaped ms, inside ms) of one forked child."""
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        inside = 0.0
        try:
            os.close(read_fd)
            if policy is not None:
                inside = enter_os_sandbox(policy.replace(keep_fds=(write_fd,))).seconds
            os.write(write_fd, f"{inside:.6f}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    data = os.read(read_fd, 64)
    ready = time.perf_counter()
    os.close(read_fd)
    os.waitpid(pid, 0)
    reaped = time.perf_counter()
    return (ready - started) * 1000, (reaped - started) * 1000, float(data or 0) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=40, help="children per variant (default 40)")
    parser.add_argument("--backend", default="interpreter", choices=("interpreter", "cuda", "npu"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "os_sandbox_cpu.md"), help="Markdown output")
    args = parser.parse_args()

    t0 = time.perf_counter()
    import torch  # noqa: F401 - a zygote has both loaded before it forks
    import triton  # noqa: F401

    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    probe = probe_os_sandbox()
    probe_ms = (time.perf_counter() - t0) * 1000
    with tempfile.TemporaryDirectory(prefix="akg-bench-sandbox-") as root:
        t0 = time.perf_counter()
        base = default_policy(args.backend, root)
        policy_ms = (time.perf_counter() - t0) * 1000
        samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in VARIANTS}
        for _ in range(args.repeats):
            for name, layers in VARIANTS.items():
                scratch = tempfile.mkdtemp(dir=root)
                policy = None if layers is None else base.replace(scratch=scratch, layers=layers)
                samples[name].append(one_child(policy))

    plain = statistics.median(s[0] for s in samples["plain fork (no sandbox)"])
    rows = []
    for name, values in samples.items():
        ready = [v[0] for v in values]
        reaped = [v[1] for v in values]
        inside = [v[2] for v in values]
        cells = [statistics.median(ready), percentile(ready, 0.9), statistics.median(reaped), statistics.median(inside)]
        ratio = statistics.median(ready) / plain
        rows.append(f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {ratio:.1f}x |")
    load = os.getloadavg()
    lines = [
        "# OS sandbox: cost per evaluator child",
        "",
        f"Command: `python bench/bench_os_sandbox.py --repeats {args.repeats} --backend {args.backend}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}  ",
        f"The parent imported torch and triton first ({import_s:.1f} s), as a zygote does; "
        f"{args.repeats} children per variant, forked round-robin.  ",
        f"Layers on this machine (probe, {probe_ms:.0f} ms once per process): {probe.summary()}  ",
        f"Default {args.backend} policy computed once: {policy_ms:.1f} ms; "
        f"{len(base.read_paths)} read paths, {len(base.exec_paths)} exec paths.",
        "",
        "| variant | ready p50 (ms) | ready p90 (ms) | reaped p50 (ms) | inside enter_os_sandbox p50 (ms) "
        "| ready vs plain fork |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "`ready`: fork until the child has entered its sandbox and said so (what a spare child adds before it",
        "can take a job; the zygote forks spares ahead, so an evaluation waits for it only when jobs come",
        "back to back). `reaped`: until `waitpid` returns (with a PID namespace the outer process ends last).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
