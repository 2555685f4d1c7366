"""OpenEnv adapter: ``AscendTriton-v0`` as an OpenEnv environment server (reset / step / state, one env per session).

OpenEnv (``openenv-core``) serves an ``Environment`` subclass with FastAPI: every WebSocket
session (``/ws``, what OpenEnv's ``EnvClient`` speaks) gets its own environment instance from a
factory; ``/health``, ``/schema``, ``/metadata`` describe it. Stacks that consume OpenEnv servers
(TRL, SkyRL, NeMo Gym, Unsloth) drive it with an ``EnvClient``.

* :class:`KernelAction`: ``text``, the model's answer (the code in a fenced Python block, as for
  ``env.step``), or ``code`` alone (wrapped in a block here);
* :class:`KernelObservation`: ``text`` (the task prompt after ``reset``, the evaluator's feedback
  after ``step``), ``messages`` (the whole context as chat messages), ``task_id``, ``turn``,
  ``score``, ``best_score``, ``correct``, ``eval`` (the evaluator's result), plus OpenEnv's
  ``reward`` and ``done``;
* :class:`KernelState`: ``episode_id``, ``step_count``, ``task_id``, ``turns_left``,
  ``best_score``, ``done``, ``segment`` (compaction).

Each session's env is the standard wrapper stack (:func:`~ascend_kernel_gym.agents.rollout.make_env`:
compaction and KB tips when configured); evaluations from all sessions go to the process-wide
evaluator pool, or to an ``EvaluatorServer`` given as ``env_kwargs={"evaluator": "host:port"}``.
``akg serve openenv`` runs the server; ``openenv.yaml`` next to this module is its manifest.

Importing this module imports ``openenv-core`` (FastAPI, pydantic).
"""

from __future__ import annotations

import functools
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "ENV_NAME",
    "AscendTritonEnvClient",
    "AscendTritonOpenEnv",
    "KernelAction",
    "KernelObservation",
    "KernelState",
    "create_openenv_app",
    "serve_openenv",
]

#: The environment's name in ``openenv.yaml`` and ``/metadata``.
ENV_NAME = "ascend_triton"
#: Concurrent sessions a server accepts unless told otherwise.
DEFAULT_MAX_SESSIONS = 8


class KernelAction(Action):
    """One answer of the model: ``text`` (code in a fenced Python block) or ``code`` (a bare module)."""

    text: str = Field(default="", description="The model's answer; its last fenced Python block is the solution.")
    code: str | None = Field(default=None, description="A bare Python module; used instead of `text` when given.")

    def answer(self) -> str:
        """The text the env steps with (``code`` fenced so that the env extracts it verbatim)."""
        if self.code is None:
            return self.text
        if not self.code.strip():
            return ""
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", self.code)), default=0))
        return f"{fence}python\n{self.code.rstrip()}\n{fence}"


class KernelObservation(Observation):
    """What the agent sees after ``reset`` or ``step`` (``reward`` and ``done`` are OpenEnv's fields)."""

    text: str = Field(default="", description="The task prompt after reset, the evaluator's feedback after step.")
    messages: list[dict[str, str]] = Field(default_factory=list, description="The context as chat messages.")
    task_id: str = Field(default="", description="The task of the episode.")
    turn: int = Field(default=0, description="Kernel attempts made so far.")
    score: float | None = Field(default=None, description="This turn's score under the reward preset.")
    best_score: float | None = Field(default=None, description="The best score of the episode so far.")
    correct: bool | None = Field(default=None, description="This turn's kernel passed and was not a hack.")
    eval: dict[str, Any] = Field(default_factory=dict, description="The evaluator's result of this turn.")


class KernelState(State):
    """The session's episode (``episode_id`` and ``step_count`` are OpenEnv's fields)."""

    task_id: str = ""
    turns_left: int = 0
    best_score: float | None = None
    done: bool = False
    segment: int = 0


