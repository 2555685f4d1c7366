from __future__ import annotations

import string

import pytest
from gymnasium.spaces import Text

from ascend_kernel_gym.envs.text import CHARSET, MIN_OBS_CHARS, clip_text, render_context, sanitize

SPACE = Text(max_length=10**6, min_length=0, charset=CHARSET)


def test_charset_is_printable_ascii_with_newline_and_tab() -> None:
    assert set(CHARSET) == set(string.ascii_letters + string.digits + string.punctuation + " \n\t")
    assert "\r" not in CHARSET and "\x0b" not in CHARSET


def test_sanitize_maps_unicode_to_ascii_stand_ins() -> None:
    text = "“quoted” – café × 2 ≤ 3 → done… 数 \U0001f600\r\nnext\ttab"
    out = sanitize(text)
    assert out == '"quoted" - cafe x 2 <= 3 -> done... ? ?\nnext\ttab'
    assert out in SPACE


def test_sanitize_keeps_ascii_unchanged() -> None:
    text = string.printable.replace("\r", "").replace("\x0b", "").replace("\x0c", "")
    assert sanitize(text) == text


@pytest.mark.parametrize("junk", ["\x00\x01\x7f", "\ud800", "\u200b\ufeff", "a\x0cb"])
def test_sanitize_output_always_in_charset(junk: str) -> None:
    assert sanitize(junk) in SPACE


def test_clip_keeps_head_and_tail_and_says_what_was_elided() -> None:
    head = "HEAD" * 100
    tail = "".join(f"turn {i}\n" for i in range(5000))
    out = clip_text(head, tail, 4000)
    assert len(out) <= 4000
    assert out.startswith(head)
    assert out.endswith("turn 4999\n")
    assert "characters of earlier conversation elided" in out
    elided = int(out.split("[... ")[1].split(" characters")[0])
    kept_tail = out.split("limit ...]\n", 1)[1]
    assert elided == len(head) + len(tail) - len(head) - len(kept_tail)


def test_clip_cuts_an_oversized_head_too() -> None:
    out = clip_text("H" * 10_000, "T" * 10_000, 2000)
    assert len(out) <= 2000 and out.startswith("H") and out.endswith("T")


def test_clip_does_nothing_when_it_fits() -> None:
    assert clip_text("a", "b", MIN_OBS_CHARS) == "ab"
    with pytest.raises(ValueError, match="max_chars"):
        clip_text("a", "b", 10)


def test_render_context_protects_the_first_two_messages() -> None:
    messages = [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "TASK ✓"},
        *({"role": "assistant", "content": "x" * 5000} for _ in range(3)),
        {"role": "user", "content": "LATEST"},
    ]
    out = render_context(messages, 4096)
    assert out.startswith("### system\nSYS\n\n### user\nTASK [ok]")
    assert out.endswith("### user\nLATEST")
    assert len(out) <= 4096 and out in SPACE
