"""Checks of the static stage's dotted paths against the live modules (child side, before the
candidate runs). Imports neither torch nor triton itself: it walks modules already imported."""

from __future__ import annotations

import sys
import types
from typing import Any

from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.result import ErrorType


def check_live_paths(paths: list[str], escaping: list[str] | tuple[str, ...] = ()) -> None:
    """Walk the dotted paths the static stage resolved through the real modules.

    A library module can re-export a forbidden one under another name
    (``triton.language.extra.pkgutil``, ``torch.nn.functional.np``): any module object met on the
    way must itself be allowed. Runs before the candidate's code, on library objects only.
    """
    from ascend_kernel_gym.evaluation import sandbox_rules

    def refused(name: str) -> str | None:
        parts = name.split(".")
        if parts[0] not in sandbox_rules.ALLOWED_IMPORT_ROOTS:
            return f"the module `{name}`"
        for part in parts:
            if part in sandbox_rules.FORBIDDEN_MODULES:
                return f"the module `{name}`"
        if any(allowed.startswith(name + ".") for allowed in sandbox_rules.ALLOWED_PATHS):
            return None  # on the way to an allowed path (``triton.tools`` to its tensor descriptors)
        reason = sandbox_rules.forbidden_path_reason(name)
        return f"`{name}` ({reason})" if reason is not None else None

    forbidden = forbidden_objects()
    for path in sorted(set(paths) | set(escaping)):
        parts = path.split(".")
        obj: Any = sys.modules.get(parts[0])
        if obj is None:
            continue  # the import itself fails (or is refused) when the candidate runs
        walked = parts[0]
        #: the path respelled from the last module met: ``torch.nn.functional.torch.save`` is
        #: ``torch.save``, which the static stage would have refused under that name
        canonical = parts[0]
        for part in parts[1:]:
            try:
                obj = getattr(obj, part)
            except Exception:  # noqa: BLE001 - missing attributes fail later, in the candidate's code
                break
            walked = f"{walked}.{part}"
            canonical = obj.__name__ if isinstance(obj, types.ModuleType) else f"{canonical}.{part}"
            why = refused(canonical)
            if why is not None:
                raise StageError(ErrorType.FORBIDDEN, f"`{walked}` is {why}, which is forbidden")
            same = forbidden.get(id(obj))
            if same is not None and same[0] is obj and walked != same[1]:
                reason = sandbox_rules.forbidden_path_reason(same[1])
                raise StageError(ErrorType.FORBIDDEN, f"`{walked}` is `{same[1]}` ({reason}), which is forbidden")
            elif callable(obj) and not isinstance(obj, type):
                owner = str(getattr(obj, "__module__", "") or "")
                if owner.split(".")[0] in sandbox_rules.FORBIDDEN_MODULES:
                    raise StageError(ErrorType.FORBIDDEN, f"`{walked}` comes from the forbidden module `{owner}`")
        if path in escaping and isinstance(obj, types.ModuleType) and walked == path:
            raise StageError(
                ErrorType.FORBIDDEN,
                f"the module `{path}` is used as a value (an assignment, an argument, a list item, a default, a "
                "return value); use modules only as `module.attribute` (alias them with `import x as y`)",
            )


def forbidden_objects() -> dict[int, tuple[Any, str]]:
    """The live objects (functions, classes) the forbidden paths name, by identity.

    The forbidden paths are names; a library module can hold the same function under another one
    (``torch.cuda.memory.set_per_process_memory_fraction`` is ``torch.cuda.set_per_process_memory_
    fraction``: red team of 2026-12-05, night). Read from modules already imported, through their
    namespaces only (no lazy import runs); modules themselves are judged by their names.
    """
    from ascend_kernel_gym.evaluation import sandbox_rules

    found: dict[int, tuple[Any, str]] = {}
    for path in sandbox_rules.FORBIDDEN_PATHS:
        parts = path.split(".")
        obj: Any = None
        for cut in range(len(parts) - 1, 0, -1):
            obj = sys.modules.get(".".join(parts[:cut]))
            if obj is not None:
                break
        else:
            continue
        for part in parts[cut:]:
            space = vars(obj) if isinstance(obj, types.ModuleType) else getattr(obj, "__dict__", {})
            obj = space.get(part)
            if obj is None:
                break
        if obj is None or isinstance(obj, (types.ModuleType, bool, int, float, str, bytes)):
            continue
        found.setdefault(id(obj), (obj, path))
    return found
