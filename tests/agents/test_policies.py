"""Policies: the local HF LM (padding, log-probs, stopping, LoRA), the HTTP endpoint (against a local
stub server), and the scripted ones."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from ascend_kernel_gym.agents.openai_http import OpenAIChatPolicy, PolicyHTTPError
from ascend_kernel_gym.agents.scripted import (
    ChoicePolicy,
    ReferencePolicy,
    ScriptedPolicy,
    task_id_from_messages,
    turns_so_far,
)

torch = pytest.importorskip("torch")

CONTEXTS = [
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "a much longer system message"}, {"role": "user", "content": "Pick A, B or C"}],
]


# ---------------------------------------------------------------------- HFPolicy


def test_hf_left_padded_logprobs_match_unpadded_forward(tiny_policy):
    gens = tiny_policy.generate(CONTEXTS)
    assert len(gens) == 2
    assert len(gens[0].prompt_ids) != len(gens[1].prompt_ids)  # the batch really needed padding
    for gen, messages in zip(gens, CONTEXTS):
        assert gen.prompt_ids == tiny_policy.encode_messages(messages)
        assert len(gen.token_ids) == len(gen.logprobs) > 0
        ids = torch.tensor([gen.prompt_ids + gen.token_ids])
        with torch.no_grad():
            logits = tiny_policy.model(input_ids=ids).logits[0, len(gen.prompt_ids) - 1 : -1]
        expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(gen.token_ids)[:, None]).squeeze(-1)
        assert torch.allclose(expected, torch.tensor(gen.logprobs), atol=1e-4)
        assert gen.text == tiny_policy.decode(gen.token_ids)


def test_hf_stops_at_eos_and_reports_finish_reason(tiny_policy):
    # Make <|im_end|> overwhelmingly likely: every answer is exactly one stop token.
    eos = tiny_policy.tokenizer.eos_token_id
    with torch.no_grad():
        tiny_policy.model.lm_head.weight[eos] += 50.0 * tiny_policy.model.lm_head.weight.abs().max()
    head = tiny_policy.model.get_output_embeddings()
    if head.bias is not None:  # pragma: no cover - the tiny model has no bias
        head.bias[eos] += 100
    gens = tiny_policy.generate(CONTEXTS)
    assert all(g.meta["finish_reason"] in ("stop", "length") for g in gens)
    stopped = [g for g in gens if g.meta["finish_reason"] == "stop"]
    for g in stopped:
        assert g.token_ids[-1] == eos and eos not in g.token_ids[:-1]
        assert g.text == tiny_policy.decode(g.token_ids)


def test_hf_length_limit_and_seeded_sampling(char_tokenizer):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=1)
    runs = []
    for _ in range(2):
        policy = HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=5, seed=7, top_k=10))
        runs.append([g.token_ids for g in policy.generate(CONTEXTS)])
    assert runs[0] == runs[1]  # same seed, same samples
    assert all(len(ids) <= 5 for ids in runs[0])
    greedy = HFPolicy(model, char_tokenizer, sampling=SamplingParams(max_new_tokens=5, temperature=0.0))
    a, b = greedy.generate(CONTEXTS), greedy.generate(CONTEXTS)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]


def test_hf_batching_split_matches_one_batch(char_tokenizer):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=2)
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    one = HFPolicy(model, char_tokenizer, sampling=greedy, max_batch_size=8).generate(CONTEXTS * 2)
    split = HFPolicy(model, char_tokenizer, sampling=greedy, max_batch_size=1).generate(CONTEXTS * 2)
    assert [g.token_ids for g in one] == [g.token_ids for g in split]


def test_hf_lora_trains_only_adapters(char_tokenizer):
    pytest.importorskip("peft")
    from ascend_kernel_gym.agents.hf import HFPolicy
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=3)
    policy = HFPolicy(model, char_tokenizer, lora={"r": 2, "alpha": 4})
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in n for n in trainable)
    assert policy.describe()["lora"]["r"] == 2
    assert len(policy.generate(CONTEXTS[:1])[0].token_ids) > 0


def test_hf_misuse_is_loud(char_tokenizer, tmp_path):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=0)
    with pytest.raises(ValueError, match="tokenizer"):
        HFPolicy(model)
    with pytest.raises(FileNotFoundError, match="local directory"):
        HFPolicy(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError, match="empty"):
        HFPolicy(model, char_tokenizer).generate_from_ids([[]])


def test_hf_loads_a_saved_local_model(char_tokenizer, tmp_path):
    from ascend_kernel_gym.agents.hf import HFPolicy, SamplingParams
    from ascend_kernel_gym.agents.local_lm import build_random_causal_lm, save_local_model

    model = build_random_causal_lm(tokenizer=char_tokenizer, seed=4)
    path = save_local_model(model, char_tokenizer, tmp_path / "m")
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    loaded = HFPolicy(str(path), sampling=greedy, device="cpu")
    direct = HFPolicy(model, char_tokenizer, sampling=greedy)
    assert [g.token_ids for g in loaded.generate(CONTEXTS)] == [g.token_ids for g in direct.generate(CONTEXTS)]


# ---------------------------------------------------------------------- OpenAIChatPolicy


class _Stub(BaseHTTPRequestHandler):
    """Replies by a script: a list of (status, body) per request; records requests."""

    script: ClassVar[list] = []
    requests: ClassVar[list] = []
    delay_s: ClassVar[float] = 0.0

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        status, payload = type(self).script.pop(0) if type(self).script else (200, None)
        if type(self).delay_s:
            time.sleep(type(self).delay_s)
        if payload is None:
            last = body["messages"][-1]["content"]
            payload = {
                "choices": [{"message": {"role": "assistant", "content": f"echo:{last}"}, "finish_reason": "stop"}],
                "usage": {"total_tokens": 3},
            }
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    _Stub.script, _Stub.requests, _Stub.delay_s = [], [], 0.0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_http_batch_concurrent_and_ordered(stub_server, monkeypatch):
    monkeypatch.setenv("AKG_TEST_KEY", "sekret")
    policy = OpenAIChatPolicy("m", stub_server, api_key_env="AKG_TEST_KEY", concurrency=4, backoff_s=0.0)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]
    gens = policy.generate(batch)
    assert [g.text for g in gens] == [f"echo:q{i}" for i in range(6)]
    assert gens[0].token_ids == [] and gens[0].meta["finish_reason"] == "stop"
    assert all(r["path"] == "/v1/chat/completions" and r["auth"] == "Bearer sekret" for r in _Stub.requests)
    assert _Stub.requests[0]["body"]["model"] == "m"


def test_http_retries_429_and_5xx_then_succeeds(stub_server):
    _Stub.script = [(429, {"error": {"message": "slow down"}}), (503, {"error": "busy"})]
    policy = OpenAIChatPolicy("m", stub_server, api_key_env=None, max_retries=3, backoff_s=0.01)
    gen = policy.complete([{"role": "user", "content": "x"}])
    assert gen.text == "echo:x"
    assert gen.meta["attempts"] == 3
    assert len(_Stub.requests) == 3


def test_http_client_error_is_not_retried(stub_server):
    _Stub.script = [(400, {"error": {"message": "bad model name"}})]
    policy = OpenAIChatPolicy("m", stub_server, api_key_env=None, max_retries=3, backoff_s=0.01)
    with pytest.raises(PolicyHTTPError, match="HTTP 400: bad model name") as info:
        policy.complete([{"role": "user", "content": "x"}])
    assert info.value.status == 400
    assert len(_Stub.requests) == 1


def test_http_gives_up_after_retries(stub_server):
    _Stub.script = [(500, {"error": "boom"})] * 3
    policy = OpenAIChatPolicy("m", stub_server, api_key_env=None, max_retries=2, backoff_s=0.0)
    with pytest.raises(PolicyHTTPError, match="gave up after 3 attempts"):
        policy.complete([{"role": "user", "content": "x"}])
    assert len(_Stub.requests) == 3


def test_http_timeout_is_retried(stub_server):
    _Stub.delay_s = 0.5
    policy = OpenAIChatPolicy("m", stub_server, api_key_env=None, timeout_s=0.1, max_retries=1, backoff_s=0.0)
    with pytest.raises(PolicyHTTPError, match="timed out"):
        policy.complete([{"role": "user", "content": "x"}])
    assert len(_Stub.requests) == 2


def test_http_bad_payload_and_bad_arguments(stub_server):
    _Stub.script = [(200, {"unexpected": True})]
    policy = OpenAIChatPolicy("m", stub_server, api_key_env=None, max_retries=0)
    with pytest.raises(PolicyHTTPError, match="unexpected response shape"):
        policy.complete([{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatPolicy("m", "ftp://example")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIChatPolicy("m", stub_server, concurrency=0)


def test_http_connection_refused_is_clear():
    policy = OpenAIChatPolicy("m", "http://127.0.0.1:9/v1", api_key_env=None, max_retries=0, timeout_s=2)
    with pytest.raises(PolicyHTTPError, match=r"connection failed|timed out"):
        policy.complete([{"role": "user", "content": "x"}])


# ---------------------------------------------------------------------- scripted


def _ctx(n_assistant: int, task_line: str = "# Task core/L1/relu (level 1, activation)"):
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": task_line}]
    for k in range(n_assistant):
        messages += [
            {"role": "assistant", "content": f"a{k}"},
            {"role": "user", "content": f"## Result of turn {k + 1}"},
        ]
    return messages


def test_turn_counting_and_task_id():
    assert turns_so_far(_ctx(0)) == 0
    assert turns_so_far(_ctx(2)) == 2
    # after compaction only the summary remains, but it mentions turn 3
    compacted = [*_ctx(0), {"role": "user", "content": "Summary ... Result of turn 3 ..."}]
    assert turns_so_far(compacted) == 3
    # the compaction wrapper's summary ends with the turns left; the task prompt gives the total
    summarised = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "# Task core/L1/relu\nYou have 4 turn(s). Write..."},
        {"role": "user", "content": "## Your summary ...\n\nYou have 1 turn(s) left. Reply with..."},
    ]
    assert turns_so_far(summarised) == 3
    assert task_id_from_messages(_ctx(1)) == "core/L1/relu"
    assert task_id_from_messages([{"role": "user", "content": "no id"}]) is None


def test_scripted_policy_answers_by_turn():
    policy = ScriptedPolicy(["first", "second"])
    assert [g.text for g in policy.generate([_ctx(0), _ctx(1), _ctx(5)])] == ["first", "second", "second"]
    with pytest.raises(ValueError):
        ScriptedPolicy([])


def test_reference_policy_breaks_then_submits_solution():
    from ascend_kernel_gym.tasks.suite import get_task

    solution = get_task("core/L1/relu").solution_source()
    policy = ReferencePolicy(broken_attempts=1)
    first, second = policy.generate([_ctx(0), _ctx(1)])
    assert "deliberately broken" in first.text and first.text.startswith("```python")
    assert second.text == f"```python\n{solution.rstrip()}\n```"
    with pytest.raises(ValueError, match="Task"):
        policy.generate([[{"role": "user", "content": "nothing"}]])


def test_reference_policy_is_one_class_for_rollouts_and_the_eval_runner():
    from dataclasses import replace

    from ascend_kernel_gym.leaderboard import agents as lb_agents
    from ascend_kernel_gym.tasks import load_suite
    from ascend_kernel_gym.tasks.variants import fenced

    assert lb_agents.ReferencePolicy is ReferencePolicy
    relu, sum_dim = load_suite("core", split="all", task_ids=["core/L1/relu", "core/L1/sum_dim"])
    policy = lb_agents.build_policy("reference", [relu, sum_dim])
    assert type(policy) is ReferencePolicy and policy.batch_wait_s == 0.0 and policy.name == "reference"
    # The runner names the task, whatever the context says.
    named = policy.generate_for_tasks([_ctx(1)], ["core/L1/sum_dim"])[0]
    assert named.text == fenced(sum_dim.solution_source()) and named.meta["task_id"] == "core/L1/sum_dim"
    # Without a name: the '# Task <id>' line first, then the ids and sources of the given tasks.
    assert policy.generate([_ctx(0)])[0].meta["task_id"] == "core/L1/relu"
    found = policy.generate([[{"role": "user", "content": "Solve core/L1/sum_dim please"}]])[0]
    assert found.meta["task_id"] == "core/L1/sum_dim"
    assert policy.calls == 3
    described = policy.describe()
    assert described["kind"] == "scripted" and described["broken_attempts"] == 0
    assert described["class"] == "ascend_kernel_gym.agents.scripted.ReferencePolicy"
    # Broken attempts also apply when the runner names the task.
    breaking = ReferencePolicy([relu], broken_attempts=2)
    first, third = breaking.generate_for_tasks([_ctx(1, "x"), _ctx(2, "x")], ["core/L1/relu"] * 2)
    assert "deliberately broken" in first.text and third.text == fenced(relu.solution_source())
    with pytest.raises(ValueError, match="no bundled reference solution"):
        ReferencePolicy([replace(relu, solution_path=None)])
    with pytest.raises(ValueError, match="broken_attempts"):
        ReferencePolicy(broken_attempts=-1)


def test_choice_policy_probabilities_and_sequence():
    always_b = ChoicePolicy(probs=[0, 1, 0])
    assert {g.text for g in always_b.generate([_ctx(0)] * 20)} == {"B"}
    seq = ChoicePolicy(sequence=["C", "A"])
    assert [g.text for g in seq.generate([_ctx(0), _ctx(1), _ctx(3)])] == ["C", "A", "A"]
    with pytest.raises(ValueError, match="probs"):
        ChoicePolicy(probs=[1, 0])
