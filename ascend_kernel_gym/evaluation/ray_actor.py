"""What runs inside the Ray executor's actors: a local evaluator pool per device, and the shared result cache.

Plain classes: :mod:`.ray_executor` makes actors of them (``ray.remote(PoolActor)``), so this
module imports neither ray nor torch (ray only inside an actor).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from ascend_kernel_gym.evaluation.cache import ResultCache, harness_fingerprint
from ascend_kernel_gym.evaluation.concurrency import CPUS_ENV
from ascend_kernel_gym.evaluation.result import EvalRequest, EvalResult

#: the caller's evaluation settings an actor's pool applies (an actor's own environment is its
#: node's, which does not have them): how timing runs, where verdicts are made, the sandboxes
FORWARDED_SETTINGS = (
    "AKG_TIMING_GATE",
    "AKG_CUDA_SYNC",
    "AKG_PRECOMPILE",
    "AKG_DEFER_REFERENCE",
    "AKG_LAZY_SENSITIVITY",
    "AKG_JUDGE",
    "AKG_DEVICE_LEASE",
    "AKG_OS_SANDBOX",
    "AKG_STATIC_TIMEOUT_S",
    "CUDA_DEVICE_MAX_CONNECTIONS",
)


def forwarded_settings() -> dict[str, str]:
    """This process's values of :data:`FORWARDED_SETTINGS` (the ones that are set)."""
    return {name: os.environ[name] for name in FORWARDED_SETTINGS if name in os.environ}


def pool_identity() -> dict[str, str]:
    """What must match between the driver and an actor for their results and cache keys to agree."""
    from ascend_kernel_gym import __version__

    return {"version": __version__, "harness": harness_fingerprint()}


def actor_cpus(backend: str) -> int | None:
    """The host cores this actor's pool may use: its CPU reservation on the interpreter, else the
    node's cores divided among the node's devices (None when Ray does not say)."""
    import ray

    context = ray.get_runtime_context()
    if backend == "interpreter":
        cpus = context.get_assigned_resources().get("CPU")
        return max(1, int(cpus)) if cpus else None
    kind = "GPU" if backend == "cuda" else "NPU"
    node = next((n for n in ray.nodes() if n.get("NodeID") == context.get_node_id()), None)
    resources = (node or {}).get("Resources", {})
    if not resources.get(kind) or not resources.get("CPU"):
        return None
    return max(1, int(resources["CPU"] // resources[kind]))


class PoolActor:
    """One device's evaluator pool (a local :class:`~ascend_kernel_gym.evaluation.Evaluator`), as a Ray actor.

    Ray gives the actor its device (``CUDA_VISIBLE_DEVICES`` / ``ASCEND_RT_VISIBLE_DEVICES``),
    so the pool inside sees exactly one. Requests run concurrently (a threaded actor), up to the
    pool's workers at once; the pool's own queue holds the rest.

    Args:
        pool_factory: ``pool_factory(backend=...)`` makes the local pool (with its result cache off:
            the cache is shared across the cluster, in front of the actors).
        backend: ``interpreter``, ``cuda`` or ``npu``.
        workers_per_device: the pool's workers (None: the pool's default for the device).
        settings: the driver's :func:`forwarded_settings`, set here before the pool is made; a
            setting the driver left unset is removed, so the actor's node cannot add one.
    """

    def __init__(
        self,
        pool_factory: Callable[..., Any],
        backend: str,
        workers_per_device: int | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        for name in FORWARDED_SETTINGS:
            os.environ.pop(name, None)
        os.environ.update({k: str(v) for k, v in (settings or {}).items() if k in FORWARDED_SETTINGS})
        cpus = actor_cpus(backend)
        if cpus:
            os.environ[CPUS_ENV] = str(cpus)  # the pool sizes its workers and threads from its share
        self.pool = pool_factory(backend=backend, workers_per_device=workers_per_device)

    def info(self) -> dict[str, Any]:
        """Backend, device, workers, where it runs, and the package identity (version, harness fingerprint)."""
        return {
            "backend": self.pool.backend,
            "device": self.pool.device_name,
            "workers": int(self.pool.workers),
            "workers_per_device": int(self.pool.workers_per_device),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            **pool_identity(),
        }

    def ping(self) -> bool:
        return True

    def evaluate(self, request: EvalRequest) -> dict[str, Any]:
        """Evaluate one request on this device's pool; the result as a plain dict."""
        return self.pool.evaluate(request).to_dict()

    def warm_up(self, timeout_s: float) -> None:
        self.pool.warm_up(timeout_s)

    def stats(self) -> dict[str, int]:
        return dict(self.pool.stats)

    def close(self) -> None:
        self.pool.close()


class CacheActor:
    """The result cache every driver of one Ray cluster shares (content-keyed, see :mod:`.cache`).

    Args:
        max_items: results kept in memory.
        directory: also keep them on disk here (a path on the actor's node; a shared filesystem
            keeps them across clusters too).
    """

    def __init__(self, max_items: int = 65536, directory: str | None = None) -> None:
        self.cache = ResultCache(max_items=max_items, directory=directory)

    def get(self, key: str) -> dict[str, Any] | None:
        result = self.cache.get(key)
        return None if result is None else result.to_dict()

    def put(self, key: str, data: dict[str, Any]) -> None:
        self.cache.put(key, EvalResult.from_dict(data))

    def stats(self) -> dict[str, int]:
        return {"items": len(self.cache), "hits": self.cache.hits, "misses": self.cache.misses}
