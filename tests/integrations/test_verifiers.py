"""The verifiers environment, evaluated by verifiers' own entry points (``vf-eval``, ``Environment.evaluate``).

The policy is scripted: a tiny OpenAI-compatible chat-completions server on a loopback port
answers each request by the number of assistant turns already in it. Evaluation: the package's
evaluator on the interpreter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("verifiers", reason="verifiers is not installed")

from ascend_kernel_gym.integrations.verifiers_env import (
    AscendTritonVerifiersEnv,
    load_environment,
    task_rows,
)
from ascend_kernel_gym.tasks import get_task
from ascend_kernel_gym.wrappers.compaction import SUMMARY_HEADER

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations.md"
RELU = "core/L1/relu"
MODULE = "ascend_kernel_gym.integrations.verifiers_env"


def docs_snippet(name: str) -> str:
    match = re.search(rf"<!-- test: {re.escape(name)} -->\n```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert match, f"docs/integrations.md has no tested snippet {name!r}"
    return match.group(1)


class ScriptedChat:
    """An OpenAI-compatible ``/v1/chat/completions`` server: answer ``k`` to a request with ``k`` assistant turns."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.requests: list[list[dict]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body["messages"])
                turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
                reply = {
                    "id": f"chatcmpl-{len(outer.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": outer.answers[min(turn, len(outer.answers) - 1)],
                            },
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChat:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def reference_answer() -> str:
    return f"Here is the kernel:\n```python\n{get_task(RELU).solution_source()}```"


@pytest.mark.slow
def test_vf_eval_runs_the_environment_through_its_env_server(tmp_path):
    env_args = {"backend": "interpreter", "task_ids": [RELU], "max_turns": 2, "num_trials": 2}
    with ScriptedChat(["Let me think about it first.", reference_answer()]) as chat:
        command = [str(Path(sys.executable).parent / "vf-eval"), MODULE, "-a", json.dumps(env_args)]
        command += ["-m", "scripted", "--api-base-url", chat.base_url, "--api-key-var", "SCRIPTED_KEY"]
        command += ["-n", "1", "-r", "2", "--disable-tui", "--save-results", "--output-dir", str(tmp_path)]
        done = subprocess.run(
            command, env={**os.environ, "SCRIPTED_KEY": "unused"}, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
        assert len(chat.requests) == 4  # 2 rollouts x 2 turns; the episode's end needs no further answer

    (results,) = tmp_path.glob("evals/*/*/results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["error"] is None and row["stop_condition"] == "episode_over"
        assert row["reward"] == pytest.approx(0.5)  # the best score: correct, no speedup on the interpreter
        assert row["metrics"]["correct"] == 1.0 and row["metrics"]["kernel_turns"] == 2.0
        assert [m["role"] for m in row["prompt"]] == ["system", "user"] and "torch.relu" in row["prompt"][1]["content"]
        roles = [m["role"] for m in row["completion"]]
        assert roles == ["assistant", "user", "assistant", "user"]
        first_feedback, last_feedback = row["completion"][1]["content"], row["completion"][3]["content"]
        assert "score -0.800" in first_feedback  # no code block: the preset's no-code score
        assert "score +0.500" in last_feedback or "score 0.500" in last_feedback


@pytest.mark.slow
def test_docs_verifiers_snippet_evaluates_with_the_scripted_policy():
    with ScriptedChat(["no code yet", reference_answer()]) as chat:
        namespace = {"BASE_URL": chat.base_url}
        os.environ.setdefault("SCRIPTED_KEY", "unused")
        exec(docs_snippet("verifiers-eval"), namespace)
    outputs = namespace["results"]["outputs"]
    assert [o["reward"] for o in outputs] == [pytest.approx(0.5)]
    assert outputs[0]["metrics"]["kernel_turns"] == 2.0


@pytest.mark.slow
def test_after_a_compaction_the_model_sees_the_environments_compacted_context():
    env = load_environment(
        backend="interpreter",
        task_ids=[RELU],
        max_turns=3,
        num_trials=2,
        compaction={"budget_tokens": 1200, "strategy": "rules"},
    )
    from verifiers.types import ClientConfig

    broken = "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```"
    with ScriptedChat([broken, broken, reference_answer()]) as chat:
        client = ClientConfig(api_base_url=chat.base_url, api_key_var="SCRIPTED_KEY")
        os.environ.setdefault("SCRIPTED_KEY", "unused")
        results = env.evaluate_sync(client=client, model="scripted", num_examples=1, rollouts_per_example=1)
        requests = list(chat.requests)
    (output,) = results["outputs"]
    assert output["error"] is None
    compacted = [r for r in requests if any(SUMMARY_HEADER in str(m.get("content")) for m in r)]
    assert compacted, "no request carried the compaction summary"
    # A compacted context replaced the earlier turns: it is shorter than the one before it.
    index = requests.index(compacted[0])
    assert len(requests[index]) < len(requests[index - 1]) + 2


def test_rows_open_with_the_environments_own_context_and_the_loader_is_verifiers_load_environment():
    import verifiers as vf

    env = vf.load_environment(MODULE, backend="interpreter", task_ids=[RELU, "core/L1/sigmoid"], repeat=2)
    assert isinstance(env, AscendTritonVerifiersEnv) and env.env_id == MODULE
    dataset = env.get_eval_dataset()
    assert [row["info"]["task_id"] for row in dataset] == [RELU, RELU, "core/L1/sigmoid", "core/L1/sigmoid"]
    (row,) = task_rows([RELU], {"backend": "interpreter"})
    import gymnasium as gym

    base = gym.make("AscendTriton-v0", backend="interpreter")
    _, info = base.reset(options={"task_id": RELU})
    assert row["prompt"] == info["messages"]
    assert dataset[0]["prompt"][1]["content"] == info["messages"][1]["content"]

    splits = load_environment(backend="interpreter")
    train_ids = {r["info"]["task_id"] for r in splits.get_dataset()}
    test_ids = {r["info"]["task_id"] for r in splits.get_eval_dataset()}
    assert train_ids and test_ids and not train_ids & test_ids
    with pytest.raises(ValueError, match="repeat"):
        task_rows([RELU], repeat=0)
