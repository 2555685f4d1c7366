"""A random agent: each turn it sends random characters or a randomly built (usually wrong) Triton kernel.

It shows that any answer is a normal turn (garbage is a format failure, never an exception) and
what the reward looks like for each outcome. Runs on the CPU interpreter in well under a minute::

    python examples/random_agent.py --episodes 2 --max-turns 3
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

import ascend_kernel_gym  # noqa: F401 - registers AscendTriton-v0

KERNEL_TEMPLATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def random_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, {expr}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x, *args):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        random_kernel[(triton.cdiv(n, {block}),)](x, out, n, BLOCK={block})
        return out
"""
EXPRESSIONS = ["tl.maximum(x, 0.0)", "x * 2.0", "-x", "tl.abs(x)", "x + 1.0", "tl.sigmoid(x)"]


def random_answer(env: gym.Env, rng: np.random.Generator) -> tuple[str, str]:
    """Half the time random characters from the action space, else a random element-wise kernel."""
    if rng.random() < 0.5:
        length = int(rng.integers(1, 400))
        text = env.action_space.sample(mask=(length, None))
        return "random text", text
    expr = EXPRESSIONS[int(rng.integers(len(EXPRESSIONS)))]
    block = int(2 ** rng.integers(6, 11))
    code = KERNEL_TEMPLATE.replace("{expr}", expr).replace("{block}", str(block))
    return f"kernel: {expr}", f"Random kernel:\n```python\n{code}```\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="interpreter", help="npu, cuda, interpreter or auto")
    parser.add_argument("--task", default="core/L1/relu", help="task id (default: core/L1/relu)")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = gym.make("AscendTriton-v0", task_ids=[args.task], backend=args.backend, max_turns=args.max_turns)
    env.action_space.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    table = Table(title=f"random agent on {args.task} ({args.backend})")
    for column in ("episode", "turn", "answer", "result", "score", "reward"):
        table.add_column(column)
    for episode in range(args.episodes):
        _, info = env.reset(seed=args.seed + episode)
        done = False
        total = 0.0
        while not done:
            label, action = random_answer(env, rng)
            _obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            total += reward
            ev = info["eval"]
            outcome = "correct" if ev["correct"] and not ev["hack"] else ev["error_type"]
            table.add_row(str(episode), str(info["turn"]), label, outcome, f"{info['score']:.3f}", f"{reward:.3f}")
        table.add_row(str(episode), "", "[b]return[/b]", "", f"best {info['best_score']:.3f}", f"{total:.3f}")
    env.close()
    Console().print(table)


if __name__ == "__main__":
    main()
