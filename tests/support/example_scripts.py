"""Import a script from examples/ as a module (the docs' examples are tested as written)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` imported as ``akg_example_<name>``."""
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"akg_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
