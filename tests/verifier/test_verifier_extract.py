"""Code extraction: one parser for every method's completions."""

from __future__ import annotations

import pytest

from cppo_bench.verifier import extract_code


def fence(body: str, tag: str = "python") -> str:
    return f"```{tag}\n{body}\n```"


def test_last_python_block_wins() -> None:
    text = "First try:\n" + fence("print(1)") + "\nBetter:\n" + fence("print(2)") + "\nDone."
    assert extract_code(text) == "print(2)\n"


def test_python_block_preferred_over_later_untagged_output_block() -> None:
    text = fence("n = int(input())\nprint(n * 2)") + "\nExample output:\n" + fence("10", tag="")
    assert extract_code(text) == "n = int(input())\nprint(n * 2)\n"


@pytest.mark.parametrize("tag", ["py", "Python", "python3", "py3"])
def test_python_tag_variants(tag: str) -> None:
    assert extract_code(fence("print(3)", tag)) == "print(3)\n"


def test_untagged_block_used_when_no_python_block() -> None:
    assert extract_code("Answer:\n" + fence("print(4)", tag="")) == "print(4)\n"


def test_unterminated_block_from_a_truncated_completion() -> None:
    assert extract_code("Here:\n```python\nimport sys\nprint(5)\n") == "import sys\nprint(5)\n"


def test_closed_block_beats_a_later_unterminated_one() -> None:
    text = fence("print(6)") + "\nAlternative:\n```python\nprint(7"
    assert extract_code(text) == "print(6)\n"


def test_only_other_languages_is_empty() -> None:
    assert extract_code(fence("int main() { return 0; }", tag="cpp")) is None


@pytest.mark.parametrize(
    "text", [None, "", "   \n", "I am not sure how to solve this.", "```\n\n```"]
)
def test_no_code_is_none(text: str | None) -> None:
    assert extract_code(text) is None


def test_bare_program_without_fences() -> None:
    assert extract_code("a, b = map(int, input().split())\nprint(a + b)") == (
        "a, b = map(int, input().split())\nprint(a + b)\n"
    )


def test_bare_program_with_syntax_error_is_kept_for_ce() -> None:
    # A broken program must be judged CE, not EMPTY.
    assert extract_code("def f(:\n    print(input())") == "def f(:\n    print(input())\n"


def test_indented_block_inside_a_markdown_list_is_dedented() -> None:
    text = "1. Solution:\n   ```python\n   x = 1\n   if x:\n       print(x)\n   ```\n"
    assert extract_code(text) == "x = 1\nif x:\n    print(x)\n"


def test_crlf_completion() -> None:
    assert extract_code("```python\r\nprint(8)\r\n```\r\n") == "print(8)\n"


def test_longer_fences_and_tildes() -> None:
    assert extract_code("````python\nprint('```')\n````") == "print('```')\n"
    assert extract_code("~~~python\nprint(9)\n~~~") == "print(9)\n"
