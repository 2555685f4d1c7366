"""The evaluator server/client that lets env workers in other processes share one pool."""

from __future__ import annotations

import multiprocessing
import pickle

import pytest
from env_helpers import RELU, FakeEvaluator

from ascend_kernel_gym.evaluation.remote import (
    EVALUATOR_ENV,
    EvaluatorClient,
    EvaluatorServer,
    configured_address,
    evaluator_at,
    evaluator_id_of,
    is_ray_address,
    parse_address,
)
from ascend_kernel_gym.evaluation.result import EvalRequest
from ascend_kernel_gym.tasks import get_task


def _evaluate_in_child(client: EvaluatorClient, queue) -> None:
    result = client.evaluate(EvalRequest(task=get_task(RELU), code="class ModelNew: pass"))
    queue.put((result.correct, client.evaluator_id))


def test_client_in_another_process_reaches_the_same_evaluator() -> None:
    fake = FakeEvaluator()
    with EvaluatorServer(fake) as server:
        client = pickle.loads(pickle.dumps(server.client()))
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        procs = [ctx.Process(target=_evaluate_in_child, args=(client, queue)) for _ in range(2)]
        for p in procs:
            p.start()
        answers = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert answers == [(True, evaluator_id_of(fake))] * 2
        assert len(fake.requests) == 2  # both children's requests landed in the one evaluator
        assert server.stats()["requests_served"] == 2 and server.stats()["clients_seen"] >= 2


def test_client_evaluate_many_and_backend() -> None:
    fake = FakeEvaluator()
    with EvaluatorServer(fake) as server:
        client = EvaluatorClient(server.address, authkey=server.authkey)  # backend asked from the server
        assert client.backend == "interpreter"
        task = get_task(RELU)
        results = client.evaluate_many([EvalRequest(task=task, code=c) for c in ["class ModelNew: 1", "junk", "HACK"]])
        assert [(r.correct, r.hack) for r in results] == [(True, False), (False, False), (True, True)]
        assert client.evaluate_many([]) == []


def test_wrong_key_is_refused_and_server_keeps_serving() -> None:
    fake = FakeEvaluator()
    with EvaluatorServer(fake) as server:
        intruder = EvaluatorClient(server.address, authkey=b"wrong key", backend="interpreter")
        with pytest.raises(Exception):
            intruder.evaluate(EvalRequest(task=get_task(RELU), code="x"))
        assert server.client().evaluate(EvalRequest(task=get_task(RELU), code="class ModelNew: 1")).correct
    assert fake.requests and all(r.code != "x" for r in fake.requests)


def test_closed_server_gives_connection_error() -> None:
    server = EvaluatorServer(FakeEvaluator()).start()
    client = server.client()
    server.close()
    server.close()  # idempotent
    with pytest.raises((ConnectionError, OSError)):
        client.evaluate(EvalRequest(task=get_task(RELU), code="x"))


def test_server_reports_evaluator_errors_to_the_client() -> None:
    class Broken:
        backend = "interpreter"

        def evaluate(self, request):
            raise RuntimeError("kaputt")

    with EvaluatorServer(Broken()) as server:
        with pytest.raises(RuntimeError, match="kaputt"):
            server.client().evaluate(EvalRequest(task=get_task(RELU), code="x"))
        assert server.stats()["errors"] == 1


def test_address_parsing_and_argument_checks() -> None:
    assert parse_address("127.0.0.1:5000") == ("127.0.0.1", 5000)
    assert parse_address(["localhost", "7"]) == ("localhost", 7)
    for bad in ["nohost", ":80", "host:port", 5]:
        with pytest.raises(ValueError, match="address"):
            parse_address(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="evaluate"):
        EvaluatorServer(object())
    with pytest.raises(RuntimeError, match="not started"):
        EvaluatorServer(FakeEvaluator()).address


def test_env_accepts_a_host_port_address(monkeypatch) -> None:
    """evaluator="host:port" connects with this process's multiprocessing authkey (inherited by children)."""
    import ascend_kernel_gym.envs.ascend_triton as module
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv

    monkeypatch.setattr(module, "_render_feedback", lambda result: "feedback")
    fake = FakeEvaluator()
    authkey = bytes(multiprocessing.current_process().authkey)
    with EvaluatorServer(fake, authkey=authkey) as server:
        host, port = server.address
        env = AscendTritonEnv(task_ids=[RELU], evaluator=f"{host}:{port}")
        assert env.backend == "interpreter"  # asked from the server
        env.reset(seed=0)
        _, _, _, _, info = env.step("```python\nclass ModelNew: pass\n```")
        assert info["eval"]["correct"] and info["evaluator_id"] == evaluator_id_of(fake)
        assert len(fake.requests) == 1
        env.close()


def test_addresses_name_a_server_or_a_ray_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_ray_address("ray://auto") and is_ray_address(" ray://head:10001") and not is_ray_address("h:1")
    for bad in ("ray://head:10001", "head", "head:port"):
        with pytest.raises(ValueError, match="host:port"):
            parse_address(bad)
    assert isinstance(evaluator_at("127.0.0.1:9"), EvaluatorClient)  # no connection until the first request
    monkeypatch.delenv(EVALUATOR_ENV, raising=False)
    assert configured_address() is None
    monkeypatch.setenv(EVALUATOR_ENV, "  ")
    assert configured_address() is None
    monkeypatch.setenv(EVALUATOR_ENV, "ray://auto")
    assert configured_address() == "ray://auto"


def test_an_env_without_an_evaluator_uses_the_address_in_akg_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv

    fake = FakeEvaluator()
    with EvaluatorServer(fake, authkey=bytes(multiprocessing.current_process().authkey)) as server:
        host, port = server.address
        monkeypatch.setenv(EVALUATOR_ENV, f"{host}:{port}")
        env = AscendTritonEnv(task_ids=[RELU], backend="interpreter", max_turns=1)
        try:
            assert isinstance(env.evaluator, EvaluatorClient) and env._owns_client
            env.reset(seed=0)
            _, _, _, _, info = env.step("```python\nclass ModelNew: pass\n```")
        finally:
            env.close()
        assert info["eval"]["correct"] and len(fake.requests) == 1  # it went to the server's evaluator
