"""The static leaderboard: which files make it in, escaping, self-containment (no browser needed)."""

from __future__ import annotations

import re

import pytest
from lb_helpers import INJECTED_CODE, INJECTED_NAME, make_submission_dir

from ascend_kernel_gym.leaderboard.site import build_site, collect_submissions, esc


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb-site")
    subs = make_submission_dir(root)
    return subs, build_site(subs, root / "site")


def test_only_valid_intact_submissions_are_listed(site):
    _, result = site
    assert result["submissions"] == 3 and len(result["pages"]) == 3
    warnings = " | ".join(result["warnings"])
    assert "tampered.json" in warnings and "digest" in warnings
    assert "notes.json" in warnings and "schema" in warnings


def test_duplicates_are_listed_once(tmp_path):
    subs = make_submission_dir(tmp_path)
    (subs / "copy.json").write_text((subs / "sub2.json").read_text())
    entries, warnings = collect_submissions(subs)
    assert len(entries) == 3
    assert any("copy.json" in w and "same submission" in w for w in warnings)


def test_user_text_is_escaped_everywhere(site):
    _, result = site
    pages = [open(result["index"]).read()] + [open(p).read() for p in result["pages"]]
    everything = "\n".join(pages)
    assert '<img src=x onerror="window.__pwned=1">' not in everything
    assert "<script>window.__pwned" not in everything
    assert esc(INJECTED_NAME) in pages[0]
    assert any(esc(INJECTED_CODE) in page for page in pages[1:])


def test_pages_are_self_contained(site):
    _, result = site
    for path in [result["index"], *result["pages"]]:
        html = open(path).read()
        assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html), path
        assert "Content-Security-Policy" in html
        assert "<script src" not in html and '<link rel="stylesheet"' not in html


def test_index_has_one_row_per_submission_with_filters(site):
    _, result = site
    html = open(result["index"]).read()
    body = html.split("<tbody>")[1].split("</tbody>")[0]
    assert body.count("<tr ") == 3
    assert 'data-backend="cuda"' in body and 'data-backend="interpreter"' in body
    assert '<select id="filter-backend"' in html and '<select id="filter-suite"' in html


def test_verification_report_shows_when_its_digest_matches(site):
    _, result = site
    html = open(result["index"]).read()
    assert html.count("verified (cuda)") == 1
    assert html.count("not verified") == 2


def test_leaderboard_cli(tmp_path, capsys):
    from ascend_kernel_gym.cli import main

    subs = make_submission_dir(tmp_path)
    assert main(["leaderboard", str(subs), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "index.html").is_file()
    captured = capsys.readouterr()
    assert "3 submission(s)" in captured.out and "warning: skipped tampered.json" in captured.err
    assert main(["leaderboard", str(tmp_path / "missing"), "-o", str(tmp_path / "out")]) == 2
