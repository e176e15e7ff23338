"""Benchmark files and program files from elsewhere (issue 27, item 5): sizes, shapes, nesting,
line splitting, limits and ids are checked; a bad record is named and skipped, never a
traceback, never unbounded memory."""

from __future__ import annotations

import base64
import json
import pickle
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.api.programs import named_problems, problem_index, read_programs
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.benchmarks.livecodebench import MAX_DECOMPRESSED, decode_private_tests
from cppo_bench.cli import main
from cppo_bench.problem import MAX_TESTS, Problem, load_problem_jsonl
from cppo_bench.problem import Test as Case


def cc_record(name: str = "1_A", **kw) -> dict:
    """A CodeContests hub-schema record of our own (no benchmark text)."""
    rec = {"name": f"{name}. Sum", "description": "Print the sum of two integers.",
           "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
           "private_tests": {"input": [], "output": []}, "time_limit": {"seconds": 2},
           "memory_limit_bytes": 256_000_000}  # fmt: skip
    rec.update(kw)
    return rec


def lcb_record(qid: str = "q1", private: object = "") -> dict:
    return {"question_id": qid, "question_content": "Echo the input.", "contest_date": "2024-01-02",
            "public_test_cases": json.dumps([{"input": "1\n", "output": "1\n", "testtype": "stdin"}]),
            "private_test_cases": private, "metadata": "{}"}  # fmt: skip


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def blob(value: object) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(value), 9)).decode()


def peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# --- bombs ---------------------------------------------------------------------------------------


def test_a_zlib_bomb_is_refused_at_the_cap_with_bounded_memory():
    packed = base64.b64encode(zlib.compress(b"\0" * (MAX_DECOMPRESSED + (1 << 20)), 9)).decode()
    assert len(packed) < 1 << 20  # a sub-MB blob

    def decode():
        with pytest.raises(ValueError, match="decompresses to more than 128 MiB"):
            decode_private_tests(packed)

    assert peak_mb(decode) < 2.5 * (MAX_DECOMPRESSED >> 20)


def test_a_pickle_memo_bomb_of_a_million_tests_is_refused_small():
    case = {"input": "1\n", "output": "1\n", "testtype": "stdin"}
    packed = blob([case] * 1_000_000)
    assert len(packed) < 64 << 10  # a few KB of blob

    def decode():
        with pytest.raises(ValueError, match=f"more than the cap of {MAX_TESTS}"):
            decode_private_tests(packed)

    assert peak_mb(decode) < 100


def test_one_large_string_repeated_by_the_memo_is_refused_before_copies():
    big = "9" * (8 << 20)
    packed = blob([{"input": big, "output": big, "testtype": "stdin"}] * 5000)
    with pytest.raises(ValueError, match="MiB cap"):
        decode_private_tests(packed)


def test_the_lcb_loader_names_the_bomb_record_and_keeps_the_others(tmp_path):
    bomb = blob([{"input": "1\n", "output": "1\n", "testtype": "stdin"}] * (MAX_TESTS + 1))
    path = write_jsonl(tmp_path / "lcb.jsonl", [lcb_record("ok"), lcb_record("bomb", bomb)])
    result = load_benchmark("lcb", str(path))
    assert [p.problem_id for p in result.problems] == ["ok"]
    (err,) = result.errors
    assert "bomb (line 2)" in str(err) and "cap" in str(err)


# --- nesting, line splitting, encoding -------------------------------------------------------------


@pytest.mark.parametrize("bench", ["apps", "codecontests", "lcb"])
def test_deep_json_is_a_record_error_in_every_loader(tmp_path, bench):
    deep = "[" * 1_000_000 + "]" * 1_000_000
    path = tmp_path / "deep.jsonl"
    path.write_text(deep + "\n" + json.dumps({"x": json.loads("[" * 200 + "]" * 200)}) + "\n")
    out = CliRunner().invoke(main, ["data", "show", "--bench", bench, "--data", str(path)])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert "line 1" in out.output and "nested" in out.output
    whole = tmp_path / "deep.json"
    whole.write_text(deep)
    out = CliRunner().invoke(main, ["data", "show", "--bench", bench, "--data", str(whole)])
    assert out.exit_code == 1 and "Traceback" not in out.output and "nested" in out.output


def test_a_field_nested_deep_inside_a_record_is_refused(tmp_path):
    rec = lcb_record("deep")
    rec["metadata"] = json.dumps({"func_name": None, "x": json.loads("[" * 500 + "]" * 500)})
    result = load_benchmark("lcb", str(write_jsonl(tmp_path / "l.jsonl", [rec, lcb_record()])))
    assert [p.problem_id for p in result.problems] == ["q1"]
    assert "nested more than" in str(result.errors[0])


def test_one_invalid_utf8_line_is_named_and_the_rest_loads(tmp_path):
    path = tmp_path / "cc.jsonl"
    path.write_bytes(
        json.dumps(cc_record("1_A")).encode() + b"\n"
        + b'{"name": "caf\xe9"}\n'
        + json.dumps(cc_record("2_B")).encode() + b"\n"
    )  # fmt: skip
    result = load_benchmark("codecontests", str(path))
    assert [p.problem_id for p in result.problems] == ["1_A", "2_B"]
    (err,) = result.errors
    assert "line 2" in str(err) and "not UTF-8" in str(err)


