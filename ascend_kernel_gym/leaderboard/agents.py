"""The agent-spec resolver of ``akg eval --agent`` (:func:`build_policy`).

The policies live in :mod:`ascend_kernel_gym.agents`; ``ReferencePolicy`` and ``TaskAwarePolicy``
are re-exported here for existing imports.

Agent specs:

- ``reference``: :class:`~ascend_kernel_gym.agents.scripted.ReferencePolicy`, submits each task's
  bundled reference solution.
- ``openai``: an OpenAI-compatible chat-completions endpoint (``agents.openai_http.OpenAIChatPolicy``).
- ``hf``: a local Hugging Face causal LM (``agents.hf.HFPolicy``).
- ``module:Class`` (or ``module:factory``): any importable :class:`Policy` subclass or factory.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Sequence
from typing import Any

from ascend_kernel_gym.agents.policy import Policy, TaskAwarePolicy
from ascend_kernel_gym.agents.scripted import ReferencePolicy
from ascend_kernel_gym.tasks.task import Task

__all__ = ["BUILTIN_AGENTS", "ReferencePolicy", "TaskAwarePolicy", "build_policy"]

BUILTIN_AGENTS = ("reference", "openai", "hf")


def _import_object(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--agent {spec!r}: expected 'reference', 'openai', 'hf' or 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--agent {spec!r}: cannot import module {module_name!r} ({exc})") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"--agent {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _construct(factory: Any, options: dict[str, Any], tasks: Sequence[Task], spec: str) -> Policy:
    """Call ``factory`` with the options it accepts (plus ``tasks`` when it takes that argument)."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in options.items() if v is not None and (takes_kwargs or k in params)}
    if "tasks" in params:
        kwargs["tasks"] = list(tasks)
    policy = factory(**kwargs)
    if not isinstance(policy, Policy):
        raise ValueError(f"--agent {spec!r}: {factory!r} returned {type(policy).__name__}, not a Policy")
    return policy


def build_policy(spec: str, tasks: Sequence[Task], options: dict[str, Any] | None = None) -> Policy:
    """Resolve an ``--agent`` spec to a policy.

    Args:
        spec: ``reference``, ``openai``, ``hf`` or ``module:Class``.
        tasks: the run's tasks (scripted policies need them).
        options: constructor options (``endpoint``, ``model``, ``api_key_env``, ``model_path``,
            ``temperature``, ``max_tokens``, plus ``agent_kwargs`` merged in); only those the
            constructor accepts are passed.

    Raises:
        ValueError: unknown spec, missing required option, or an object that is not a Policy.
    """
    options = dict(options or {})
    extra = options.pop("agent_kwargs", None) or {}
    if isinstance(extra, str):
        extra = json.loads(extra)
    options.update(extra)
    if spec == "reference":
        return ReferencePolicy(tasks)
    if spec == "openai":
        from ascend_kernel_gym.agents.openai_http import OpenAIChatPolicy

        if not options.get("endpoint") or not options.get("model"):
            raise ValueError("--agent openai needs --endpoint URL and --model NAME")
        kwargs = {"model": options.pop("model"), "base_url": options.pop("endpoint")}
        for key in ("api_key_env", "temperature", "max_tokens"):
            if options.get(key) is not None:
                kwargs[key] = options.pop(key)
        options.pop("model_path", None)
        return OpenAIChatPolicy(**kwargs, **{k: v for k, v in options.items() if v is not None})
    if spec == "hf":
        from ascend_kernel_gym.agents.hf import HFPolicy

        if not options.get("model_path"):
            raise ValueError("--agent hf needs --model-path DIR")
        sampling = dict(options.pop("sampling", None) or {})
        if options.get("temperature") is not None:
            sampling["temperature"] = options.pop("temperature")
        if options.get("max_tokens") is not None:
            sampling["max_new_tokens"] = options.pop("max_tokens")
        model_path = options.pop("model_path")
        for key in ("endpoint", "model", "api_key_env", "temperature", "max_tokens"):
            options.pop(key, None)
        return HFPolicy(model_path, sampling=sampling or None, **{k: v for k, v in options.items() if v is not None})
    factory = _import_object(spec)
    if inspect.isclass(factory) and not issubclass(factory, Policy):
        raise ValueError(f"--agent {spec!r}: {factory.__name__} is not a subclass of ascend_kernel_gym Policy")
    if not callable(factory):
        raise ValueError(f"--agent {spec!r}: not a class or factory")
    return _construct(factory, options, tasks, spec)
