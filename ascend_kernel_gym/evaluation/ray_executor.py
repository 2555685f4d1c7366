"""``Evaluator(executor="ray")``: the evaluator's API over a Ray cluster, one actor per device.

Each actor (:class:`~.ray_actor.PoolActor`) holds one device (``num_gpus=1`` on cuda, the
``NPU`` resource on npu, ``num_cpus`` on the interpreter) and runs the local pool inside it, so a
result is the one the local pool gives. The driver side (:class:`RayExecutor`) sends each request
to the actor with the lowest share of its workers busy, and no actor gets more requests at once
than it has workers. An actor lost mid-evaluation (its node gone, killed, out of memory) is
replaced, and the request is run once more on a live actor, its result marked ``retried:``; a
second loss gives a ``crash`` result. Every request gets exactly one result.

Actors are named (``akg-pool-<backend>-<digest of the options>-<i>``, namespace
:data:`ACTOR_NAMESPACE`), so every process of one cluster that asks for the same pool shares
them; an actor lives as long as the process that made it. The result cache is one more actor
(:class:`RayResultCache`), shared the same way.

This module imports ray only when an executor is made.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.evaluation.concurrency import mark_retried
from ascend_kernel_gym.evaluation.ray_actor import CacheActor, PoolActor, forwarded_settings, pool_identity
from ascend_kernel_gym.evaluation.result import ErrorType, EvalRequest, EvalResult, Stage

#: the Ray namespace of the executor's named actors
ACTOR_NAMESPACE = "ascend_kernel_gym"
#: how an evaluator address that names a Ray cluster starts
RAY_SCHEME = "ray://"
#: the longest an actor may take to start its pool and answer
START_TIMEOUT_S = 900.0
#: on top of a request's own limits: how long the driver waits for an actor before it asks whether it hangs
HANG_SLACK_S = 600.0
#: how long a live actor has to answer a ping
PING_TIMEOUT_S = 30.0
#: once one actor is ready, how long ``warm_up`` waits for others the cluster has no free room for
PENDING_GRACE_S = 10.0
#: CPUs (and pool workers) of one interpreter actor when ``workers_per_device`` is not given
INTERPRETER_ACTOR_CPUS = 2
#: actor method calls beyond its workers that may run at once (ping, info, stats)
SPARE_CONCURRENCY = 4
#: the largest pool an actor is prepared for when its size is not given (its concurrency)
DEFAULT_ACTOR_CONCURRENCY = 16


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "executor='ray' needs Ray: pip install 'ascend-kernel-gym[ray]' (on every node of the cluster)"
        ) from exc
    return ray


def ray_init_address(address: str | None) -> str | None:
    """What ``ray.init(address=...)`` gets for an evaluator address.

    ``None``, ``ray://`` or ``ray://local``: None (Ray's default: the cluster in ``RAY_ADDRESS``,
    else a new local instance); ``ray://auto``: ``auto`` (the cluster this machine joined with
    ``ray start``); ``ray://HOST:PORT``: unchanged (Ray Client, port 10001 by default); anything
    else (``auto``, ``HOST:6379``) unchanged.
    """
    if address is None:
        return None
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"a Ray address must be a non-empty string, got {address!r}")
    address = address.strip()
    if address.startswith(RAY_SCHEME):
        rest = address[len(RAY_SCHEME) :]
        if rest in ("", "local"):
            return None
        if rest == "auto":
            return "auto"
    return address


def connect(address: str | None) -> Any:
    """Join (or start) the Ray cluster once per process; returns the ``ray`` module."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(address=ray_init_address(address), namespace=ACTOR_NAMESPACE, ignore_reinit_error=True)
    return ray


