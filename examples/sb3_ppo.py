"""Train Stable-Baselines3 PPO to pick the kernel variant the evaluator accepts.

Each task offers the same menu of kernel variants (broken copies, hacks, and one correct
prepared alternative whose slot differs between tasks); PPO learns from the real evaluator's
rewards which slot to pick for which task, reading the task features in the observation.

    python examples/sb3_ppo.py                       # interpreter, ~1 minute on 2 CPU cores
    python examples/sb3_ppo.py --default-menu         # the generated menu (block sizes, ...)
    python examples/sb3_ppo.py --backend cuda --timesteps 4096

The test ``tests/integrations/test_sb3.py`` runs :func:`make_env`, :func:`train` and
:func:`choice_rate` from this file.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from ascend_kernel_gym.integrations.sb3 import KernelChoiceEnv, outcome_of
from ascend_kernel_gym.tasks import get_task

#: Two tasks with different features (category, shapes): an activation and a reduction.
TASK_IDS = ("core/L1/relu", "core/L1/sum_dim")


def make_env(
    task_ids: Sequence[str] = TASK_IDS, backend: str = "interpreter", default_menu: bool = False, **kwargs
) -> KernelChoiceEnv:
    """The choice env used by the example and its test.

    With ``default_menu=False`` the menu is: an off-by-one mask, a kernel that is never
    launched, a PyTorch fallback (all generated from each task's reference solution), and two
    prepared alternatives ``solution_a`` / ``solution_b`` that hold the reference solutions of
    the first and the second task. So for the first task only ``solution_a`` is correct and for
    the second only ``solution_b``: a policy must read the observation to score. With
    ``default_menu=True`` the generated menu of :func:`kernel_variants` is used instead.
    """
    if default_menu:
        return KernelChoiceEnv(list(task_ids), backend=backend, **kwargs)
    tasks = [get_task(t) for t in task_ids]
    first, second = (t.solution_source() for t in tasks[:2])
    extra = {t.id: {"solution_a": first, "solution_b": second} for t in tasks}
    kwargs.setdefault("max_attempts", 1)
    return KernelChoiceEnv(
        tasks,
        backend=backend,
        include_reference=False,
        block_sizes=(),
        mutations=("mask_off_by_one", "skip_launch", "torch_fallback"),
        extra_variants=extra,
        **kwargs,
    )


def train(env: KernelChoiceEnv, total_timesteps: int = 2048, seed: int = 0):
    """PPO with a small MLP; every env step after the first evaluation of a variant is a memo lookup."""
    from stable_baselines3 import PPO

    model = PPO(
        "MlpPolicy",
        env,
        n_steps=256,
        batch_size=64,
        n_epochs=10,
        learning_rate=3e-3,
        gamma=0.0,
        ent_coef=0.0,
        policy_kwargs={"net_arch": [32, 32]},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=total_timesteps)
    return model


def choice_rate(model, env: KernelChoiceEnv, episodes: int = 50, deterministic: bool = True, seed: int = 123) -> float:
    """Share of episodes whose first choice is a correct, non-hack variant (graded by the evaluator)."""
    good = 0
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        action, _ = model.predict(obs, deterministic=deterministic)
        obs, _, _, _, info = env.step(int(action))
        good += info["outcome"] == "ok"
        obs, _ = env.reset()
    return good / episodes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASK_IDS), help="task ids (at least two)")
    parser.add_argument("--backend", default="interpreter")
    parser.add_argument("--timesteps", type=int, default=2048)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--default-menu", action="store_true", help="use the generated variant menu")
    parser.add_argument("--embedding", action="store_true", help="append the MiniLM embedding of the task text")
    args = parser.parse_args(argv)
    if len(args.tasks) < 2:
        parser.error("--tasks needs at least two task ids")

    from rich.console import Console
    from rich.table import Table
    from stable_baselines3 import PPO

    console = Console()
    env = make_env(args.tasks, backend=args.backend, default_menu=args.default_menu, embedding=args.embedding)
    start = time.perf_counter()
    with console.status(f"evaluating {len(env.tasks) * len(env.menu)} (task, variant) pairs"):
        env.precompute()
    table = Table(title=f"variants graded by the {env.backend_name} evaluator ({time.perf_counter() - start:.0f} s)")
    table.add_column("task")
    for name in env.menu:
        table.add_column(name)
    for task in env.tasks:
        table.add_row(task.name, *(outcome_of(env.result_for(task, i)) for i in range(len(env.menu))))
    console.print(table)

    untrained = PPO("MlpPolicy", env, seed=args.seed, device="cpu", policy_kwargs={"net_arch": [32, 32]})
    before = choice_rate(untrained, env, args.episodes, deterministic=False)
    start = time.perf_counter()
    model = train(env, total_timesteps=args.timesteps, seed=args.seed)
    seconds = time.perf_counter() - start
    after = choice_rate(model, env, args.episodes, deterministic=True)
    after_stochastic = choice_rate(model, env, args.episodes, deterministic=False)
    good = {t.id: [env.menu[i] for i in env.good_actions(t)] for t in env.tasks}

    results = Table(title=f"PPO, {args.timesteps} steps in {seconds:.1f} s")
    results.add_column("policy")
    results.add_column("correct first choice", justify="right")
    results.add_row("untrained (sampled)", f"{before:.2f}")
    results.add_row("trained (greedy)", f"{after:.2f}")
    results.add_row("trained (sampled)", f"{after_stochastic:.2f}")
    console.print(results)
    console.print(f"correct slots per task: {good}")
    console.print(f"chance level: {np.mean([len(v) / len(env.menu) for v in good.values()]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
