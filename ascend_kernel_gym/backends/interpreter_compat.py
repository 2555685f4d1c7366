"""Keeps Triton's CPU interpreter working with NumPy >= 2.4 on older triton releases.

Inside a launch, the interpreter rebinds ``tl.tensor.__index__`` (used by ``range(n)`` with a
runtime ``n``). It keeps scalars as 1-element 1-D arrays (``np.array([n])``); triton <= 3.6
converts them with ``int(self.handle.data)``, which NumPy >= 2.4 refuses ("only 0-dimensional
arrays can be converted to Python scalars"), so every kernel that loops over a runtime size
fails. :func:`install` wraps the interpreter's per-launch patch so that ``__index__`` converts
through ``.item()``; on releases that already do so it changes nothing observable.

Imports nothing heavy at module level; :func:`install` imports triton.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MARK = "_akg_numpy_index_compat"


def scalar(value: Any) -> Any:
    """A Python scalar from a Python scalar, a NumPy scalar, a 0-d array or a 1-element array of any rank.

    Raises:
        TypeError: an array with other than one element.
    """
    if isinstance(value, (bool, int, float, complex)):
        return value
    size = getattr(value, "size", None)
    item = getattr(value, "item", None)
    if isinstance(size, int) and callable(item):
        if size != 1:
            raise TypeError(f"only 1-element arrays convert to a scalar, got shape {getattr(value, 'shape', None)}")
        return item()
    return value


def tensor_index(self: Any) -> int:
    """``tl.tensor.__index__`` in interpret mode, safe with NumPy >= 2.4."""
    return int(scalar(self.handle.data))


def wrap_patch_lang_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    """The interpreter's ``_patch_lang_tensor``, followed by the NumPy-safe ``__index__``."""
    if getattr(original, _MARK, False):
        return original

    def _patch_lang_tensor(tensor: Any, scope: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(tensor, scope, *args, **kwargs)
        set_attr = getattr(scope, "set_attr", None)
        if callable(set_attr):
            set_attr(tensor, "__index__", tensor_index)
        return result

    setattr(_patch_lang_tensor, _MARK, True)
    return _patch_lang_tensor


def install() -> bool:
    """Wrap the interpreter's per-launch patch in this process; ``False`` where triton has none."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - every supported triton has the interpreter
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if not callable(original):
        return False
    interpreter._patch_lang_tensor = wrap_patch_lang_tensor(original)  # type: ignore[attr-defined]
    return True
