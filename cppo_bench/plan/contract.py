"""Plan parsing and the rule-based validity report of the PLAN contract.

A planner completion is split into labelled methods: the contract's letter labels
("A: ...", "B: ...", one per line, as the study's PLAN prompt asks) or "Method 1: ..." labels
(older prompts and chatty models), markdown decoration tolerated in both. The report checks the contract rule by rule: the count, literal duplicates,
code leakage, final-answer leakage, the 45-word limit and substeps. When fewer methods than
needed were parsed, `fill_plans` completes the tuple by a documented rule and says which
slots it filled, so a method never silently loses a branch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import quote

MAX_WORDS = 45
# What a branch gets when the planner produced no parsable method at all.
GENERIC_PLAN = "Use any correct and efficient algorithm that solves the problem."
FillRule = Literal["cycle", "generic"]
FILL_RULES: tuple[str, ...] = ("cycle", "generic")

# Every pattern here reads a model's output, which a policy under RL shapes: none may cost more
# than linear time on any text (tests/util/test_regex_linear.py). So no run of \s* that can
# cross lines at a line start (each line start would rescan the rest of the run): the
# indentation of a line is [^\S\n]*, and a label's decoration is at most 64 characters.
_DECOR = r"[\s*_#>`\-]{0,64}"
_NUMBERED = re.compile(r"^[^\S\n]*\(?(\d{1,2})[.)]\s+(\S.*)$", re.MULTILINE)
_CODE = [
    re.compile(p, re.MULTILINE | re.IGNORECASE)
    for p in (
        r"```",
        r"\bdef\s+\w+\s*\(",
        r"^[^\S\n]*import\s+\w+|^[^\S\n]*from\s+[\w.]+\s+import\b",
        r"\b(?:print|input|range|len|sorted|map|int)\s*\(",
        r"\bfor\s+\w+\s+in\s+[\w.()\[\]]+\s*:",
        r"(?<!\w)\w+\[[^\]\n]{0,200}\]\s*[-+*/]?=(?!=)",  # a word's start, a short subscript
        r"\b\w+\s*=\s*\w+\s*\(",
        r"\blambda\b",
        r";\s*$",
    )
]
_LITERAL = r"(?:-?\d|[\"']|(?:yes|no|true|false|none)\b)"
_ANSWER = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(?:final\s+)?answers?\s+(?:is|are|will\s+be|should\s+be|equals|=|:)\s*{_LITERAL}",
        rf"\b(?:expected\s+)?outputs?\s+(?:is|are|will\s+be|should\s+be|equals|=|:)\s*{_LITERAL}",
        r"\bprints?\s+-?\d+(?:\s|[.,;]|$)",
        r"\boutputs?\s+-?\d+(?:\s|[.,;]|$)",
    )
]
_SUBSTEP_LINE = re.compile(
    r"\n[^\S\n]*(?:[-*\u2022]|\d+[.)]|\(?[a-h][.)]|step\s*\d+)\s*\S", re.IGNORECASE
)
# "step 1 ... step 2", "(1) ... (2)", "first, ... second,": the first found, then the second
# searched after it (one pattern "a.*b" rescans the rest of the text from every "a")
_INLINE_STEPS = [
    (re.compile(a, re.IGNORECASE), re.compile(b, re.IGNORECASE))
    for a, b in (
        (r"\bstep\s*1\b", r"\bstep\s*2\b"),
        (r"\(1\)", r"\(2\)"),
        (r"\bfirst(?:ly)?,", r"\bsecond(?:ly)?,"),
    )
]


def _inline_steps(text: str) -> bool:
    for first, second in _INLINE_STEPS:
        m = first.search(text)
        if m is not None and second.search(text, m.end()):
            return True
    return False


def plan_label(index: int) -> str:
    """The contract's label of the 1-based `index`-th method: 1 -> "A", 4 -> "D"."""
    if not 1 <= index <= 26:
        raise ValueError(f"plan labels run A..Z; no label for method {index}")
    return chr(ord("A") + index - 1)


# "A:", "**B:**", "C)" at a line start; only capitals, so an inline "a)" stays text.
_LETTER = re.compile(rf"^{_DECOR}([A-Z])\s*\**\s*[:)]\**", re.MULTILINE)


