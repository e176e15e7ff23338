"""The wire format of `POST /verify`, typed (pydantic, which FastAPI brings): what a client
sends and what it gets back. Unknown fields are refused, so a typo is a 422, never ignored.

Request::

    {"items": [{"code": "print(input())",
                "problem": {"tests": [{"input": "1\\n", "output": "1\\n"}], "checker": "lcb"}},
               {"code": "...", "benchmark": "demo", "problem_id": "demo/0001"}],
     "limits": {"time_s": 2, "memory_mb": 256, "output_mb": 4}}

Response: ``{"results": [one verdict per item, in order]}`` (fields of VerifyResult).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    # strict: "1" is not 1, 1 is not "1"; extra keys refused
    model_config = ConfigDict(extra="forbid", strict=True)


class TestSpec(_Strict):
    input: str
    output: str
    mode: Literal["stdin", "call"] = "stdin"
    fn_name: str | None = None


class ProblemSpec(_Strict):
    tests: list[TestSpec] = Field(min_length=1)
    checker: Literal["apps", "codecontests", "lcb", "exact"] = "lcb"
    problem_id: str = "inline"
    time_limit_s: float | None = None
    memory_limit_mb: int | None = None


class Item(_Strict):
    code: str
    problem: ProblemSpec | None = None  # tests inline ...
    benchmark: str | None = None  # ... or a problem the server loaded (--bench)
    problem_id: str | None = None


class LimitsSpec(_Strict):
    time_s: float | None = None
    memory_mb: int | None = None
    output_mb: int | None = None


class VerifyRequest(_Strict):
    items: list[Item] = Field(min_length=1)
    limits: LimitsSpec | None = None


class ResultOut(BaseModel):
    verdict: str
    passed: bool
    tests_passed: int
    tests_total: int
    first_failed: int | None
    time_s: float
    peak_memory_mb: float | None
    detail: str
    code: str | None
    cpu_s: float = 0.0
    sandbox: str = ""


class VerifyResponse(BaseModel):
    results: list[ResultOut]


class ErrorOut(BaseModel):
    error: str  # one line
