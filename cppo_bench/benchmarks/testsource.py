"""Which tests a score rests on: the test kinds and counts of a run's problems, and the
benchmark release the data is, so every printed score can say them.

A LiveCodeBench file without `private_test_cases` still loads (its public tests are
tests), but a pass then means "passes 1 public example", not the benchmark's verdict.
`summarize` runs once per run (pipeline.build_manifest, into manifest.extra["tests"]);
`describe` is the one line `run`, `stats` and `report` print from it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cppo_bench.problem import Problem


def summarize(problems: Sequence[Problem]) -> dict[str, Any]:
    """{"problems": n, "tests": {kind: count}, "public_only": problems whose every test is a
    public example} over the run's dataset (the data file, not a --limit prefix: what the
    data holds); JSON-ready for the manifest."""
    kinds: Counter[str] = Counter()
    public_only = 0
    for p in problems:
        mine = Counter(t.kind for t in p.tests)
        kinds.update(mine)
        if p.tests and set(mine) == {"public"}:
            public_only += 1
    return {"problems": len(problems), "tests": dict(sorted(kinds.items())),
            "public_only": public_only}  # fmt: skip


def describe(summary: Mapping[str, Any] | None) -> str:
    """'public tests only: 300/300 problems (1.0 test each)', or 'public 1.0 + private 9.8
    tests per problem', or '' for a run stored before this was recorded."""
    if not summary or not summary.get("problems"):
        return ""
    n = int(summary["problems"])
    kinds: dict[str, int] = dict(summary.get("tests") or {})
    only = int(summary.get("public_only") or 0)
    per = " + ".join(f"{kind} {count / n:.1f}" for kind, count in kinds.items())
    if only == n and kinds:
        return (
            f"public tests only: {only}/{n} problems ({kinds.get('public', 0) / n:.1f} tests each)"
        )
    text = f"{per} tests per problem" if per else "no tests"
    if only:
        text += f"; {only}/{n} problems judged on public tests only"
    return text


def release_label(tags: Iterable[str]) -> str:
    """The release a dataset is, from its problems' increments: {v1} -> release_v1,
    {v1..v6} -> release_v6, {v6} -> v6 (that increment alone), {v2, v3} -> v2_v3."""
    found = sorted({t for t in tags if t})
    nums = sorted(int(m.group(1)) for t in found if (m := re.fullmatch(r"v(\d+)", t)))
    if not nums or len(nums) != len(found):
        return ",".join(found)
    if nums == list(range(1, nums[-1] + 1)):
        return f"release_v{nums[-1]}"
    if nums == list(range(nums[0], nums[-1] + 1)):
        return f"v{nums[0]}" if len(nums) == 1 else f"v{nums[0]}_v{nums[-1]}"
    return ",".join(f"v{n}" for n in nums)


def manifest_line(manifest: Any) -> str:
    """What a run's score rests on, from its manifest: the data's test kinds and counts and
    its release ('public tests only: 300/300 problems (1.0 tests each); data release_v1')."""
    text = describe(manifest.extra.get("tests"))
    release = (manifest.extra.get("identity") or {}).get("release")
    if release:
        text = f"{text}; data {release}" if text else f"data {release}"
    return text