def parse_letters(text: str) -> list[str]:
    """Sections introduced by the letter labels A:, B:, ... in sequence. Only a run that
    starts at A and goes on letter by letter counts, so a stray "I:" or "Note:" line inside
    a method is not mistaken for a label. Trailing empty sections (an echoed stop label)
    are dropped."""
    starts: list[re.Match[str]] = []
    for m in _LETTER.finditer(text):
        if m.group(1) == plan_label(len(starts) + 1):
            starts.append(m)
    sections = [
        _clean(text[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(text)])
        for i, m in enumerate(starts)
    ]
    while sections and not sections[-1]:
        sections.pop()
    return sections


def _label_re(label: str) -> re.Pattern[str]:
    # "Method 2:", "**Method 2.**", "### Method 2 -": the label at a line start or after
    # whitespace (small models put several methods on one line).
    return re.compile(
        rf"(?:^|(?<=\s)){_DECOR}{re.escape(label)}\s*(\d{{1,2}})\s*\**\s*[:.)\-\u2013\u2014]\**",
        re.IGNORECASE | re.MULTILINE,
    )


def _clean(section: str) -> str:
    """The section less leading whitespace, * and _ and trailing whitespace, *, _ and # (a
    markdown bold or heading's leftovers), by index: "[...]+$" rescans a long run from each
    of its characters."""
    i, j = 0, len(section)
    while i < j and (section[i].isspace() or section[i] in "*_"):
        i += 1
    while j > i and (section[j - 1].isspace() or section[j - 1] in "*_#"):
        j -= 1
    return section[i:j]


def parse_labelled(text: str, label: str = "Method") -> list[str]:
    """The sections of `text` introduced by "<label> <n>:" labels, in order of appearance.
    Trailing empty sections (a stop string the backend echoed, e.g. "Method 5:") are dropped."""
    matches = list(_label_re(label).finditer(text))
    sections = [
        _clean(text[m.end() : matches[i + 1].start() if i + 1 < len(matches) else len(text)])
        for i, m in enumerate(matches)
    ]
    while sections and not sections[-1]:
        sections.pop()
    return sections


@dataclass(frozen=True)
class ParsedPlans:
    plans: list[str]
    mode: str  # "labels" | "numbered" | "none"


def parse_plans(text: str, k: int | None = None, label: str = "Method") -> ParsedPlans:
    """Split a planner completion into methods (at most `k`). Labelled methods first: for
    the default label both the contract's letters (A:, B:, ...) and "Method 1:" forms, the
    form that yields more methods winning; a plain numbered list ("1. ...") is the
    fallback; otherwise nothing parses."""
    plans = parse_labelled(text, label)
    if label == "Method":
        letters = parse_letters(text)
        plans = letters if len(letters) > len(plans) else plans
    mode = "labels"
    if not plans:
        plans = [_clean(m.group(2)) for m in _NUMBERED.finditer(text)]
        mode = "numbered" if plans else "none"
    return ParsedPlans(plans if k is None else plans[:k], mode)


def _normalise(plan: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", plan.lower()).split())


def _output_literals(problem: Problem | None) -> list[str]:
    # Expected outputs distinctive enough that quoting one is leakage (has a digit, >= 3 chars).
    if problem is None:
        return []
    # a plan is <= 45 words: longer outputs cannot appear in one (and LCB's can be megabytes)
    outs = {" ".join(t.output.split()) for t in problem.tests if len(t.output) <= 200}
    return sorted(o for o in outs if len(o) >= 3 and any(c.isdigit() for c in o))


def _contains_literal(text: str, literal: str) -> bool:
    """`literal` occurs in `text` (a plan with its whitespace runs made one space, once per
    plan, not once per literal) as a whole token run (not inside a longer number or word)."""
    start = text.find(literal)
    while start >= 0:
        before = text[start - 1] if start else " "
        end = start + len(literal)
        after = text[end] if end < len(text) else " "
        # a trailing full stop ends the sentence; a dot before or inside means a longer number
        if not (before.isalnum() or before in "._") and not (after.isalnum() or after == "_"):
            if after != "." or end + 1 >= len(text) or not text[end + 1].isdigit():
                return True
        start = text.find(literal, start + 1)
    return False


@dataclass
class ValidityReport:
    """The rule-by-rule verdict on one plan tuple (indices are 0-based plan positions)."""

    k: int
    count: int  # methods parsed (before any fill)
    parse_mode: str
    words: list[int] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)
    duplicates: list[list[int]] = field(default_factory=list)  # [earlier, later] pairs
    code_leak: list[int] = field(default_factory=list)
    answer_leak: list[int] = field(default_factory=list)
    over_words: list[int] = field(default_factory=list)
    substeps: list[int] = field(default_factory=list)
    filled: list[int] = field(default_factory=list)
    fill_rule: str | None = None

    @property
    def n_duplicates(self) -> int:
        """Plans that literally repeat an earlier one."""
        return len({later for _, later in self.duplicates})

    @property
    def issues(self) -> list[str]:
        found = []
        if self.count != self.k:
            found.append(f"count {self.count} != {self.k}")
        for name in ("empty", "code_leak", "answer_leak", "over_words", "substeps"):
            if getattr(self, name):
                found.append(f"{name} {getattr(self, name)}")
        if self.duplicates:
            found.append(f"duplicates {self.duplicates}")
        return found

    @property
    def valid(self) -> bool:
        return not self.issues

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(valid=self.valid, issues=self.issues, n_duplicates=self.n_duplicates)
        return d


