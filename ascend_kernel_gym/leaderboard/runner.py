"""``akg eval``: run a policy on a suite through the AscendTriton environment, resumably.

Episodes run in worker threads, one environment per thread, all sharing the process-wide
evaluator pool. Generation is batched across live episodes: a thread that needs the next action
queues its context, and the main thread calls ``policy.generate`` on everything queued once every
live episode is waiting (or after ``batch_wait_s``). Finished episodes are appended to
``results.jsonl`` at once, so a killed run loses at most the episodes in flight; re-running the
same command skips the finished ``(task_id, sample)`` pairs.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.agents.policy import Generation, Message, Policy
from ascend_kernel_gym.leaderboard.records import (
    RUN_SCHEMA,
    ResultsWriter,
    best_turn_index,
    is_ok,
    read_manifest,
    read_results,
    suite_content_hash,
    utc_now,
    write_manifest,
)
from ascend_kernel_gym.tasks.task import Task

#: Default longest wait for a generation batch to fill up (seconds).
DEFAULT_BATCH_WAIT_S = 0.5
#: Config fields that must match when a run directory is resumed.
RESUME_KEYS = ("agent", "suite", "split", "backend", "turns", "reward")

EnvFactory = Callable[["EvalConfig", str], Any]


@dataclass
class EvalConfig:
    """Configuration of one ``akg eval`` run."""

    agent: str = field(default="reference", metadata={"help": "reference, openai, hf, or module:Class."})
    out: str = field(default="runs/default", metadata={"help": "Run directory (results.jsonl + run.json)."})
    suite: str = field(default="core", metadata={"help": "Bundled suite name or a suite directory."})
    split: str = field(default="test", metadata={"help": "train, test or all."})
    levels: list[int] | None = field(default=None, metadata={"help": "Only these levels (default: all)."})
    task_ids: list[str] | None = field(default=None, metadata={"help": "Only these task ids (default: all)."})
    backend: str = field(default="auto", metadata={"help": "auto, npu, cuda or interpreter."})
    turns: int = field(default=1, metadata={"help": "Maximum turns per episode."})
    samples: int = field(default=1, metadata={"help": "Episodes per task (for pass@k)."})
    workers: int = field(default=0, metadata={"help": "Episodes in flight at once (0: number of CPU cores, >= 2)."})
    reward: str = field(default="default", metadata={"help": "Reward preset of the environment."})
    seed: int = field(default=0, metadata={"help": "Base seed; episode seeds derive from it, the task and sample."})
    batch_wait_s: float | None = field(
        default=None,
        metadata={
            "help": "Longest wait (s) for more live episodes to join a generation batch; None: the policy's "
            "`batch_wait_s` attribute if it has one (0 for scripted policies), else 0.5."
        },
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "Extra keyword arguments for the environment constructor."}
    )
    agent_options: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "Options for the policy constructor (endpoint, model, ...)."}
    )

    def __post_init__(self) -> None:
        if self.turns < 1:
            raise ValueError(f"turns must be >= 1, got {self.turns}")
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0, got {self.workers}")
        if self.split not in ("train", "test", "all"):
            raise ValueError(f"split must be train, test or all, got {self.split!r}")


@dataclass
class RunSummary:
    """What one invocation of :func:`run_eval` did."""

    out: str
    episodes_total: int
    episodes_skipped: int
    episodes_run: int
    episodes_failed: int
    env_steps: int
    generate_calls: int
    correct: int
    wall_s: float


def episode_seed(base: int, task_id: str, sample: int) -> int:
    digest = hashlib.sha256(f"{base}:{task_id}:{sample}".encode()).hexdigest()
    return int(digest[:8], 16)


def default_env_factory(config: EvalConfig, backend: str) -> Any:
    """``AscendTriton-v0`` for ``config``, through the standard wrapper stack with no wrapper switched on.

    The env checker and order enforcer of ``gym.make`` are stripped: the runner drives the env.
    """
    import gymnasium as gym

    import ascend_kernel_gym  # noqa: F401 - registers the environments
    from ascend_kernel_gym.wrappers.stack import build_stack

    kwargs = {
        "suite": config.suite,
        "split": "all",
        "task_ids": config.task_ids,
        "levels": config.levels,
        "backend": backend,
        "max_turns": config.turns,
        "reward": config.reward,
        **config.env_kwargs,
    }
    return build_stack(gym.make("AscendTriton-v0", disable_env_checker=True, **kwargs).unwrapped)


class _Request:
    __slots__ = ("error", "event", "messages", "result", "submitted", "task_id")

    def __init__(self, task_id: str, messages: list[Message]) -> None:
        self.task_id = task_id
        self.messages = messages
        self.submitted = time.monotonic()
        self.event = threading.Event()
        self.result: Generation | None = None
        self.error: BaseException | None = None


class _RunAbortedError(RuntimeError):
    pass


class GenerationBatcher:
    """Collects generation requests from episode threads and serves them in batches (main thread)."""

    def __init__(self, policy: Policy, max_wait_s: float, *, workers: int, episodes: int) -> None:
        self.policy = policy
        self.max_wait_s = max_wait_s
        self.workers = workers
        self._cond = threading.Condition()
        self._queue: list[_Request] = []
        self._remaining = episodes
        self._policy_lock = threading.Lock()
        self._closed = False
        self.aborted: BaseException | None = None
        self.calls = 0
        self.batch_sizes: list[int] = []

    def reset_policy(self) -> None:
        """``policy.reset()`` at an episode's start (serialised with generation; see Policy.reset)."""
        with self._policy_lock:
            self.policy.reset()

    @property
    def live(self) -> int:
        """Episodes that can be in flight now: ``min(workers, episodes not finished)``."""
        return min(self.workers, self._remaining)

    def episode_done(self) -> None:
        with self._cond:
            self._remaining -= 1
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def request(self, task_id: str, messages: list[Message]) -> Generation:
        """Called from an episode thread; blocks until the batch with this context is generated."""
        req = _Request(task_id, messages)
        with self._cond:
            if self.aborted is not None:
                raise _RunAbortedError("run aborted")
            self._queue.append(req)
            self._cond.notify_all()
        req.event.wait()
        if req.error is not None:
            raise _RunAbortedError(f"policy failed: {req.error}") from req.error
        assert req.result is not None
        return req.result

    def abort(self, error: BaseException) -> None:
        with self._cond:
            self.aborted = error
            pending, self._queue = self._queue, []
            self._cond.notify_all()
        for req in pending:
            req.error = error
            req.event.set()

    def _take_batch(self) -> list[_Request] | None:
        with self._cond:
            while not self._queue:
                if self._closed:
                    return None
                self._cond.wait(0.1)
            deadline = self._queue[0].submitted + self.max_wait_s
            while len(self._queue) < self.live and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            batch, self._queue = self._queue, []
            return batch

    def _generate(self, batch: list[_Request]) -> list[Generation]:
        contexts = [req.messages for req in batch]
        task_ids = [req.task_id for req in batch]
        generate_for_tasks = getattr(self.policy, "generate_for_tasks", None)
        if callable(generate_for_tasks):
            out = generate_for_tasks(contexts, task_ids)
        else:
            out = self.policy.generate(contexts)
        if len(out) != len(batch):
            raise RuntimeError(f"policy returned {len(out)} generations for {len(batch)} contexts")
        return list(out)

    def serve(self) -> None:
        """Serve batches until :meth:`close`; a policy error aborts the run (re-raised here)."""
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            started = time.monotonic()
            try:
                with self._policy_lock:
                    generations = self._generate(batch)
            except Exception as exc:  # delivered to every waiting episode, then re-raised
                for req in batch:
                    req.error = exc
                    req.event.set()
                self.abort(exc)
                raise
            self.calls += 1
            self.batch_sizes.append(len(batch))
            elapsed = time.monotonic() - started
            for req, generation in zip(batch, generations, strict=True):
                generation.meta.setdefault("batch_size", len(batch))
                generation.meta.setdefault("batch_generate_s", round(elapsed, 4))
                req.result = generation
                req.event.set()


