"""The eval runner (leaderboard/runner.py) with an instant evaluator: batching, policy failures, resume, records.

The same behaviours on the real evaluator (interpreter) are in test_eval_end_to_end.py.
"""

from __future__ import annotations

import json
import threading

import pytest
from lb_helpers import InstantEvaluator, env_factory_with

from ascend_kernel_gym.agents.policy import Generation, Policy
from ascend_kernel_gym.leaderboard.records import read_manifest, read_results
from ascend_kernel_gym.leaderboard.runner import EvalConfig, run_eval

TASKS = ["core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"]


class RecordingPolicy(Policy):
    """Answers with a trivial ModelNew; remembers batch sizes; can fail on a given call."""

    name = "recording"

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.batch_sizes: list[int] = []
        self.fail_on_call = fail_on_call
        self._lock = threading.Lock()

    def generate(self, batch):
        with self._lock:
            self.batch_sizes.append(len(batch))
            if self.fail_on_call is not None and len(self.batch_sizes) == self.fail_on_call:
                raise ConnectionError("endpoint went away")
        return [Generation(text="```python\nclass ModelNew: pass\n```") for _ in batch]


def config(tmp_path, **overrides):
    values = dict(
        agent="tests:recording",
        out=str(tmp_path / "run"),
        split="all",
        task_ids=TASKS,
        backend="interpreter",
        turns=1,
        samples=1,
        workers=3,
        batch_wait_s=30.0,
    )
    values.update(overrides)
    return EvalConfig(**values)


def test_generation_is_batched_across_live_episodes(tmp_path):
    policy = RecordingPolicy()
    evaluator = InstantEvaluator()
    factory = env_factory_with(evaluator)
    summary = run_eval(config(tmp_path, turns=2), policy=policy, env_factory=factory, progress=False)
    # all three episodes wait for their first action together, so the first batch holds all three
    assert policy.batch_sizes[0] == 3
    assert sum(policy.batch_sizes) == 6 and summary.env_steps == 6 == evaluator.calls
    records = read_results(tmp_path / "run")
    assert sorted(k[0] for k in records) == sorted(TASKS)
    for record in records.values():
        assert len(record["turns"]) == 2
        assert record["turns"][0]["eval"]["correct"] is True
        assert record["best_turn"] == 0 and record["best_code"].strip() == "class ModelNew: pass"
        assert record["turns"][0]["generation"]["batch_size"] >= 1


def test_policy_failure_keeps_finished_episodes_and_resume_finishes_the_rest(tmp_path):
    evaluator = InstantEvaluator()
    cfg = config(tmp_path, workers=1)
    with pytest.raises(RuntimeError, match="re-run the same command to resume"):
        run_eval(cfg, policy=RecordingPolicy(fail_on_call=2), env_factory=env_factory_with(evaluator), progress=False)
    assert len(read_results(tmp_path / "run")) == 1
    assert read_manifest(tmp_path / "run")["status"] == "failed"

    policy = RecordingPolicy()
    summary = run_eval(cfg, policy=policy, env_factory=env_factory_with(evaluator), progress=False)
    assert summary.episodes_skipped == 1 and summary.episodes_run == 2
    assert len(read_results(tmp_path / "run")) == 3
    manifest = read_manifest(tmp_path / "run")
    assert manifest["status"] == "complete" and len(manifest["invocations"]) == 2


def test_more_samples_on_resume_runs_only_the_new_ones(tmp_path):
    evaluator = InstantEvaluator()
    run_eval(config(tmp_path), policy=RecordingPolicy(), env_factory=env_factory_with(evaluator), progress=False)
    assert evaluator.calls == 3
    summary = run_eval(
        config(tmp_path, samples=2), policy=RecordingPolicy(), env_factory=env_factory_with(evaluator), progress=False
    )
    assert summary.episodes_skipped == 3 and summary.episodes_run == 3 and evaluator.calls == 6
    assert sorted({k[1] for k in read_results(tmp_path / "run")}) == [0, 1]


def test_harness_errors_are_rerun_on_resume(tmp_path):
    class Flaky(InstantEvaluator):
        def evaluate(self, request):
            self.calls += 1
            if request.task.id == TASKS[0] and self.calls <= 3:
                raise OSError("worker pool died")  # the env turns this into a harness_error result
            return super().evaluate(request)

    evaluator = Flaky()
    with pytest.warns(RuntimeWarning, match="harness"):
        first = run_eval(
            config(tmp_path, workers=1),
            policy=RecordingPolicy(),
            env_factory=env_factory_with(evaluator),
            progress=False,
        )
    assert first.episodes_failed == 1
    assert set(read_results(tmp_path / "run")) == {(TASKS[1], 0), (TASKS[2], 0)}
    second = run_eval(
        config(tmp_path, workers=1), policy=RecordingPolicy(), env_factory=env_factory_with(evaluator), progress=False
    )
    assert second.episodes_run == 1 and second.episodes_failed == 0
    assert read_results(tmp_path / "run")[(TASKS[0], 0)]["best_result"]["correct"] is True


