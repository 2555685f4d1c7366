"""docs/integrations.md: excerpts of files (``<!-- excerpt: PATH -->``) are verbatim copies of them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations.md"


def test_excerpts_are_verbatim_copies_of_their_files():
    excerpts = re.findall(r"<!-- excerpt: (\S+) -->\n```\w*\n(.*?)```", DOCS.read_text(), re.DOTALL)
    paths = {path for path, _ in excerpts}
    assert {"examples/verl/agent_loop.yaml", "examples/verl/cpu_smoke.py"} <= paths
    for path, text in excerpts:
        assert text in (ROOT / path).read_text(), f"docs/integrations.md excerpt of {path} is out of date"


def test_the_openenv_and_verifiers_sections_name_the_modules_that_exist():
    text = DOCS.read_text()
    for module in ("openenv_server", "verifiers_env", "verl_agent_loop", "verl_advantages", "verl_local_server"):
        assert f"integrations.{module}" in text or f"integrations/{module}.py" in text
        assert (ROOT / "ascend_kernel_gym" / "integrations" / f"{module}.py").is_file()
