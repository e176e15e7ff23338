"""Verdict cache: re-scoring a run never re-executes a program it has already judged.

Key = SHA-256 over (cache format, verifier semantics version, extracted code, the problem's
tests hash, the resolved limits, the checker, all_tests). One small JSON file per key,
written atomically, so concurrent writers (threads or processes) are safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

from cppo_bench.errors import DataError
from cppo_bench.files.oserrors import refusal
from cppo_bench.problem import Problem
from cppo_bench.verifier.records import Limits, VerifyResult

# Bump when a change could alter a verdict (checker rules, harness semantics).
# 2: tree-wide limits, per-test namespaces (#11); 3: prelude-bound names are no solution;
# 4: the program is its namespace's init, keyrings and SysV IPC refused (seccomp)
# 6: call results keep Python == for big ints, Fraction, Decimal, complex (#26 item 5); no
# process creation, memfd or page-cache probes in a test (seccomp), scratch tmpfs counted (#26)
VERIFIER_VERSION = "6"


def cache_key(code: str, problem: Problem, limits: Limits, all_tests: bool) -> str:
    payload = json.dumps(
        [
            "cppo-verdict",
            VERIFIER_VERSION,
            code,
            problem.tests_hash(),
            limits.key(),
            problem.checker,
            bool(all_tests),
        ]  # fmt: skip
    )
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class VerdictCache:
    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> VerifyResult | None:
        try:
            return VerifyResult.from_dict(json.loads(self._path(key).read_text("utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # missing or unreadable: a miss, never an error

    def put(self, key: str, result: VerifyResult) -> None:
        """Store one verdict; the file system refusing it (full, read-only, no permission)
        is one StoreWriteError line naming the file: the verdicts stored before are kept
        and no temporary file is left."""
        path = self._path(key)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(result.to_dict(), f)
            os.replace(tmp, path)
        except BaseException as exc:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            if isinstance(exc, OSError):
                why = refusal(path, exc, "cannot store a verdict")
                raise DataError(f"{why}; the cache's other verdicts are kept") from None
            raise
