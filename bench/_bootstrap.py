"""Import this package on machines without gymnasium (GPU images): the evaluator does not need it.

``ascend_kernel_gym/__init__.py`` registers the Gymnasium environments; bench scripts that only
use the evaluator, the tasks or the cost model install a bare package module instead when
gymnasium is missing. Import this module before anything from ``ascend_kernel_gym``.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def import_package_without_gymnasium() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        import gymnasium  # noqa: F401
    except ImportError:
        if "ascend_kernel_gym" in sys.modules:
            return
        init = (ROOT / "ascend_kernel_gym" / "__init__.py").read_text()
        match = re.search(r'__version__\s*=\s*"([^"]+)"', init)
        pkg = types.ModuleType("ascend_kernel_gym")
        pkg.__path__ = [str(ROOT / "ascend_kernel_gym")]  # type: ignore[attr-defined]
        pkg.__version__ = match.group(1) if match else "0"  # type: ignore[attr-defined]
        sys.modules["ascend_kernel_gym"] = pkg


import_package_without_gymnasium()
