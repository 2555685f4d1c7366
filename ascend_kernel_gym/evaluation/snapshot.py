"""The library snapshot: detects candidate code that replaced (monkeypatched) library functions.

:class:`LibrarySnapshot` keeps the identities of the public callables of the torch / triton
namespaces the harness relies on, and of every callable of the harness's own modules; the
child takes it once its own imports are settled (:func:`settle_lazy_imports`) and before any
candidate code runs, and checks it after every stretch of candidate code
(:func:`check_snapshot`).

Imports torch: only the zygote and its children import this module.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

import torch

from ascend_kernel_gym.evaluation.errors import StageError
from ascend_kernel_gym.evaluation.result import ErrorType

HARNESS_PACKAGE = "ascend_kernel_gym"


class LibrarySnapshot:
    """Identities of public callables of torch / triton namespaces (and of every callable of the
    harness's own modules), to detect monkeypatching."""

    def __init__(self) -> None:
        self.namespaces = self._namespaces()
        self.ids = self._take()
        self._contents = self._dict_contents()

    @staticmethod
    def _namespaces() -> dict[str, Any]:
        import triton
        import triton.language as tl

        spaces: dict[str, Any] = {
            **{name: module for name, module in sys.modules.items() if name.startswith(HARNESS_PACKAGE + ".")},
            "torch": torch,
            "torch.nn.functional": torch.nn.functional,
            "torch.Tensor": torch.Tensor,
            "torch.nn.Module": torch.nn.Module,
            "torch.testing": torch.testing,
            "torch.linalg": torch.linalg,
            "triton": triton,
            "triton.language": tl,
        }
        # The module classes a reference is built from (nn.Linear, nn.GELU, ...): the timing stage
        # runs the reference in the candidate's process, and a class patched through a name the
        # static stage cannot follow slowed it down (red team, 2026-12-05).
        for name, value in vars(torch.nn).items():
            if isinstance(value, type) and issubclass(value, torch.nn.Module) and value is not torch.nn.Module:
                spaces[f"torch.nn.{name}"] = value
        for device_type in ("cuda", "npu"):
            module = getattr(torch, device_type, None)
            if module is not None and hasattr(module, "Event"):
                spaces[f"torch.{device_type}"] = module
                spaces[f"torch.{device_type}.Event"] = module.Event
        return spaces

    def _take(self) -> dict[tuple[str, str], int]:
        ids: dict[tuple[str, str], int] = {}
        for label, space in self.namespaces.items():
            if isinstance(space, type):
                # Classes: every public and dunder name along the MRO (first owner wins), so an
                # attribute put on torch.Tensor in front of an inherited method is seen too.
                for klass in space.__mro__:
                    for name, value in klass.__dict__.items():
                        key = (label, name)
                        if key in ids or (name.startswith("_") and not name.endswith("__")):
                            continue
                        ids[key] = id(value)
            else:
                # The harness's own modules: private helpers too (``correctness.call_candidate``).
                own = label.startswith(HARNESS_PACKAGE + ".")
                for name, value in list(space.__dict__.items()):
                    if (own or not name.startswith("_")) and callable(value):
                        ids[(label, name)] = id(value)
        return ids

    def _dicts(self) -> list[Any]:
        """Every namespace dictionary the snapshot reads (a class's along its MRO)."""
        found: dict[int, Any] = {}
        for space in self.namespaces.values():
            for owner in space.__mro__ if isinstance(space, type) else [space]:
                found.setdefault(id(owner), owner.__dict__)  # nn.Module's once, not once per subclass
        return list(found.values())

    def _dict_contents(self) -> list[tuple[Any, tuple[str, ...], tuple[Any, ...]]]:
        # The values themselves are kept (not their ids), so a replaced object's address cannot
        # be reused by its replacement.
        return [(d, tuple(d), tuple(d.values())) for d in self._dicts()]

    def _unchanged(self) -> bool:
        """Whether no namespace dictionary changed at all (C-speed; the exact check is slower)."""
        return all(
            len(d) == len(keys) and tuple(d) == keys and all(map(operator.is_, values, d.values()))
            for d, keys, values in self._contents
        )

    def changed(self) -> list[str]:
        if self._unchanged():
            return _global_hooks()
        now = self._take()
        changed = sorted(f"{label}.{name}" for (label, name), old in self.ids.items() if now.get((label, name)) != old)
        if not changed:
            self._contents = self._dict_contents()  # something else changed (a lazy import): the new baseline
        return changed + _global_hooks()


def _global_hooks() -> list[str]:
    """Global nn.Module hooks (they would run inside the reference model too)."""
    from torch.nn.modules import module as module_mod

    found = []
    for name in dir(module_mod):
        if name.startswith("_global_") and name.endswith("hooks"):
            hooks = getattr(module_mod, name)
            if isinstance(hooks, dict) and hooks:
                found.append(f"torch.nn.modules.module.{name}")
    return found


def settle_lazy_imports() -> None:
    """Trigger torch's lazy imports before the monkeypatch snapshot.

    The first ``TorchDispatchMode`` imports ``torch._dynamo``, which rebinds a few torch
    functions (``torch.manual_seed`` among them); that must happen before the snapshot, or the
    library's own rebinding would look like the candidate's monkeypatching.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Noop(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    with _Noop():
        torch.zeros(1).add_(1)


def check_snapshot(snapshot: LibrarySnapshot) -> None:
    """Raise ``sandbox_violation`` if library functions were replaced since ``snapshot`` was taken."""
    changed = snapshot.changed()
    if changed:
        raise StageError(
            ErrorType.SANDBOX_VIOLATION,
            "sandbox: your code replaced library functions (monkeypatching): " + ", ".join(changed[:6]),
        )
