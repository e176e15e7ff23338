"""Issue #11 class 4: the judge never trusts bytes from the sandbox. Random and adversarial
bytes into the status decoder and the comparers: no crash, no hang, bounded memory; and the
streaming comparers agree with the official rules written the naive (list-building) way."""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import tracemalloc
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cppo_bench.verifier import Limits, VerifyJob, verify_batch
from cppo_bench.verifier import launch as launch_module
from cppo_bench.verifier import sandbox as sandbox_module
from cppo_bench.verifier.compare import CHECKERS, apps_stdin, codecontests_stdin, lcb_stdin
from cppo_bench.verifier.decode import CORRUPT, DecodedDict, decode_value, parse_status

HANG_S = 120  # a hang detector, not a timing assertion: linear work ends far sooner


def finishes(fn: Callable[[], object]) -> object:
    """fn() in a thread; fails the test if it never returns (quadratic blow-ups)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(HANG_S)
    assert not t.is_alive(), "did not finish: hang"
    return out[0]


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def judge_all(raw: bytes) -> None:
    status = parse_status(raw)
    assert isinstance(status, dict)
    if "value" in status:
        value = decode_value(status["value"])
        for checker in (CHECKERS.get(n) for n in CHECKERS.names()):
            assert checker.call(value, [1, {"a": 2}]) in (True, False)
        repr(value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_crash_the_decoder(raw: bytes) -> None:
    judge_all(raw)
    judge_all(b'{"value": ' + raw + b"}")


tagged = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["t", "s", "f", "d", "b", "u", "x"]), inner, max_size=2)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(tagged)
def test_random_tagged_values_never_crash(value: object) -> None:
    judge_all(json.dumps({"value": value}).encode())


def test_adversarial_statuses_are_bounded() -> None:
    p = 2**61 - 1  # ints that all hash to 0
    cases = [
        b"[" * 5_000_000,  # nesting deeper than any recursion limit
        b'{"value": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b"[]," * 3_000_000,  # millions of tiny containers
        json.dumps({"value": {"d": [[i * p, 0] for i in range(200_000)]}}).encode(),
        json.dumps({"value": {"s": [i * p for i in range(200_000)]}}).encode(),
        json.dumps({"value": {"f": [{"f": [i * p]} for i in range(100_000)]}}).encode(),
        b'{"value": "' + b"\\u0000" * 1_000_000 + b'"}',
        b'{"value": ' + b"9" * 5000 + b"}",
    ]
    for raw in cases:
        finishes(functools.partial(judge_all, raw))
    assert parse_status(b"[]," * 3_000_000) == CORRUPT
    colliding = decode_value({"d": [[i * p, i] for i in range(200_000)]})
    assert isinstance(colliding, DecodedDict)
    want = {i: i for i in range(200_000)}  # trusted keys; the program's collide
    assert finishes(lambda: colliding == want) is False
    assert finishes(lambda: decode_value({"d": [[i, i] for i in range(200_000)]}) == want)


def test_decoding_memory_is_bounded() -> None:
    raw = b"[[]," * 1_000_000 + b"[]" + b"]" * 0
    assert peak_bytes(lambda: judge_all(raw)) < 64 << 20


@pytest.mark.parametrize("rule", [apps_stdin, codecontests_stdin, lcb_stdin])
@pytest.mark.slow
def test_comparing_a_huge_output_takes_linear_memory(rule) -> None:
    size = 1 << 20
    outputs = ["1\n" * (size // 2), "a " * (size // 2), "x" * size, "1 2 3\n" * (size // 6)]
    for output in outputs:
        peak = peak_bytes(functools.partial(rule, output, "1\n2\n3\n"))
        assert peak < 16 * size, (rule.__name__, peak)  # linear; was ~120x (3.9 GiB for 32 MB)


# ---- the streaming rules agree with the official ones, written the naive way ------------


def naive_apps(output: str, expected: str) -> bool:
    try:
        lines = output.splitlines()
        want = expected.strip()
        if "\n".join(lines).strip() == want:
            return True
        if "\n".join(line.strip() for line in lines).strip() == want:
            return True
        want_lines = [line.strip() for line in expected.split("\n") if line]
        got = [line for line in lines if line]
        if lines == want_lines or got == want_lines:
            return True
        try:
            a, b = [float(x) for x in got], [float(x) for x in want_lines]
            if len(a) == len(b) and all(
                (x == y) if math.isinf(x) or math.isinf(y) else abs(x - y) <= 1e-8 + 1e-5 * abs(y)
                for x, y in zip(a, b, strict=True)
            ):
                return True
        except ValueError:
            pass
        got_sets = [set(line.split()) for line in got if line.split()]
        want_sets = [set(line.split()) for line in want_lines]
        if {frozenset(s) for s in got_sets} == {frozenset(s) for s in want_sets}:
            return True
        try:
            r = {frozenset(round(float(t), 3) for t in s) for s in got_sets}
            return r == {frozenset(round(float(t), 3) for t in s) for s in want_sets}
        except (ValueError, OverflowError):
            return False
    except (ArithmeticError, TypeError, ValueError):
        return False


def naive_lcb(output: str, expected: str) -> bool:
    got = [x.strip() for x in output.strip().split("\n")]
    want = [x.strip() for x in expected.strip().split("\n")]
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if a == b:
            continue
        try:
            if [Decimal(t) for t in a.split()] != [Decimal(t) for t in b.split()]:
                return False
        except (InvalidOperation, ValueError):
            return False
    return True


text = st.text(alphabet=st.sampled_from(list("12 .\n\r\t\x0b\x1cabe-+x")), max_size=30)


@settings(max_examples=600, deadline=None)
@given(text, text)
def test_streaming_rules_agree_with_naive_ones(output: str, expected: str) -> None:
    assert apps_stdin(output, expected) == naive_apps(output, expected)
    assert lcb_stdin(output, expected) == naive_lcb(output, expected)


# ---- refusing to run untrusted code as root -----------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can fail to drop root")
def test_no_uid_drop_refuses_unless_unsafe(monkeypatch) -> None:
    from cppo_bench.problem import Problem
    from cppo_bench.problem import Test as Case

    real = launch_module.launch_spec

    def no_drop(mode: str, nproc: int = 64):
        argv, init = real(mode, nproc)
        return argv, dict(init, drop_uid=None)

    monkeypatch.setattr(sandbox_module, "launch_spec", no_drop)
    monkeypatch.setenv(sandbox_module.MODE_ENV, "rlimits")
    monkeypatch.setattr(sandbox_module, "_MODE", None)
    monkeypatch.delenv(launch_module.UNSAFE_ENV, raising=False)
    problem = Problem("t", "p", "", tests=(Case("", "0\n"),), checker="lcb")
    job = VerifyJob(problem, "import os\nprint(os.getuid())")
    with pytest.raises(sandbox_module.SandboxError, match="--unsafe-no-sandbox"):
        verify_batch([job], workers=1, limits=Limits())
    monkeypatch.setenv(launch_module.UNSAFE_ENV, "1")
    monkeypatch.setattr(sandbox_module, "_MODE", None)
    assert verify_batch([job], workers=1)[0].verdict == "AC"  # as root: uid 0, as asked
