"""TRL adapter: AscendTriton as a tool-calling environment for ``GRPOTrainer(environment_factory=...)``.

TRL's contract (trl >= 1.0, ``GRPOTrainer.environment_factory``): a class whose no-argument
constructor builds one environment; ``reset(**row)`` starts an episode from a dataset row and
returns text appended to the row's last user message; every public method is offered to the
model as a tool (name, type hints and Google-style docstring become its JSON schema); and
``get_reward()`` scores the finished rollout. :class:`AscendTritonToolEnv` exposes exactly one
tool, ``submit_kernel(code)``, which runs one turn of :class:`AscendTritonEnv` (the real
evaluator behind it) and returns the feedback text.

Use :func:`build_trl_dataset` for the training rows (a ``prompt`` column of chat messages and
the ``task_id`` that ``reset`` reads) and :func:`make_environment_factory` to bind options::

    trainer = GRPOTrainer(
        model=model,
        args=GRPOConfig(...),
        train_dataset=build_trl_dataset("core", "train"),
        environment_factory=make_environment_factory(backend="interpreter", max_turns=3),
        processing_class=tokenizer,
    )

Nothing here imports torch, triton, trl or transformers; :func:`build_trl_dataset` imports
``datasets``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datasets import Dataset

__all__ = [
    "DEFAULT_INSTRUCTION",
    "AscendTritonToolEnv",
    "TRLEnvConfig",
    "build_trl_dataset",
    "make_environment_factory",
]

#: The lead-in of the user message in :func:`build_trl_dataset`; ``reset`` appends the task prompt to it.
DEFAULT_INSTRUCTION = (
    "Solve the task below by writing Triton kernels. Do not answer with a code block: pass the complete "
    "Python module as the `code` argument of the `submit_kernel` tool. It returns the evaluator's feedback; "
    "you may fix the kernel and submit again. The best submission is scored.\n\n"
)


@dataclass
class TRLEnvConfig:
    """Options of :class:`AscendTritonToolEnv` (all have defaults, so the class builds with no argument)."""

    suite: str = field(default="core", metadata={"help": "Suite to draw tasks from when a row names none."})
    split: str = field(default="train", metadata={"help": "Split of `suite` used when a row names no task."})
    backend: str = field(
        default="auto", metadata={"help": "Evaluator backend: `auto`, `npu`, `cuda` or `interpreter`."}
    )
    max_turns: int = field(
        default=3, metadata={"help": "Submissions allowed per episode; later calls are refused with a message."}
    )
    reward: str = field(
        default="default",
        metadata={"help": "Reward preset of `ascend_kernel_gym.envs.rewards` scoring each submission."},
    )
    no_submission_reward: float | None = field(
        default=None,
        metadata={
            "help": "Reward of a rollout that never called `submit_kernel`; None: the preset's score of an "
            "answer without code."
        },
    )
    evaluator: str | None = field(
        default=None,
        metadata={
            "help": "Evaluator address: `ray://auto` or `ray://HOST:PORT` (one actor per device of a Ray cluster), "
            "or `HOST:PORT` of an EvaluatorServer. None: `AKG_EVALUATOR` if set, else a local pool."
        },
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Extra keyword arguments for `gym.make('AscendTriton-v0', ...)` (e.g. `evaluator_options`)."},
    )

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        fields = {"suite", "split", "backend", "max_turns", "reward", "reward_mode"}
        reserved = (fields | ({"evaluator"} if self.evaluator is not None else set())) & set(self.env_kwargs)
        if reserved:
            raise ValueError(f"env_kwargs must not set {sorted(reserved)}: use the TRLEnvConfig fields")


class AscendTritonToolEnv:
    """AscendTriton episodes for TRL's ``environment_factory``: one tool, ``submit_kernel``.

    ## Description

    Wraps one :class:`~ascend_kernel_gym.envs.ascend_triton.AscendTritonEnv` (built on first
    ``reset``). ``reset(**row)`` starts an episode on ``row["task_id"]`` and returns the task
    prompt; each ``submit_kernel(code)`` call is one env turn, graded by the real evaluator;
    ``get_reward()`` is the best score of the episode. The multi-turn conversation itself is
    kept by TRL: the env only sees the submitted code.

    ## Action Space

    Tool calls ``submit_kernel(code: str)``: the full Python source of a solution (imports,
    ``@triton.jit`` kernels, ``class ModelNew``). Anything else the model writes is not seen.

    ## Observation Space

    Text: the task prompt (from ``reset``) and one feedback message per submission (compile
    errors, mismatch statistics, hack findings, speedup where measured, turns left).

    ## Rewards

    ``get_reward()``: the best per-submission score under the ``reward`` preset (``default``:
    -1 hack ... 0.5 correct on the interpreter, up to 1 with measured speedup); a rollout without
    any submission gets ``no_submission_reward`` (default: the preset's score of no code).

    ## Episode End

    After ``max_turns`` submissions, or earlier when a ``target_speedup`` passed in ``env_kwargs``
    is reached; later ``submit_kernel`` calls return a refusal message and are not evaluated.

    ## Arguments

    ``config`` (:class:`TRLEnvConfig`) or its fields as keyword arguments. With no argument at
    all, the defaults apply: suite ``core``/``train``, backend ``auto``, 3 submissions.
    """

    def __init__(self, config: TRLEnvConfig | None = None, **overrides: Any) -> None:
        if config is not None and not isinstance(config, TRLEnvConfig):
            raise TypeError(f"config must be a TRLEnvConfig, got {type(config).__name__}")
        base = asdict(config) if config is not None else {}
        self.config = TRLEnvConfig(**{**base, **overrides})
        self.env: Any | None = None
        self.task_id: str | None = None
        self.done = False
        self.num_submissions = 0
        self.best_score: float | None = None
        self.scores: list[float] = []
        self.last_info: dict[str, Any] = {}

    # -- private helpers (public methods would become tools) ---------------------------------

    def _make_env(self) -> Any:
        import gymnasium as gym

        import ascend_kernel_gym  # noqa: F401 - registers AscendTriton-v0
        from ascend_kernel_gym.wrappers.stack import build_stack

        cfg = self.config
        # TRL keeps the conversation itself and only sees the feedback text: no context wrappers.
        env = gym.make(
            "AscendTriton-v0",
            suite=cfg.suite,
            split=cfg.split,
            backend=cfg.backend,
            max_turns=cfg.max_turns,
            reward=cfg.reward,
            reward_mode="score",
            **({"evaluator": cfg.evaluator} if cfg.evaluator is not None else {}),
            **cfg.env_kwargs,
        )
        return build_stack(env)

    def _no_code_score(self) -> float:
        if self.config.no_submission_reward is not None:
            return float(self.config.no_submission_reward)
        from ascend_kernel_gym.envs.rewards import format_failure_result, resolve_reward

        _, reward_fn = resolve_reward(self.config.reward)
        task = self.env.unwrapped.task if self.env is not None else None
        result = format_failure_result(self.task_id or "", "", "", "no submission")
        return float(reward_fn(result, task))

    # -- TRL contract -------------------------------------------------------------------------

    def reset(self, **row: Any) -> str:
        """Start an episode on ``row["task_id"]`` (a random task of the suite/split when absent).

        Other row fields (``prompt``, ``level``, ...) are ignored. Returns the task prompt.
        """
        if self.env is None:
            self.env = self._make_env()
        task_id = row.get("task_id")
        options = {"task_id": task_id} if task_id else None
        _, info = self.env.reset(options=options)
        self.task_id = info.get("task_id", task_id)
        self.done = False
        self.num_submissions = 0
        self.best_score = None
        self.scores = []
        self.last_info = info
        messages = info.get("messages") or []
        users = [m["content"] for m in messages if m.get("role") == "user"]
        if not users:
            raise RuntimeError("AscendTriton-v0 reset returned no user message in info['messages']")
        return users[-1]

    def submit_kernel(self, code: str) -> str:
        """Evaluate a Triton solution for the current task and return the evaluator's feedback.

        Args:
            code: The complete Python source of the solution: imports, the @triton.jit kernels and
                a `class ModelNew(torch.nn.Module)` with the same constructor and forward signature as `Model`.

        Returns:
            Feedback on the submission: whether it compiled and was correct, errors, speed, and
            how many submissions are left.
        """
        if self.env is None or self.task_id is None:
            return "No task is active: the environment was not reset."
        if self.done:
            return (
                f"The episode is over after {self.num_submissions} submission(s); best score "
                f"{self.best_score:+.3f}. No further submissions are evaluated."
            )
        code = code if isinstance(code, str) else ""
        # An empty `code` is a normal failed turn (format failure), as in the text env. The fence
        # is longer than any run of backticks inside the code, so the env extracts it verbatim.
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", code)), default=0))
        action = f"{fence}python\n{code.rstrip()}\n{fence}" if code.strip() else ""
        _, reward, terminated, truncated, info = self.env.step(action)
        self.num_submissions += 1
        score = float(info.get("score", reward))
        self.scores.append(score)
        self.best_score = score if self.best_score is None else max(self.best_score, score)
        self.done = bool(terminated or truncated)
        self.last_info = info
        return self._feedback(info, score)

    def _feedback(self, info: dict[str, Any], score: float) -> str:
        if info.get("evaluated") and info.get("eval"):
            from ascend_kernel_gym.evaluation import render_feedback
            from ascend_kernel_gym.evaluation.result import EvalResult

            body = render_feedback(EvalResult.from_dict(info["eval"])).strip()
        else:
            body = "The `code` argument was empty: pass the complete Python module as `code`."
        left = max(0, self.config.max_turns - self.num_submissions)
        if self.done:
            status = "The episode is over."
        else:
            status = f"{left} submission(s) left: call submit_kernel again with the complete, fixed module."
        return f"{body}\n\nScore: {score:+.3f} (best {self.best_score:+.3f}). {status}"

    def get_reward(self) -> float:
        """The best submission score of the episode (see the class docstring for no submission)."""
        if self.best_score is None:
            return self._no_code_score()
        return float(self.best_score)


def make_environment_factory(config: TRLEnvConfig | None = None, **overrides: Any) -> Callable[[], AscendTritonToolEnv]:
    """A zero-argument factory for ``GRPOTrainer(environment_factory=...)`` with options bound.

    The options are checked now (a bad value fails here, not inside the trainer).
    """
    base = asdict(config) if config is not None else {}
    checked = TRLEnvConfig(**{**base, **overrides})
    return functools.partial(AscendTritonToolEnv, checked)


def build_trl_dataset(
    suite: str = "core",
    split: str = "train",
    *,
    levels: Iterable[int] | None = None,
    task_ids: Iterable[str] | None = None,
    repeat: int = 1,
    system_prompt: str | None = None,
    instruction: str = DEFAULT_INSTRUCTION,
) -> Dataset:
    """Training rows for ``GRPOTrainer`` with :class:`AscendTritonToolEnv`.

    Each row: ``prompt`` (chat messages: an optional system message and a user message holding
    ``instruction``; TRL appends the task prompt returned by ``reset``), ``task_id``, ``level``,
    ``category``.

    Args:
        suite: a bundled suite name or a suite directory.
        split: ``train``, ``test`` or ``all``.
        levels: keep only these levels.
        task_ids: keep only these tasks (in this order).
        repeat: how many times each task appears (consecutive rows).
        system_prompt: an optional system message.
        instruction: the user message's lead-in.

    Raises:
        ValueError: ``repeat`` < 1 or no task selected.
    """
    from datasets import Dataset

    from ascend_kernel_gym.tasks import load_suite

    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    tasks = load_suite(suite, split=split, levels=levels, task_ids=task_ids)
    if not tasks:
        raise ValueError(f"no task in suite {suite!r} split {split!r} levels {levels!r}")
    head = [{"role": "system", "content": system_prompt}] if system_prompt else []
    rows: dict[str, list[Any]] = {"prompt": [], "task_id": [], "level": [], "category": []}
    for task in tasks:
        for _ in range(repeat):
            rows["prompt"].append([*head, {"role": "user", "content": instruction}])
            rows["task_id"].append(task.id)
            rows["level"].append(task.level)
            rows["category"].append(task.category)
    return Dataset.from_dict(rows)
