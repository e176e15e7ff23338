"""Random and adversarial bytes for every reader of files the tool does not write itself
(issue 27): benchmark loaders, `verify --programs`, the run store's manifests and records,
the generation cache, the pickle reader. The only outcomes allowed are a result or the
reader's one-line error: never another exception (a traceback), a hang (an alarm fails the
example after a few seconds) or unbounded memory (a tracemalloc peak per example)."""

from __future__ import annotations

import base64
import json
import pickle
import signal
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cppo_bench.api.programs import read_programs
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.benchmarks.livecodebench import decode_private_tests
from cppo_bench.benchmarks.safe_pickle import UnsafePickleError, safe_loads
from cppo_bench.errors import DataError
from cppo_bench.problem import load_problem_jsonl
from cppo_bench.store.gencache import GenCache
from cppo_bench.store.runs import MANIFEST, RECORDS, read_manifest, read_records

TIMEOUT_S = 5
PEAK_MB = 64  # inputs are at most a few KB: anything near this is a blow-up
FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])  # fmt: skip

# JSON-ish values and the shapes the readers expect, with hostile leaves
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["\x1b[2J", "\u2028", "[/]", "NaN", "1e999", "-1", "", "0" * 50]),
)  # fmt: skip
values = st.recursive(leaves, lambda c: st.lists(c, max_size=4) | st.dictionaries(
    st.text(max_size=8), c, max_size=4), max_leaves=20)  # fmt: skip
KEYS = ["problem_id", "id", "name", "question", "question_id", "question_content", "description",
        "input_output", "solutions", "public_tests", "private_tests", "generated_tests",
        "public_test_cases", "private_test_cases", "metadata", "time_limit", "memory_limit_bytes",
        "contest_date", "difficulty", "cf_contest_id", "cf_index", "starter_code", "tests",
        "problem", "benchmark", "statement", "branches", "passed", "k", "code", "key", "text"]  # fmt: skip
# valid records of each loader (our own text), then some fields replaced by hostile values
BASES = [
    {"name": "1_A. Sum", "description": "Add.", "public_tests": {"input": ["1\n"], "output": ["1\n"]},
     "time_limit": {"seconds": 2}, "memory_limit_bytes": 256_000_000},
    {"question_id": "q", "question_content": "Echo.", "contest_date": "2024-01-02",
     "public_test_cases": '[{"input": "1\\n", "output": "1\\n", "testtype": "stdin"}]',
     "private_test_cases": "", "metadata": "{}"},
    {"problem_id": 1, "question": "Echo.", "solutions": '["print(input())"]',
     "input_output": '{"inputs": ["1\\n"], "outputs": ["1\\n"]}', "difficulty": "introductory"},
    {"benchmark": "demo", "problem_id": "p", "statement": "Echo.",
     "tests": [{"input": "1\n", "output": "1\n"}], "time_limit_s": 1.0},
]  # fmt: skip
records = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), values, max_size=8),
    st.tuples(
        st.sampled_from(BASES), st.dictionaries(st.sampled_from(KEYS), values, max_size=3)
    ).map(lambda bv: {**bv[0], **bv[1]}),
)
raw_lines = st.lists(
    st.one_of(st.binary(max_size=200), records.map(lambda r: json.dumps(r).encode()),
              st.just(b"[" * 5000), st.just(b'{"a": "\xff\xfe"}'), st.just("\u2028".encode())),
    max_size=6,
).map(b"\n".join)  # fmt: skip


def bounded(fn: Callable[[], object], allowed: tuple[type[BaseException], ...]) -> None:
    """Run `fn`: it may raise only `allowed`, within TIMEOUT_S and PEAK_MB."""

    def alarm(*_: object) -> None:
        raise TimeoutError(f"reader took more than {TIMEOUT_S} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(TIMEOUT_S)
    tracemalloc.start()
    try:
        fn()
    except allowed:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert peak < PEAK_MB, f"peak {peak:.0f} MB"


@pytest.mark.parametrize("bench, suffix", [("apps", ".jsonl"), ("codecontests", ".jsonl"),
                                           ("lcb", ".jsonl"), ("codecontests", ".json"),
                                           ("demo", ".jsonl")])  # fmt: skip
@FUZZ
@given(data=raw_lines)
def test_loaders(tmp_path: Path, bench: str, suffix: str, data: bytes) -> None:
    path = tmp_path / f"test{suffix}"
    path.write_bytes(data)
    bounded(lambda: load_benchmark(bench, str(path)), (DataError,))


@FUZZ
@given(data=raw_lines)
def test_problem_jsonl_and_programs(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    bounded(lambda: load_problem_jsonl(path), (DataError,))
    bounded(lambda: read_programs(path, {"1": object()}), ())


@FUZZ
@given(payload=st.one_of(st.binary(max_size=300), values.map(pickle.dumps)), how=st.integers(0, 2))
def test_hidden_test_blobs(payload: bytes, how: int) -> None:
    text = [payload.decode("latin-1"), base64.b64encode(payload).decode(),
            base64.b64encode(zlib.compress(payload)).decode()][how]  # fmt: skip
    bounded(lambda: decode_private_tests(text), (ValueError,))
    bounded(lambda: safe_loads(payload), (UnsafePickleError,))


@FUZZ
@given(manifest=st.one_of(st.binary(max_size=300), records.map(lambda r: json.dumps(r).encode())),
       lines=raw_lines)  # fmt: skip
def test_run_store_and_cache(tmp_path: Path, manifest: bytes, lines: bytes) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / MANIFEST).write_bytes(manifest)
    (run_dir / RECORDS).write_bytes(lines)
    (run_dir / "gen_cache.jsonl").write_bytes(lines)
    bounded(lambda: read_manifest(run_dir), (DataError,))
    bounded(lambda: read_records(run_dir, warnings=[]), ())
    bounded(lambda: read_records(run_dir), (DataError,))
    bounded(lambda: GenCache(run_dir / "gen_cache.jsonl", root=run_dir), ())
