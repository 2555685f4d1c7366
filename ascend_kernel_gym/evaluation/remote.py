"""One evaluator pool for env workers in other processes.

Inside one process, envs share a pool through ``get_shared_evaluator`` (SyncVectorEnv, threads).
Env workers in *other* processes (``gymnasium.vector.AsyncVectorEnv``, a multiprocessing pool of
rollout workers) cannot share a Python object, so one process serves its evaluator over an
authenticated local socket and the workers hold a small picklable client::

    from ascend_kernel_gym.evaluation import EvaluatorServer

    with EvaluatorServer(backend="interpreter") as server:        # one pool, in this process
        client = server.client()                                    # picklable
        envs = gym.vector.AsyncVectorEnv(
            [lambda: gym.make("AscendTriton-v0", evaluator=client) for _ in range(8)],
            shared_memory=False,
            context="spawn",  # this process runs server and pool threads: do not fork it
        )

Where Ray is at hand, ``Evaluator(executor="ray")`` (or the address ``"ray://auto"``) shares one
pool per device across processes and machines; this server remains for one host without Ray:
no extra dependency and no cluster to run, one pool for several local processes.
:func:`evaluator_at` turns either kind of address into an evaluator, and ``AKG_EVALUATOR`` names
one for the entry points that make their own (the env's default pool, ``akg verify``, ``akg check``).

The server runs in background threads of the process that creates it (one thread per client
connection), so every request lands in the same :class:`~ascend_kernel_gym.evaluation.Evaluator`.
Connections use :mod:`multiprocessing.connection` with an HMAC challenge on a random
``authkey``; the listener binds to ``127.0.0.1`` unless told otherwise. Anyone holding the
client (it carries the key) may submit code to the pool, so treat a pickled client as a secret.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from ascend_kernel_gym.evaluation.ray_executor import RAY_SCHEME
from ascend_kernel_gym.evaluation.result import EvalRequest, EvalResult

__all__ = [
    "EVALUATOR_ENV",
    "EvaluatorClient",
    "EvaluatorServer",
    "SharedEvaluatorRef",
    "configured_address",
    "evaluator_at",
    "evaluator_id_of",
    "is_ray_address",
    "parse_address",
]

Address = tuple[str, int]
#: environment variable naming the evaluator of the entry points that make their own (``ray://auto``, ``host:port``)
EVALUATOR_ENV = "AKG_EVALUATOR"


def is_ray_address(address: Any) -> bool:
    """Whether ``address`` is a string naming a Ray cluster (``ray://...``)."""
    return isinstance(address, str) and address.strip().startswith(RAY_SCHEME)


def configured_address() -> str | None:
    """The evaluator address in ``AKG_EVALUATOR``, or None when it is unset or empty."""
    return os.environ.get(EVALUATOR_ENV, "").strip() or None


def evaluator_at(address: str, backend: str = "auto", **options: Any) -> Any:
    """The evaluator an address names.

    ``ray://auto`` (the cluster this machine joined), ``ray://local`` (a new local Ray instance)
    or ``ray://HOST:PORT`` (Ray Client): this process's shared Ray evaluator for ``backend`` and
    ``options`` (``get_shared_evaluator(backend, executor="ray", address=..., **options)``).
    ``host:port``: an :class:`EvaluatorClient` of an :class:`EvaluatorServer` (``options`` unused).

    Raises:
        ValueError: the address is neither.
    """
    if is_ray_address(address):
        from ascend_kernel_gym.evaluation import get_shared_evaluator

        return get_shared_evaluator(backend, **{**options, "executor": "ray", "address": address.strip()})
    return EvaluatorClient(address)


def parse_address(address: str | Sequence[Any]) -> Address:
    """``"host:port"`` or ``(host, port)`` -> ``(host, port)``."""
    if isinstance(address, str):
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or "/" in host:
            raise ValueError(f"evaluator address must look like 'host:port' or 'ray://...', got {address!r}")
        return host, int(port)
    if isinstance(address, (tuple, list)) and len(address) == 2:
        return str(address[0]), int(address[1])
    raise ValueError(f"evaluator address must be 'host:port' or (host, port), got {address!r}")


def evaluator_id_of(evaluator: Any) -> str:
    """A string that is equal for two handles exactly when they reach the same evaluator pool.

    Uses the evaluator's own ``evaluator_id`` when it has one, else host, pid and object id.
    """
    own = getattr(evaluator, "evaluator_id", None)
    if isinstance(own, str) and own:
        return own
    return f"{socket.gethostname()}:{os.getpid()}:{id(evaluator):x}"


class SharedEvaluatorRef:
    """A reference to an evaluator object that ``copy.deepcopy`` shares instead of copying.

    ``gym.make`` keeps its keyword arguments in ``env.spec.kwargs`` and Gymnasium deep-copies
    that spec (``Wrapper.spec``, ``EnvSpec.make()``). A pool of worker processes must not be
    copied (and usually cannot be: it holds locks), so the env stores a given evaluator in its
    spec behind this reference: copies of the spec, and envs made from them, use the same pool.
    Pickling pickles the target itself.
    """

    __slots__ = ("target",)

    def __init__(self, target: Any) -> None:
        self.target = target

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedEvaluatorRef:
        return self

    def __copy__(self) -> SharedEvaluatorRef:
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return SharedEvaluatorRef, (self.target,)

    def __repr__(self) -> str:
        return f"SharedEvaluatorRef({self.target!r})"

    def evaluate(self, request: EvalRequest) -> EvalResult:
        return self.target.evaluate(request)


class EvaluatorServer:
    """Serve one evaluator to env workers in other processes.

    Args:
        evaluator: the evaluator to serve (anything with ``evaluate(EvalRequest) -> EvalResult``).
            ``None``: ``get_shared_evaluator(backend, **evaluator_options)`` on the first request,
            i.e. the same pool envs in this process use.
        backend: the backend of the default evaluator (``auto`` resolves here, now).
        address: ``(host, port)`` to listen on; port 0 picks a free one.
        authkey: the shared secret; ``None`` draws 32 random bytes.
        evaluator_options: keyword arguments for ``get_shared_evaluator``.
    """

    def __init__(
        self,
        evaluator: Any | None = None,
        *,
        backend: str = "auto",
        address: str | Address = ("127.0.0.1", 0),
        authkey: bytes | None = None,
        **evaluator_options: Any,
    ) -> None:
        if evaluator is not None and not callable(getattr(evaluator, "evaluate", None)):
            raise TypeError(f"evaluator must have an evaluate(request) method, got {type(evaluator).__name__}")
        if authkey is not None and not isinstance(authkey, bytes):
            raise TypeError("authkey must be bytes")
        if evaluator is not None:
            self.backend = str(getattr(evaluator, "backend", backend))
        else:
            from ascend_kernel_gym.backends.detect import resolve_backend

            self.backend = resolve_backend(backend)
        self._evaluator = evaluator
        self._evaluator_options = evaluator_options
        self._requested_address = parse_address(address)
        self.authkey = authkey if authkey is not None else secrets.token_bytes(32)
        self._listener: Listener | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[Connection] = set()
        self.requests_served = 0
        self.errors = 0
        self.clients_seen = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> EvaluatorServer:
        """Start listening (idempotent); returns ``self``."""
        if self._listener is not None:
            return self
        self._listener = Listener(self._requested_address, family="AF_INET", authkey=self.authkey)
        thread = threading.Thread(target=self._accept_loop, name="akg-evaluator-server", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stop accepting, drop client connections. The evaluator itself is left running."""
        if self._listener is None or self._stopping.is_set():
            return
        self._stopping.set()
        try:  # wake the accept() call
            Client(self.address, family="AF_INET", authkey=self.authkey).close()
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for conn in list(self._connections):
                conn.close()
            self._connections.clear()

    def __enter__(self) -> EvaluatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public
    @property
    def address(self) -> Address:
        if self._listener is None:
            raise RuntimeError("EvaluatorServer is not started; call start() or use it as a context manager")
        host, port = self._listener.address
        return str(host), int(port)

    @property
    def evaluator(self) -> Any:
        """The served evaluator (created on first use when none was given)."""
        with self._lock:
            if self._evaluator is None:
                from ascend_kernel_gym.evaluation import get_shared_evaluator

                self._evaluator = get_shared_evaluator(self.backend, **self._evaluator_options)
            return self._evaluator

    @property
    def evaluator_id(self) -> str:
        return evaluator_id_of(self.evaluator)

    def client(self) -> EvaluatorClient:
        """A picklable client for this server (carries the address, the key and the backend)."""
        return EvaluatorClient(self.address, authkey=self.authkey, backend=self.backend)

    def stats(self) -> dict[str, Any]:
        """Counters: requests served, failed requests, client connections seen."""
        return {
            "requests_served": self.requests_served,
            "errors": self.errors,
            "clients_seen": self.clients_seen,
            "pid": os.getpid(),
        }

    # ------------------------------------------------------------------ internals
    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                conn = self._listener.accept()
            except OSError:  # listener closed, or a peer failed the handshake
                if self._stopping.is_set():
                    return
                continue
            except Exception:  # noqa: BLE001, S112 - AuthenticationError and friends: keep serving
                continue
            if self._stopping.is_set():
                conn.close()
                return
            with self._lock:
                self._connections.add(conn)
                self.clients_seen += 1
            thread = threading.Thread(target=self._serve, args=(conn,), name="akg-evaluator-conn", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: Connection) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    return
                reply = self._handle(message)
                try:
                    conn.send(reply)
                except OSError:
                    return
        finally:
            with self._lock:
                self._connections.discard(conn)
            conn.close()

    def _handle(self, message: Any) -> tuple[str, Any]:
        try:
            op = message[0]
            if op == "hello":
                return "ok", {"backend": self.backend, "evaluator_id": self.evaluator_id, "pid": os.getpid()}
            if op == "evaluate":
                request = message[1]
                if not isinstance(request, EvalRequest):
                    raise TypeError(f"expected an EvalRequest, got {type(request).__name__}")
                result = self.evaluator.evaluate(request)
                with self._lock:
                    self.requests_served += 1
                data = result.to_dict() if isinstance(result, EvalResult) else dict(result)
                return "ok", {"result": data, "evaluator_id": self.evaluator_id}
            raise ValueError(f"unknown operation {op!r}")
        except Exception as exc:  # noqa: BLE001 - report to the client, keep the server alive
            with self._lock:
                self.errors += 1
            return "error", f"{type(exc).__name__}: {exc}"


class EvaluatorClient:
    """A picklable handle on an :class:`EvaluatorServer`; has the evaluator's ``evaluate`` API.

    Each process (and each thread) opens its own connection on first use, so a client pickled
    into ``AsyncVectorEnv`` workers just works after the fork or spawn.

    Args:
        address: the server's ``(host, port)`` or ``"host:port"``.
        authkey: the server's key; ``None`` uses this process's multiprocessing authkey (which
            children started by :mod:`multiprocessing` inherit).
        backend: the server's backend when known (asked from the server otherwise).
    """

    def __init__(self, address: str | Address, authkey: bytes | None = None, backend: str | None = None) -> None:
        self.address = parse_address(address)
        if authkey is None:
            import multiprocessing

            authkey = bytes(multiprocessing.current_process().authkey)
        self.authkey = bytes(authkey)
        self._backend = backend
        self._server_id: str | None = None
        self._local = threading.local()

    # pickling: drop the per-process connections
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_local", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def __deepcopy__(self, memo: dict[int, Any]) -> EvaluatorClient:
        # gymnasium's EnvSpec.make() deep-copies make() kwargs: a client is a handle, share it.
        return self

    def __repr__(self) -> str:
        host, port = self.address
        return f"EvaluatorClient({host}:{port}, backend={self._backend!r})"

    def _connection(self) -> Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = Client(self.address, family="AF_INET", authkey=self.authkey)
            self._local.conn = conn
            self._local.pid = os.getpid()
        return conn

    def _call(self, *message: Any) -> Any:
        conn = self._connection()
        try:
            conn.send(message)
            status, payload = conn.recv()
        except (EOFError, OSError):
            self._local.conn = None
            raise ConnectionError(f"lost the connection to the evaluator server at {self.address}") from None
        if status != "ok":
            raise RuntimeError(f"evaluator server error: {payload}")
        return payload

    def _hello(self) -> None:
        info = self._call("hello")
        self._backend = info["backend"]
        self._server_id = info["evaluator_id"]

    @property
    def backend(self) -> str:
        """The served evaluator's backend (asks the server once if it was not given)."""
        if self._backend is None:
            self._hello()
        assert self._backend is not None
        return self._backend

    @property
    def evaluator_id(self) -> str:
        """The id of the served pool (the same for every client of one server)."""
        if self._server_id is None:
            self._hello()
        assert self._server_id is not None
        return self._server_id

    def evaluate(self, request: EvalRequest) -> EvalResult:
        """Evaluate on the server's pool; raises ``ConnectionError`` when the server is gone."""
        payload = self._call("evaluate", request)
        self._server_id = payload["evaluator_id"]
        return EvalResult.from_dict(payload["result"])

    def evaluate_many(self, requests: Sequence[EvalRequest], max_parallel: int = 8) -> list[EvalResult]:
        """Evaluate several requests in parallel (one connection per thread), in request order."""
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(requests)))) as pool:
            return list(pool.map(self.evaluate, requests))

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            try:
                conn.close()
            except OSError as exc:  # pragma: no cover - closing a dead socket
                warnings.warn(f"closing the evaluator connection failed: {exc}", stacklevel=2)
            self._local.conn = None
