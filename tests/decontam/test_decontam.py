"""Decontamination: canonical statements, planted duplicates found, unrelated real sets clean,
the filtered training set and report, and the `cppo-bench decontam` command."""

from __future__ import annotations

import json
import random
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.decontam import (
    DecontamConfig,
    Source,
    canonical_sha256,
    canonicalise,
    decontaminate,
    fingerprints,
    source_keys,
)
from cppo_bench.decontam.matching import shared_gram_counts
from cppo_bench.problem import Problem, SourceIds
from cppo_bench.problem import Test as ProblemTest  # aliased: pytest would collect "Test"

# --- real samples, read raw (the benchmark loaders are tested on their own) -----------------


def _problem(bench: str, pid: object, statement: str, **source: object) -> Problem:
    tests = (ProblemTest(input="1\n", output="1\n"),)
    return Problem(bench, str(pid), statement, tests, source=SourceIds(**source))  # type: ignore[arg-type]


def _apps(path: Path) -> list[Problem]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        _problem("apps", r["problem_id"], r["question"], apps_id=int(r["problem_id"]), url=r["url"])
        for r in rows
    ]


def _lcb(path: Path) -> list[Problem]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [
        _problem(
            "lcb",
            r["question_id"],
            r["question_content"],
            lcb_question_id=r["question_id"],
            platform=r["platform"],
        )
        for r in rows
    ]


def _codecontests(path: Path) -> list[Problem]:
    return [_problem("cc", i, r["problem"]) for i, r in enumerate(json.loads(path.read_text()))]


@pytest.fixture(scope="module")
def real(shared_data: Path) -> dict[str, list[Problem]]:
    return {
        "apps_intro": _apps(shared_data / "apps" / "introductory.jsonl"),
        "apps_interview": _apps(shared_data / "apps" / "interview.jsonl"),
        "lcb": _lcb(shared_data / "livecodebench" / "code_generation_release_v1_public.jsonl"),
        "cc": _codecontests(shared_data / "codecontests" / "test_split_derived.json"),
    }


# --- ways a mirror re-formats a statement ----------------------------------------------------


def rewrap(text: str, width: int = 37) -> str:
    """Re-flow every prose paragraph (one long line) to a new width, as another mirror would."""
    paragraphs = re.split(r"\n\s*\n", text)
    prose = [textwrap.fill(p, width) if len(p) > 60 and "\n" not in p else p for p in paragraphs]
    return "\n\n".join(prose)


def delatex(text: str) -> str:
    """TeX maths as a mirror without TeX prints it: $n \\le 10^5$ -> n ≤ 10^5."""
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    plain = {"le": "≤", "ge": "≥", "ne": "≠", "cdot": "·", "dots": "…", "ldots": "…"}
    text = re.sub(r"\\(le|ge|ne|cdot|dots|ldots)\b ?", lambda m: plain[m.group(1)], text)
    return re.sub(r"[${}]", "", text)


def html_wrap(text: str) -> str:
    """Paragraphs in <p>, headers in <h3>, maths in <var>, operators as entities."""
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("\\le", "&le;").replace("\\cdot", "&middot;")
    text = re.sub(r"\$([^$]*)\$", r"<var>\1</var>", text)
    text = re.sub(r"-----(\w+)-----", r"<h3>\1</h3>", text)
    return "".join(f"<p>{p}</p>\n" for p in re.split(r"\n\s*\n", text))


def drop_sample(text: str) -> str:
    return re.split(r"-----Examples?-----", text)[0]


# --- canonical form --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "variant",
    [
        "Given $n$ ($1 \\le n \\le 10^5$), print $2 \\cdot n$.",
        "Given n (1 <= n <= 10^5), print 2 * n.",
        "given  N (1 ≤ N ≤ 10⁵),\nprint 2·n.",
        "<p>Given <var>n</var> (1 &le; n &le; 10<sup>5</sup>), print 2&times;n.</p>",
        "Given $$n$$ ($1 \\leq n \\leq 10^{5}$), print $2 \\times n$.",
    ],
)
def test_canonical_maths_and_html_variants_agree(variant: str) -> None:
    assert canonicalise(variant) == "given n 1 le n le 10 5 print 2 n"


