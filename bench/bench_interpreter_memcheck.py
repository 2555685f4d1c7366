"""Cost of the interpreter's memory check: reference solutions run with and without it, in one run.

    python bench/bench_interpreter_memcheck.py [--rounds 25] [--out bench/results/interpreter_memcheck_cpu.md]

For each kernel (bundled core solutions at their ``small`` profile on Triton's CPU interpreter,
and a synthetic worst case that only loads and stores), one forward call is timed with the check
off and on, alternating the order every round so that warm-up and machine load fall on both
sides alike. The table gives the fastest samples and their ratio (and the medians' ratio), and
how many memory accesses one forward makes (each one is checked). The outputs with and without
the check are compared too (they must be identical).

Results are printed and written as Markdown.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import timeit
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import _bootstrap  # noqa: E402,F401 - the package without gymnasium where it is missing
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

TASKS = ("core/L1/relu", "core/L1/softmax", "core/L1/layernorm", "core/L1/matmul_square")
#: the worst case: a kernel that does nothing but masked loads and stores (no arithmetic to hide the check)
SYNTHETIC = "synthetic: masked copy loop"


@triton.jit
def copy_loop(src, dst, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    for _ in range(ITERS):
        tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


class CopyLoop(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        copy_loop[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), ITERS=50, BLOCK=1024)
        return out


#: what the probe kernel calls from inside its launch (so that the check sees a launch and its arguments)
HOOK: list[object] = [None]


@triton.jit
def probe(x):
    HOOK[0]()


def access_costs(native: object, lanes: int = 1024, number: int = 500, repeats: int = 30) -> list[dict[str, object]]:
    """Microseconds per call of the interpreter's native load/store and of the checked ones, on the
    same arrays, from inside a launch whose argument holds the addresses (best of the repeats)."""
    import numpy as np

    checked = sys.modules["triton._C.libtriton.interpreter"]
    x = torch.zeros(lanes - 7)  # the last 7 lanes of a block point past its end, as in a masked tail
    ptr = np.uint64(x.data_ptr()) + np.uint64(4) * np.arange(lanes, dtype=np.uint64)
    tail = np.arange(lanes) < lanes - 7
    inside_ptr, inside_mask = ptr[: lanes - 7].copy(), tail[: lanes - 7].copy()
    other = np.zeros(lanes, dtype=np.float32)
    f32 = np.dtype(np.float32)
    cases = {
        "load, every lane inside": lambda m: m.load(inside_ptr, inside_mask, other[: lanes - 7], f32),
        "load, masked-off tail lanes outside": lambda m: m.load(ptr, tail, other, f32),
        "store, masked-off tail lanes outside": lambda m: m.store(ptr, other, tail),
    }
    rows: list[dict[str, object]] = []

    def measure() -> None:
        best = {(case, name): float("inf") for case in cases for name in ("native", "checked")}
        for _ in range(repeats):  # interleaved, so that a slow spell of the machine hits both sides
            for case, call in cases.items():
                for name, module in (("native", native), ("checked", checked)):
                    spent = timeit.timeit(lambda c=call, m=module: c(m), number=number) / number * 1e6
                    best[case, name] = min(best[case, name], spent)
        for case in cases:
            per = {name: best[case, name] for name in ("native", "checked")}
            rows.append({"case": case, **per, "added": per["checked"] - per["native"]})

    HOOK[0] = measure
    try:
        probe[(1,)](x)
    finally:
        HOOK[0] = None
    return rows


def load_case(task_id: str, seed: int) -> tuple[object, list[object]]:
    """The solution's model and the task's small-profile inputs."""
    if task_id == SYNTHETIC:
        torch.manual_seed(seed)
        return CopyLoop(), [torch.randn(4000)]
    from ascend_kernel_gym.tasks import get_task
    from ascend_kernel_gym.tasks.runtime import exec_source, instantiate

    task = get_task(task_id)
    if task.solution_path is None:
        raise SystemExit(f"{task_id} has no bundled solution")
    module = instantiate(task, "small")
    solution = exec_source(Path(task.solution_path).read_text(), f"bench_{task.name}", task.solution_path)
    torch.manual_seed(seed)
    model = solution.ModelNew(*module.get_init_inputs())
    inputs = module.get_inputs()
    return model, inputs


def time_once(model: object, inputs: list[object]) -> tuple[float, object]:
    gc.collect()
    gc.disable()  # a collection landing in one sample and not the next is most of the noise
    try:
        start = time.perf_counter()
        out = model(*inputs)  # type: ignore[operator]
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def bench_case(task_id: str, rounds: int) -> dict[str, object]:
    from ascend_kernel_gym.backends import interpreter_memcheck as memcheck

    model, inputs = load_case(task_id, seed=0)
    samples: dict[bool, list[float]] = {False: [], True: []}
    outputs: dict[bool, object] = {}
    for checked in (False, True):  # warm-up: rewriting, first-call caches
        (memcheck.install if checked else memcheck.uninstall)()
        outputs[checked] = time_once(model, inputs)[1]
    memcheck.install()
    memcheck.reset()
    model(*inputs)  # type: ignore[operator]
    counted = memcheck.state()
    for r in range(rounds):
        for checked in (False, True) if r % 2 == 0 else (True, False):
            (memcheck.install if checked else memcheck.uninstall)()
            samples[checked].append(time_once(model, inputs)[0])
    memcheck.install()
    off, on = min(samples[False]), min(samples[True])
    return {
        "task": task_id,
        "off_ms": off * 1000.0,
        "on_ms": on * 1000.0,
        "ratio": on / off,
        "median_ratio": statistics.median(samples[True]) / statistics.median(samples[False]),
        "accesses": counted.checks,
        "launches": counted.launches,
        "identical": bool(torch.equal(outputs[False], outputs[True])),  # type: ignore[arg-type]
        "rounds": rounds,
    }


def render(rows: list[dict[str, object]], costs: list[dict[str, object]], command: str) -> str:
    import numpy

    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    lines = [
        "# Interpreter memory check: cost",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"torch {torch.__version__}, triton {triton.__version__}, numpy {numpy.__version__}; "
        f"load average at the end {load}  ",
        "Bundled core solutions at their `small` profile on Triton's CPU interpreter, and a synthetic "
        "worst case (4 programs x 50 masked 1024-lane load + store pairs, nothing else); one forward per "
        "sample, check off and on alternating (order swapped every round).",
        "",
        "",
        "## Per access",
        "",
        "The interpreter's native load / store and the checked ones on the same 1024-lane float32 arrays, "
        "called from inside a launch (best of 30 interleaved repeats of 500 calls):",
        "",
        "| access | native (us) | checked (us) | added by the check (us) |",
        "|---|---:|---:|---:|",
    ]
    for cost in costs:
        lines.append(f"| {cost['case']} | {cost['native']:.2f} | {cost['checked']:.2f} | {cost['added']:.2f} |")
    added = float(costs[0]["added"]) if costs else 0.0
    lines += [
        "",
        "## Per forward",
        "",
        "| kernel | off (ms) | on (ms) | on / off | on / off (medians) | expected on / off | accesses per forward "
        "| launches | same output |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        expected = 1.0 + int(row["accesses"]) * added / 1000.0 / float(row["off_ms"])  # type: ignore[call-overload]
        lines.append(
            f"| {row['task']} | {row['off_ms']:.1f} | {row['on_ms']:.1f} | {row['ratio']:.3f} "
            f"| {row['median_ratio']:.3f} | {expected:.3f} | {row['accesses']} | {row['launches']} "
            f"| {'yes' if row['identical'] else 'NO'} |"
        )
    lines += [
        "",
        "off / on: the fastest of the samples (the work is deterministic and CPU-bound, so the minimum is "
        "the least disturbed by other load on the machine); the medians' ratio is given beside it. "
        "Expected: 1 + accesses x the added time of an access with every lane inside / the forward time "
        "off, which does not depend on the machine's other load. An access is one interpreted `tl.load` / "
        "`tl.store` / atomic of a whole block, all its lanes checked in one vectorised step. Where a "
        "measured ratio strays from the expected one by more than a few percent (below 1 included), other "
        "jobs on the machine were the larger effect; the per-access costs are the stable measurement.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=25, help="timed forwards per mode and kernel (default 25)")
    parser.add_argument(
        "--tasks", nargs="*", default=[*TASKS, SYNTHETIC], help="task ids and/or the synthetic case (default: all)"
    )
    parser.add_argument(
        "--out", default=str(ROOT / "bench" / "results" / "interpreter_memcheck_cpu.md"), help="Markdown output"
    )
    args = parser.parse_args()

    import triton._C.libtriton as libtriton

    from ascend_kernel_gym.backends import interpreter_compat, interpreter_memcheck

    native = libtriton.interpreter  # before install() replaces it by the checked copy
    interpreter_compat.install()
    if not interpreter_memcheck.install():
        raise SystemExit("the memory check could not be installed (torch or triton's interpreter missing)")
    costs = access_costs(native)
    for cost in costs:
        print(f"{cost['case']:<40} native {cost['native']:6.2f} us  checked {cost['checked']:6.2f} us", flush=True)
    rows = []
    for task_id in args.tasks:
        row = bench_case(task_id, args.rounds)
        print(
            f"{row['task']:<28} off {row['off_ms']:8.1f} ms  on {row['on_ms']:8.1f} ms  ratio {row['ratio']:.3f} "
            f"(medians {row['median_ratio']:.3f})  accesses {row['accesses']}  same output {row['identical']}",
            flush=True,
        )
        rows.append(row)
    command = "python bench/bench_interpreter_memcheck.py " + " ".join(sys.argv[1:])
    text = render(rows, costs, command.strip())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
