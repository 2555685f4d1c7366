"""Ready-made environment stacks (entry points for registered preset ids).

``make_atrl_env`` builds the ATRL-style harness: the multi-turn env, context compaction and
retrieved Ascend tips, in the order the wrappers expect (retrieval outside compaction, so it can
see when compaction asked for a summary)::

    KBRetrievalWrapper(CompactionWrapper(AscendTritonEnv(...)))
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["ATRL_DEFAULTS", "make_atrl_env"]

#: Defaults of the ATRL preset (each can be overridden by a keyword of the same name).
ATRL_DEFAULTS: dict[str, Any] = {
    "max_turns": 8,
    "budget_tokens": 16384,
    "compaction_strategy": "policy",
    "max_compactions": 4,
    "kb_k": 3,
    "kb_dense": True,
}


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
    """``AscendTritonEnv`` + ``CompactionWrapper`` + ``KBRetrievalWrapper``.

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
    from ascend_kernel_gym.wrappers.compaction import CompactionWrapper
    from ascend_kernel_gym.wrappers.kb_retrieval import KBRetrievalWrapper

    env: gym.Env = AscendTritonEnv(max_turns=max_turns, **env_kwargs)
    env = CompactionWrapper(
        env,
        budget_tokens=budget_tokens,
        strategy=compaction_strategy,
        max_compactions=max_compactions,
        tokenizer=tokenizer,
    )
    return KBRetrievalWrapper(env, kb=kb, k=kb_k, dense=kb_dense)
