"""Where tensors live: storages of tensors and the parameters and buffers of models.

Everything here reads through the base classes (``torch.Tensor``, ``nn.Module``, ``dict``), so no
method a candidate defined on its tensor or model subclass runs.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

from typing import Any

import torch

#: Tensor methods are called through the class: a candidate can shadow a method with an instance
#: attribute on a tensor it returns or receives (``out.detach = ...``), never on the class.
_TENSOR = torch.Tensor


def storage_ptr(tensor: torch.Tensor) -> int:
    return _TENSOR.untyped_storage(tensor).data_ptr()


def storage_nbytes(tensor: torch.Tensor) -> int:
    return _TENSOR.untyped_storage(tensor).nbytes()


def storage_ptrs(values: Any) -> set[int]:
    """Data pointers of the storages behind every tensor in ``values`` (lists, dicts, modules).

    A module contributes its parameters and buffers and those of its submodules, found by
    :func:`module_tensors` (no method of the module is called).
    """
    ptrs: set[int] = set()

    def visit(v: Any) -> None:
        if issubclass(type(v), torch.Tensor):
            _add_storage_ptr(v, ptrs)
        elif isinstance(v, (list, tuple)):
            for item in v:
                visit(item)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item)
        elif issubclass(type(v), torch.nn.Module):
            for t in module_tensors(v):
                _add_storage_ptr(t, ptrs)

    visit(values)
    return ptrs


def _add_storage_ptr(tensor: torch.Tensor, ptrs: set[int]) -> None:
    # Through the base class with subclass __torch_function__ off: a parameter or buffer of a
    # candidate's type runs none of its own code here. A tensor without an accessible storage
    # (sparse, nested, ...) shares memory with nothing a kernel writes.
    try:
        with torch._C.DisableTorchFunctionSubclass():
            if _TENSOR.device.__get__(tensor).type != "meta" and storage_nbytes(tensor) > 0:
                ptrs.add(storage_ptr(tensor))
    except Exception:  # noqa: BLE001, S110
        pass


#: the genuine ``__dict__`` of an ``nn.Module`` instance (never a class attribute of a subclass)
_MODULE_DICT = torch.nn.Module.__dict__["__dict__"]
_MODULE_TABLES = frozenset({"_parameters", "_buffers", "_modules"})


def module_tensors(module: Any) -> list[torch.Tensor]:
    """Every parameter and buffer (persistent or not) of ``module`` and its submodules.

    Reads the ``_parameters`` / ``_buffers`` / ``_modules`` tables of each module's instance
    dictionary through the base classes (``dict.get``, ``dict.values``), never a method of the
    module: ``state_dict()`` would run a candidate's ``_save_to_state_dict``, state-dict hooks
    and overridden ``named_*`` methods, outside the recorded call. Tables that are not dicts are
    skipped.
    """
    found: list[torch.Tensor] = []
    seen: set[int] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        if id(current) in seen or not issubclass(type(current), torch.nn.Module):
            continue
        seen.add(id(current))
        try:
            attrs = _MODULE_DICT.__get__(current)
        except (AttributeError, TypeError):
            continue
        if not issubclass(type(attrs), dict):
            continue
        # Keys are compared only when they are exact strings: a lookup could call the ``__eq__``
        # of a key object whose hash collides with a table's name.
        tables = {k: v for k, v in dict.items(attrs) if type(k) is str and k in _MODULE_TABLES}
        for name in ("_parameters", "_buffers"):
            table = tables.get(name)
            if issubclass(type(table), dict):
                found.extend(v for v in dict.values(table) if issubclass(type(v), torch.Tensor))
        children = tables.get("_modules")
        if issubclass(type(children), dict):
            stack.extend(dict.values(children))
    return found


def module_buffer(module: Any, qualified_name: str) -> torch.Tensor | None:
    """The buffer at ``qualified_name`` (``"block.mask"``) of ``module``, found through the
    ``_modules`` / ``_buffers`` tables as :func:`module_tensors` does (no method of the module
    runs); None when there is no exact tensor there."""
    return module_slot(module, qualified_name, "_buffers")


def module_parameter(module: Any, qualified_name: str) -> torch.Tensor | None:
    """The parameter or buffer at ``qualified_name`` of ``module`` (an exact ``Tensor`` or
    ``Parameter``), found as :func:`module_buffer` finds buffers; None when there is none."""
    found = module_slot(module, qualified_name, "_parameters")
    return found if found is not None else module_slot(module, qualified_name, "_buffers")


def module_slot(module: Any, qualified_name: str, table_name: str) -> torch.Tensor | None:
    """The exact tensor at ``qualified_name`` in the ``table_name`` table of its submodule."""
    *path, leaf = qualified_name.split(".")
    current = module
    for name in [*path, None]:
        if not issubclass(type(current), torch.nn.Module):
            return None
        try:
            attrs = _MODULE_DICT.__get__(current)
        except (AttributeError, TypeError):
            return None
        if not issubclass(type(attrs), dict):
            return None
        table = _str_key_get(attrs, "_modules" if name is not None else table_name)
        if not issubclass(type(table), dict):
            return None
        current = _str_key_get(table, name if name is not None else leaf)
    allowed = (torch.Tensor,) if table_name == "_buffers" else (torch.Tensor, torch.nn.Parameter)
    return current if type(current) in allowed else None


def _str_key_get(table: dict[Any, Any], key: str) -> Any:
    """``table[key]`` compared against exact-string keys only: a key object whose hash collides
    with ``key`` would otherwise have its ``__eq__`` called."""
    for k, v in dict.items(table):
        if type(k) is str and k == key:
            return v
    return None
