"""A dataset row's tests -> the inline problem of the wire schema (schema.ProblemSpec).

A label (a TRL column, verl's `ground_truth`, OpenRLHF's `labels`) is a dict or its JSON text,
in one of two forms: APPS' `input_output` (``{"inputs": [...], "outputs": [...], "fn_name":
...}``, read by the APPS loader's own parser, judged by the `apps` checker), or ours
(``{"tests": [{"input", "output", "mode", "fn_name"}], "checker": "lcb"}``); a bare list is
the `tests` list."""

from __future__ import annotations

from typing import Any

from cppo_bench.benchmarks.apps import parse_tests
from cppo_bench.files.jsonio import loads

MAX_LABEL_CHARS = 64 << 20  # the largest label text read (the problem's own caps apply after)


def problem_payload(label: Any, where: str) -> dict[str, Any]:
    """The ProblemSpec payload of one label; ValueError names `where` (a row) and the fault."""
    if isinstance(label, (bytes, bytearray)):
        label = label.decode("utf-8", "replace")
    if isinstance(label, str):
        if len(label) > MAX_LABEL_CHARS:
            raise ValueError(f"{where}: label over {MAX_LABEL_CHARS >> 20} MiB")
        try:
            label = loads(label)
        except ValueError as exc:
            raise ValueError(f"{where}: label is not JSON ({getattr(exc, 'msg', exc)})") from None
    if isinstance(label, list):
        label = {"tests": label}
    if not isinstance(label, dict):
        raise ValueError(f"{where}: label is a {type(label).__name__}, expected tests")
    if "inputs" in label:
        try:
            tests = parse_tests(label)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        checker = label.get("checker", "apps")
        cases = [{"input": t.input, "output": t.output, "mode": t.mode, "fn_name": t.fn_name}
                 for t in tests]  # fmt: skip
    else:
        given = label.get("tests")
        checker = label.get("checker", "lcb")
        if not isinstance(given, list) or not all(isinstance(c, dict) for c in given):
            raise ValueError(f"{where}: label has no 'tests' list of objects (or 'inputs')")
        cases = given
    payload: dict[str, Any] = {"tests": cases, "checker": checker}
    for key in ("time_limit_s", "memory_limit_mb"):
        if label.get(key) is not None:
            payload[key] = label[key]
    return payload


def response_of(query: str, prompt: str) -> str:
    """OpenRLHF's response: the query past its prompt (it sends prompt + response joined)."""
    return query[len(prompt) :] if query.startswith(prompt) else query