def test_resume_with_a_different_configuration_is_refused(tmp_path):
    evaluator = InstantEvaluator()
    run_eval(config(tmp_path), policy=RecordingPolicy(), env_factory=env_factory_with(evaluator), progress=False)
    with pytest.raises(ValueError, match="turns"):
        run_eval(
            config(tmp_path, turns=3), policy=RecordingPolicy(), env_factory=env_factory_with(evaluator), progress=False
        )
    other = RecordingPolicy()
    other.name = "another-model"
    with pytest.raises(ValueError, match="agent name"):
        run_eval(config(tmp_path), policy=other, env_factory=env_factory_with(evaluator), progress=False)
    assert evaluator.calls == 3  # the refused runs evaluated nothing


def test_bad_configuration_fails_fast(tmp_path):
    with pytest.raises(ValueError, match="turns"):
        config(tmp_path, turns=0)
    with pytest.raises(ValueError, match="samples"):
        config(tmp_path, samples=0)
    with pytest.raises(KeyError, match="unknown task ids"):
        run_eval(config(tmp_path, task_ids=["core/L1/nope"]), policy=RecordingPolicy(), progress=False)
    with pytest.raises(ValueError, match="reward"):
        run_eval(config(tmp_path, reward="no-such-preset"), policy=RecordingPolicy(), progress=False)
    assert not (tmp_path / "run" / "results.jsonl").exists() and not (tmp_path / "run" / "run.json").exists()


def test_run_manifest_and_record_fields(tmp_path):
    run_eval(
        config(tmp_path), policy=RecordingPolicy(), env_factory=env_factory_with(InstantEvaluator()), progress=False
    )
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["agent"]["name"] == "recording"
    assert manifest["backend"] == "interpreter" and manifest["device"]["backend"] == "interpreter"
    assert len(manifest["suite"]["content_sha256"]) == 64
    assert {"torch", "triton", "torch_npu", "python", "ascend_kernel_gym"} <= set(manifest["versions"])
    assert manifest["config"]["turns"] == 1 and manifest["config"]["task_ids"] == TASKS
    assert [t["id"] for t in manifest["tasks"]] == TASKS
    assert manifest["started"] and manifest["finished"] and manifest["status"] == "complete"
    line = (tmp_path / "run" / "results.jsonl").read_text().splitlines()[0]
    record = json.loads(line)
    for key in ("task_id", "sample", "agent", "turns", "best_code", "best_result", "timings", "seed", "return"):
        assert key in record
    turn = record["turns"][0]
    for key in ("action", "code", "eval", "score", "reward", "feedback", "timings"):
        assert key in turn


def test_openai_agent_through_a_loopback_server(tmp_path):
    """``--agent openai`` wiring: requests reach an OpenAI-compatible server; its answers are the actions."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            message = {"role": "assistant", "content": "```python\nclass ModelNew: pass\n```"}
            answer = {
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1"
        cfg = config(tmp_path, agent="openai", agent_options={"endpoint": endpoint, "model": "fake-model"})
        summary = run_eval(cfg, env_factory=env_factory_with(InstantEvaluator()), progress=False)
    finally:
        server.shutdown()
    assert summary.correct == 3 and len(seen) == 3
    assert all(body["model"] == "fake-model" for body in seen)
    assert any(TASKS[0] in m["content"] for body in seen for m in body["messages"])  # the task prompt went out
    manifest = read_manifest(tmp_path / "run")
    assert manifest["agent"]["model"] == "fake-model" and manifest["config"]["agent"] == "openai"


@pytest.mark.slow
def test_hf_agent_with_a_local_random_model(tmp_path):
    """``--agent hf`` wiring with a tiny random model saved locally (its answers are gibberish: format failures)."""
    from ascend_kernel_gym.agents.local_lm import build_char_tokenizer, build_random_causal_lm, save_local_model

    tokenizer = build_char_tokenizer()
    save_local_model(build_random_causal_lm(tokenizer=tokenizer), tokenizer, tmp_path / "tiny")
    cfg = config(
        tmp_path,
        agent="hf",
        task_ids=TASKS[:1],
        agent_options={"model_path": str(tmp_path / "tiny"), "max_tokens": 8, "temperature": 0.0},
    )
    evaluator = InstantEvaluator()
    summary = run_eval(cfg, env_factory=env_factory_with(evaluator), progress=False)
    assert summary.episodes_run == 1 and summary.env_steps == 1
    record = read_results(tmp_path / "run")[(TASKS[0], 0)]
    assert record["turns"][0]["format_ok"] is False and evaluator.calls == 0  # no code block: nothing evaluated
    assert read_manifest(tmp_path / "run")["agent"]["name"] == "tiny"
