"""Inject retrieved Ascend knowledge-base tips into the agent's context."""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym

__all__ = ["TIPS_HEADER", "KBRetrievalWrapper", "ascend_check_hits", "build_query"]

#: First line of the injected section.
TIPS_HEADER = "## Ascend tips (retrieved from the knowledge base)"
_MAX_FEEDBACK_CHARS = 1200


def _error_type(eval_dict: Mapping[str, Any] | None) -> str | None:
    if not eval_dict:
        return None
    value = eval_dict.get("error_type")
    return str(value) if value and str(value) != "none" else None


def build_query(task: Any, feedback: str | None, eval_dict: Mapping[str, Any] | None) -> tuple[str, str]:
    """The dense query and the trigger text for one turn.

    Args:
        task: the current task (``description``, ``category``, ``name`` are used if present).
        feedback: the latest feedback text shown to the agent (``None`` or ``""`` at reset).
        eval_dict: the latest ``EvalResult.to_dict()`` (``None`` at reset).

    Returns:
        ``(query, trigger_text)``. The trigger text is the feedback plus the evaluator's error
        type (``"error_type: <value>"``), error message and warnings, so entries can trigger on
        either the wording or the typed error. The query puts the error first (the embedding
        model reads about 256 word pieces) and the task description after it.
    """
    parts: list[str] = []
    trigger_parts: list[str] = []
    ev = dict(eval_dict or {})
    error_type = _error_type(ev)
    message = str(ev.get("error_message") or "").strip()
    # The evaluator also lists each Ascend rule finding here, as "ascend[<rule>] <message>".
    warnings_list = [str(w) for w in (ev.get("warnings") or [])]
    if error_type:
        # The typed error reaches the entries through their "error_type: <value>" triggers; the
        # dense query keeps to the message and the task so it can add task-specific tips.
        trigger_parts.append(f"error_type: {error_type}")
    if message:
        parts.append(message[:600])
        trigger_parts.append(message)
    if warnings_list:
        parts.append(" ".join(warnings_list)[:400])
        trigger_parts.extend(warnings_list)
    if feedback:
        trigger_parts.insert(0, feedback)
        if not message:
            parts.append(feedback.strip()[:_MAX_FEEDBACK_CHARS])
    if task is not None:
        description = " ".join(str(getattr(task, "description", "") or "").split())
        category = getattr(task, "category", "") or ""
        name = getattr(task, "name", "") or ""
        parts.append(f"Task ({category}, {name}): {description}")
    query = "\n".join(p for p in parts if p) or "Writing Triton kernels for Ascend NPUs"
    return query, "\n".join(trigger_parts)


