"""An OpenAI-compatible chat-completions endpoint as a :class:`~ascend_kernel_gym.agents.policy.Policy`.

Standard library only (``urllib``). For evaluation: it returns text, no token ids or log-probs.
Requests for a batch run concurrently on a thread pool; each request has a timeout and is
retried with exponential backoff (plus jitter) on HTTP 429, 5xx, timeouts and connection errors.
Any other 4xx is a :class:`PolicyHTTPError` straight away, with the server's message.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ascend_kernel_gym.agents.policy import Generation, Message, Policy

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class PolicyHTTPError(RuntimeError):
    """The endpoint refused a request (or kept failing after every retry).

    Attributes:
        status: the last HTTP status (``None`` for timeouts and connection errors).
        body: the start of the last response body.
    """

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class OpenAIChatPolicy(Policy):
    """Chat completions over HTTP (OpenAI, vLLM, SGLang, llama.cpp server, ...).

    Args:
        model: the model name sent in each request.
        base_url: endpoint root, e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8000/v1``;
            ``/chat/completions`` is appended.
        api_key_env: name of the environment variable holding the API key (no key: no
            ``Authorization`` header, fine for local servers).
        temperature: sampling temperature.
        top_p: nucleus mass.
        max_tokens: maximum answer length (sent as ``max_tokens``).
        timeout_s: per-request timeout.
        max_retries: retries after the first attempt on retryable failures.
        backoff_s: first backoff; doubles each retry (plus up to 25% jitter), capped at ``max_backoff_s``.
        max_backoff_s: cap of one backoff.
        concurrency: parallel requests per batch.
        extra_body: extra JSON fields for every request (e.g. ``{"seed": 0}``).
        name: the name in reports (default: the model name).
    """

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 4096,
        timeout_s: float = 300.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        concurrency: int = 8,
        extra_body: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        for label, value in (("timeout_s", timeout_s), ("backoff_s", backoff_s), ("max_backoff_s", max_backoff_s)):
            if value < 0:
                raise ValueError(f"{label} must be >= 0, got {value}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.top_p = top_p
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.concurrency = concurrency
        self.extra_body = dict(extra_body or {})
        self.name = name or model

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(
            model=self.model, url=self.url, temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens
        )
        return info

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def _body(self, messages: Sequence[Message]) -> bytes:
        body = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            **self.extra_body,
        }
        return json.dumps(body).encode()

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff_s, max(0.0, float(retry_after)))
            except ValueError:
                pass
        base = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        return base * (1.0 + 0.25 * random.random())

    def complete(self, messages: Sequence[Message]) -> Generation:
        """One request, with retries. Raises :class:`PolicyHTTPError` when it cannot get an answer."""
        data = self._body(messages)
        last_error: PolicyHTTPError | None = None
        started = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(  # noqa: S310 - the scheme is checked in __init__
                self.url, data=data, headers=self._headers(), method="POST"
            )
            retry_after: str | None = None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - http(s) only
                    payload = json.loads(response.read().decode("utf-8"))
                return self._parse(payload, attempt, time.perf_counter() - started)
            except urllib.error.HTTPError as exc:
                body = exc.read().decode("utf-8", errors="replace")[:2000]
                message = _server_message(body) or exc.reason
                last_error = PolicyHTTPError(f"{self.url}: HTTP {exc.code}: {message}", status=exc.code, body=body)
                if exc.code not in RETRY_STATUS and exc.code < 500:
                    raise last_error from None
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
            except TimeoutError as exc:
                last_error = PolicyHTTPError(f"{self.url}: timed out after {self.timeout_s}s ({exc})")
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, TimeoutError):
                    last_error = PolicyHTTPError(f"{self.url}: timed out after {self.timeout_s}s")
                else:
                    last_error = PolicyHTTPError(f"{self.url}: connection failed: {exc.reason}")
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                last_error = PolicyHTTPError(f"{self.url}: response is not JSON ({exc})")
            if attempt < self.max_retries:
                time.sleep(self._backoff(attempt, retry_after))
        assert last_error is not None
        raise PolicyHTTPError(
            f"{last_error} (gave up after {self.max_retries + 1} attempts)", last_error.status, last_error.body
        )

    def _parse(self, payload: Any, attempt: int, seconds: float) -> Generation:
        try:
            choice = payload["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise PolicyHTTPError(f"{self.url}: unexpected response shape ({exc!r}): {str(payload)[:300]}") from None
        meta = {
            "finish_reason": choice.get("finish_reason"),
            "usage": payload.get("usage", {}),
            "attempts": attempt + 1,
            "seconds": seconds,
        }
        return Generation(text=text, meta=meta)

    def generate(self, batch: Sequence[Sequence[Message]]) -> list[Generation]:
        if not batch:
            return []
        if len(batch) == 1 or self.concurrency == 1:
            return [self.complete(messages) for messages in batch]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batch))) as pool:
            return list(pool.map(self.complete, batch))


def _server_message(body: str) -> str:
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return body.strip()[:300]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if data.get("message"):
            return str(data["message"])
    return body.strip()[:300]
