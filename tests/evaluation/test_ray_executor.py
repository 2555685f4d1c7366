"""Evaluator(executor="ray") (evaluation/ray_executor.py) on a local Ray instance the module starts.

One Ray instance and one two-actor pool (interpreter, one worker each) serve the whole module:
Ray's start costs seconds. Tests that need Ray are skipped when it is not installed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascend_kernel_gym.evaluation import EvalRequest, EvalResult, Evaluator, close_shared_evaluators
from ascend_kernel_gym.evaluation.concurrency import was_retried
from ascend_kernel_gym.evaluation.ray_executor import (
    INTERPRETER_ACTOR_CPUS,
    SPARE_CONCURRENCY,
    actor_options,
    cluster_backend,
    default_actor_count,
    latest_names,
    ray_init_address,
    successor_name,
)
from ascend_kernel_gym.evaluation.result import ErrorType
from ascend_kernel_gym.tasks.variants import (
    broken_variant,
    torch_fallback_source,
    with_launch_skipped,
    with_mask_off_by_one,
)

ROOT = Path(__file__).resolve().parents[2]
HANG = (ROOT / "tests" / "evaluation" / "corpus" / "infinite_loop.py").read_text()
#: the pool of every Ray evaluator in this module (equal options: they share the same two actors)
POOL: dict[str, Any] = {"actors": 2, "workers_per_device": 1, "timeout_s": 120, "memory_mb": 2048}


# --- without Ray ----------------------------------------------------------------------------------
def test_addresses_map_to_what_ray_init_takes() -> None:
    assert ray_init_address(None) is None
    assert ray_init_address("ray://") is None and ray_init_address("ray://local") is None
    assert ray_init_address("ray://auto") == "auto"
    assert ray_init_address("ray://head:10001") == "ray://head:10001"  # Ray Client, as Ray spells it
    assert ray_init_address("10.0.0.1:6379") == "10.0.0.1:6379"
    with pytest.raises(ValueError):
        ray_init_address("  ")


def test_the_backend_and_actors_follow_the_clusters_resources() -> None:
    gpus = {"CPU": 64.0, "GPU": 8.0}
    assert cluster_backend(gpus) == "cuda" and cluster_backend({"CPU": 4.0, "NPU": 16.0, "GPU": 1.0}) == "npu"
    assert cluster_backend({"CPU": 4.0}) == "interpreter" and cluster_backend(gpus, "interpreter") == "interpreter"
    with pytest.raises(ValueError, match="no GPU"):
        cluster_backend({"CPU": 4.0}, "cuda")
    cuda = actor_options("cuda", None, None)
    assert cuda["num_gpus"] == 1 and default_actor_count("cuda", gpus, cuda) == 8
    npu = actor_options("npu", 4, None)
    assert npu["resources"] == {"NPU": 1} and npu["max_concurrency"] == 4 + SPARE_CONCURRENCY
    assert default_actor_count("npu", {"NPU": 16.0}, npu) == 16
    cpu = actor_options("interpreter", None, {"resources": {"eval": 1}})
    assert cpu["num_cpus"] == INTERPRETER_ACTOR_CPUS and cpu["resources"] == {"eval": 1}
    assert default_actor_count("interpreter", {"CPU": 7.0}, cpu) == 7 // INTERPRETER_ACTOR_CPUS
    assert actor_options("cuda", None, {"num_gpus": 0.5})["num_gpus"] == 0.5  # the caller's options win


def test_every_process_names_the_same_successor() -> None:
    assert successor_name("akg-pool-cuda-abc-3") == "akg-pool-cuda-abc-3~1"
    assert successor_name("akg-pool-cuda-abc-3~1") == "akg-pool-cuda-abc-3~2"


def test_a_process_that_joins_later_takes_the_newest_replacements() -> None:
    alive = ["p-0~1", "p-1", "p-1~2", "other-0~5", "p-2~x", "p-0"]
    assert latest_names(["p-0", "p-1", "p-2"], alive) == ["p-0~1", "p-1~2", "p-2"]
    assert latest_names(["p-0"], []) == ["p-0"]


def test_the_package_does_not_import_ray_unless_the_ray_executor_is_used() -> None:
    code = (
        "import sys, ascend_kernel_gym, ascend_kernel_gym.evaluation as e\n"
        "import ascend_kernel_gym.evaluation.ray_executor, ascend_kernel_gym.evaluation.remote\n"
        "ev = e.Evaluator(backend='interpreter', workers=1, start=False); ev.close()\n"
        "print('ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "False"


# --- on a local Ray instance ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_module() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        close_shared_evaluators()
        if started:
            ray.shutdown()


@pytest.fixture(scope="module")
def ray_evaluator(ray_module) -> Iterator[Evaluator]:
    ev = Evaluator(backend="interpreter", executor="ray", cache=False, **POOL)
    try:
        ev.warm_up()
        yield ev
    finally:
        ev.close()


def _in_flight_member(ev: Evaluator, exclude: Any = None, timeout_s: float = 120.0) -> Any:
    """A live actor of ``ev`` that has a request in flight (waits for one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for member in list(ev._ray.members):
            if member.in_flight > 0 and member.ready and not member.dead and member is not exclude:
                return member
        time.sleep(0.01)
    raise AssertionError("no actor took a request")


def _batch_in_background(ev: Evaluator, requests: list[EvalRequest]) -> tuple[threading.Thread, list]:
    out: list = []
    thread = threading.Thread(target=lambda: out.append(ev.evaluate_many(requests)), daemon=True)
    thread.start()
    return thread, out


def _verdict(result: EvalResult) -> tuple:
    return (result.ok, result.correct, result.hack, result.error_type, result.stage, result.trials_passed)


def test_ray_gives_the_local_pools_verdicts(ray_evaluator, evaluator, relu_task, relu_solution) -> None:
    codes = [
        relu_solution,
        with_mask_off_by_one(relu_solution),
        broken_variant(relu_solution),
        with_launch_skipped(relu_solution),
        torch_fallback_source(relu_task),
        "def broken(:\n",
    ]
    requests = [EvalRequest(task=relu_task, code=c, seed=11, num_trials=2) for c in codes]
    over_ray = ray_evaluator.evaluate_many(requests)
    local = evaluator.evaluate_many(requests)
    assert [_verdict(r) for r in over_ray] == [_verdict(r) for r in local]
    assert over_ray[0].ok and not any(r.ok for r in over_ray[1:])  # the requests do differ
    assert [r.code_hash for r in over_ray] == [r.code_hash for r in local]
    assert ray_evaluator.backend == "interpreter" and ray_evaluator.workers == 2
    assert not any(was_retried(r) for r in over_ray)


def test_a_killed_actor_loses_no_request(ray_module, ray_evaluator, relu_task, relu_solution) -> None:
    requests = [EvalRequest(task=relu_task, code=relu_solution + f"\n# kill {i}\n", num_trials=2) for i in range(6)]
    replaced = ray_evaluator._ray.stats["actor_replacements"]
    thread, out = _batch_in_background(ray_evaluator, requests)
    victim = _in_flight_member(ray_evaluator)
    ray_module.kill(victim.handle, no_restart=True)
    thread.join(600)
    (results,) = out
    expected = [hashlib.sha256(r.code.encode()).hexdigest() for r in requests]
    assert [r.code_hash for r in results] == expected  # one result per request, in order
    assert all(r.ok for r in results), [r.error_message for r in results]
    retried = [r for r in results if was_retried(r)]
    assert retried, "the request the killed actor held must come back marked as retried"
    assert all(victim.name in w for r in retried for w in r.warnings if w.startswith("retried:"))
    assert len(retried) < len(requests)
    assert ray_evaluator._ray.stats["actor_replacements"] == replaced + 1


def test_a_hanging_candidate_is_cut_by_its_limit_and_the_batch_goes_on(ray_evaluator, relu_task, relu_solution):
    hang = EvalRequest(task=relu_task, code=HANG, timeout_s=8)
    fine = [EvalRequest(task=relu_task, code=relu_solution + f"\n# next to a hang {i}\n") for i in range(3)]
    results = ray_evaluator.evaluate_many([hang, *fine])
    assert results[0].error_type == ErrorType.TIMEOUT and not was_retried(results[0])
    assert all(r.ok for r in results[1:]), [r.error_message for r in results[1:]]


def test_the_env_and_its_options_reach_the_ray_pool(ray_evaluator, relu_task, relu_solution) -> None:
    import gymnasium as gym

    import ascend_kernel_gym  # noqa: F401 - registers the env

    for kwargs in (
        {"evaluator": "ray://local", "evaluator_options": POOL},
        {"evaluator_options": {**POOL, "executor": "ray", "address": "ray://local"}},
    ):
        env = gym.make("AscendTriton-v0", task_ids=[relu_task.id], max_turns=1, **kwargs)
        try:
            env.reset(seed=0)
            assert env.unwrapped.backend == "interpreter"  # from the cluster: it has CPUs only
            _, _, _, _, info = env.step(f"```python\n{relu_solution}\n```")
        finally:
            env.close()
        assert info["eval"]["correct"], info["eval"]["error_message"]
        assert info["evaluator_id"] == ray_evaluator.evaluator_id  # the same actors, not new ones


def test_the_result_cache_is_shared_by_every_evaluator_of_the_cluster(ray_evaluator, relu_task, relu_solution):
    request = EvalRequest(task=relu_task, code=relu_solution + "\n# cached once\n", num_trials=1)
    first = Evaluator(backend="interpreter", executor="ray", **POOL)
    second = Evaluator(backend="interpreter", executor="ray", **POOL)
    try:
        # they join the module's actors (replacements included), and start none of their own
        names = [m.name for m in ray_evaluator._ray.members]
        assert [m.name for m in first._ray.members] == names and not any(m.owned for m in first._ray.members)
        assert not first.evaluate(request).cache_hit
        again = second.evaluate(request)
        assert again.cache_hit and again.ok and second.stats["evaluations"] == 0
    finally:
        first.close()
        second.close()


def test_an_evaluation_lost_twice_is_a_crash(ray_module, ray_evaluator, relu_task, relu_solution) -> None:
    request = EvalRequest(task=relu_task, code=relu_solution + "\n# lost twice\n", num_trials=2)
    thread, out = _batch_in_background(ray_evaluator, [request])
    first = _in_flight_member(ray_evaluator)
    ray_module.kill(first.handle, no_restart=True)
    second = _in_flight_member(ray_evaluator, exclude=first)
    ray_module.kill(second.handle, no_restart=True)
    thread.join(600)
    ((result,),) = out
    assert result.error_type == ErrorType.CRASH and not result.ok and was_retried(result)
    assert "lost twice" in result.error_message
    assert ray_evaluator._ray.stats["lost_twice"] >= 1
    # the pool carries on with the replacements
    after = ray_evaluator.evaluate(EvalRequest(task=relu_task, code=relu_solution + "\n# after\n", num_trials=1))
    assert after.ok and not was_retried(after)


def test_verify_reruns_a_submission_on_the_ray_pool(ray_evaluator, tmp_path, relu_task, relu_solution) -> None:
    from lb_helpers import episode, result, write_fake_run

    from ascend_kernel_gym.leaderboard.submission import build_submission
    from ascend_kernel_gym.leaderboard.verify import verify_submission

    device = ray_evaluator.device_name
    claimed = result(correct=True, backend="interpreter")
    run = write_fake_run(
        tmp_path / "run", [episode(relu_task.id, 0, claimed, code=relu_solution + "\n# verify")],
        task_ids=[relu_task.id], backend="interpreter", device_name=device,
    )  # fmt: skip
    report = verify_submission(build_submission(run), evaluator=ray_evaluator)
    assert report.accepted, report.reasons
    assert (report.local_backend, report.local_device) == ("interpreter", device) and report.speed_comparable


def test_actors_the_cluster_cannot_hold_are_refused_up_front() -> None:
    from ascend_kernel_gym.evaluation.ray_executor import actor_needs, check_room, room_for_one

    cuda = actor_options("cuda", None, None)
    check_room("cuda", 8, cuda, {"CPU": 64.0, "GPU": 8.0})
    with pytest.raises(ValueError, match="9 cuda pool actors need 9 GPU in all, the Ray cluster has 8"):
        check_room("cuda", 9, cuda, {"CPU": 64.0, "GPU": 8.0})
    cpu = actor_options("interpreter", 2, {"resources": {"eval": 1}})
    assert actor_needs(cpu) == {"CPU": 2.0, "eval": 1.0}
    with pytest.raises(ValueError, match="need 2 eval"):
        check_room("interpreter", 2, cpu, {"CPU": 8.0, "eval": 1.0})
    assert room_for_one(cpu, {"CPU": 2.0, "eval": 1.0}) and not room_for_one(cpu, {"CPU": 1.0, "eval": 1.0})


def test_an_actor_applies_the_drivers_evaluation_settings_and_not_its_nodes(monkeypatch) -> None:
    """An actor's environment is its node's: without this the gate asked for by the driver stayed
    off in the actors, and a setting of the node's leaked in."""
    from ascend_kernel_gym.evaluation import ray_actor

    monkeypatch.setattr(ray_actor, "actor_cpus", lambda backend: None)
    for name in ray_actor.FORWARDED_SETTINGS:  # restored afterwards, whatever the actor does to them
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AKG_TIMING_GATE", "1")
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2")
    monkeypatch.delenv("AKG_PRECOMPILE", raising=False)
    monkeypatch.setenv("AKG_LEASE_DIR", "/node/own")
    settings = ray_actor.forwarded_settings()
    assert settings == {"AKG_TIMING_GATE": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "2"}
    # On the actor's node: its own values, one setting the driver did not make, a stray key.
    monkeypatch.setenv("AKG_TIMING_GATE", "0")
    monkeypatch.setenv("AKG_PRECOMPILE", "1")
    seen: dict[str, str | None] = {}

    def factory(**kwargs) -> object:
        seen.update({k: os.environ.get(k) for k in ("AKG_TIMING_GATE", "AKG_PRECOMPILE", "PATH_X")})
        return object()

    ray_actor.PoolActor(factory, "interpreter", 1, {**settings, "PATH_X": "/evil"})
    assert seen == {"AKG_TIMING_GATE": "1", "AKG_PRECOMPILE": None, "PATH_X": None}
    assert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "2" and os.environ["AKG_LEASE_DIR"] == "/node/own"
