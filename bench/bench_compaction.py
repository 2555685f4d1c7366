"""CompactionWrapper overhead per step on a 32k-token history, against the evaluation step it wraps.

    python bench/bench_compaction.py [--history-tokens 32768] [--steps 5] [--out bench/results/bench_compaction.md]

One run, one process, the real ``AscendTritonEnv`` on the CPU interpreter with the real
evaluator (each step submits a fresh variant of the bundled relu solution, so no evaluation is
served from the result cache). A pass-through timing wrapper sits between the compaction
wrapper and the env, so every step is split into

* the env step (evaluation in a sandboxed child + feedback + bookkeeping), and
* the compaction wrapper's own work: counting the context's tokens (cached per message) and,
  on a compaction step, building the rules summary and rewriting the context.

Cases, each on a synthetic history of about ``--history-tokens`` tokens (assistant kernels and
evaluator feedback, like a long episode):

1. no compaction (budget far above the history): the incremental count only;
2. a rules compaction on this step (budget = the history size);
3. for reference, a cold count of the whole history with no cache (what a non-incremental
   counter would pay every step).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RELU = "core/L1/relu"


class StepTimer(gym.Wrapper):
    """Records how long the wrapped env's ``step`` takes."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.last_s = 0.0

    def step(self, action: Any):
        start = time.perf_counter()
        out = self.env.step(action)
        self.last_s = time.perf_counter() - start
        return out