def test_the_tool_rereads_its_own_data_show_json_with_line_separators(tmp_path):
    text = "Line one\u2028still line one\u2029and\x85this\rtoo."
    rec = cc_record("1_A", description=text)
    src = write_jsonl(tmp_path / "cc.jsonl", [rec, cc_record("2_B")])
    out = CliRunner().invoke(main, ["data", "show", "--bench", "codecontests", "--data", str(src),
                                    "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    copy = tmp_path / "copy.jsonl"
    copy.write_text(out.stdout, encoding="utf-8")
    again = load_problem_jsonl(copy, strict=True)
    assert [p.problem_id for p in again.problems] == ["1_A", "2_B"]
    assert again.problems[0].statement == text


# --- limits and ids -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [("time_limit", {"seconds": float("nan")}), ("time_limit", {"seconds": 1e9}),
     ("time_limit", float("inf")), ("time_limit", {"seconds": 10**400}),
     ("memory_limit_bytes", 10**30), ("memory_limit_bytes", -5)],
)  # fmt: skip
def test_limits_from_the_data_must_be_finite_and_within_caps(tmp_path, field, value):
    bad = cc_record("9_Z", **{field: value})
    path = tmp_path / "cc.jsonl"
    path.write_text(json.dumps(cc_record("1_A")) + "\n" + json.dumps(bad) + "\n")  # NaN literal ok
    result = load_benchmark("codecontests", str(path))
    assert [p.problem_id for p in result.problems] == ["1_A"]
    (err,) = result.errors
    assert "9_Z (line 2)" in str(err) and "limit" in str(err)


def test_problem_refuses_unbounded_limits_and_tests():
    t = Case("1\n", "1\n")
    for kw in ({"time_limit_s": float("nan")}, {"time_limit_s": 1e9}, {"memory_limit_mb": 0}):
        with pytest.raises(ValueError, match="limit"):
            Problem("x", "p", "s", (t,), **kw)
    with pytest.raises(ValueError, match="tests, more than"):
        Problem("x", "p", "s", (t,) * (MAX_TESTS + 1))
    Problem("x", "p", "s", (t,), time_limit_s=2.5, memory_limit_mb=256)  # within caps


def test_different_problems_under_one_canonical_id_are_both_refused(tmp_path):
    # "1_A" from the contest fields and "1_A" from the name are the same id once canonicalised
    a = cc_record("1_A")
    b = dict(cc_record("x"), name="1_A. Other", description="Print the product.")
    same = cc_record("2_B")
    path = write_jsonl(tmp_path / "cc.jsonl", [a, b, same, same])
    result = load_benchmark("codecontests", str(path))
    assert [p.problem_id for p in result.problems] == ["2_B"]  # an exact repeat is harmless
    reasons = " ".join(str(e) for e in result.errors)
    assert "ambiguous" in reasons and "both refused" in reasons and "duplicate" in reasons


def test_verify_refuses_a_program_whose_id_names_two_problems(tmp_path):
    t = (Case("1\n", "1\n"),)
    p1, p2 = Problem("lcb", "abc", "s", t), Problem("lcb", "lcb/abc", "s2", t)
    index, ambiguous = problem_index([p1, p2])
    assert ambiguous == {"lcb/abc"} and index["abc"] is p1
    progs = tmp_path / "p.jsonl"
    progs.write_bytes(
        b'{"problem_id": "lcb/abc", "code": "print(1)"}\n'
        b'{"problem_id": "abc", "code": "print(\xff)"}\n'
        b'{"problem_id": "abc", "code": "x = \'\xe2\x80\xa8\'"}\n'
    )  # fmt: skip
    records, errors = read_programs(progs, index, ambiguous)
    assert [r["code"] for r in records] == ["x = '\u2028'"]  # U+2028 does not split a line
    assert errors[0].startswith(f"{progs}:1:") and "two different problems" in errors[0]
    assert errors[1].startswith(f"{progs}:2:") and "not UTF-8" in errors[1]
    assert named_problems(progs) == ["abc", "lcb/abc"]


def test_split_lines_skips_an_over_long_line_without_holding_it():
    import io

    from cppo_bench.files.jsonio import split_lines

    data = b'{"a": 1}\n' + b"x" * (5 << 20) + b"\n" + '{"b": "\u2028"}'.encode() + b"\n\xff\n{"
    stream = io.BytesIO(data)
    tracemalloc.start()
    lines = list(split_lines(stream, max_line=1 << 16))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 << 20  # the 5 MiB line was skipped a chunk at a time
    assert [(ln.lineno, ln.text) for ln in lines[:1]] == [(1, '{"a": 1}\n')]
    assert lines[1].text is None and "longer than" in lines[1].error
    assert lines[2].text == '{"b": "\u2028"}\n'  # one line: U+2028 is not a line end
    assert lines[3].text is None and "not UTF-8" in lines[3].error
    assert lines[4].text == "{" and lines[4].torn