def ascend_check_hits(eval_dict: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(kb_id, "ascend_check: <rule>")`` for the evaluator's Ascend rule findings, errors first, no repeats."""
    findings = [f for f in (eval_dict or {}).get("ascend_checks") or [] if isinstance(f, Mapping) and f.get("kb_id")]
    findings.sort(key=lambda f: 0 if f.get("severity") == "error" else 1)
    seen: set[str] = set()
    out = []
    for f in findings:
        kb_id = str(f["kb_id"])
        if kb_id not in seen:
            seen.add(kb_id)
            out.append((kb_id, f"ascend_check: {f.get('rule', '?')}"))
    return out


class KBRetrievalWrapper(gym.Wrapper):
    """Add a short "Ascend tips" section, retrieved from the knowledge base, to each new user message.

    ## Description

    At reset and after every step the wrapper builds a query from the task description and the
    latest feedback (error type, error message, Ascend warnings), retrieves up to ``k`` entries
    with :class:`~ascend_kernel_gym.kb_index.KnowledgeBase` (trigger regexes on the error text
    first, then the entries named by the evaluator's Ascend rule findings, then dense
    similarity), drops entries shown in the last ``skip_recent_turns`` turns,
    and appends the remaining tips to the latest user message of the base env's context
    through ``env.unwrapped.set_messages``. The observation is re-rendered from the messages,
    so the observation and ``info["messages"]`` change together. The tips stay in the history
    (the context is append-only within a segment), so they count toward a compaction budget.

    ## Action Space

    Unchanged.

    ## Observation Space

    Unchanged (the tips are plain ASCII and the observation is re-rendered by the base env).

    ## Rewards

    Unchanged.

    ## Episode End

    Unchanged. No tips are injected on the step that ends the episode, nor when a compaction
    wrapper below this one has just asked the agent for a summary.

    ## Info

    ``info["kb"] = {"query", "hits": [{"id", "score", "why"}], "injected", "skipped"}``:
    ``why`` is ``"trigger: <regex>"``, ``"ascend_check: <rule>"`` or ``"dense"``; ``skipped`` names why nothing was
    injected (``"reset"`` with ``inject_on_reset=False``, ``"episode_end"``, ``"summary_requested"``,
    ``"no_hits"``) or is ``None``.

    ## Arguments

    * ``env``: an env exposing ``unwrapped.messages``, ``set_messages``, ``render_observation``,
      ``attempts`` and ``task`` (e.g. ``AscendTritonEnv``, possibly wrapped).
    * ``kb``: a :class:`~ascend_kernel_gym.kb_index.KnowledgeBase`; ``None`` builds one from
      ``extra_dirs``, ``model`` and ``cache_dir``.
    * ``k`` (int, 3): tips per turn.
    * ``skip_recent_turns`` (int, 2): do not repeat a tip shown in this many previous turns
      (0 = always allow repeats).
    * ``model`` (path | None): local sentence-transformers model (default: bundled all-MiniLM-L6-v2).
    * ``extra_dirs`` (list of paths): user entry directories.
    * ``cache_dir`` (path | None): index cache directory.
    * ``min_score`` (float | None, 0.25): dense-only tips below this cosine similarity are dropped.
    * ``inject_on_reset`` (bool, True): also add tips for the task to the initial prompt.
    * ``max_tip_chars`` (int, 600): each tip's advice is cut (at a sentence) to this length.
    * ``dense`` (bool, True): ``False`` uses trigger regexes only (no embedding model).
    * ``no_error_exclude_tags`` (tuple of str, ``("evaluator", "benchmark")``): when the latest result has no
      error (reset, or a correct kernel), dense tips with these tags are skipped: entries that
      explain evaluator failures (or describe benchmarks) only help when there is a failure.
    """

    def __init__(
        self,
        env: gym.Env,
        kb: Any = None,
        k: int = 3,
        skip_recent_turns: int = 2,
        model: str | Path | None = None,
        extra_dirs: Iterable[str | Path] = (),
        cache_dir: str | Path | None = None,
        min_score: float | None = 0.25,
        inject_on_reset: bool = True,
        max_tip_chars: int = 600,
        dense: bool = True,
        no_error_exclude_tags: Iterable[str] = ("evaluator", "benchmark"),
    ) -> None:
        super().__init__(env)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if isinstance(skip_recent_turns, bool) or not isinstance(skip_recent_turns, int) or skip_recent_turns < 0:
            raise ValueError(f"skip_recent_turns must be an int >= 0, got {skip_recent_turns!r}")
        if isinstance(max_tip_chars, bool) or not isinstance(max_tip_chars, int) or max_tip_chars < 40:
            raise ValueError(f"max_tip_chars must be an int >= 40, got {max_tip_chars!r}")
        base = env.unwrapped
        for attr in ("messages", "set_messages", "render_observation"):
            if not hasattr(base, attr):
                raise TypeError(f"env.unwrapped must provide {attr!r} (see docs/architecture.md); got {type(base)}")
        if kb is None:
            from ascend_kernel_gym.kb_index import KnowledgeBase

            kb = KnowledgeBase(extra_dirs=list(extra_dirs), model=model, cache_dir=cache_dir)
        elif not callable(getattr(kb, "search", None)):
            raise TypeError(f"kb must be a KnowledgeBase (with .search), got {type(kb).__name__}")
        self.kb = kb
        self.k = k
        self.skip_recent_turns = skip_recent_turns
        self.min_score = min_score
        self.inject_on_reset = bool(inject_on_reset)
        self.max_tip_chars = max_tip_chars
        self.dense = bool(dense)
        self.no_error_exclude_tags = tuple(no_error_exclude_tags)
        self._recent: deque[frozenset[str]] = deque(maxlen=max(1, skip_recent_turns))

    @property
    def recently_shown(self) -> set[str]:
        """Entry ids shown in the last ``skip_recent_turns`` turns."""
        if self.skip_recent_turns == 0:
            return set()
        return set().union(*self._recent) if self._recent else set()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._recent.clear()
        info = dict(info)
        if not self.inject_on_reset:
            info["kb"] = {"query": None, "hits": [], "injected": False, "skipped": "reset"}
            return obs, info
        obs, info = self._retrieve_and_inject(obs, info, feedback=None, eval_dict=None)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        segment = info.get("segment") or {}
        if terminated or truncated:
            self._remember(frozenset())
            info["kb"] = {"query": None, "hits": [], "injected": False, "skipped": "episode_end"}
            return obs, reward, terminated, truncated, info
        if segment.get("summary_requested"):
            self._remember(frozenset())
            info["kb"] = {"query": None, "hits": [], "injected": False, "skipped": "summary_requested"}
            return obs, reward, terminated, truncated, info
        feedback, eval_dict = info.get("feedback"), info.get("eval")
        if not feedback and not eval_dict:
            # A summary turn of a compaction wrapper below (it reports eval={}, feedback=""): use the
            # last kernel turn's result.
            attempts = getattr(self.env.unwrapped, "attempts", None) or []
            if attempts:
                feedback, eval_dict = attempts[-1].get("feedback"), attempts[-1].get("eval")
        obs, info = self._retrieve_and_inject(obs, info, feedback=feedback, eval_dict=eval_dict)
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ internals
    def _remember(self, ids: frozenset[str]) -> None:
        if self.skip_recent_turns > 0:
            self._recent.append(ids)

    def _retrieve_and_inject(
        self, obs: Any, info: dict[str, Any], feedback: str | None, eval_dict: Mapping[str, Any] | None
    ) -> tuple[Any, dict[str, Any]]:
        task = getattr(self.env.unwrapped, "task", None)
        query, trigger_text = build_query(task, feedback, eval_dict)
        # Without an error to explain, tips about evaluator feedback are noise: keep them out of the
        # dense results (their triggers still fire when an error comes).
        no_error = _error_type(eval_dict) is None
        hits = self.kb.search(
            query,
            k=self.k,
            trigger_text=trigger_text or None,
            exclude=self.recently_shown,
            min_score=self.min_score,
            dense=self.dense,
            exclude_tags=self.no_error_exclude_tags if no_error else (),
            extra=ascend_check_hits(eval_dict),
        )
        self._remember(frozenset(h.id for h in hits))
        info["kb"] = {
            "query": query,
            "hits": [h.to_dict() for h in hits],
            "injected": bool(hits),
            "skipped": None if hits else "no_hits",
        }
        if not hits:
            return obs, info
        section = self.format_tips(hits)
        base = self.env.unwrapped
        messages = [dict(m) for m in base.messages]
        last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
        if last_user is None:
            messages.append({"role": "user", "content": section})
        else:
            messages[last_user]["content"] = f"{messages[last_user]['content']}\n\n{section}"
        base.set_messages(messages)
        info["messages"] = copy.deepcopy(base.messages)
        return base.render_observation(), info

    def format_tips(self, hits: Iterable[Any]) -> str:
        """The injected section: a header and one bullet per tip (title and trimmed advice)."""
        lines = [TIPS_HEADER]
        for hit in hits:
            lines.append(f"- [{hit.id}] {hit.entry.short(self.max_tip_chars)}")
        return "\n".join(lines)
