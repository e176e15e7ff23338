"""Programs + labels -> rewards, the one path every adapter takes: through a `cppo-bench
serve` service (a URL, or several: spread round robin by the client) or, without one, by
`verify_batch` in this process. Either way every test is run, in the same sandbox."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.serve.adapters.labels import problem_payload
from cppo_bench.serve.client import VerifierClient
from cppo_bench.serve.config import env_token
from cppo_bench.util import env
from cppo_bench.verifier import VerifyJob, VerifyResult, verify_batch

URL_ENV = "CPPO_VERIFIER_URL"  # a service URL (commas: several) when none is passed


def _problem(payload: dict[str, Any], where: str) -> Problem:
    """The in-process twin of the server's inline problem (serve.jobs): Problem's own checks."""
    try:
        tests = tuple(Case(str(t["input"]), str(t["output"]), t.get("mode") or "stdin",
                           t.get("fn_name")) for t in payload["tests"])  # fmt: skip
        return Problem("inline", where, "", tests=tests, checker=payload["checker"],
                       time_limit_s=payload.get("time_limit_s"),
                       memory_limit_mb=payload.get("memory_limit_mb"))  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: label tests are malformed ({exc})") from None


class Scorer:
    """One reward per program: 1.0 when every test passes (AC), else 0.0; `partial`: the
    fraction of tests passed (a denser signal; AC is still the only 1.0)."""

    def __init__(self, url: str | Sequence[str] | None = None, *, token: str | None = None,
                 timeout: float = 600.0, partial: bool = False,
                 workers: int | None = None) -> None:  # fmt: skip
        url = url if url is not None else env.text(URL_ENV)
        self.client = VerifierClient(url, token=token, timeout=timeout) if url else None
        self.partial = partial
        self.workers = workers

    def results(self, codes: Sequence[str], labels: Sequence[Any]) -> list[VerifyResult]:
        if len(codes) != len(labels):
            raise ValueError(f"{len(codes)} completions but {len(labels)} labels")
        payloads = [problem_payload(label, f"row {i}") for i, label in enumerate(labels)]
        if self.client is not None:
            items = [{"code": c, "problem": p} for c, p in zip(codes, payloads, strict=True)]
            return self.client.verify_items(items)
        jobs = [VerifyJob(_problem(p, f"row {i}"), c)
                for i, (c, p) in enumerate(zip(codes, payloads, strict=True))]  # fmt: skip
        return verify_batch(jobs, workers=self.workers, all_tests=True)

    def reward(self, result: VerifyResult) -> float:
        if self.partial and result.tests_total:
            return result.tests_passed / result.tests_total
        return 1.0 if result.passed else 0.0

    def score(self, codes: Sequence[str], labels: Sequence[Any]) -> list[float]:
        return [self.reward(r) for r in self.results(codes, labels)]


_SHARED: dict[tuple, Scorer] = {}
_LOCK = threading.Lock()


def shared_scorer(url: str | None, token: str | None, partial: bool) -> Scorer:
    """One Scorer per settings for the process (verl calls compute_score once per row),
    keyed by the URL and token in force now (the environment's, when not passed): a scorer
    made before $CPPO_SERVE_TOKEN was set is not reused once it is."""
    key = (url or env.text(URL_ENV), token if token is not None else env_token(), partial)
    with _LOCK:
        if key not in _SHARED:
            _SHARED[key] = Scorer(key[0], token=key[1], partial=partial)
        return _SHARED[key]
