"""The rule table: every rule has a violating case, links an existing knowledge-base entry and is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ascend_rule_cases import VIOLATIONS

from ascend_kernel_gym.ascend.rules import RULES

REPO = Path(__file__).resolve().parents[2]
KB_DIR = REPO / "ascend_kernel_gym" / "kb_index" / "entries"


def test_every_rule_has_a_violation_case() -> None:
    assert set(VIOLATIONS) == set(RULES)


def _kb_ids() -> set[str]:
    ids = set()
    for path in KB_DIR.glob("*.md"):
        match = re.search(r"^id:\s*(\S+)", path.read_text(encoding="utf-8"), re.MULTILINE)
        if match:
            ids.add(match.group(1).strip("'\""))
    return ids


def test_every_rule_links_an_existing_kb_entry() -> None:
    ids = _kb_ids()
    if not ids:
        pytest.skip("knowledge-base entries not present")
    missing = {rule.id: rule.kb_id for rule in RULES.values() if rule.kb_id not in ids}
    assert not missing


def test_docs_list_every_rule() -> None:
    text = (REPO / "docs" / "ascend.md").read_text(encoding="utf-8")
    assert not [rule for rule in RULES if f"`{rule}`" not in text]