def synthetic_history(base: Any, solution: str, target_tokens: int, counter: Any) -> None:
    """Append assistant/feedback pairs to the env's context (and attempts) until ``target_tokens``."""
    messages = [dict(m) for m in base.messages]
    attempts = []
    turn = 0
    while counter.count_messages(messages) < target_tokens:
        turn += 1
        code = solution.replace("BLOCK_SIZE = 1024", f"BLOCK_SIZE = {1000 + turn}")
        feedback = (
            f"## Result of turn {turn}: score -0.400 (best so far -0.400)\n\nCompile error:\n"
            f"the first call of ModelNew.forward failed: ValueError: arange's range must be a power of 2\n"
            f"your code line 16 (in relu_kernel): offsets = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
            "Fix the kernel so it compiles (check tl.constexpr block sizes, power-of-2 aranges, dtypes).\n\n"
            "You have some turn(s) left. Reply with the complete, improved solution in one ```python block."
        )
        messages += [
            {"role": "assistant", "content": f"Attempt {turn}.\n```python\n{code}\n```"},
            {"role": "user", "content": feedback},
        ]
        attempts.append(
            {
                "turn": turn,
                "code": code,
                "score": -0.4,
                "reward": 0.0,
                "eval": {"error_type": "compile_error", "correct": False, "hack": False,
                         "error_message": "ValueError: arange's range must be a power of 2"},
                "feedback": feedback,
                "format_ok": True,
            }
        )  # fmt: skip
    base.set_messages(messages)
    base.attempts = attempts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history-tokens", type=int, default=32768, help="size of the synthetic history")
    parser.add_argument("--steps", type=int, default=5, help="measured steps per case (default 5)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "bench_compaction.md"))
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table
    from tqdm.auto import tqdm

    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv
    from ascend_kernel_gym.tasks import get_task
    from ascend_kernel_gym.wrappers.compaction import CompactionWrapper
    from ascend_kernel_gym.wrappers.tokens import TiktokenCounter, make_token_counter

    console = Console()
    solution = get_task(RELU).solution_source()
    assert solution is not None and "BLOCK_SIZE = 1024" in solution
    base = AscendTritonEnv(task_ids=[RELU], backend="interpreter", max_turns=10_000, num_trials=2)
    timer = StepTimer(base)
    results: dict[str, list[tuple[float, float]]] = {"no compaction": [], "rules compaction": []}
    details: dict[str, list[dict[str, Any]]] = {"no compaction": [], "rules compaction": []}
    counter_for_history = make_token_counter()
    run_id = time.time_ns()

    def answer(i: int) -> str:
        # A fresh, correct kernel each step (a comment makes the code hash new: no result-cache hits).
        return f"```python\n# bench run {run_id} step {i}\n{solution}\n```"

    # Warm the evaluator pool (first evaluation starts the workers) outside the measurements.
    with console.status("starting the evaluator pool (first evaluation)..."):
        base.reset(seed=0)
        base.step(answer(-1))

    step_index = 0
    for case, budget_factor in [("no compaction", 4.0), ("rules compaction", 1.0)]:
        for _ in tqdm(range(args.steps), desc=case):
            env = CompactionWrapper(timer, budget_tokens=10_000_000, max_compactions=None)
            env.reset(seed=0)
            synthetic_history(base, solution, args.history_tokens, counter_for_history)
            history_tokens = env.count_tokens()  # tokenises the synthetic history once (as earlier steps would have)
            env.budget_tokens = int(history_tokens * budget_factor)
            env.threshold_tokens = int(env.trigger_ratio * env.budget_tokens)
            step_index += 1
            start = time.perf_counter()
            _, _, _, _, info = env.step(answer(step_index))
            total = time.perf_counter() - start
            seg = info["segment"]
            assert info["eval"]["correct"], info["feedback"]
            assert seg["compacted"] == (case == "rules compaction"), seg
            results[case].append((timer.last_s, total - timer.last_s))
            details[case].append({"tokens_before": seg["tokens_before"], "tokens_after": seg["tokens_after"]})

    # Reference: a cold count of the same history without the per-message cache.
    raw = TiktokenCounter()
    cold = []
    for _ in range(args.steps):
        synthetic_history(base, solution, args.history_tokens, counter_for_history)
        start = time.perf_counter()
        sum(raw.count(m["content"]) for m in base.messages)
        cold.append(time.perf_counter() - start)

    table = Table(title=f"CompactionWrapper overhead per step (history ~{args.history_tokens} tokens, interpreter)")
    table.add_column("case")
    table.add_column("env step (eval) median", justify="right")
    table.add_column("wrapper overhead median", justify="right")
    table.add_column("overhead / env step", justify="right")
    table.add_column("tokens before -> after", justify="right")
    md_rows = []
    for case, pairs in results.items():
        env_med = statistics.median(p[0] for p in pairs)
        over_med = statistics.median(p[1] for p in pairs)
        d = details[case][0]
        ratio = over_med / env_med
        table.add_row(case, f"{env_med * 1000:.1f} ms", f"{over_med * 1000:.2f} ms", f"{ratio:.2%}",
                      f"{d['tokens_before']} -> {d['tokens_after']}")  # fmt: skip
        md_rows.append(
            f"| {case} | {env_med * 1000:.1f} | {over_med * 1000:.2f} | {ratio:.2%} | "
            f"{d['tokens_before']} -> {d['tokens_after']} |"
        )
    cold_med = statistics.median(cold)
    env_all = statistics.median(p[0] for pairs in results.values() for p in pairs)
    table.add_row(
        "(reference) cold count, no cache", "-", f"{cold_med * 1000:.2f} ms", f"{cold_med / env_all:.2%}", "-"
    )
    md_rows.append(f"| (reference) cold count of the whole history, no cache | - | {cold_med * 1000:.2f} | "
                   f"{cold_med / env_all:.2%} | - |")  # fmt: skip
    console.print(table)

    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    lines = [
        "# CompactionWrapper overhead benchmark",
        "",
        f"Command: `python bench/bench_compaction.py --history-tokens {args.history_tokens} --steps {args.steps}`  ",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}  ",
        "Env: real `AscendTritonEnv` on the interpreter backend with the real evaluator (2 correctness trials), "
        f"task `{RELU}`, each step a fresh correct kernel (no result-cache hits). Tokenizer: tiktoken cl100k_base.",
        "",
        "| case | env step (eval) median, ms | wrapper overhead median, ms | overhead / env step "
        "| tokens before -> after |",
        "|---|---:|---:|---:|---:|",
        *md_rows,
        "",
        "The overhead is the wrapper's own time in the same `step` call (total minus the wrapped env's step).",
        "The cold-count row is what re-tokenising the whole history every step would cost instead of the",
        "per-message cache; the ratio there is against the median env step of both cases.",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    console.print(f"wrote {out}")
    base.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