class AscendTritonOpenEnv(Environment[KernelAction, KernelObservation, KernelState]):
    """One ``AscendTriton-v0`` env behind OpenEnv's ``Environment`` interface.

    The gymnasium env is built on the first ``reset`` (OpenEnv also builds instances just to
    read metadata). Sessions are independent (``SUPPORTS_CONCURRENT_SESSIONS``).

    Args:
        env_kwargs: arguments of ``AscendTritonEnv`` (``backend``, ``max_turns``, ``suite``,
            ``split``, ``reward``, ``reward_mode``, ``num_trials``, ``evaluator``, ...).
        compaction: ``CompactionWrapper`` arguments (``None``: off).
        kb: ``KBRetrievalWrapper`` arguments (``None``: off).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_kwargs: Mapping[str, Any] | None = None,
        compaction: Mapping[str, Any] | None = None,
        kb: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.env_kwargs = dict(env_kwargs or {})
        self.compaction = None if compaction is None else dict(compaction)
        self.kb = None if kb is None else dict(kb)
        self.env: Any | None = None
        self._lock = threading.Lock()
        self._state = KernelState()

    def _gym_env(self) -> Any:
        if self.env is None:
            from ascend_kernel_gym.agents.rollout import make_env

            self.env = make_env(self.env_kwargs, compaction=self.compaction, kb=self.kb)
        return self.env

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **kwargs: Any
    ) -> KernelObservation:
        """Start an episode (on ``task_id``, else a task drawn from the suite split)."""
        env = self._gym_env()
        options = {"task_id": task_id} if task_id else None
        with self._lock:
            _obs, info = env.reset(seed=seed, options=options)
            messages = _messages(info)
            self._state = KernelState(
                episode_id=episode_id or uuid.uuid4().hex,
                step_count=0,
                task_id=str(info.get("task_id", task_id or "")),
                turns_left=int(env.unwrapped.max_turns),
                segment=int((info.get("segment") or {}).get("next_index", 0)),
            )
            return KernelObservation(
                text=messages[-1]["content"] if messages else "",
                messages=messages,
                task_id=self._state.task_id,
                reward=None,
                done=False,
            )

    def step(self, action: KernelAction, timeout_s: float | None = None, **kwargs: Any) -> KernelObservation:
        """Grade one answer; after the episode ended, nothing is evaluated and ``done`` stays true."""
        with self._lock:
            if self.env is None or not self._state.task_id:
                raise RuntimeError("reset the environment before step")
            if self._state.done:
                return KernelObservation(
                    text="The episode is over: reset to start another one.",
                    task_id=self._state.task_id,
                    turn=self._state.step_count,
                    best_score=self._state.best_score,
                    reward=0.0,
                    done=True,
                )
            _obs, reward, terminated, truncated, info = self.env.step(action.answer())
            messages = _messages(info)
            result = info.get("eval") if isinstance(info.get("eval"), Mapping) else {}
            score = info.get("score")
            done = bool(terminated or truncated)
            best = info.get("best_score")
            self._state.step_count += 1
            self._state.turns_left = max(0, int(self.env.unwrapped.max_turns) - int(info.get("turn", 0)))
            self._state.best_score = float(best) if best is not None else self._state.best_score
            self._state.done = done
            self._state.segment = int((info.get("segment") or {}).get("next_index", self._state.segment))
            return KernelObservation(
                text=messages[-1]["content"] if messages and messages[-1]["role"] != "assistant" else "",
                messages=messages,
                task_id=self._state.task_id,
                turn=int(info.get("turn", self._state.step_count)),
                score=float(score) if isinstance(score, (int, float)) else None,
                best_score=self._state.best_score,
                correct=(bool(result.get("correct")) and not bool(result.get("hack"))) if result else None,
                eval=dict(result),
                reward=float(reward),
                done=done,
            )

    @property
    def state(self) -> KernelState:
        """A copy of the session's episode state."""
        return self._state.model_copy()

    def get_metadata(self) -> EnvironmentMetadata:
        """Name, description and version of the environment (``/metadata``)."""
        from ascend_kernel_gym import __version__

        return EnvironmentMetadata(
            name=ENV_NAME,
            description="AscendTriton-v0: write Triton kernels for a PyTorch reference; a sandboxed evaluator "
            "grades them.",
            version=__version__,
        )

    def close(self) -> None:
        """Close the gymnasium env (a shared evaluator pool stays up for other sessions)."""
        if self.env is not None:
            self.env.close()
            self.env = None


def _messages(info: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in info.get("messages") or []]


def environment_factory(
    env_kwargs: Mapping[str, Any] | None = None,
    compaction: Mapping[str, Any] | None = None,
    kb: Mapping[str, Any] | None = None,
) -> Callable[[], AscendTritonOpenEnv]:
    """A zero-argument factory of :class:`AscendTritonOpenEnv` with options bound (what OpenEnv's server calls)."""
    factory = functools.partial(AscendTritonOpenEnv, dict(env_kwargs or {}), compaction, kb)
    factory.__name__ = "AscendTritonOpenEnv"  # type: ignore[attr-defined]  # OpenEnv names the factory in errors
    return factory


def create_openenv_app(
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    compaction: Mapping[str, Any] | None = None,
    kb: Mapping[str, Any] | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
) -> Any:
    """OpenEnv's FastAPI app for the environment: ``/ws`` sessions, ``/reset``, ``/step``, ``/state``, ``/health``, ...

    Args:
        env_kwargs: arguments of ``AscendTritonEnv`` for every session.
        compaction: ``CompactionWrapper`` arguments (``None``: off).
        kb: ``KBRetrievalWrapper`` arguments (``None``: off).
        max_sessions: concurrent WebSocket sessions (one env each).
    """
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
    return create_fastapi_app(
        environment_factory(env_kwargs, compaction, kb),
        KernelAction,
        KernelObservation,
        max_concurrent_envs=max_sessions,
    )


def serve_openenv(host: str = "127.0.0.1", port: int = 8000, **app_options: Any) -> None:
    """Run the server with uvicorn until interrupted (``app_options``: those of :func:`create_openenv_app`)."""
    import uvicorn

    uvicorn.run(create_openenv_app(**app_options), host=host, port=port, log_level="warning")


class AscendTritonEnvClient(EnvClient[KernelAction, KernelObservation, KernelState]):
    """OpenEnv's ``EnvClient`` for this server, with typed actions, observations and state.

    ``AscendTritonEnvClient(base_url="http://127.0.0.1:8000")`` is async; ``.sync()`` wraps it.
    """

    def _step_payload(self, action: KernelAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[KernelObservation]:
        observation = KernelObservation(
            **payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict[str, Any]) -> KernelState:
        return KernelState(**payload)


def __getattr__(name: str) -> Any:
    # `app` (the manifest's `app: ascend_kernel_gym.integrations.openenv_server:app`) is built on first use.
    if name == "app":
        app = create_openenv_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
