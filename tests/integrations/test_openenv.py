"""The OpenEnv server (``akg serve openenv``) driven by OpenEnv's own clients over a real local socket."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv.core", reason="openenv-core is not installed")

import yaml
from openenv.core import GenericEnvClient

from ascend_kernel_gym.integrations.openenv_server import (
    AscendTritonEnvClient,
    AscendTritonOpenEnv,
    KernelAction,
    KernelObservation,
    create_openenv_app,
)
from ascend_kernel_gym.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations.md"
RELU = "core/L1/relu"
SIGMOID = "core/L1/sigmoid"


def docs_snippet(name: str) -> str:
    match = re.search(rf"<!-- test: {re.escape(name)} -->\n```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert match, f"docs/integrations.md has no tested snippet {name!r}"
    return match.group(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """``akg serve openenv`` in a child process on a free loopback port; yields its base URL."""
    import requests

    port = free_port()
    command = [sys.executable, "-m", "ascend_kernel_gym.cli", "serve", "openenv", "--port", str(port)]
    command += ["--backend", "interpreter", "--max-turns", "2", "--num-trials", "2", "--max-sessions", "3"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if process.poll() is not None:
                pytest.fail(f"the server exited: {process.stdout.read()}")
            try:
                if requests.get(f"{url}/health", timeout=1).ok:
                    break
            except requests.ConnectionError:
                time.sleep(0.2)
        else:
            pytest.fail("the server did not come up in 60 s")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_concurrent_sessions_over_the_websocket_keep_their_own_episodes(server):
    reference = get_task(RELU).solution_source()

    async def episode(task_id, answers):
        async with GenericEnvClient(base_url=server, message_timeout_s=300) as client:
            first = await client.reset(task_id=task_id, seed=0)
            steps = []
            for answer in answers:
                steps.append(await client.step(answer))
            return first, steps, await client.state()

    async def both():
        return await asyncio.gather(
            episode(RELU, [{"text": "no code here"}, {"code": reference}]),
            episode(SIGMOID, [{"text": f"```python\n{reference}```"}]),
        )

    (relu_reset, relu_steps, relu_state), (sig_reset, sig_steps, sig_state) = asyncio.run(both())

    assert relu_reset.done is False and relu_reset.reward is None
    assert relu_reset.observation["task_id"] == RELU and "torch.relu" in relu_reset.observation["text"]
    assert [m["role"] for m in relu_reset.observation["messages"]] == ["system", "user"]
    no_code, correct = relu_steps
    assert no_code.reward == pytest.approx(-0.8) and no_code.done is False
    assert no_code.observation["eval"]["format_ok"] is False and no_code.observation["correct"] is False
    assert correct.observation["correct"] is True and correct.observation["eval"]["correct"] is True
    assert correct.done is True  # max_turns 2
    assert correct.observation["best_score"] == pytest.approx(0.5)
    assert correct.reward == pytest.approx(0.5 - (-0.8))  # improvement mode: the rise of the best score
    assert [m["role"] for m in correct.observation["messages"]][-2:] == ["assistant", "user"]
    assert relu_state["task_id"] == RELU and relu_state["step_count"] == 2 and relu_state["done"] is True

    # The other session ran sigmoid at the same time: relu's kernel is wrong there.
    assert sig_reset.observation["task_id"] == SIGMOID
    (wrong,) = sig_steps
    assert wrong.observation["correct"] is False and wrong.done is False and wrong.reward < 0
    assert sig_state["task_id"] == SIGMOID and sig_state["step_count"] == 1 and sig_state["turns_left"] == 1


@pytest.mark.slow
def test_the_typed_client_and_the_http_endpoints(server):
    import requests

    assert requests.get(f"{server}/health", timeout=5).json()["status"] == "healthy"
    schema = requests.get(f"{server}/schema", timeout=5).json()
    assert {"text", "code"} <= set(schema["action"]["properties"])
    assert {"text", "messages", "score", "eval"} <= set(schema["observation"]["properties"])
    assert requests.get(f"{server}/metadata", timeout=5).json()["name"] == "ascend_triton"

    with AscendTritonEnvClient(base_url=server, message_timeout_s=300).sync() as client:
        result = client.reset(task_id=RELU)
        assert isinstance(result.observation, KernelObservation) and result.observation.task_id == RELU
        result = client.step(KernelAction(code=get_task(RELU).solution_source()))
        assert result.observation.correct is True and result.observation.score == pytest.approx(0.5)
        state = client.state()
        assert state.task_id == RELU and state.step_count == 1 and state.best_score == pytest.approx(0.5)


@pytest.mark.slow
def test_docs_openenv_snippet_runs_against_the_server(server):
    namespace = {"BASE_URL": server}
    exec(docs_snippet("openenv-client"), namespace)
    assert namespace["result"].observation["correct"] is True
    assert namespace["state"]["step_count"] == 1


def test_the_manifest_names_an_app_that_serves_the_environment():
    manifest = yaml.safe_load((ROOT / "ascend_kernel_gym" / "integrations" / "openenv.yaml").read_text())
    assert manifest["spec_version"] == 1 and manifest["runtime"] == "fastapi" and manifest["name"] == "ascend_triton"
    module_name, _, attribute = manifest["app"].partition(":")
    module = __import__(module_name, fromlist=[attribute])
    app = getattr(module, attribute)
    paths = {route.path for route in app.routes}
    assert {"/ws", "/reset", "/step", "/state", "/health", "/schema"} <= paths


def test_the_environment_refuses_a_step_before_reset_and_after_the_end():
    class Stub:
        backend = "interpreter"

        def evaluate(self, request):
            from ascend_kernel_gym.evaluation.result import ErrorType, EvalResult, Stage

            return EvalResult(
                task_id=request.task.id,
                backend="interpreter",
                profile="small",
                code_hash="h",
                stage=Stage.DONE,
                format_ok=True,
                static_ok=True,
                compiled=True,
                correct=True,
                error_type=ErrorType.NONE,
                error_message="",
            )

    env = AscendTritonOpenEnv({"backend": "interpreter", "max_turns": 1, "evaluator": Stub()})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(KernelAction(text="x"))
    env.reset(task_id=RELU, episode_id="e-1")
    assert env.state.episode_id == "e-1" and env.state.turns_left == 1
    done = env.step(KernelAction(code="import torch"))
    assert done.done and done.correct is True
    again = env.step(KernelAction(code="import torch"))
    assert again.done and again.reward == 0.0 and "over" in again.text
    assert env.state.step_count == 1
    assert KernelAction(code="a = '```'").answer() == "````python\na = '```'\n````"
    with pytest.raises(ValueError, match="max_sessions"):
        create_openenv_app(max_sessions=0)
