"""OpenAIChatPolicy (agents/openai_http.py) against a local stub server: batching, retries, errors."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from ascend_kernel_gym.agents.openai_http import OpenAIChatPolicy, PolicyHTTPError


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
