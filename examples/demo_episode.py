"""One episode of the ATRL stack, printed turn by turn: what `make demo` shows first.

A scripted agent answers ``core/L1/softmax`` on the CPU interpreter: first a kernel with a
classic bug (``tl.arange`` over a length that is not a power of two), then the fixed kernel. After
each turn the script prints the evaluator's verdict, the score and reward, the feedback the agent
reads, the Ascend tips retrieved for it, and the context compaction that replaces the history by a
summary when it outgrows its token budget::

    python examples/demo_episode.py [--task core/L1/softmax] [--backend interpreter]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from pathlib import Path

import gymnasium as gym

import ascend_kernel_gym  # noqa: F401 - registers the environments
from ascend_kernel_gym.kb_index import KnowledgeBase
from ascend_kernel_gym.wrappers import CompactionWrapper, KBRetrievalWrapper

TASK = "core/L1/softmax"

KERNELS = Path(__file__).resolve().parent / "kernels"

BROKEN = """I'll compute one row per program, the whole row in one block.

Plan: softmax(x)[i] = exp(x[i] - max(x)) / sum_j exp(x[j] - max(x)). Each program loads one row of
the input matrix into registers, subtracts the row maximum for numerical stability (so that exp
never overflows), exponentiates, sums the row, divides, and stores the row. With one program per
row the grid is simply (n_rows,), and since a row of this task has at most a few thousand
elements, the whole row fits in one block: the block size is the row length, passed as a
compile-time constant so that Triton can specialise the kernel. The input is made contiguous first
so that row r starts at offset r * n_cols, and the output is allocated with torch.empty_like,
which the kernel fills completely.
"""

FIXED = """The block must be a power of two: I round it up and mask the tail.
"""


def answer(text: str, kernel_file: str) -> str:
    """An agent's answer: its words, then the kernel file in a fenced block."""
    return f"{text}```python\n{(KERNELS / kernel_file).read_text(encoding='utf-8')}```\n"


def say(text: str = "", indent: int = 0) -> None:
    """Print ``text`` wrapped to 100 columns (code-like lines as they are), then flush."""
    pad = " " * indent
    for line in text.splitlines() or [""]:
        if len(line) <= 100 - indent or line.startswith(("    ", "```")):
            print(pad + line)
        else:
            print(textwrap.fill(line, 100, initial_indent=pad, subsequent_indent=pad))
    sys.stdout.flush()


def fold_code(text: str) -> str:
    """``text`` with each fenced code block shown as one line that says how long it is."""
    out: list[str] = []
    code: list[str] | None = None
    for line in text.splitlines():
        if code is None and line.startswith("```"):
            code = []
        elif code is not None and line.startswith("```"):
            out.append(f"[a fenced code block: the kernel, {len(code)} lines]")
            code = None
        elif code is not None:
            code.append(line)
        else:
            out.append(line)
    return "\n".join(out)


def heading(text: str) -> None:
    print(f"\n=== {text} " + "=" * max(3, 95 - len(text)), flush=True)


def make_env(task: str, backend: str, budget_tokens: int, kb: KnowledgeBase) -> gym.Env:
    """The ATRL stack of ``AscendTriton-ATRL-v0``, with a rules summary that may fill the whole budget."""
    env = gym.make("AscendTriton-v0", task_ids=[task], backend=backend, max_turns=2)
    env = CompactionWrapper(env, budget_tokens=budget_tokens, strategy="rules", summary_ratio=0.8)
    return KBRetrievalWrapper(env, kb=kb, k=2)


def knowledge_base() -> KnowledgeBase:
    """The bundled knowledge base, its dense index built now (with a progress bar) if it is not cached yet."""
    kb = KnowledgeBase()
    if not kb.index.is_cached:
        say(f"building the knowledge-base index ({len(kb)} entries; once, then cached on disk) ...")
        kb.build(progress=True)
    return kb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=TASK, help=f"task id (default {TASK}; the answers are softmax kernels)")
    parser.add_argument("--backend", default="interpreter", help="interpreter (default), cuda, npu or auto")
    args = parser.parse_args()

    heading(f"one episode of {args.task}: a scripted agent, context compaction, Ascend tips")
    # The context's size at reset sets a compaction budget that the first answer outgrows, so that
    # this short episode shows a compaction.
    kb = knowledge_base()
    probe = make_env(args.task, args.backend, budget_tokens=1 << 20, kb=kb)
    _, info = probe.reset(seed=0)
    probe.close()
    head_tokens = int(info["segment"]["tokens_before"])
    budget = int((head_tokens + 700) / 0.8)
    env = make_env(args.task, args.backend, budget, kb=kb)
    obs, info = env.reset(seed=0)
    say(
        f"task {info['task_id']} ({info['task']['description']}) on the {info['backend']} backend, profile "
        f"{info['profile']}; the prompt is {len(obs):,} characters ({head_tokens:,} tokens). Compaction budget: "
        f"{budget:,} tokens (it compacts at {info['segment']['threshold_tokens']:,})."
    )
    total = 0.0
    answers = [
        ("a kernel with a bug", answer(BROKEN, "softmax_bug.py")),
        ("the fixed kernel", answer(FIXED, "softmax.py")),
    ]
    for turn, (label, text) in enumerate(answers, 1):
        heading(f"turn {turn}: the agent answers {label} (examples/kernels/)")
        say(text.split("\n", 1)[0], indent=2)
        started = time.monotonic()
        note = " (the first evaluation starts the evaluator's worker processes)" if turn == 1 else ""
        say(f"evaluating{note} ...", indent=2)
        obs, reward, terminated, truncated, info = env.step(text)
        total += float(reward)
        ev = info["eval"]
        verdict = "correct" if ev["correct"] and not ev["hack"] else f"{ev['error_type']} (stage {ev['stage']})"
        trials = f", {ev['trials_passed']}/{ev['trials_total']} trials passed" if ev["trials_total"] else ""
        say(
            f"verdict: {verdict}{trials}; score {info['score']:.2f}, reward {float(reward):+.2f} "
            f"({time.monotonic() - started:.1f} s)",
            indent=2,
        )
        say("feedback the agent reads:", indent=2)
        say(info["feedback"].strip(), indent=6)
        hits = (info.get("kb") or {}).get("hits") or []
        if hits:
            say("Ascend tips retrieved from the knowledge base and appended to that feedback:", indent=2)
            for hit in hits:
                say(f"- {hit['id']} (why: {hit['why']})", indent=6)
        segment = info.get("segment") or {}
        if segment.get("compacted"):
            say(
                f"compaction: the context reached {segment['tokens_before']:,} tokens (threshold "
                f"{segment['threshold_tokens']:,}); the history was replaced by a summary, now "
                f"{segment['tokens_after']:,} tokens. The summary the agent reads next:",
                indent=2,
            )
            summary = info["messages"][-1]["content"] if info.get("messages") else ""
            say(fold_code(summary.strip()), indent=6)
        if terminated or truncated:
            break
    env.close()
    heading("episode over")
    say(
        f"return {total:+.2f} (reward mode 'improvement': the rewards add up to the best score reached, "
        f"{info['best_score']:.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