def _json_meta(meta: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in meta.items():
        if isinstance(value, (str, int, float, bool)) or value is None:
            out[str(key)] = value
        else:
            out[str(key)] = repr(value)[:500]
    return out


class _EpisodeRunner:
    """Runs one episode in the calling thread; one environment per thread, reused across episodes."""

    def __init__(
        self, config: EvalConfig, backend: str, env_factory: EnvFactory, batcher: GenerationBatcher, agent_name: str
    ) -> None:
        self.config = config
        self.backend = backend
        self.env_factory = env_factory
        self.batcher = batcher
        self.agent_name = agent_name
        self._local = threading.local()
        self._envs: list[Any] = []
        self._envs_lock = threading.Lock()
        self.steps = 0
        self._steps_lock = threading.Lock()

    def env(self) -> Any:
        env = getattr(self._local, "env", None)
        if env is None:
            env = self.env_factory(self.config, self.backend)
            self._local.env = env
            with self._envs_lock:
                self._envs.append(env)
        return env

    def close(self) -> None:
        for env in self._envs:
            try:
                env.close()
            except Exception:  # noqa: BLE001, S110 - closing is best effort
                pass

    def run(self, task: Task, sample: int) -> dict[str, Any]:
        started_at, started = utc_now(), time.monotonic()
        record: dict[str, Any] = {
            "task_id": task.id,
            "sample": sample,
            "agent": self.agent_name,
            "level": task.level,
            "category": task.category,
            "backend": self.backend,
            "turns": [],
            "error": None,
        }
        generate_s = env_s = 0.0
        try:
            self.batcher.reset_policy()
            env = self.env()
            seed = episode_seed(self.config.seed, task.id, sample)
            _, info = env.reset(seed=seed, options={"task_id": task.id})
            record["seed"] = seed
            messages = _messages(env, info)
            terminated = truncated = False
            while not (terminated or truncated) and len(record["turns"]) < self.config.turns:
                t0 = time.monotonic()
                generation = self.batcher.request(task.id, messages)
                t1 = time.monotonic()
                _, reward, terminated, truncated, info = env.step(generation.text)
                t2 = time.monotonic()
                with self._steps_lock:
                    self.steps += 1
                generate_s += t1 - t0
                env_s += t2 - t1
                record["turns"].append(
                    {
                        "turn": len(record["turns"]),
                        "action": generation.text,
                        "code": info.get("code"),
                        "format_ok": info.get("format_ok"),
                        "eval": info.get("eval"),
                        "score": info.get("score"),
                        "reward": float(reward),
                        "feedback": info.get("feedback"),
                        "generation": _json_meta(generation.meta) | {"tokens": len(generation.token_ids)},
                        "timings": {"generate_s": round(t1 - t0, 4), "step_s": round(t2 - t1, 4)},
                    }
                )
                messages = _messages(env, info)
            record["terminated"], record["truncated"] = bool(terminated), bool(truncated)
            record["env_best_score"] = info.get("best_score")
            broken = [t["turn"] for t in record["turns"] if (t["eval"] or {}).get("error_type") == "harness_error"]
            if broken:
                record["error"] = f"the evaluation harness failed in turn(s) {broken} (not the agent's fault)"
        except _RunAbortedError:
            raise
        except Exception as exc:  # noqa: BLE001 - a harness bug must not kill the other episodes
            record["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            self.batcher.episode_done()
        best = best_turn_index(record["turns"])
        record["best_turn"] = best
        record["best_code"] = record["turns"][best]["code"] if best is not None else None
        record["best_result"] = record["turns"][best]["eval"] if best is not None else None
        record["return"] = sum(t["reward"] for t in record["turns"])
        record["timings"] = {
            "started": started_at,
            "finished": utc_now(),
            "wall_s": round(time.monotonic() - started, 4),
            "generate_s": round(generate_s, 4),
            "env_s": round(env_s, 4),
        }
        return record


def _messages(env: Any, info: dict[str, Any]) -> list[Message]:
    messages = info.get("messages")
    if messages is None:
        messages = getattr(getattr(env, "unwrapped", env), "messages", None)
    if messages is None:
        raise RuntimeError("the environment gives no chat messages (info['messages'] / env.messages)")
    return [dict(m) for m in messages]


def _versions() -> dict[str, Any]:
    from ascend_kernel_gym import __version__
    from ascend_kernel_gym.backends.detect import package_version, versions

    out: dict[str, Any] = {"ascend_kernel_gym": __version__, **versions()}
    out["gymnasium"] = package_version("gymnasium")
    out["python"] = platform.python_version()
    out["platform"] = platform.platform()
    return out


def _check_resume(run_dir: Path, config_view: dict[str, Any], agent_meta: dict[str, Any]) -> dict[str, Any] | None:
    try:
        old = read_manifest(run_dir)
    except FileNotFoundError:
        return None
    old_config = old.get("config", {})
    clashes = [
        f"{key}: {old_config.get(key)!r} in run.json vs {config_view[key]!r} now"
        for key in RESUME_KEYS
        if old_config.get(key) != config_view[key]
    ]
    old_agent = old.get("agent", {})
    for key in ("name", "model"):
        if old_agent.get(key) != agent_meta.get(key):
            clashes.append(f"agent {key}: {old_agent.get(key)!r} in run.json vs {agent_meta.get(key)!r} now")
    old_hash = old.get("suite", {}).get("content_sha256")
    if old_hash and old_hash != config_view["suite_content_sha256"]:
        clashes.append("suite content changed since the run started (task files differ)")
    if clashes:
        raise ValueError(
            f"{run_dir} holds a run with a different configuration ({'; '.join(clashes)}); "
            "use another --out directory to start a new run"
        )
    return old


def _resolve_tasks(config: EvalConfig) -> tuple[list[Task], list[Task]]:
    from ascend_kernel_gym.tasks.suite import load_suite

    # explicit task ids are taken from the whole suite, as the environment does
    split = "all" if config.task_ids else config.split
    tasks = load_suite(config.suite, split=split, levels=config.levels, task_ids=config.task_ids)
    if not tasks:
        raise ValueError(f"no tasks selected (suite={config.suite!r}, split={config.split!r}, levels={config.levels})")
    return tasks, load_suite(config.suite, split="all")


def run_eval(
    config: EvalConfig,
    *,
    policy: Policy | None = None,
    env_factory: EnvFactory | None = None,
    progress: bool = True,
) -> RunSummary:
    """Run (or resume) an evaluation and write ``results.jsonl`` and ``run.json`` under ``config.out``.

    Args:
        config: what to run.
        policy: a ready policy; by default built from ``config.agent``.
        env_factory: ``(config, backend) -> env``; by default :func:`default_env_factory`.
        progress: show a tqdm progress bar.

    Raises:
        ValueError: bad configuration, or ``config.out`` holds a run with another configuration.
        BackendUnavailableError: the backend cannot run here.
        RuntimeError: the policy failed (finished episodes are kept; re-run to resume).
    """
    from ascend_kernel_gym.backends.detect import device_info, resolve_backend
    from ascend_kernel_gym.leaderboard.agents import build_policy

    wall_start = time.monotonic()
    tasks, suite_tasks = _resolve_tasks(config)
    backend = resolve_backend(config.backend)
    run_dir = Path(config.out)
    suite_hash = suite_content_hash(suite_tasks)
    config_view = {
        **asdict(config),
        "backend": backend,
        "backend_requested": config.backend,
        "suite_content_sha256": suite_hash,
    }
    if policy is None:
        policy = build_policy(config.agent, tasks, {**config.agent_options})
    agent_meta = policy.describe()
    agent_meta.setdefault("spec", config.agent)
    old_manifest = _check_resume(run_dir, config_view, agent_meta)

    done = read_results(run_dir)
    pending = [(t, s) for t in tasks for s in range(config.samples) if (t.id, s) not in done]
    total = len(tasks) * config.samples
    invocation = {"started": utc_now(), "finished": None, "episodes_run": 0, "argv": sys.argv[1:]}
    manifest: dict[str, Any] = {
        "schema": RUN_SCHEMA,
        "agent": agent_meta,
        "suite": {
            "name": suite_tasks[0].suite or config.suite,
            "content_sha256": suite_hash,
            "tasks_in_suite": len(suite_tasks),
        },
        "backend": backend,
        "device": device_info(backend).to_dict(),
        "versions": _versions(),
        "config": {k: v for k, v in config_view.items() if k not in ("suite_content_sha256", "agent_options")},
        "tasks": [{"id": t.id, "level": t.level, "category": t.category, "task_sha256": t.source_hash} for t in tasks],
        "started": (old_manifest or {}).get("started") or invocation["started"],
        "finished": None,
        "status": "running",
        "invocations": [*(old_manifest or {}).get("invocations", []), invocation],
    }
    if pending:  # fail fast on a bad environment configuration (reward preset, env kwargs, ...)
        (env_factory or default_env_factory)(config, backend).close()
    write_manifest(run_dir, manifest)

    writer = ResultsWriter(run_dir)
    workers = config.workers or max(2, os.cpu_count() or 1)
    workers = max(1, min(workers, len(pending) or 1))
    wait_s = config.batch_wait_s
    if wait_s is None:
        wait_s = float(getattr(policy, "batch_wait_s", DEFAULT_BATCH_WAIT_S))
    batcher = GenerationBatcher(policy, wait_s, workers=workers, episodes=len(pending))
    runner = _EpisodeRunner(config, backend, env_factory or default_env_factory, batcher, str(agent_meta["name"]))
    counts = {"run": 0, "failed": 0, "correct": 0}
    counts_lock = threading.Lock()

    bar = None
    if progress and pending:
        from tqdm import tqdm

        bar = tqdm(
            total=total,
            initial=total - len(pending),
            desc=f"akg eval {agent_meta['name']}",
            unit="episode",
            dynamic_ncols=True,
        )

    def one(task: Task, sample: int) -> None:
        if batcher.aborted is not None:
            batcher.episode_done()
            return
        record = runner.run(task, sample)
        writer.append(record)
        with counts_lock:
            counts["run"] += 1
            counts["failed"] += bool(record["error"])
            counts["correct"] += is_ok(record["best_result"])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(correct=counts["correct"], errors=counts["failed"])

    status = "complete"
    error: BaseException | None = None
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="akg-episode")
    try:
        futures: list[Future[None]] = [executor.submit(one, t, s) for t, s in pending]
        closer = threading.Thread(target=_close_when_done, args=(futures, batcher), daemon=True)
        closer.start()
        batcher.serve()
        for future in futures:
            exc = future.exception()
            if exc is not None and not isinstance(exc, _RunAbortedError):
                raise exc
    except KeyboardInterrupt:
        status = "interrupted"
        batcher.abort(KeyboardInterrupt())
        raise
    except Exception as exc:  # noqa: BLE001 - re-raised below with resume advice
        status, error = "failed", exc
        batcher.abort(exc)
    finally:
        executor.shutdown(wait=status != "interrupted", cancel_futures=True)
        runner.close()
        if bar is not None:
            bar.close()
        all_done = read_results(run_dir)
        if status == "complete" and any((t.id, s) not in all_done for t in tasks for s in range(config.samples)):
            status = "incomplete"
        invocation["finished"] = utc_now()
        invocation["episodes_run"] = counts["run"]
        manifest["status"] = status
        manifest["finished"] = invocation["finished"]
        write_manifest(run_dir, manifest)
    if error is not None:
        raise RuntimeError(
            f"evaluation stopped: {type(error).__name__}: {error}. {counts['run']} episode(s) of this invocation "
            f"are saved in {run_dir}; re-run the same command to resume"
        ) from error
    return RunSummary(
        out=str(run_dir),
        episodes_total=total,
        episodes_skipped=total - len(pending),
        episodes_run=counts["run"],
        episodes_failed=counts["failed"],
        env_steps=runner.steps,
        generate_calls=batcher.calls,
        correct=counts["correct"],
        wall_s=round(time.monotonic() - wall_start, 3),
    )


def _close_when_done(futures: Sequence[Future[None]], batcher: GenerationBatcher) -> None:
    for future in futures:
        try:
            future.result()
        except BaseException:  # noqa: BLE001, S110 - inspected by run_eval
            pass
    batcher.close()
