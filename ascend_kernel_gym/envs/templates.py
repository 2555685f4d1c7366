"""Prompt templates: data files under ``envs/prompts/`` that users can override.

Files (Markdown text with ``{{name}}`` placeholders):

=================  ===================================================  =================================
file               used for                                             placeholders
=================  ===================================================  =================================
system.md          the system message                                   device_label, backend, device
npu.md             the task prompt on the ``npu`` backend               see :data:`TASK_PLACEHOLDERS`
cuda.md            the task prompt on the ``cuda`` backend              see :data:`TASK_PLACEHOLDERS`
interpreter.md     the task prompt on the ``interpreter`` backend       see :data:`TASK_PLACEHOLDERS`
feedback.md        the user message after each turn                     see :data:`FEEDBACK_PLACEHOLDERS`
format_error.md    the feedback body when an answer has no code block   (none)
=================  ===================================================  =================================

``prompt_dir`` (an env argument) names a directory whose files of the same names replace the
bundled ones; files it lacks fall back to the bundled versions. A template that uses an unknown
placeholder, or a task template without ``{{reference_source}}``, is rejected with a
``ValueError`` naming the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BUNDLED_PROMPT_DIR",
    "DEVICE_LABELS",
    "FEEDBACK_PLACEHOLDERS",
    "TASK_PLACEHOLDERS",
    "PromptTemplates",
    "fill",
    "load_templates",
]

BUNDLED_PROMPT_DIR = Path(__file__).parent / "prompts"

#: How the system prompt names each backend's device.
DEVICE_LABELS = {
    "npu": "Huawei Ascend NPUs (device 'npu', torch_npu + triton-ascend)",
    "cuda": "NVIDIA GPUs (device 'cuda')",
    "interpreter": "the CPU through Triton's interpreter (correctness only)",
}
#: The torch device string of each backend.
TORCH_DEVICES = {"npu": "npu", "cuda": "cuda", "interpreter": "cpu"}

SYSTEM_PLACEHOLDERS = frozenset({"device_label", "backend", "device"})
TASK_PLACEHOLDERS = frozenset(
    {
        "task_id",
        "task_name",
        "level",
        "category",
        "description",
        "dtype",
        "atol",
        "rtol",
        "profile",
        "reference_source",
        "backend",
        "device",
        "max_turns",
    }
)
FEEDBACK_PLACEHOLDERS = frozenset({"turn", "max_turns", "turns_left", "score", "best_score", "feedback", "next_step"})
_ALLOWED = {
    "system.md": SYSTEM_PLACEHOLDERS,
    "npu.md": TASK_PLACEHOLDERS,
    "cuda.md": TASK_PLACEHOLDERS,
    "interpreter.md": TASK_PLACEHOLDERS,
    "feedback.md": FEEDBACK_PLACEHOLDERS,
    "format_error.md": frozenset(),
}
_REQUIRED = {
    "npu.md": {"reference_source"},
    "cuda.md": {"reference_source"},
    "interpreter.md": {"reference_source"},
    "feedback.md": {"feedback"},
}
_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def fill(template: str, values: dict[str, object]) -> str:
    """Replace every ``{{name}}`` in ``template`` by ``str(values[name])`` (one pass, no recursion)."""
    return _PLACEHOLDER_RE.sub(lambda m: str(values[m.group(1)]), template)


@dataclass(frozen=True)
class PromptTemplates:
    """The templates one env uses (already validated)."""

    backend: str
    system: str
    task: str
    feedback: str
    format_error: str
    #: Where each template came from (file paths), for ``info`` and debugging.
    sources: tuple[str, ...] = ()


def _read_template(name: str, prompt_dir: Path | None) -> tuple[str, Path]:
    path = BUNDLED_PROMPT_DIR / name
    if prompt_dir is not None and (prompt_dir / name).is_file():
        path = prompt_dir / name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"prompt template {path} cannot be read: {exc}") from None
    used = set(_PLACEHOLDER_RE.findall(text))
    unknown = used - _ALLOWED[name]
    if unknown:
        raise ValueError(
            f"prompt template {path} uses unknown placeholder(s) {sorted(unknown)}; "
            f"allowed in {name}: {sorted(_ALLOWED[name])}"
        )
    missing = _REQUIRED.get(name, set()) - used
    if missing:
        raise ValueError(f"prompt template {path} must contain {', '.join('{{' + m + '}}' for m in sorted(missing))}")
    return text, path


def load_templates(backend: str, prompt_dir: str | Path | None = None) -> PromptTemplates:
    """Load and validate the templates for ``backend``, preferring files in ``prompt_dir``.

    Raises:
        ValueError: ``prompt_dir`` is not a directory, or a template is unreadable or invalid.
    """
    if backend not in DEVICE_LABELS:
        raise ValueError(f"no prompt template for backend {backend!r}; known: {sorted(DEVICE_LABELS)}")
    directory: Path | None = None
    if prompt_dir is not None:
        directory = Path(prompt_dir).expanduser()
        if not directory.is_dir():
            raise ValueError(f"prompt_dir={str(prompt_dir)!r} is not a directory")
    names = ("system.md", f"{backend}.md", "feedback.md", "format_error.md")
    loaded = {name: _read_template(name, directory) for name in names}
    return PromptTemplates(
        backend=backend,
        system=loaded["system.md"][0],
        task=loaded[f"{backend}.md"][0],
        feedback=loaded["feedback.md"][0],
        format_error=loaded["format_error.md"][0],
        sources=tuple(str(path) for _, path in loaded.values()),
    )
