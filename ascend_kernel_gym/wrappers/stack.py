"""The one builder of the standard wrapper stack, and the ATRL preset built with it.

Every place that wraps an env (the ``AscendTriton-ATRL-v0`` preset, rollout collection and the
trainer in ``agents/``, the evaluation runner, the TRL adapter) calls :func:`build_stack`, so the
wrappers always sit in one order. From the inside out::

    KBRetrievalWrapper(CompactionWrapper(KernelChoiceWrapper(AscendTritonEnv(...))))

Why this order (each wrapper rewrites the base env's messages after the layer below it stepped):

1. ``KernelChoiceWrapper`` innermost. At reset it replaces the whole context by short messages,
   and after each step it rewrites the last two messages (the answer as written, optionally a
   one-line result). Above compaction it would overwrite the summary message or a summary
   request; above KB retrieval it would erase the tips. Below compaction, a policy-written
   summary never reaches it (compaction consumes that action), so a summary is never mistaken
   for a kernel letter.
2. ``CompactionWrapper`` next. It counts the context the env and the choice wrapper produced and,
   at the budget, replaces the history by a summary or asks for one.
3. ``KBRetrievalWrapper`` outermost. It reads ``info["segment"]`` from compaction below: no tips
   when compaction just asked for a summary (they would only distract the summary), tips added to
   the fresh summary message after a compaction (the new segment starts with tips), and on a
   summary turn it retrieves with the last kernel turn's result. With compaction outside instead,
   a compaction would discard the tips of the very step that retrieved them (while
   ``skip_recent_turns`` still counts them as shown). The cost: this step's tips are counted by
   compaction one step later (a few hundred tokens with ``k=3``), so keep ``trigger_ratio`` below 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

__all__ = ["ATRL_DEFAULTS", "STACK_ORDER", "build_stack", "make_atrl_env", "wrapper_chain"]

#: Wrapper class names of the standard stack, from the inside out (see the module docstring).
STACK_ORDER: tuple[str, ...] = ("KernelChoiceWrapper", "CompactionWrapper", "KBRetrievalWrapper")

#: Defaults of the ATRL preset (each can be overridden by a keyword of the same name).
ATRL_DEFAULTS: dict[str, Any] = {
    "max_turns": 8,
    "budget_tokens": 16384,
    "compaction_strategy": "policy",
    "max_compactions": 4,
    "kb_k": 3,
    "kb_dense": True,
}


def _options(name: str, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of wrapper arguments or None, got {type(value).__name__}")
    return dict(value)


def build_stack(
    env: gym.Env,
    *,
    choice: Mapping[str, Any] | None = None,
    compaction: Mapping[str, Any] | None = None,
    kb: Mapping[str, Any] | None = None,
) -> gym.Env:
    """Wrap ``env`` in the standard order: kernel choice, then compaction, then KB tips (outermost).

    Each option is ``None`` (that wrapper is left out) or the keyword arguments of the wrapper
    (``{}``: its defaults). The order, and why, is in this module's docstring and in
    docs/wrappers.md.

    Args:
        env: an ``AscendTritonEnv``, possibly wrapped (the wrappers need its message API).
        choice: arguments of :class:`~ascend_kernel_gym.wrappers.choice.KernelChoiceWrapper`.
        compaction: arguments of :class:`~ascend_kernel_gym.wrappers.compaction.CompactionWrapper`.
        kb: arguments of :class:`~ascend_kernel_gym.wrappers.kb_retrieval.KBRetrievalWrapper`.

    Returns:
        The outermost wrapper (``env`` itself when every option is ``None``).

    Raises:
        TypeError: an option that is neither a mapping nor ``None``.
    """
    choice_kwargs = _options("choice", choice)
    compaction_kwargs = _options("compaction", compaction)
    kb_kwargs = _options("kb", kb)
    if choice_kwargs is not None:
        from ascend_kernel_gym.wrappers.choice import KernelChoiceWrapper

        env = KernelChoiceWrapper(env, **choice_kwargs)
    if compaction_kwargs is not None:
        from ascend_kernel_gym.wrappers.compaction import CompactionWrapper

        env = CompactionWrapper(env, **compaction_kwargs)
    if kb_kwargs is not None:
        from ascend_kernel_gym.wrappers.kb_retrieval import KBRetrievalWrapper

        env = KBRetrievalWrapper(env, **kb_kwargs)
    return env


def wrapper_chain(env: gym.Env) -> list[str]:
    """Class names of the wrappers around ``env.unwrapped``, from the inside out."""
    names: list[str] = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names[::-1]


def make_atrl_env(
    *,
    max_turns: int = ATRL_DEFAULTS["max_turns"],
    budget_tokens: int = ATRL_DEFAULTS["budget_tokens"],
    compaction_strategy: Any = ATRL_DEFAULTS["compaction_strategy"],
    max_compactions: int | None = ATRL_DEFAULTS["max_compactions"],
    tokenizer: Any = None,
    kb: Any = None,
    kb_k: int = ATRL_DEFAULTS["kb_k"],
    kb_dense: bool = ATRL_DEFAULTS["kb_dense"],
    **env_kwargs: Any,
) -> gym.Env:
    """The ATRL-style harness: ``AscendTritonEnv`` + ``CompactionWrapper`` + ``KBRetrievalWrapper``.

    The entry point of ``AscendTriton-ATRL-v0``; built with :func:`build_stack`.

    Args:
        max_turns: kernel attempts per episode (summary turns do not count).
        budget_tokens: the compaction budget in tokens.
        compaction_strategy: ``"policy"`` (the agent writes its own summary: the compaction-aware
            mode segment-GRPO trains), ``"rules"`` or a callable.
        max_compactions: compactions per episode before the episode is cut as overlong.
        tokenizer: ``None`` (tiktoken ``cl100k_base``), a Hugging Face tokenizer or a local path.
        kb: a ``KnowledgeBase`` to share between envs (``None`` builds the bundled one).
        kb_k: tips per turn.
        kb_dense: dense retrieval with the bundled MiniLM model (``False``: trigger regexes only).
        **env_kwargs: arguments of :class:`~ascend_kernel_gym.envs.AscendTritonEnv`.
    """
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv

    return build_stack(
        AscendTritonEnv(max_turns=max_turns, **env_kwargs),
        compaction={
            "budget_tokens": budget_tokens,
            "strategy": compaction_strategy,
            "max_compactions": max_compactions,
            "tokenizer": tokenizer,
        },
        kb={"kb": kb, "k": kb_k, "dense": kb_dense},
    )