def cluster_backend(resources: Mapping[str, float], backend: str = "auto") -> str:
    """The backend a cluster with ``resources`` serves: ``npu`` with NPUs, else ``cuda`` with GPUs, else interpreter.

    Raises:
        ValueError: ``backend`` names devices the cluster does not have.
    """
    have = {"npu": resources.get("NPU", 0) > 0, "cuda": resources.get("GPU", 0) > 0, "interpreter": True}
    if backend == "auto":
        return next(b for b in ("npu", "cuda", "interpreter") if have[b])
    if backend not in have:
        raise ValueError(f"unknown backend {backend!r}; choose auto, npu, cuda or interpreter")
    if not have[backend]:
        kind = "NPU" if backend == "npu" else "GPU"
        raise ValueError(f"backend={backend!r}, but the Ray cluster has no {kind} resources ({dict(resources)})")
    return backend


def actor_options(backend: str, workers_per_device: int | None, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """Ray options of one pool actor: its device resource and concurrency; ``extra`` overrides."""
    if backend == "cuda":
        options: dict[str, Any] = {"num_gpus": 1}
    elif backend == "npu":
        options = {"resources": {"NPU": 1}}
    else:
        options = {"num_cpus": workers_per_device or INTERPRETER_ACTOR_CPUS}
    size = workers_per_device or (options.get("num_cpus") or DEFAULT_ACTOR_CONCURRENCY)
    options["max_concurrency"] = int(size) + SPARE_CONCURRENCY
    options.update(dict(extra or {}))
    return options


def actor_needs(options: Mapping[str, Any]) -> dict[str, float]:
    """The Ray resources one pool actor with ``options`` takes."""
    need: dict[str, float] = {}
    if options.get("num_cpus"):
        need["CPU"] = float(options["num_cpus"])
    if options.get("num_gpus"):
        need["GPU"] = float(options["num_gpus"])
    for name, amount in dict(options.get("resources") or {}).items():
        need[str(name)] = float(amount)
    return need


def room_for_one(options: Mapping[str, Any], free: Mapping[str, float]) -> bool:
    """Whether the cluster's free resources hold one more pool actor."""
    return all(float(free.get(name, 0.0)) >= amount for name, amount in actor_needs(options).items())


def check_room(backend: str, count: int, options: Mapping[str, Any], resources: Mapping[str, float]) -> None:
    """Raise ``ValueError`` when ``count`` actors cannot all be placed on the cluster as it is (the
    ones beyond its resources would wait for nodes that may never come, and the caller with them)."""
    for name, amount in actor_needs(options).items():
        have = float(resources.get(name, 0.0))
        if count * amount > have:
            raise ValueError(
                f"{count} {backend} pool actors need {count * amount:g} {name} in all, the Ray cluster has {have:g}: "
                "ask for fewer actors (actors=...), fewer workers per actor (workers_per_device=...), or add nodes"
            )


def default_actor_count(backend: str, resources: Mapping[str, float], options: Mapping[str, Any]) -> int:
    """One actor per device of the cluster (interpreter: as many as its CPUs hold)."""
    if backend == "cuda":
        return max(1, int(resources.get("GPU", 0) // max(options.get("num_gpus", 1), 1e-9)))
    if backend == "npu":
        return max(1, int(resources.get("NPU", 0)))
    return max(1, int(resources.get("CPU", 1) // max(options.get("num_cpus", 1), 1e-9)))


def successor_name(name: str) -> str:
    """The name of the actor that replaces ``name``: ``x-3`` -> ``x-3~1`` -> ``x-3~2``.

    Every process that sees the same actor die picks the same successor, so they share it.
    """
    base, sep, generation = name.rpartition("~")
    if sep and generation.isdigit():
        return f"{base}~{int(generation) + 1}"
    return f"{name}~1"


def generation(name: str) -> int:
    """How many times the actor of ``name``'s slot was replaced (``x-3`` 0, ``x-3~2`` 2)."""
    _, sep, count = name.rpartition("~")
    return int(count) if sep and count.isdigit() else 0


def latest_names(bases: list[str], alive: list[str]) -> list[str]:
    """For each slot name in ``bases``, the newest generation among the ``alive`` named actors (else the base).

    A process that joins a pool after some actors were replaced uses the replacements, and does
    not start a second actor under the original name (which would wait for a device forever).
    """
    newest: dict[str, str] = {}
    for name in alive:
        base, sep, count = name.rpartition("~")
        if not (sep and count.isdigit()):
            base = name
        if base in bases and generation(name) >= generation(newest.get(base, base)):
            newest[base] = name
    return [newest.get(base, base) for base in bases]


def lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's exceptions that mean the actor (or its node, or the call's result) is gone."""
    names = ("RayActorError", "WorkerCrashedError", "ObjectLostError", "NodeDiedError", "OwnerDiedError")
    return tuple(getattr(ray.exceptions, n) for n in names if isinstance(getattr(ray.exceptions, n, None), type))


def get_or_create(ray: Any, cls: type, name: str, options: Mapping[str, Any], *args: Any) -> tuple[Any, bool]:
    """Actor ``name`` of :data:`ACTOR_NAMESPACE`, made from ``cls`` if absent; and whether this call made it."""
    for _ in range(3):
        try:
            return ray.get_actor(name, namespace=ACTOR_NAMESPACE), False
        except ValueError:
            pass
        try:
            actor = ray.remote(cls).options(name=name, namespace=ACTOR_NAMESPACE, max_restarts=0, **options)
            return actor.remote(*args), True
        except ValueError:  # another process made it between the two calls
            continue
    raise RuntimeError(f"could not get or make the Ray actor {name!r}")


@dataclass
class Member:
    """One pool actor as the driver sees it."""

    name: str
    handle: Any
    owned: bool
    capacity: int = 0
    in_flight: int = 0
    ready: bool = False
    dead: bool = False
    host: str = ""
    device: str = ""
    error: str = ""


class RayExecutor:
    """Sends evaluation requests to pool actors on a Ray cluster (used by ``Evaluator(executor="ray")``).

    Args:
        pool_factory: makes an actor's local pool: ``pool_factory(backend=..., workers_per_device=...)``.
        pool_key: the pool's options as plain data (actors of equal keys are shared).
        backend: ``auto`` (from the cluster's resources), ``interpreter``, ``cuda`` or ``npu``.
        address: where the cluster is (see :func:`ray_init_address`).
        actors: how many pool actors (default: one per device of the cluster).
        workers_per_device: workers of each actor's pool (default: the pool's own choice;
            interpreter actors: :data:`INTERPRETER_ACTOR_CPUS`).
        ray_options: extra Ray options for the pool actors (e.g. ``{"resources": {"eval_node": 1}}``).
    """

    def __init__(
        self,
        pool_factory: Callable[..., Any],
        pool_key: Mapping[str, Any],
        *,
        backend: str = "auto",
        address: str | None = None,
        actors: int | None = None,
        workers_per_device: int | None = None,
        ray_options: Mapping[str, Any] | None = None,
    ) -> None:
        if actors is not None and (not isinstance(actors, int) or actors < 1):
            raise ValueError(f"actors must be a positive int or None, got {actors!r}")
        self._ray = connect(address)
        self.address = address
        resources = self._ray.cluster_resources()
        self.backend = cluster_backend(resources, backend)
        if self.backend == "interpreter" and not workers_per_device:
            workers_per_device = INTERPRETER_ACTOR_CPUS
            if actors:  # the actors asked for share the cluster's CPUs rather than wait for more
                workers_per_device = max(1, min(INTERPRETER_ACTOR_CPUS, int(resources.get("CPU", 1)) // actors))
        self._workers_per_device = workers_per_device
        self._options = actor_options(self.backend, workers_per_device, ray_options)
        count = actors or default_actor_count(self.backend, resources, self._options)
        check_room(self.backend, count, self._options, resources)
        # The settings are part of the pool's name: evaluators asking for different ones get
        # different actors (an actor applies the settings of the process that made it).
        self._settings = forwarded_settings()
        key = {
            "backend": self.backend,
            "pool": dict(pool_key),
            "actor": self._options,
            "settings": self._settings,
            **pool_identity(),
        }
        digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
        self.name = f"akg-pool-{self.backend}-{digest}"
        self._factory = pool_factory
        self._lost = lost_errors(self._ray)
        self._cond = threading.Condition()
        self._turn = 0
        self._starting = 0
        self._closed = False
        self.stats = {"retries": 0, "actor_replacements": 0, "lost_twice": 0}
        self.members: list[Member] = []
        alive = [a["name"] for a in self._ray.util.list_named_actors(all_namespaces=True)
                 if a.get("namespace") == ACTOR_NAMESPACE]  # fmt: skip
        for name in latest_names([f"{self.name}-{i}" for i in range(count)], alive):
            with self._cond:
                self._starting += 1
            self.members.append(self._spawn(name))

    # --- actors ---------------------------------------------------------------------------------
    def _spawn(self, name: str) -> Member:
        """Get or make actor ``name`` and wait for it in the background (the caller counted it as starting)."""
        handle, owned = get_or_create(
            self._ray,
            PoolActor,
            name,
            self._options,
            self._factory,
            self.backend,
            self._workers_per_device,
            self._settings,
        )
        member = Member(name=name, handle=handle, owned=owned, capacity=self._options["max_concurrency"])
        threading.Thread(target=self._await_start, args=(member,), daemon=True, name="akg-ray-start").start()
        return member

    def _await_start(self, member: Member) -> None:
        try:
            info = self._ray.get(member.handle.info.remote(), timeout=START_TIMEOUT_S)
            identity = pool_identity()
            if {k: info.get(k) for k in identity} != identity:
                member.error = (
                    f"the actor {member.name} on {info.get('host')} runs ascend-kernel-gym {info.get('version')} "
                    f"(harness {str(info.get('harness'))[:12]}), this process {identity['version']} "
                    f"(harness {identity['harness'][:12]}): install the same version on every node"
                )
                warnings.warn(member.error + "; the actor is left out", RuntimeWarning, stacklevel=1)
            else:
                member.capacity = max(1, int(info["workers"]))
                member.host = str(info.get("host", ""))
                member.device = str(info.get("device", ""))
        except Exception as exc:  # noqa: BLE001 - any failure to start is this actor's end
            member.error = f"the actor {member.name} did not start: {type(exc).__name__}: {str(exc)[:300]}"
        with self._cond:
            self._starting -= 1
            member.ready = not member.error
            member.dead = bool(member.error)
            self._cond.notify_all()

    def _acquire(self) -> Member | None:
        """The ready actor with the lowest share of its workers busy (waits for one); None if none is left."""
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("the Ray evaluator is closed")
                live = [m for m in self.members if m.ready and not m.dead]
                free = [m for m in live if m.in_flight < m.capacity]
                if free:
                    n = len(self.members)
                    self._turn += 1
                    best = min(
                        free,
                        key=lambda m: (m.in_flight / m.capacity, (self.members.index(m) - self._turn) % n),
                    )
                    best.in_flight += 1
                    return best
                if not live and not self._starting:
                    return None
                self._cond.wait(1.0)

    def _release(self, member: Member) -> None:
        with self._cond:
            member.in_flight -= 1
            self._cond.notify_all()

    def _replace(self, member: Member, kill: bool) -> None:
        """Take a lost actor out and start its successor (once, however many requests saw it go)."""
        with self._cond:
            if member.dead or member not in self.members:
                return
            member.dead = True
            index = self.members.index(member)
            self.stats["actor_replacements"] += 1
            self._starting += 1  # requests wait for the successor rather than find no actor at all
        if kill:
            try:
                self._ray.kill(member.handle, no_restart=True)
            except Exception:  # noqa: BLE001, S110 - it may be gone already
                pass
        try:
            successor = self._spawn(successor_name(member.name))
        except Exception as exc:  # noqa: BLE001 - no successor: the others carry on
            member.error = f"no replacement for {member.name}: {exc}"
            with self._cond:
                self._starting -= 1
                self._cond.notify_all()
            return
        with self._cond:
            self.members[index] = successor
            self._cond.notify_all()

    def _alive(self, member: Member) -> bool:
        try:
            return bool(self._ray.get(member.handle.ping.remote(), timeout=PING_TIMEOUT_S))
        except Exception:  # noqa: BLE001
            return False

    # --- requests -------------------------------------------------------------------------------
    def evaluate(self, request: EvalRequest, timeout_s: float, base: EvalResult) -> EvalResult:
        """Evaluate ``request`` on an actor; ``base`` (task, backend, profile, code hash) starts a failure's result."""
        limit = 3 * (timeout_s + 60.0) + HANG_SLACK_S
        lost = ""
        for attempt in range(2):
            member = self._acquire()
            if member is None:
                errors = "; ".join(sorted({m.error for m in self.members if m.error})) or "none started"
                return _failure(base, ErrorType.HARNESS_ERROR, f"no Ray evaluation actor is available ({errors})")
            try:
                data = self._ray.get(member.handle.evaluate.remote(request), timeout=limit)
            except self._lost as exc:
                lost = f"the Ray actor {member.name} ({member.host or 'node unknown'}) was lost: {type(exc).__name__}"
                self._replace(member, kill=False)
                continue
            except self._ray.exceptions.GetTimeoutError:
                lost = f"the Ray actor {member.name} did not answer within {limit:g} s"
                if not self._alive(member):
                    self._replace(member, kill=True)
                continue
            except self._ray.exceptions.RayTaskError as exc:
                return _failure(base, ErrorType.HARNESS_ERROR, f"the Ray evaluation actor failed: {str(exc)[:500]}")
            finally:
                self._release(member)
            result = EvalResult.from_dict(data)
            if attempt:
                with self._cond:
                    self.stats["retries"] += 1
                mark_retried(result, f"{lost}; evaluated again on another actor")
            return result
        with self._cond:
            self.stats["retries"] += 1
            self.stats["lost_twice"] += 1
        result = _failure(
            base,
            ErrorType.CRASH,
            f"the evaluation was lost twice: the Ray actor running it died on both tries (last: {lost}). "
            "A node went down, or the evaluation took its actor down (e.g. all of the node's memory)",
        )
        return mark_retried(result, lost)

    @property
    def capacity(self) -> int:
        """Workers of the ready actors together (at least 1)."""
        with self._cond:
            return max(1, sum(m.capacity for m in self.members if m.ready and not m.dead))

    @property
    def max_parallel(self) -> int:
        """The most requests the actors may ever take at once (threads worth keeping busy)."""
        with self._cond:
            return max(1, sum(max(m.capacity, self._options["max_concurrency"]) for m in self.members))

    def _await_actors(self, timeout_s: float) -> None:
        """Wait for the starting actors; not for those that wait for resources the cluster does
        not have free, once one actor is ready (they join when they get them; a warning says so)."""
        deadline = time.monotonic() + timeout_s
        short_since: float | None = None
        with self._cond:
            while self._starting and time.monotonic() < deadline:
                self._cond.wait(1.0)
                if not any(m.ready and not m.dead for m in self.members):
                    continue
                try:
                    free = dict(self._ray.available_resources())
                except Exception:  # noqa: BLE001, S112 - no answer: keep waiting as before
                    continue
                if room_for_one(self._options, free):
                    short_since = None
                    continue
                short_since = short_since if short_since is not None else time.monotonic()
                if time.monotonic() - short_since >= PENDING_GRACE_S:
                    ready = sum(1 for m in self.members if m.ready and not m.dead)
                    warnings.warn(
                        f"{self._starting} Ray pool actor(s) wait for resources the cluster does not have free "
                        f"({actor_needs(self._options)}); going on with {ready} (they join once placed)",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    return

    def device_name(self) -> str:
        """The device of the first started actor (waits for one to start)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        with self._cond:
            while time.monotonic() < deadline:
                name = next((m.device for m in self.members if m.ready and not m.dead and m.device), "")
                if name or not self._starting:
                    return name
                self._cond.wait(1.0)
        return ""

    def warm_up(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Wait until every actor has started its pool and its workers."""
        deadline = time.monotonic() + timeout_s
        self._await_actors(timeout_s)
        refs = [m.handle.warm_up.remote(timeout_s) for m in self.members if m.ready and not m.dead]
        self._ray.get(refs, timeout=max(1.0, deadline - time.monotonic()))

    def actor_stats(self) -> list[dict[str, Any]]:
        """Each live actor's pool counters (evaluations, worker restarts, ...)."""
        refs = [m.handle.stats.remote() for m in self.members if m.ready and not m.dead]
        return list(self._ray.get(refs, timeout=PING_TIMEOUT_S))

    def close(self) -> None:
        """Stop the actors this process made (others' actors are theirs to stop)."""
        with self._cond:
            self._closed = True
            members = list(self.members)
            self._cond.notify_all()
        for member in members:
            if member.owned and not member.dead:
                try:
                    self._ray.get(member.handle.close.remote(), timeout=PING_TIMEOUT_S)
                except Exception:  # noqa: BLE001, S110 - killed below anyway
                    pass
                try:
                    self._ray.kill(member.handle, no_restart=True)
                except Exception:  # noqa: BLE001, S110
                    pass


def _failure(base: EvalResult, error_type: ErrorType, message: str) -> EvalResult:
    result = EvalResult.from_dict(base.to_dict())
    result.stage = Stage.COMPILE
    result.error_type = error_type
    result.error_message = message
    return result


class RayResultCache:
    """The result cache shared by every process of one Ray cluster: a named :class:`~.ray_actor.CacheActor`.

    Same ``get`` / ``put`` as :class:`~.cache.ResultCache`. The cache never fails an evaluation:
    when its actor cannot be reached, ``get`` misses and ``put`` drops the result.

    Args:
        directory: the cache actor's disk layer (a path on its node), or None.
        max_items: results the actor keeps in memory.
    """

    def __init__(self, directory: str | None = None, max_items: int = 65536) -> None:
        from ascend_kernel_gym import __version__

        self._ray = connect(None)
        self.name = f"akg-result-cache-{__version__}"
        self._args = (max_items, None if directory is None else str(directory))
        self._handle, self.owned = self._open()
        self.hits = 0
        self.misses = 0

    def _open(self) -> tuple[Any, bool]:
        here = self._ray.get_runtime_context().get_node_id()
        strategy = self._ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=here, soft=True)
        # one call at a time: a put and a later get from one process run in the order they were sent
        options = {"num_cpus": 0, "scheduling_strategy": strategy}
        return get_or_create(self._ray, CacheActor, self.name, options, *self._args)

    def get(self, key: str) -> EvalResult | None:
        for _ in range(2):
            try:
                data = self._ray.get(self._handle.get.remote(key), timeout=PING_TIMEOUT_S)
                break
            except Exception:  # noqa: BLE001 - the cache actor is gone: open it again, once
                try:
                    self._handle, self.owned = self._open()
                except Exception:  # noqa: BLE001
                    data = None
                    break
        else:
            data = None
        if data is None:
            self.misses += 1
            return None
        self.hits += 1
        return EvalResult.from_dict(data)

    def put(self, key: str, result: EvalResult) -> None:
        try:
            self._handle.put.remote(key, result.to_dict())
        except Exception:  # noqa: BLE001, S110 - a lost cache entry only costs a re-evaluation
            pass
