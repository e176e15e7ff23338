"""Code extraction: the one parser every method uses to get a program out of a completion."""

from __future__ import annotations

import ast
import re

# A fence opens with ``` (or ~~~) and an optional info string, at the start of a line.
# (the fence is its whole run of ` or ~: backtracking into a long run rescans the line)
_FENCE = re.compile(r"^[ \t]*(`{3,}(?!`)|~{3,}(?!~))[ \t]*([\w+#.-]*)[^\n]*\n", re.MULTILINE)
_PYTHON_TAGS = {"python", "python3", "py", "py3"}
# Lines that only appear in programs: a prose-only completion has none of them.
_CODE_HINT = re.compile(
    r"^[^\S\n]*(def \w+\(|class \w+|import \w|from [\w.]+ import )|\b(print|input)\(|sys\.std",
    re.MULTILINE,
)


def _blocks(text: str) -> list[tuple[str, str, bool]]:
    """(language tag, body, closed) of every fenced block, in order."""
    out: list[tuple[str, str, bool]] = []
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            return out
        fence, tag = m.group(1), m.group(2).lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0]) * len(fence)}[ \t]*$", re.MULTILINE)
        end = close.search(text, m.end())
        if end is None:  # unterminated: the model ran out of tokens inside the block
            out.append((tag, text[m.end() :], False))
            return out
        out.append((tag, text[m.end() : end.start()], True))
        pos = end.end()


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def extract_code(completion: str | None) -> str | None:
    """The program in a model completion, or None when it has none (verdict EMPTY).

    1. the last closed fenced block tagged python (python3, py); else the last closed
       untagged block (LiveCodeBench's rule: the final answer comes last); else an
       unterminated python/untagged block (the model ran out of tokens inside it);
    2. no fences: the whole completion if it parses as Python or looks like code (a
       program with a syntax error should get CE, not EMPTY);
    3. otherwise None. A completion whose only blocks are another language is None.
    """
    if not completion or not completion.strip():
        return None
    text = completion.replace("\r\n", "\n")
    blocks = [(tag, body, closed) for tag, body, closed in _blocks(text) if body.strip()]
    if blocks or "```" in text:
        for wanted in (
            lambda tag, closed: closed and tag in _PYTHON_TAGS,
            lambda tag, closed: closed and tag == "",
            lambda tag, closed: tag in _PYTHON_TAGS or tag == "",
        ):
            found = [body for tag, body, closed in blocks if wanted(tag, closed)]
            if found:
                return _clean(found[-1])
        return None
    if _parses(text) or _CODE_HINT.search(text):
        return _clean(text)
    return None


def _clean(code: str) -> str | None:
    code = code.strip("\n")
    if not code.strip():
        return None
    # Drop a common indentation (blocks nested in markdown lists) so it compiles.
    lines = code.split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(line[cut:] for line in lines).rstrip() + "\n"