def test_canonical_latex_commands() -> None:
    assert canonicalise("$\\frac{a}{b}$ and $\\textbf{bold}$ $\\mathrm{XOR}$") == canonicalise(
        "a/b and bold XOR"
    )
    assert canonicalise("$a_{i} \\ne a_{i+1}$") == canonicalise("a_i != a_(i+1)")
    assert canonicalise(r"$\lfloor \frac{n}{2} \rfloor \oplus x$, $\sum a_i$") == canonicalise(
        "⌊n/2⌋ ⊕ x, ∑ a_i"
    )
    # comparison operators are kept (as words), so < and <= differ
    assert canonicalise("n < 5") != canonicalise("n <= 5")
    # maths that looks like a tag is not stripped as HTML
    assert canonicalise("if a<b and c>d") == "if a lt b and c gt d"


def test_canonical_drops_samples_in_every_layout() -> None:
    body = "Find the sum.\n\nInput\n\nTwo integers a and b.\n\nOutput\n\nPrint a+b.\n\n"
    want = canonicalise(body)
    assert want == "find the sum input two integers a and b output print a b"
    layouts = [
        "-----Examples-----\nInput\n1 2\n\nOutput\n3\n\n-----Note-----\nObvious.",
        "Example\n\nInput\n\n\n1 2\n\nOutput\n\n\n3\n\nNote\n\nObvious.\n\n"
        "Time Limit: {'seconds': 2, 'nanos': 0}\nMemory Limit: 256000000 Bytes",
        "Sample Input 1\n\n1 2\n\nSample Output 1\n\n3\n\n1+2=3.\n\nSample Input 2\n\n5 5",
        "Input\n1 2\nOutput\n3\n",  # a bare sample block after the format sections
        "## Examples\n```\n1 2 -> 3\n```",
    ]
    for tail in layouts:
        assert canonicalise(body + tail) == want, tail
    glued = body.rstrip() + " Done.Sample Input 1:\n1 2\n\nSample Output 1:\n\n3\n"
    assert canonicalise(glued) == want + " done"


def test_canonical_keeps_leetcode_constraints_after_examples() -> None:
    text = (
        "Return the largest value.\n\nExample 1:\n\nInput: nums = [1,2]\nOutput: 2\n"
        "Explanation: 2 is larger.\n\n \nConstraints:\n\n1 <= nums.length <= 100\n"
    )
    assert canonicalise(text) == "return the largest value constraints 1 le nums length le 100"


# --- planted duplicates in real statements ---------------------------------------------------


def test_planted_duplicates_are_found(real: dict[str, list[Problem]]) -> None:
    evals = real["apps_intro"]
    with_latex = [p for p in evals if "\\le" in p.statement and "-----Example" in p.statement]
    a, b, c, d, e = with_latex[:5]
    story = "Long ago, in a kingdom far away, the royal mathematician posed this puzzle. "
    planted = {
        "rewrapped": _problem("t", "rewrapped", rewrap(a.statement)),
        "delatexed": _problem("t", "delatexed", delatex(b.statement)),
        "no_sample": _problem("t", "no_sample", drop_sample(c.statement)),
        "html": _problem("t", "html", html_wrap(d.statement)),
        "all_four": _problem("t", "all_four", html_wrap(rewrap(drop_sample(e.statement), 50))),
        # an added paragraph and a new last sentence: no longer exact, still the same problem
        "edited": _problem("t", "edited", story + a.statement.replace("\n\n", "\n\nNew: ", 1)),
        "by_url": _problem("t", "by_url", "A different text.", url=b.source.url),
    }
    for key in ("rewrapped", "delatexed", "no_sample", "html", "all_four"):
        src = {"rewrapped": a, "delatexed": b, "no_sample": c, "html": d, "all_four": e}[key]
        assert canonical_sha256(planted[key].statement) == canonical_sha256(src.statement), key

    unrelated = real["cc"][:20]
    train = [*planted.values(), *unrelated]
    result = decontaminate([Source("mine", "train", train), Source("apps", "eval", evals)])
    removed = {r.uid: r for r in result.removed}
    assert set(removed) == {p.uid for p in planted.values()}
    assert [p.uid for p in result.filtered_train] == [p.uid for p in unrelated]
    assert removed["t/rewrapped"].matches[0]["eval_uid"] == a.uid
    assert "exact" in removed["t/html"].matches[0]["kinds"]
    edited = removed["t/edited"].matches[0]
    assert edited["kinds"] == ["fuzzy"] and 0.5 <= edited["score"] < 1.0
    assert removed["t/by_url"].matches[0]["kinds"] == ["id"]
    (shared_id,) = removed["t/by_url"].matches[0]["shared_ids"]
    assert shared_id.startswith("cf:") and shared_id in source_keys(b)
    cell = result.matrix[(0, 1)]
    assert (cell.exact, cell.fuzzy, cell.id, cell.any) == (5, 6, 1, 7)


