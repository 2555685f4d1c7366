"""A scripted agent: a wrong first attempt, then the task's reference Triton solution.

It prints each turn's result, score and reward; in the default ``improvement`` mode the
rewards add up to the best score reached. Runs on the CPU interpreter in a few seconds::

    python examples/scripted_agent.py --task core/L1/relu
"""

from __future__ import annotations

import argparse

import gymnasium as gym
from rich.console import Console
from rich.table import Table

import ascend_kernel_gym  # noqa: F401 - registers AscendTriton-v0
from ascend_kernel_gym.tasks import get_task

BROKEN = """I'll start with an element-wise kernel (it clamps the wrong side, so the values are wrong).
```python
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.minimum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x, *args):
        x = x.contiguous()
        out = torch.empty_like(x)
        kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
```
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="interpreter", help="npu, cuda, interpreter or auto")
    parser.add_argument("--task", default="core/L1/relu", help="a task id with a bundled reference solution")
    parser.add_argument("--reward", default="default", help="reward preset: default, kevin, drkernel, binary, tiered")
    args = parser.parse_args()

    solution = get_task(args.task).solution_source()
    if solution is None:
        parser.error(f"task {args.task} has no bundled reference solution")
    env = gym.make("AscendTriton-v0", task_ids=[args.task], backend=args.backend, max_turns=2, reward=args.reward)
    obs, info = env.reset(seed=0)
    print(f"task {info['task_id']} on {info['backend']} (profile {info['profile']}); prompt: {len(obs)} characters")

    table = Table(title=f"scripted agent, reward preset {args.reward!r}, mode improvement")
    for column in ("turn", "answer", "stage", "result", "speedup", "score", "reward"):
        table.add_column(column)
    total = 0.0
    for label, action in [("broken kernel", BROKEN), ("reference solution", f"```python\n{solution}```")]:
        obs, reward, _terminated, _truncated, info = env.step(action)
        total += reward
        ev = info["eval"]
        outcome = "correct" if ev["correct"] and not ev["hack"] else ev["error_type"]
        speedup = "n/a" if ev["speedup"] is None else f"{ev['speedup']:.2f}x"
        table.add_row(str(info["turn"]), label, ev["stage"], outcome, speedup, f"{info['score']:.3f}", f"{reward:.3f}")
    env.close()
    console = Console()
    console.print(table)
    console.print(f"return {total:.3f} == best score {info['best_score']:.3f}")
    print("\nfeedback after the broken attempt:\n" + info["messages"][3]["content"])


if __name__ == "__main__":
    main()
