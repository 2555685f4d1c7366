"""The lowering corpus (tests/ascend/lowering_corpus/): kernels with their launches and expected outcome.

Each case file holds ``@triton.jit`` kernels, ``LAUNCHES`` (launch records as dicts) and ``EXPECT``
(``outcome``: ``lowering_failed``, ``lowered_ub_overflow``, ``lowered_l1_overflow`` or ``lowered``,
plus details: ``stage``, ``first_line``, ``kb_id``, ``line``, ``core_type``, ``ub_need_min``,
``scalar_accesses``). Files are read, never imported: the two tables are literals.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_kernel_gym.ascend.lower_env import ENV_DIR_VAR, TRITON_ASCEND_VERSION, LowerEnv, env_dir, load_env

CORPUS = Path(__file__).with_name("lowering_corpus")
#: set to 1 by .ci/run: tests that need the triton-ascend environment fail instead of skipping
REQUIRE_VAR = "AKG_REQUIRE_ASCEND_ENV"


def find_test_env() -> LowerEnv | None:
    """The triton-ascend environment for tests: ``$AKG_ASCEND_ENV``, else where ``akg ascend setup`` puts it
    for this user (the test session points ``AKG_CACHE_DIR`` at a temporary directory, so the evaluator in
    other tests does not find it)."""
    home = Path.home() / ".cache" / "ascend_kernel_gym" / f"triton-ascend-{TRITON_ASCEND_VERSION}"
    candidates = [os.environ.get(ENV_DIR_VAR), env_dir(), home]
    for candidate in candidates:
        env = load_env(Path(candidate)) if candidate else None
        if env is not None:
            return env
    return None


def env_or_skip() -> LowerEnv:
    """The environment, or skip (fail under ``AKG_REQUIRE_ASCEND_ENV=1``) saying how to get it."""
    import pytest

    env = find_test_env()
    if env is None:
        if os.environ.get(REQUIRE_VAR) == "1":
            pytest.fail(f"{REQUIRE_VAR}=1 but the triton-ascend environment is missing: did `akg ascend setup` fail?")
        pytest.skip("the triton-ascend environment is not set up here: run `akg ascend setup` (CI does, in .ci/run)")
    return env


@dataclass
class LoweringCase:
    name: str
    code: str
    expect: dict[str, Any]
    launches: list[dict[str, Any]]
    doc: str

    @property
    def must_fail(self) -> bool:
        return self.expect["outcome"] != "lowered"


def load_case(path: Path) -> LoweringCase:
    code = path.read_text()
    tree = ast.parse(code)
    tables: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("EXPECT", "LAUNCHES"):
                tables[node.targets[0].id] = ast.literal_eval(node.value)
    doc = ast.get_docstring(tree) or ""
    return LoweringCase(path.stem, code, tables["EXPECT"], tables["LAUNCHES"], " ".join(doc.split()))


def load_cases() -> list[LoweringCase]:
    return [load_case(p) for p in sorted(CORPUS.glob("*.py"))]