def test_unrelated_real_sets_do_not_overlap(real: dict[str, list[Problem]]) -> None:
    names = list(real)
    sources = [Source(n, "eval" if i % 2 else "train", real[n]) for i, n in enumerate(names)]
    result = decontaminate(sources)
    for i in range(len(names)):
        for j in range(len(names)):
            if i != j:
                assert result.matrix[(i, j)].any == 0, (names[i], names[j])
    assert result.removed == []
    assert len(result.filtered_train) == len(real[names[0]]) + len(real[names[2]])
    # the diagonal is live: APPS holds easy/hard versions of one Codeforces problem
    assert result.matrix[(0, 0)].fuzzy > 0 and result.matrix[(0, 0)].exact == 0


def test_same_problems_from_other_mirrors_match(
    real: dict[str, list[Problem]], shared_data: Path
) -> None:
    folder = []
    for d in sorted((shared_data / "apps" / "folder_layout").iterdir()):
        url = json.loads((d / "metadata.json").read_text()).get("url")
        folder.append(_problem("apps_folder", d.name, (d / "question.txt").read_text(), url=url))
    full = json.loads(
        (shared_data / "livecodebench" / "code_generation_full_record_1873_A.json").read_text()
    )
    lcb_full = _problem("lcb_full", full["question_id"], full["question_content"])
    train = Source("mirrors", "train", [*folder, lcb_full])
    evals = [Source(n, "eval", real[n]) for n in ("apps_intro", "apps_interview", "lcb")]
    result = decontaminate([train, *evals])
    got = {(r.uid, m["eval_uid"]) for r in result.removed for m in r.matches}
    # 0001 and 2404 are in the APPS samples too; the LCB record is in the public file
    assert got == {
        ("apps_folder/0001", "apps/1"),
        ("apps_folder/2404", "apps/2404"),
        ("lcb_full/1873_A", "lcb/1873_A"),
    }


# --- matching internals ----------------------------------------------------------------------


def test_shared_gram_counts_equal_brute_force() -> None:
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(30)]
    problems = [
        _problem("r", i, " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 40))))
        for i in range(40)
    ]
    fps = fingerprints(problems, ngram=3)
    got = shared_gram_counts(fps, max_df=None)
    for a in range(len(fps)):
        for b in range(a + 1, len(fps)):
            want = len(np.intersect1d(fps[a].grams, fps[b].grams))
            assert got.get((a, b), 0) == want, (a, b)


def test_boilerplate_ngrams_are_ignored_above_max_df() -> None:
    boiler = "the first line contains one integer t the number of test cases that follow"
    problems = [
        _problem(
            "b", i, f"{boiler} then story number {i} " + " ".join(f"u{i}x{k}" for k in range(5))
        )
        for i in range(12)
    ]
    fps = fingerprints(problems, ngram=5)
    assert shared_gram_counts(fps, max_df=None)  # every pair shares the boilerplate
    assert shared_gram_counts(fps, max_df=10) == {}


def test_metric_and_threshold() -> None:
    base = " ".join(f"word{i}" for i in range(40))
    longer = base + " " + " ".join(f"extra{i}" for i in range(80))
    probs = [_problem("m", "short", base), _problem("m", "long", longer)]
    contain = decontaminate(
        [Source("a", "train", probs[:1]), Source("b", "eval", probs[1:])],
        DecontamConfig(ngram=5, metric="containment"),
    )
    jaccard = decontaminate(
        [Source("a", "train", probs[:1]), Source("b", "eval", probs[1:])],
        DecontamConfig(ngram=5, metric="jaccard"),
    )
    assert contain.removed[0].matches[0]["score"] == 1.0
    assert jaccard.removed == []
    with pytest.raises(ValueError, match="threshold"):
        DecontamConfig(threshold=0.0)


def test_source_keys() -> None:
    def keys(**src: object) -> set[str]:
        return set(source_keys(_problem("k", 1, "x", **src)))

    assert keys(url="https://codeforces.com/problemset/problem/1353/D") == {"cf:1353D"}
    assert keys(url="http://codeforces.com/contest/1353/problem/d") == {"cf:1353D"}
    assert keys(cf_contest_id=1353, cf_index="d") == {"cf:1353D"}
    assert keys(lcb_question_id="1873_A", platform="codeforces") == {"lcb:1873_A", "cf:1873A"}
    assert keys(lcb_question_id="abc301_a", platform="atcoder") == {
        "lcb:abc301_a",
        "atcoder:abc301_a",
    }
    assert keys(url="https://atcoder.jp/contests/abc301/tasks/abc301_a") == {"atcoder:abc301_a"}
    assert keys(url="https://leetcode.com/problems/two-sum/") == {"leetcode:two-sum"}
    assert keys(url="https://open.kattis.com/problems/hello/") == {
        "url:open.kattis.com/problems/hello"
    }
    # APPS ids restart at 0 in each split, so the split is part of the key
    train = Problem("apps", "5", "x", (), source=SourceIds(apps_id=5), metadata={"split": "train"})
    test = Problem("apps", "5", "x", (), source=SourceIds(apps_id=5), metadata={"split": "test"})
    assert source_keys(train) == {"apps:train:5"} and source_keys(test) == {"apps:test:5"}


def test_empty_statements_never_text_match() -> None:
    a, b = _problem("e", "a", "<p></p>"), _problem("e", "b", "   ")
    result = decontaminate([Source("x", "train", [a]), Source("y", "eval", [b])])
    assert result.removed == [] and set(result.empty_statements) == {"e/a", "e/b"}


# --- command line ----------------------------------------------------------------------------


def _write_jsonl(path: Path, problems: list[Problem]) -> Path:
    path.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in problems))
    return path


