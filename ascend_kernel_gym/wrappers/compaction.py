"""Keep the agent's context under a token budget by summarising its history.

Each compaction replaces everything after the first ``keep_first`` messages (system prompt and
task) by one summary message and starts a new *segment* of the episode; segment-level GRPO
(``agents/``) trains on segments. See docs/wrappers.md.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, SupportsFloat

import gymnasium as gym

from ascend_kernel_gym.wrappers.tokens import MessageTokenCounter, make_token_counter

__all__ = [
    "STRATEGIES",
    "CompactionContext",
    "CompactionWrapper",
    "build_rules_summary",
    "summary_request_text",
]

#: Built-in strategy names (a callable is accepted too).
STRATEGIES = ("rules", "policy")

SUMMARY_HEADER = "## Summary of the conversation so far (earlier turns were compacted)"
POLICY_SUMMARY_HEADER = "## Your summary of the conversation so far (earlier turns were compacted)"
REQUEST_HEADER = "## Context limit reached: write a summary instead of code"
CONTINUE_TEXT = "Reply with the complete, improved solution in one ```python block."

Message = dict[str, str]


@dataclass
class CompactionContext:
    """Everything a summary strategy may use.

    Attributes:
        task: the current :class:`~ascend_kernel_gym.tasks.task.Task` (or ``None``).
        messages: the full context before compaction (copies of the chat messages).
        attempts: the base env's per-turn records (``turn``, ``code``, ``score``, ``eval``, ``feedback``).
        keep_first: how many leading messages are kept verbatim.
        budget_tokens: the token budget.
        tokens: tokens of ``messages``.
        max_summary_tokens: how long the summary may be for the compacted context to fit comfortably.
        turns_left: kernel turns left in the episode (``None`` if unknown).
        count_tokens: counts the tokens of a text with the wrapper's tokenizer.
    """

    task: Any
    messages: list[Message]
    attempts: list[dict[str, Any]]
    keep_first: int
    budget_tokens: int
    tokens: int
    max_summary_tokens: int
    turns_left: int | None
    count_tokens: Callable[[str], int] = field(repr=False)


SummaryFn = Callable[[CompactionContext], str]


class CompactionWrapper(gym.Wrapper):
    """Summarise the conversation when it reaches a token budget; each compaction starts a segment.

    ## Description

    After every step the wrapper counts the tokens of the base env's chat context
    (``env.unwrapped.messages``; tiktoken ``cl100k_base`` by default, or the policy's own
    tokenizer), incrementally: each message's count is cached by a hash of its content. When the
    count reaches ``trigger_ratio * budget_tokens`` the history after the first ``keep_first``
    messages (system prompt and task) is replaced by one summary message, written back with
    ``env.unwrapped.set_messages`` so the observation and ``info["messages"]`` change together.

    Strategies:

    * ``"rules"``: a deterministic summary: the task, the best kernel so far with its result,
      one line per earlier attempt, and the last result/error; trimmed to fit half the budget.
    * ``"policy"``: the observation returned by the step that reached the budget ends with a
      request to write a summary; the agent's *next action is taken as the summary*: it is not
      evaluated as a kernel, its reward is 0, and ``info["segment"]["is_summary_turn"]`` is True.
      The history is then replaced by the ``keep_first`` messages plus that summary.
    * a callable ``fn(CompactionContext) -> str``: returns the full content of the summary message.

    ## Action Space

    Unchanged (the base env's ``Text`` space). On a summary turn the action is free text.

    ## Observation Space

    Unchanged. The observation is always ``env.unwrapped.render_observation()`` of the current
    messages, so it stays in ``observation_space``.

    ## Rewards

    Unchanged for kernel turns. A policy summary turn has reward 0.0.

    ## Episode End

    As the base env, plus: when the budget is reached again after ``max_compactions``
    compactions, the episode is truncated (``truncated=True``) with
    ``info["segment"]["overlong"] = True`` (SUPO-style overlong episodes, which segment-GRPO
    can mask). Summary turns do **not** count as kernel turns: the base env's ``max_turns``
    bounds the kernel attempts, so an episode has at most ``max_turns + max_compactions`` steps.
    Compaction never happens on the step that ends the episode.

    ## Info

    ``info["segment"]`` (every reset and step):

    * ``index``: segment of the turn just played (the context the action was generated from);
      0 at reset.
    * ``turn_in_segment``: 0-based position of that turn in its segment (0 at reset).
    * ``is_summary_turn``: the action was consumed as a summary (policy strategy).
    * ``summary_requested``: the returned observation asks the agent for a summary.
    * ``compacted``: the returned observation starts a new segment (history replaced).
    * ``next_index``: segment of the returned observation.
    * ``tokens_before`` / ``tokens_after``: context tokens before and after this step's compaction
      (equal when nothing was compacted).
    * ``budget_tokens``, ``threshold_tokens``, ``compactions`` (so far), ``max_compactions``,
      ``overlong``, ``strategy``, ``tokenizer``.

    A summary turn's ``info`` has ``eval={}``, ``score=None``, ``feedback=""``, ``code=None``,
    ``evaluated=False`` and ``reward=0.0``; the other keys repeat the last kernel turn's values.

    ## Arguments

    * ``env``: an env exposing ``unwrapped.messages``, ``unwrapped.set_messages``,
      ``unwrapped.render_observation``, ``unwrapped.attempts`` and ``unwrapped.task``
      (e.g. ``AscendTritonEnv``, possibly wrapped).
    * ``budget_tokens`` (int, 16384): the context budget in tokens.
    * ``trigger_ratio`` (float in (0, 1], 0.8): compact once the context reaches this share of the budget.
    * ``keep_first`` (int, 2): leading messages always kept (system prompt + task prompt).
    * ``strategy`` (``"rules"`` | ``"policy"`` | callable, ``"rules"``).
    * ``max_compactions`` (int | None, 4): compactions allowed per episode; ``None`` = unlimited.
    * ``tokenizer``: ``None`` (tiktoken ``cl100k_base``), a Hugging Face tokenizer or local
      directory, or a :class:`~ascend_kernel_gym.wrappers.tokens.MessageTokenCounter`.
    * ``summary_ratio`` (float, 0.5): the summary plus the kept messages aim at this share of the budget.
    * ``per_message_overhead`` (int, 4): tokens counted per message for role markers.
    """

    def __init__(
        self,
        env: gym.Env,
        budget_tokens: int = 16384,
        trigger_ratio: float = 0.8,
        keep_first: int = 2,
        strategy: str | SummaryFn = "rules",
        max_compactions: int | None = 4,
        tokenizer: Any = None,
        summary_ratio: float = 0.5,
        per_message_overhead: int = 4,
    ) -> None:
        super().__init__(env)
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 64:
            raise ValueError(f"budget_tokens must be an int >= 64, got {budget_tokens!r}")
        if not isinstance(trigger_ratio, (int, float)) or not 0.0 < float(trigger_ratio) <= 1.0:
            raise ValueError(f"trigger_ratio must be in (0, 1], got {trigger_ratio!r}")
        if isinstance(keep_first, bool) or not isinstance(keep_first, int) or keep_first < 0:
            raise ValueError(f"keep_first must be an int >= 0, got {keep_first!r}")
        if max_compactions is not None and (
            isinstance(max_compactions, bool) or not isinstance(max_compactions, int) or max_compactions < 0
        ):
            raise ValueError(f"max_compactions must be an int >= 0 or None, got {max_compactions!r}")
        if not isinstance(summary_ratio, (int, float)) or not 0.0 < float(summary_ratio) < float(trigger_ratio) + 1e-9:
            raise ValueError(f"summary_ratio must be in (0, trigger_ratio], got {summary_ratio!r}")
        if not callable(strategy) and strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES} or a callable, got {strategy!r}")
        base = env.unwrapped
        for attr in ("messages", "set_messages", "render_observation"):
            if not hasattr(base, attr):
                raise TypeError(f"env.unwrapped must provide {attr!r} (see docs/architecture.md); got {type(base)}")

        self.budget_tokens = int(budget_tokens)
        self.trigger_ratio = float(trigger_ratio)
        self.threshold_tokens = max(1, math.ceil(self.trigger_ratio * self.budget_tokens))
        self.keep_first = int(keep_first)
        self.strategy = strategy
        self.strategy_name = strategy if isinstance(strategy, str) else getattr(strategy, "__name__", "callable")
        self.max_compactions = max_compactions
        self.summary_ratio = float(summary_ratio)
        self.counter: MessageTokenCounter = make_token_counter(tokenizer, per_message_overhead=per_message_overhead)

        self._segment = 0
        self._turn_in_segment = 0
        self._compactions = 0
        self._pending_summary = False
        self._overlong = False
        self._done = True
        self._last_info: dict[str, Any] = {}
        self._warned_small_budget = False

    # ------------------------------------------------------------------ public helpers
    @property
    def segment_index(self) -> int:
        """Segment of the current observation."""
        return self._segment

    @property
    def compactions(self) -> int:
        """Compactions so far in this episode."""
        return self._compactions

    @property
    def awaiting_summary(self) -> bool:
        """True when the next action will be taken as a summary (policy strategy)."""
        return self._pending_summary

    def count_tokens(self, messages: Sequence[Mapping[str, Any]] | None = None) -> int:
        """Tokens of ``messages`` (default: the base env's current context)."""
        return self.counter.count_messages(self.env.unwrapped.messages if messages is None else messages)

    # ------------------------------------------------------------------ Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._segment = 0
        self._turn_in_segment = 0
        self._compactions = 0
        self._pending_summary = False
        self._overlong = False
        self._done = False
        tokens = self.count_tokens()
        head_tokens = self.count_tokens(self.env.unwrapped.messages[: self.keep_first])
        if head_tokens >= self.threshold_tokens and not self._warned_small_budget:
            self._warned_small_budget = True
            warnings.warn(
                f"CompactionWrapper: the first {self.keep_first} messages alone take {head_tokens} tokens, at or over "
                f"the trigger threshold {self.threshold_tokens} (budget_tokens={self.budget_tokens}); compaction "
                "cannot bring the context under the budget and episodes will end as overlong",
                RuntimeWarning,
                stacklevel=2,
            )
        info = dict(info)
        info["segment"] = self._segment_info(
            index=0, turn_in_segment=0, tokens_before=tokens, tokens_after=tokens, is_summary_turn=False
        )
        self._last_info = info
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._done:
            raise RuntimeError("CompactionWrapper.step() called before reset() or after the episode ended")
        if self._pending_summary:
            return self._summary_step(action)

        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        index, turn_in_segment = self._segment, self._turn_in_segment
        self._turn_in_segment += 1
        tokens_before = self.count_tokens()
        tokens_after = tokens_before
        compacted = requested = False

        if not (terminated or truncated) and tokens_before >= self.threshold_tokens:
            if self.max_compactions is not None and self._compactions >= self.max_compactions:
                truncated = True
                self._overlong = True
            elif self.strategy == "policy":
                self._request_summary(tokens_before)
                self._pending_summary = True
                requested = True
            else:
                self._compact_with(self._make_summary(tokens_before))
                compacted = True
            if compacted or requested:
                obs = self.env.unwrapped.render_observation()
                info["messages"] = copy.deepcopy(self.env.unwrapped.messages)
                tokens_after = self.count_tokens()

        self._done = bool(terminated or truncated)
        info["segment"] = self._segment_info(
            index=index,
            turn_in_segment=turn_in_segment,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            is_summary_turn=False,
            compacted=compacted,
            requested=requested,
        )
        self._last_info = info
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ internals
    def _summary_step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        index, turn_in_segment = self._segment, self._turn_in_segment
        tokens_before = self.count_tokens()
        text = action if isinstance(action, str) else ("" if action is None else str(action))
        max_tokens = self._max_summary_tokens()
        summary = _clip_to_tokens(text.strip() or "(the summary was empty)", max_tokens, self.counter.counter.count)
        content = f"{POLICY_SUMMARY_HEADER}\n\n{summary}\n\n{self._continue_text()}"
        self._pending_summary = False
        self._compact_with(content)
        obs = self.env.unwrapped.render_observation()
        info = {k: v for k, v in self._last_info.items() if k != "segment"}
        info.update(
            {
                "messages": copy.deepcopy(self.env.unwrapped.messages),
                # Empty, not None: vector envs merge info["eval"] key by key across sub-envs,
                # and None next to another sub-env's dict breaks that merge.
                "eval": {},
                "feedback": "",
                "score": None,
                "reward": 0.0,
                "code": None,
                "format_ok": False,
                "evaluated": False,
            }
        )
        info["segment"] = self._segment_info(
            index=index,
            turn_in_segment=turn_in_segment,
            tokens_before=tokens_before,
            tokens_after=self.count_tokens(),
            is_summary_turn=True,
            compacted=True,
        )
        self._last_info = info
        return obs, 0.0, False, False, info

    def _compact_with(self, summary_content: str) -> None:
        base = self.env.unwrapped
        kept = [dict(m) for m in base.messages[: self.keep_first]]
        base.set_messages([*kept, {"role": "user", "content": summary_content}])
        self._compactions += 1
        self._segment += 1
        self._turn_in_segment = 0

    def _request_summary(self, tokens: int) -> None:
        base = self.env.unwrapped
        messages = [dict(m) for m in base.messages]
        request = summary_request_text(tokens, self.budget_tokens, self._max_summary_tokens())
        if messages and messages[-1].get("role") == "user":
            messages[-1]["content"] = f"{messages[-1]['content']}\n\n{request}"
        else:
            messages.append({"role": "user", "content": request})
        base.set_messages(messages)

    def _max_summary_tokens(self) -> int:
        head = self.count_tokens(self.env.unwrapped.messages[: self.keep_first])
        target = int(self.summary_ratio * self.budget_tokens) - head - self.counter.per_message_overhead - 64
        return max(128, target)

    def _context(self, tokens: int) -> CompactionContext:
        base = self.env.unwrapped
        attempts = copy.deepcopy(list(getattr(base, "attempts", []) or []))
        max_turns, turn = getattr(base, "max_turns", None), getattr(base, "turn", None)
        turns_left = max_turns - turn if isinstance(max_turns, int) and isinstance(turn, int) else None
        return CompactionContext(
            task=getattr(base, "task", None),
            messages=copy.deepcopy(list(base.messages)),
            attempts=attempts,
            keep_first=self.keep_first,
            budget_tokens=self.budget_tokens,
            tokens=tokens,
            max_summary_tokens=self._max_summary_tokens(),
            turns_left=turns_left,
            count_tokens=self.counter.counter.count,  # uncached: drafts of a summary are not worth caching
        )

    def _make_summary(self, tokens: int) -> str:
        ctx = self._context(tokens)
        if callable(self.strategy):
            summary = self.strategy(ctx)
            if not isinstance(summary, str) or not summary.strip():
                raise TypeError(
                    f"the compaction strategy {self.strategy_name!r} must return a non-empty str, got {type(summary)}"
                )
            return summary
        return build_rules_summary(ctx)

    def _continue_text(self) -> str:
        base = self.env.unwrapped
        max_turns, turn = getattr(base, "max_turns", None), getattr(base, "turn", None)
        if isinstance(max_turns, int) and isinstance(turn, int):
            return f"You have {max(0, max_turns - turn)} turn(s) left. {CONTINUE_TEXT}"
        return CONTINUE_TEXT

    def _segment_info(
        self,
        *,
        index: int,
        turn_in_segment: int,
        tokens_before: int,
        tokens_after: int,
        is_summary_turn: bool,
        compacted: bool = False,
        requested: bool = False,
    ) -> dict[str, Any]:
        return {
            "index": index,
            "turn_in_segment": turn_in_segment,
            "is_summary_turn": is_summary_turn,
            "summary_requested": requested,
            "compacted": compacted,
            "next_index": self._segment,
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "budget_tokens": self.budget_tokens,
            "threshold_tokens": self.threshold_tokens,
            "compactions": self._compactions,
            "max_compactions": self.max_compactions,
            "overlong": self._overlong,
            "strategy": self.strategy_name,
            "tokenizer": self.counter.name,
        }


# ---------------------------------------------------------------------- summary text


def summary_request_text(tokens: int, budget_tokens: int, max_summary_tokens: int) -> str:
    """The text appended to the observation when the policy strategy asks for a summary."""
    return (
        f"{REQUEST_HEADER}\n\n"
        f"The conversation now uses about {tokens} of its {budget_tokens}-token budget and will be compacted. "
        "Do NOT write a new kernel in this reply. Instead, write a summary that will replace every message after "
        "the task description. Include: the best kernel so far, complete, in one ```python block, with its "
        "result; one line per earlier attempt saying what it tried and how it ended; the last error message; "
        f"and what to try next. Keep it under {max_summary_tokens} tokens. This reply is not evaluated and does "
        "not use up one of your turns."
    )


def _eval_status(attempt: Mapping[str, Any]) -> str:
    ev = attempt.get("eval") or {}
    if not attempt.get("format_ok", True) or ev.get("error_type") == "no_code":
        return "no code block"
    if ev.get("correct") and not ev.get("hack"):
        speedup = ev.get("speedup")
        return "correct" + (f", speedup {speedup:.2f}x" if isinstance(speedup, (int, float)) else "")
    error_type = str(ev.get("error_type") or "failed")
    message = _first_line(str(ev.get("error_message") or ""), 140)
    return f"{error_type}: {message}" if message else error_type


def _first_line(text: str, limit: int) -> str:
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def _clip_to_tokens(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """Cut ``text`` (keeping its start) so that it has at most ``max_tokens`` tokens."""
    if count(text) <= max_tokens:
        return text
    marker = "\n[... cut to fit the context budget ...]"
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits, by binary search on characters
        mid = (lo + hi + 1) // 2
        if count(text[:mid] + marker) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + marker


def _task_line(task: Any) -> str:
    if task is None:
        return "Task: see the task description above."
    description = " ".join(str(getattr(task, "description", "") or "").split())
    return f"Task: {getattr(task, 'id', '?')} - {description}" if description else f"Task: {getattr(task, 'id', '?')}"


def build_rules_summary(ctx: CompactionContext) -> str:
    """The deterministic ``"rules"`` summary, trimmed to ``ctx.max_summary_tokens``.

    Content: the task; the best kernel so far with its result; one line per earlier attempt;
    the last result (error) message; and the instruction to continue. When it is too long,
    older attempt lines are dropped first, then the last message is shortened, then the
    best kernel is cut.
    """
    attempts = ctx.attempts
    scored = [a for a in attempts if isinstance(a.get("score"), (int, float)) and a.get("code")]
    best = max(scored, key=lambda a: (a["score"], -a.get("turn", 0))) if scored else None
    last = attempts[-1] if attempts else None
    cont = f"You have {ctx.turns_left} turn(s) left. {CONTINUE_TEXT}" if ctx.turns_left is not None else CONTINUE_TEXT

    def render(n_lines: int, last_chars: int, code_chars: int | None) -> str:
        parts = [SUMMARY_HEADER, "", _task_line(ctx.task), ""]
        if best is not None:
            code = str(best["code"]).rstrip()
            if code_chars is not None and len(code) > code_chars:
                code = code[:code_chars].rstrip() + "\n# [... rest of the kernel cut to fit the context budget ...]"
            parts += [
                f"Best kernel so far (turn {best.get('turn')}, score {best['score']:.3f}, {_eval_status(best)}):",
                "```python",
                code,
                "```",
                "",
            ]
        else:
            parts += ["No attempt has produced a scored kernel yet.", ""]
        if attempts:
            shown = attempts[-n_lines:] if n_lines > 0 else []
            parts.append(f"Attempts ({len(attempts)} so far):")
            if len(attempts) > len(shown):
                parts.append(f"- ({len(attempts) - len(shown)} earlier attempt(s) omitted)")
            for a in shown:
                score = a.get("score")
                score_text = f"{score:.3f}" if isinstance(score, (int, float)) else "n/a"
                parts.append(f"- turn {a.get('turn')}: score {score_text}, {_eval_status(a)}")
            parts.append("")
        if last is not None and last_chars > 0:
            ev = last.get("eval") or {}
            detail = str(ev.get("error_message") or "").strip()
            if not detail and not (ev.get("correct") and not ev.get("hack")):
                detail = str(last.get("feedback") or "").strip()
            if detail:
                if len(detail) > last_chars:
                    detail = detail[:last_chars].rstrip() + " [...]"
                error_type = (last.get("eval") or {}).get("error_type") or "result"
                parts += [f"Last result (turn {last.get('turn')}, {error_type}):", detail, ""]
        parts.append(cont)
        return "\n".join(parts)

    budget = ctx.max_summary_tokens
    n_lines = len(attempts)
    plans: list[tuple[int, int, int | None]] = [
        (n_lines, 1500, None),
        (min(n_lines, 8), 800, None),
        (min(n_lines, 4), 400, None),
        (min(n_lines, 2), 200, None),
    ]
    for n, last_chars, code_chars in plans:
        text = render(n, last_chars, code_chars)
        if ctx.count_tokens(text) <= budget:
            return text
    # Still too long: the best kernel itself is big. Cut it until the summary fits.
    code_len = len(str(best["code"])) if best is not None else 0
    lo, hi = 0, code_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ctx.count_tokens(render(min(n_lines, 4), 200, mid)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    text = render(min(n_lines, 4), 200, lo)
    return text if ctx.count_tokens(text) <= budget else _clip_to_tokens(text, budget, ctx.count_tokens)
