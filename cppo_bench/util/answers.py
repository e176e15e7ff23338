"""The canonical form of a predicted answer, shared by the method that votes
(cppo_bench.methods.output_prediction) and the metric that scores the vote
(cppo_bench.metrics.majk), so the two can never normalise differently."""

from __future__ import annotations

import ast
import re

_SPACE = re.compile(r"\s+")


def normalise_answer(answer: str | None) -> str | None:
    """Canonical form of a predicted value, so `[1,2]` and `[1, 2]` count as one answer.

    Python literals (what LCB's execution tasks print) are parsed and re-printed with repr();
    anything else is stripped, with internal whitespace runs collapsed to one space. Empty
    or missing answers normalise to None (an abstention, never a vote).
    """
    if answer is None:
        return None
    text = answer.strip()
    if not text:
        return None
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _SPACE.sub(" ", text)