def validate_plans(
    plans: Sequence[str],
    k: int,
    *,
    parse_mode: str = "labels",
    problem: Problem | None = None,
    max_words: int = MAX_WORDS,
) -> ValidityReport:
    """Check parsed plans against the PLAN contract for a tuple of `k`."""
    report = ValidityReport(k=k, count=len(plans), parse_mode=parse_mode)
    literals = _output_literals(problem)
    seen: dict[str, int] = {}
    for i, plan in enumerate(plans):
        n_words = len(plan.split())
        report.words.append(n_words)
        if not plan.strip():
            report.empty.append(i)
            continue
        norm = _normalise(plan)
        if norm in seen:
            report.duplicates.append([seen[norm], i])
        else:
            seen[norm] = i
        if any(p.search(plan) for p in _CODE):
            report.code_leak.append(i)
        spaced = " ".join(plan.split())
        if any(p.search(plan) for p in _ANSWER) or any(
            _contains_literal(spaced, lit) for lit in literals
        ):
            report.answer_leak.append(i)
        if n_words > max_words:
            report.over_words.append(i)
        if _SUBSTEP_LINE.search(plan) or _inline_steps(plan):
            report.substeps.append(i)
    return report


def fill_plans(
    plans: Sequence[str], k: int, rule: FillRule = "cycle"
) -> tuple[list[str], list[int]]:
    """Complete a tuple to `k` usable plans; returns (plans, indices that were filled).

    A slot is missing when the planner gave fewer than k methods or left one empty. cycle:
    missing slots take the non-empty plans in order, round robin (the tuple keeps only the
    ideas the planner gave, so a short tuple costs diversity, as it should). generic:
    missing slots take GENERIC_PLAN. With no non-empty plan both rules use GENERIC_PLAN.
    Plans beyond k are cut.
    """
    if rule not in FILL_RULES:
        raise ValueError(f"unknown fill rule {quote(rule)}; known: {', '.join(FILL_RULES)}")
    slots = [p if p.strip() else None for p in plans[:k]] + [None] * max(0, k - len(plans))
    given = [p for p in slots if p is not None]
    filled = [i for i, p in enumerate(slots) if p is None]
    out = []
    for i, p in enumerate(slots):
        if p is None:
            cyc = filled.index(i)
            p = given[cyc % len(given)] if given and rule == "cycle" else GENERIC_PLAN
        out.append(p)
    return out, filled


def plan_tuple(
    text: str,
    k: int,
    *,
    fill: FillRule = "cycle",
    problem: Problem | None = None,
    label: str = "Method",
) -> tuple[list[str], ValidityReport]:
    """Planner completion -> exactly `k` plans and the validity report of what was parsed."""
    parsed = parse_plans(text, label=label)
    report = validate_plans(parsed.plans, k, parse_mode=parsed.mode, problem=problem)
    plans, filled = fill_plans(parsed.plans, k, fill)
    if filled:
        report.filled, report.fill_rule = filled, fill
    return plans, report


def format_plans(plans: Sequence[str], label: str | None = None) -> str:
    """Plans back in the contract's labelled form, "A: ..." lines (judge prompts, SFT
    targets); with `label`, "<label> 1: ..." lines instead (PlanSearch observations)."""
    if label is None:
        return "\n".join(f"{plan_label(i)}: {p}" for i, p in enumerate(plans, 1))
    return "\n".join(f"{label} {i}: {p}" for i, p in enumerate(plans, 1))


def parse_judge_verdict(text: str) -> bool | None:
    """VALID -> True, INVALID -> False, anything else -> None (the judge broke format)."""
    match = re.search(r"\b(INVALID|VALID)\b", text.upper())
    return None if match is None else match.group(1) == "VALID"
