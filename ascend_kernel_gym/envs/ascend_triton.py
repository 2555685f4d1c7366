"""``AscendTriton-v0``: a multi-turn environment in which an agent writes Triton kernels."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from ascend_kernel_gym.envs.extract import extract_code
from ascend_kernel_gym.envs.rewards import (
    PRESETS,
    REWARD_MODES,
    effective_speedup,
    format_failure_result,
    resolve_reward,
    step_reward,
)
from ascend_kernel_gym.envs.templates import DEVICE_LABELS, TORCH_DEVICES, PromptTemplates, fill, load_templates
from ascend_kernel_gym.envs.text import CHARSET, MIN_OBS_CHARS, render_context
from ascend_kernel_gym.evaluation.remote import (
    EvaluatorClient,
    SharedEvaluatorRef,
    configured_address,
    evaluator_at,
    evaluator_id_of,
)
from ascend_kernel_gym.evaluation.result import ErrorType, EvalRequest, EvalResult, Stage
from ascend_kernel_gym.tasks.task import Task

__all__ = ["DEFAULT_MAX_OBS_CHARS", "AscendTritonEnv", "rearm_env_checker"]

#: Default character budget of observations and actions (about 64k tokens of code and text).
DEFAULT_MAX_OBS_CHARS = 262_144
_BACKENDS = ("auto", "npu", "cuda", "interpreter")
_RESET_OPTION_KEYS = frozenset({"task_id", "task"})


def rearm_env_checker(env: gym.Env[Any, Any]) -> None:
    """Let gymnasium's passive env checker run its reset check again after ``env.reset`` failed.

    ``PassiveEnvChecker.reset`` (gymnasium 1.x, added by ``gym.make``) marks its one-time check
    as done *before* it calls ``reset``. When that first reset raises, the checker keeps no reset
    data and the first ``step`` after the next, valid reset fails inside gymnasium with
    ``TypeError: cannot unpack non-iterable NoneType object``. The checkers on the call stack that
    wrap ``env`` are re-armed, so the next reset runs their check and records its data.
    """
    from gymnasium.wrappers import PassiveEnvChecker

    frame = inspect.currentframe()
    for _ in range(32):  # the checker sits a few wrapper frames above reset()
        if frame is None:
            break
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, PassiveEnvChecker) and candidate.unwrapped is env:
            candidate.checked_reset = False
        frame = frame.f_back
    del frame


class AscendTritonEnv(gym.Env[str, str]):
    """Write a Triton kernel that re-implements a PyTorch reference, over several turns.

    ## Description

    Each episode is one task of a suite: a KernelBench-style PyTorch ``Model``. The agent answers
    with Python code that defines ``ModelNew`` using its own ``@triton.jit`` kernels. Every
    answer is evaluated in a sandboxed child process by a cascade (static checks, compile,
    correctness on fresh random inputs with anti-hack checks, timing against the reference on
    devices) and the agent gets the result as feedback for its next attempt. Backends: ``npu``
    (Ascend, ``torch_npu`` + ``triton-ascend``), ``cuda`` (NVIDIA) and ``interpreter`` (CPU,
    ``TRITON_INTERPRET=1``, correctness only); ``auto`` picks the first available in that order.

    ## Action Space

    ``Text(max_length=max_obs_chars, charset=CHARSET)``: a model answer. The code is the last
    fenced Python (or untagged) block of the answer. ``step`` accepts *any* string (unicode,
    empty, huge) and ``None``; an answer without a code block is a format-failure turn, never an
    exception.

    ## Observation Space

    ``Text(max_length=max_obs_chars, charset=CHARSET)`` where ``CHARSET`` is printable ASCII:
    letters, digits, punctuation, space, ``\\n`` and ``\\t``. The observation is the whole
    context the policy should see next, rendered from the chat messages (``### system``,
    ``### user``, ``### assistant`` headers): system message, task prompt, then each answer and
    its feedback. It is sanitised onto the charset (unicode gets ASCII stand-ins or ``?``) and,
    when longer than ``max_obs_chars``, clipped: the system message and task prompt are kept at
    the head, the latest turns at the tail, with a note saying how many characters were elided.
    ``info["messages"]`` holds the same context as unclipped chat messages.

    ## Rewards

    Each turn gets a *score* from a preset (``reward``): ``default`` (failure tiers -1 hack,
    -0.8 no code, -0.6 static, -0.4 compile, -0.2 incorrect; correct
    ``0.5 + 0.25 * clip(log2(speedup), -2, 2)``), ``kevin`` (``0.3*C + speedup*C``),
    ``drkernel`` (``C + C*min(speedup, 3)``), ``binary`` (AutoTriton: 1 iff correct real
    Triton) or ``tiered`` (Dr. Kernel tiers), or a callable ``(EvalResult, Task) -> float``.
    Hacks never score above an incorrect kernel. Without a measured speedup (interpreter) the
    presets use a neutral speedup of 1.0. The step reward depends on ``reward_mode``:
    ``improvement`` (first turn: its score; later: ``max(0, score - best_before)``, so the
    return equals the best score reached), ``score`` (the turn's score) or ``terminal`` (0, then
    the best score on the last step). See docs/rewards.md.

    ## Episode End

    ``truncated`` after ``max_turns`` answers; ``terminated`` when ``target_speedup`` is set and
    a correct, non-hack kernel reaches it (a measured speedup, or the cost-model estimate with
    ``use_estimated_speedup=True``; the neutral 1.0 never counts).

    ## Arguments

    * ``suite`` (str | path, ``"core"``): bundled suite name or a suite directory.
    * ``split`` (``"train"`` | ``"test"`` | ``"all"``): split of the suite to sample from.
    * ``levels`` (iterable of int | None): keep only these levels.
    * ``task_ids`` (iterable of str | None): explicit tasks (ids in the suite, or paths of
      KernelBench files); when given, ``split`` is not applied.
    * ``backend`` (``"auto"`` | ``"npu"`` | ``"cuda"`` | ``"interpreter"``): where kernels run.
    * ``max_turns`` (int, 4): answers per episode.
    * ``reward`` (str | callable, ``"default"``): preset name or ``fn(EvalResult, Task) -> float``.
    * ``reward_mode`` (``"improvement"`` | ``"score"`` | ``"terminal"``).
    * ``target_speedup`` (float | None): end the episode early once reached.
    * ``evaluator``: an evaluator (``evaluate(EvalRequest) -> EvalResult``), an
      :class:`~ascend_kernel_gym.evaluation.EvaluatorClient`, a ``"host:port"`` address of an
      :class:`~ascend_kernel_gym.evaluation.EvaluatorServer`, or a Ray cluster: ``"ray://auto"``,
      ``"ray://HOST:PORT"`` (the process-wide Ray evaluator, with ``evaluator_options``). Default:
      the address in the ``AKG_EVALUATOR`` environment variable if set, else the process-wide
      ``get_shared_evaluator(backend, **evaluator_options)``, created at the first evaluation.
    * ``evaluator_options`` (dict | None): options for the default shared evaluator, e.g.
      ``{"executor": "ray", "address": "auto"}`` for one actor per device of a Ray cluster.
    * ``profile`` (str | None): shape profile; default ``small`` on the interpreter, else ``full``.
    * ``num_trials`` (int | None, None): correctness trials per evaluation; None uses the evaluator's default.
    * ``prompt_dir`` (path | None): directory of prompt templates overriding the bundled ones.
    * ``max_obs_chars`` (int, 262144): observation/action length limit (at least 1024).
    * ``render_mode`` (None | ``"ansi"``): ``render()`` returns the context text.
    * ``measure_performance`` (bool, True): run the timing stage where the backend can.
    * ``use_estimated_speedup`` (bool, False): let presets and ``target_speedup`` use the
      interpreter's cost-model estimate when nothing was measured.
    * ``timeout_s`` (float | None): per-evaluation time limit (None: the evaluator's default).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 - Gymnasium's convention
    #: Names of the built-in reward presets.
    reward_presets = tuple(PRESETS)
    _spec: EnvSpec | None = None

    def __init__(
        self,
        suite: str | Path = "core",
        split: str = "train",
        levels: Iterable[int] | None = None,
        task_ids: Iterable[str] | None = None,
        backend: str = "auto",
        max_turns: int = 4,
        reward: str | Callable[..., float] = "default",
        reward_mode: str = "improvement",
        target_speedup: float | None = None,
        evaluator: Any = None,
        evaluator_options: Mapping[str, Any] | None = None,
        profile: str | None = None,
        num_trials: int | None = None,
        prompt_dir: str | Path | None = None,
        max_obs_chars: int = DEFAULT_MAX_OBS_CHARS,
        render_mode: str | None = None,
        measure_performance: bool = True,
        use_estimated_speedup: bool = False,
        timeout_s: float | None = None,
    ) -> None:
        super().__init__()
        _check_int("max_turns", max_turns, minimum=1)
        if num_trials is not None:
            _check_int("num_trials", num_trials, minimum=1)
        _check_int("max_obs_chars", max_obs_chars, minimum=MIN_OBS_CHARS)
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if target_speedup is not None and not (_is_number(target_speedup) and target_speedup > 0):
            raise ValueError(f"target_speedup must be a positive number or None, got {target_speedup!r}")
        if timeout_s is not None and not (_is_number(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s must be a positive number or None, got {timeout_s!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        if evaluator_options is not None and not isinstance(evaluator_options, Mapping):
            raise TypeError(f"evaluator_options must be a dict or None, got {type(evaluator_options).__name__}")
        if not isinstance(measure_performance, bool):
            raise TypeError(f"measure_performance must be a bool, got {type(measure_performance).__name__}")

        self.reward_name, self._reward_fn = resolve_reward(reward, use_estimate=bool(use_estimated_speedup))
        self.reward_mode = reward_mode
        self.max_turns = int(max_turns)
        self.num_trials = None if num_trials is None else int(num_trials)
        self.max_obs_chars = int(max_obs_chars)
        self.target_speedup = None if target_speedup is None else float(target_speedup)
        self.measure_performance = measure_performance
        self.use_estimated_speedup = bool(use_estimated_speedup)
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.render_mode = render_mode
        self.evaluator_options = dict(evaluator_options or {})

        self._evaluator = _coerce_evaluator(evaluator, backend, self.evaluator_options)
        # a client this env opened itself (from an address) is closed with it
        self._owns_client = isinstance(self._evaluator, EvaluatorClient) and (
            evaluator is None or isinstance(evaluator, str)
        )
        self.backend = self._pick_backend(backend)
        self.device = TORCH_DEVICES[self.backend]
        self.templates: PromptTemplates = load_templates(self.backend, prompt_dir)

        self.tasks: list[Task] = _load_tasks(suite, split, levels, task_ids)
        self.profile = profile
        if profile is not None:
            lacking = [t.id for t in self.tasks if profile not in t.profiles]
            if lacking:
                more = "..." if len(lacking) > 5 else ""
                raise ValueError(f"profile={profile!r} is missing from tasks {lacking[:5]}{more}")

        self.observation_space = spaces.Text(max_length=self.max_obs_chars, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(max_length=self.max_obs_chars, min_length=0, charset=CHARSET)

        # episode state
        self._task: Task | None = None
        self._task_profile = ""
        self.messages: list[dict[str, str]] = []
        self.attempts: list[dict[str, Any]] = []
        self.turn = 0
        self.best_score: float | None = None
        self.best_code: str | None = None
        self._done = False

    # ------------------------------------------------------------------ construction helpers
    def _pick_backend(self, backend: str) -> str:
        if self._evaluator is not None:
            served = getattr(self._evaluator, "backend", None)
            if served is None:
                if backend == "auto":
                    raise ValueError("backend='auto' needs an evaluator with a .backend attribute; name the backend")
                return backend
            served = str(served)
            if backend not in ("auto", served):
                raise ValueError(f"backend={backend!r} does not match the given evaluator's backend {served!r}")
            if served not in DEVICE_LABELS:
                raise ValueError(f"the given evaluator reports an unknown backend {served!r}")
            return served
        from ascend_kernel_gym.backends.detect import resolve_backend

        return resolve_backend(backend)

    @property
    def evaluator(self) -> Any:
        """The evaluator in use; the shared default pool is created here, on first access."""
        if self._evaluator is None:
            from ascend_kernel_gym.evaluation import get_shared_evaluator

            self._evaluator = get_shared_evaluator(self.backend, **self.evaluator_options)
        return self._evaluator

    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]
        """The ``EnvSpec`` ``gym.make`` built; an evaluator object in its kwargs is shared, not copied."""
        return self._spec

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        evaluator = value.kwargs.get("evaluator") if value is not None else None
        if evaluator is not None and not isinstance(evaluator, (str, EvaluatorClient, SharedEvaluatorRef)):
            # Gymnasium deep-copies specs (Wrapper.spec, EnvSpec.make); a worker pool must be shared instead.
            value = dataclasses.replace(value, kwargs={**value.kwargs, "evaluator": SharedEvaluatorRef(evaluator)})
        self._spec = value

    @property
    def task(self) -> Task | None:
        """The current episode's task (``None`` before the first reset)."""
        return self._task

    # ------------------------------------------------------------------ Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on a task drawn from the filtered list with ``self.np_random``.

        Args:
            seed: seeds ``self.np_random``; equal seeds give equal task sequences.
            options: ``{"task_id": id_or_path}`` or ``{"task": Task}`` to pick the task.

        Returns:
            The task prompt (as the observation) and ``info`` with ``task_id``, ``turn`` (0),
            ``messages``, ``backend``, ``profile``, ``max_turns``, ``reward_preset``,
            ``reward_mode`` and ``task`` (level, category, description).
        """
        super().reset(seed=seed)
        options = dict(options or {})
        try:
            unknown = set(options) - _RESET_OPTION_KEYS
            if unknown:
                raise ValueError(f"unknown reset options {sorted(unknown)}; known: {sorted(_RESET_OPTION_KEYS)}")
            task = self._choose_task(options)
            task_profile = self.profile or task.default_profile(self.backend)
            task.check_profile(task_profile)
        except Exception:
            # No half-started episode: step() now asks for a reset, and gymnasium's checker
            # runs its reset check again on the next reset.
            self._task = None
            rearm_env_checker(self)
            raise
        self._task, self._task_profile = task, task_profile
        self.messages = [
            {"role": "system", "content": self._system_prompt()},
            {"role": "user", "content": self._task_prompt(self._task)},
        ]
        self.attempts = []
        self.turn = 0
        self.best_score = None
        self.best_code = None
        self._done = False
        info = self._base_info()
        info["task"] = {
            "level": self._task.level,
            "category": self._task.category,
            "description": self._task.description,
            "dtype": self._task.dtype,
        }
        return self.render_observation(), info

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Evaluate one answer.

        Never raises because of the answer's content: any text (or ``None``) is a turn. Raises
        ``RuntimeError`` when called before ``reset()`` or after the episode ended.
        """
        if self._task is None:
            raise RuntimeError("AscendTritonEnv.step() called before reset()")
        if self._done:
            raise RuntimeError("AscendTritonEnv.step() called after the episode ended; call reset()")
        task = self._task
        text = _coerce_action(action)
        self.turn += 1
        code = extract_code(text)

        evaluator_id: str | None = None
        if code is None:
            result = format_failure_result(task.id, self.backend, self._task_profile, "no fenced code block")
            body = self.templates.format_error.strip()
        else:
            result, evaluator_id = self._evaluate(task, code)
            body = _render_feedback(result)

        score = self._score(result, task)
        best_before = self.best_score
        if best_before is None or score > best_before:
            self.best_score = score
            self.best_code = code
        best_after = float(self.best_score)  # type: ignore[arg-type]

        terminated = self._target_reached(result)
        truncated = not terminated and self.turn >= self.max_turns
        self._done = terminated or truncated
        reward = step_reward(self.reward_mode, score, best_before, self._done, best_after)

        feedback = self._feedback_message(body, score, best_after)
        self.messages.append({"role": "assistant", "content": self._clip_action(text)})
        self.messages.append({"role": "user", "content": feedback})
        eval_dict = result.to_dict()
        self.attempts.append(
            {
                "turn": self.turn,
                "code": code,
                "score": score,
                "reward": reward,
                "eval": eval_dict,
                "feedback": feedback,
                "format_ok": code is not None,
            }
        )

        info = self._base_info()
        info.update(
            {
                "eval": copy.deepcopy(eval_dict),
                "feedback": feedback,
                "score": score,
                "reward": reward,
                "best_score": best_after,
                "best_code": self.best_code,
                "format_ok": code is not None,
                "code": code,
                "evaluated": code is not None,
                "evaluator_id": evaluator_id,
                "terminated_by_target": terminated,
            }
        )
        return self.render_observation(), float(reward), terminated, truncated, info

    def render(self) -> str | None:
        """With ``render_mode="ansi"``: the current context as text (the observation)."""
        if self.render_mode == "ansi":
            return self.render_observation() if self.messages else ""
        return None

    def close(self) -> None:
        """Close a client this env opened itself; a shared evaluator is left for other envs."""
        if self._owns_client and isinstance(self._evaluator, EvaluatorClient):
            self._evaluator.close()
        super().close()

    # ------------------------------------------------------------------ wrapper API
    def render_observation(self) -> str:
        """The observation for the current messages: rendered, sanitised, clipped."""
        return render_context(self.messages, self.max_obs_chars)

    def set_messages(self, messages: Sequence[Mapping[str, str]]) -> None:
        """Replace the context (compaction, retrieval wrappers); the next observation renders it.

        Raises:
            ValueError: when ``messages`` is not a list of ``{"role", "content"}`` string dicts.
        """
        checked: list[dict[str, str]] = []
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):
                got = type(message).__name__
                raise ValueError(f"messages[{index}] must be a dict with 'role' and 'content', got {got}")
            role, content = message.get("role"), message.get("content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise ValueError(f"messages[{index}] needs string 'role' and 'content'")
            checked.append({"role": role, "content": content})
        self.messages = checked

    # ------------------------------------------------------------------ internals
    def _choose_task(self, options: dict[str, Any]) -> Task:
        if "task" in options:
            task = options["task"]
            if not isinstance(task, Task):
                raise ValueError(f"options['task'] must be a Task, got {type(task).__name__}")
            return task
        if "task_id" in options:
            wanted = str(options["task_id"])
            for task in self.tasks:
                if task.id == wanted:
                    return task
            from ascend_kernel_gym.tasks.suite import get_task

            try:
                return get_task(wanted)
            except (KeyError, ValueError) as exc:
                raise ValueError(f"options['task_id']={wanted!r} is not a known task: {exc}") from None
        index = int(self.np_random.integers(len(self.tasks)))
        return self.tasks[index]

    def _system_prompt(self) -> str:
        values = {"device_label": DEVICE_LABELS[self.backend], "backend": self.backend, "device": self.device}
        return fill(self.templates.system, values).strip()

    def _task_prompt(self, task: Task) -> str:
        values = {
            "task_id": task.id,
            "task_name": task.name,
            "level": task.level,
            "category": task.category,
            "description": task.description,
            "dtype": task.dtype,
            "atol": f"{task.atol:g}",
            "rtol": f"{task.rtol:g}",
            "profile": self._task_profile,
            "reference_source": task.prompt_source(self._task_profile).rstrip("\n"),
            "backend": self.backend,
            "device": self.device,
            "max_turns": self.max_turns,
        }
        return fill(self.templates.task, values).strip()

    def _feedback_message(self, body: str, score: float, best: float) -> str:
        left = self.max_turns - self.turn
        if self._done and left > 0:
            next_step = "The target speedup was reached; the episode is over."
        elif left > 0:
            next_step = (
                f"You have {left} turn(s) left. Reply with the complete, improved solution in one ```python block."
            )
        else:
            next_step = "No turns left; the episode is over."
        values = {
            "turn": self.turn,
            "max_turns": self.max_turns,
            "turns_left": left,
            "score": f"{score:.3f}",
            "best_score": f"{best:.3f}",
            "feedback": body.strip(),
            "next_step": next_step,
        }
        return fill(self.templates.feedback, values).strip()

    def _clip_action(self, text: str) -> str:
        if len(text) <= self.max_obs_chars:
            return text
        cut = len(text) - self.max_obs_chars
        return text[: self.max_obs_chars] + f"\n[... answer truncated: {cut} more characters ...]"

    def _evaluate(self, task: Task, code: str) -> tuple[EvalResult, str | None]:
        request = EvalRequest(
            task=task,
            code=code,
            profile=self._task_profile,
            num_trials=self.num_trials,
            measure_performance=self.measure_performance,
            timeout_s=self.timeout_s,
        )
        try:
            evaluator = self.evaluator
            result = evaluator.evaluate(request)
            if isinstance(result, dict):
                result = EvalResult.from_dict(result)
            if not isinstance(result, EvalResult):
                raise TypeError(f"evaluator returned {type(result).__name__}, not an EvalResult")
            return result, evaluator_id_of(evaluator)
        except Exception as exc:  # noqa: BLE001 - a harness failure must not crash the rollout
            warnings.warn(f"evaluation of {task.id} failed inside the harness: {exc!r}", RuntimeWarning, stacklevel=3)
            return (
                EvalResult(
                    task_id=task.id,
                    backend=self.backend,
                    profile=self._task_profile,
                    code_hash="",
                    stage=Stage.FORMAT,
                    format_ok=True,
                    error_type=ErrorType.HARNESS_ERROR,
                    error_message=f"the evaluation harness failed ({type(exc).__name__}); not your code's fault",
                ),
                None,
            )

    def _score(self, result: EvalResult, task: Task) -> float:
        value = self._reward_fn(result, task)
        if isinstance(value, bool) or not _is_number(value) or not math.isfinite(float(value)):
            raise ValueError(f"reward {self.reward_name!r} returned {value!r}; it must return a finite number")
        return float(value)

    def _target_reached(self, result: EvalResult) -> bool:
        if self.target_speedup is None or not result.ok:
            return False
        measured = result.speedup is not None and _is_number(result.speedup) and math.isfinite(result.speedup)
        estimated = (
            self.use_estimated_speedup
            and bool(result.estimate)
            and _is_number((result.estimate or {}).get("est_speedup"))
        )
        if not (measured or estimated):
            return False
        return effective_speedup(result, self.use_estimated_speedup) >= self.target_speedup

    def _base_info(self) -> dict[str, Any]:
        return {
            "task_id": self._task.id if self._task else None,
            "turn": self.turn,
            "messages": [dict(m) for m in self.messages],
            "backend": self.backend,
            "profile": self._task_profile,
            "max_turns": self.max_turns,
            "reward_preset": self.reward_name,
            "reward_mode": self.reward_mode,
        }


# ---------------------------------------------------------------------- module helpers


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def _coerce_action(action: Any) -> str:
    if action is None:
        return ""
    if isinstance(action, str):
        return str(action).removeprefix("\ufeff")  # a byte-order mark is not code
    if isinstance(action, (bytes, bytearray)):
        return bytes(action).decode("utf-8-sig", errors="replace")
    try:
        return str(action)
    except Exception:  # noqa: BLE001 - an object whose __str__ fails is still just a bad answer
        return ""


def _coerce_evaluator(evaluator: Any, backend: str, options: Mapping[str, Any]) -> Any:
    """The evaluator object for the env's ``evaluator`` argument; None: the default pool, made on first use.

    A Ray evaluator (an address ``ray://...``, ``AKG_EVALUATOR``, or ``executor="ray"`` in the
    options) is made here, since the backend is the cluster's to say.
    """
    if evaluator is None:
        if options.get("executor", "local") != "local":
            from ascend_kernel_gym.evaluation import get_shared_evaluator

            return get_shared_evaluator(backend, **options)
        address = configured_address()
        return None if address is None else evaluator_at(address, backend, **options)
    if isinstance(evaluator, SharedEvaluatorRef):
        evaluator = evaluator.target
    if isinstance(evaluator, str):
        return evaluator_at(evaluator, backend, **options)
    if not callable(getattr(evaluator, "evaluate", None)):
        raise TypeError(
            "evaluator must be None, an object with evaluate(EvalRequest) -> EvalResult, an EvaluatorClient, "
            f"a 'host:port' address or a 'ray://...' address; got {type(evaluator).__name__}"
        )
    return evaluator


def _render_feedback(result: EvalResult) -> str:
    from ascend_kernel_gym.evaluation import render_feedback

    return render_feedback(result)


def _load_tasks(
    suite: str | Path, split: str, levels: Iterable[int] | None, task_ids: Iterable[str] | None
) -> list[Task]:
    from ascend_kernel_gym.tasks.suite import SPLITS, get_task, load_suite

    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    level_set: set[int] | None = None
    if levels is not None:
        if isinstance(levels, int):
            levels = [levels]
        level_set = set()
        for level in levels:
            if isinstance(level, bool) or not isinstance(level, int) or level < 1:
                raise ValueError(f"levels must hold positive ints, got {level!r}")
            level_set.add(level)
    if task_ids is not None:
        if isinstance(task_ids, str):
            task_ids = [task_ids]
        wanted = [str(t) for t in task_ids]
        if not wanted:
            raise ValueError("task_ids is empty; pass None to sample from the suite")
        in_suite = {t.id: t for t in load_suite(suite, split="all")}
        tasks = []
        for task_id in wanted:
            if task_id in in_suite:
                tasks.append(in_suite[task_id])
                continue
            try:
                tasks.append(get_task(task_id))
            except (KeyError, ValueError) as exc:
                raise ValueError(
                    f"task_ids: {task_id!r} is neither a task of suite {str(suite)!r} nor a task file ({exc})"
                ) from None
    else:
        tasks = load_suite(suite, split=split)
    if level_set is not None:
        tasks = [t for t in tasks if t.level in level_set]
    if not tasks:
        raise ValueError(
            f"no tasks match suite={str(suite)!r}, split={split!r}, levels={sorted(level_set) if level_set else None}, "
            f"task_ids={task_ids!r}"
        )
    return tasks
