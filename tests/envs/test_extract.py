from __future__ import annotations

import pytest

from ascend_kernel_gym.envs.extract import extract_code, find_code_blocks

CODE = "import torch\n\nclass ModelNew:\n    pass\n"


@pytest.mark.parametrize("tag", ["python", "py", "Python3", "python3", "PY", ""])
def test_python_like_tags_are_accepted(tag: str) -> None:
    assert extract_code(f"text\n```{tag}\n{CODE}```\nmore text") == CODE


def test_last_block_wins() -> None:
    text = f"draft:\n```python\nold = 1\n```\nfinal:\n```python\n{CODE}```\n"
    assert extract_code(text) == CODE


def test_python_block_preferred_over_a_later_shell_block() -> None:
    text = f"```python\n{CODE}```\nRun it with:\n```bash\npython run.py\n```\n"
    assert extract_code(text) == CODE


def test_other_language_used_only_when_it_mentions_model_new() -> None:
    assert extract_code("```cpp\nint main() {}\n```") is None
    assert extract_code("```text\nclass ModelNew: pass\n```") == "class ModelNew: pass\n"


def test_unterminated_final_fence_runs_to_the_end() -> None:
    assert extract_code(f"answer:\n```python\n{CODE}") == CODE


def test_crlf_and_cr_line_endings() -> None:
    crlf = "```python\r\n" + CODE.replace("\n", "\r\n") + "```\r\n"
    assert extract_code(crlf) == CODE
    cr = "```python\r" + CODE.replace("\n", "\r") + "```\r"
    assert extract_code(cr) == CODE


def test_closing_fence_glued_to_last_line() -> None:
    assert extract_code("```python\nx = 1\ny = 2```") == "x = 1\ny = 2\n"


def test_forgotten_close_before_a_new_tagged_fence() -> None:
    text = "```python\nfirst = 1\n```python\nsecond = 2\n```\n"
    blocks = find_code_blocks(text)
    assert [b.code for b in blocks] == ["first = 1", "second = 2"]
    assert extract_code(text) == "second = 2\n"


def test_tilde_fences_and_info_strings() -> None:
    assert extract_code("~~~python\nx = 1\n~~~") == "x = 1\n"
    assert extract_code("```python title=solution.py\nx = 1\n```") == "x = 1\n"


@pytest.mark.parametrize(
    "text",
    [None, "", "no code here", "```python\n\n```", "``` \n   \n```", "inline `code` only", 12345, b"```python\nx\n```"],
)
def test_no_usable_block_gives_none(text: object) -> None:
    assert extract_code(text) is None  # type: ignore[arg-type]


def test_empty_last_block_falls_back_to_an_earlier_one() -> None:
    assert extract_code("```python\nx = 1\n```\n```python\n```") == "x = 1\n"


def test_indentation_inside_code_is_kept() -> None:
    code = "def f():\n    if True:\n        return 1\n"
    assert extract_code(f"```python\n{code}```") == code