def test_cli_writes_filtered_set_and_report(real: dict[str, list[Problem]], tmp_path: Path) -> None:
    evals = real["apps_intro"][:10]
    dup = _problem("t", "dup", rewrap(delatex(evals[3].statement)))
    keep = real["cc"][:4]
    train = _write_jsonl(tmp_path / "train.jsonl", [dup, *keep])
    ev = _write_jsonl(tmp_path / "eval.jsonl", evals)
    demo_copy = _write_jsonl(tmp_path / "demo_copy.jsonl", _demo()[:2])
    out = tmp_path / "out"
    args = ["decontam", "--train", str(train), "--train", "demo", "--eval", str(ev)]
    args += ["--eval", f"demo={demo_copy}", "--out", str(out), "--ngram", "8"]
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "train:train" in res.output and "eval:eval" in res.output
    kept = [json.loads(line)["problem_id"] for line in (out / "filtered_train.jsonl").open()]
    demo_ids = [p.problem_id for p in _demo()]
    assert kept == [p.problem_id for p in keep] + demo_ids[2:]  # demo copy removes 2 demo rows
    report = json.loads((out / "overlap.json").read_text())
    assert report["config"]["ngram"] == 8
    assert report["train_removed"] == 3 and report["train_kept"] == len(kept)
    assert {r["uid"] for r in report["removed"]} == {"t/dup", *(f"demo/{i}" for i in demo_ids[:2])}
    assert report["matrix"]["train:train"]["eval:eval"]["exact"] == 1
    assert report["matrix"]["eval:eval"]["train:train"]["any"] == 1


def _demo() -> list[Problem]:
    from cppo_bench.benchmarks import load_benchmark

    return load_benchmark("demo").problems


def test_cli_bad_spec_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cppo_bench.benchmarks import BENCHMARKS

    # a benchmark whose loader module is missing: one line, not an import traceback
    monkeypatch.setitem(BENCHMARKS._lazy, "ghost", "cppo_bench.benchmarks.no_such_module")
    res = CliRunner().invoke(
        main, ["decontam", "--train", "ghost", "--eval", "demo", "--out", str(tmp_path)]
    )
    assert res.exit_code == 1 and "ghost: benchmark 'ghost' cannot be loaded" in res.output
    res = CliRunner().invoke(
        main, ["decontam", "--train", "nosuchbench", "--eval", "demo", "--out", str(tmp_path)]
    )
    assert res.exit_code != 0
    assert "nosuchbench: not a file and not a benchmark name" in res.output
    assert "Traceback" not in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    res = CliRunner().invoke(
        main, ["decontam", "--train", str(bad), "--eval", "demo", "--out", str(tmp_path)]
    )
    assert res.exit_code != 0 and "no problems loaded" in res.output
