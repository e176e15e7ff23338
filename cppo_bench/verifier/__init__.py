"""The sandboxed verifier: V(program, problem) -> verdict, faithful to each benchmark's
official checker, isolated from the host, fast enough to be a training reward.

    from cppo_bench.verifier import verify_batch, VerifyJob
    results = verify_batch([VerifyJob(problem, completion), ...], workers=2)

Modules: extract (code out of a completion), compare (the per-benchmark rules), launch
(the isolation modes), sandbox (talking to a server), inside/ (what runs inside the
sandbox, stdlib only: the server harness, the zygote, the test child), runner (one job, judging each test), pool (parallel batches),
cache (verdicts), records (the seam types).
"""

from cppo_bench.verifier.compare import CHECKERS, Checker, get_checker
from cppo_bench.verifier.extract import extract_code
from cppo_bench.verifier.pool import keep_sandboxes, validate_problems, verify_batch
from cppo_bench.verifier.records import VERDICTS, Limits, VerifyJob, VerifyResult
from cppo_bench.verifier.sandbox import SandboxError, sandbox_mode

__all__ = [
    "CHECKERS",
    "Checker",
    "Limits",
    "SandboxError",
    "VERDICTS",
    "VerifyJob",
    "VerifyResult",
    "extract_code",
    "get_checker",
    "keep_sandboxes",
    "sandbox_mode",
    "validate_problems",
    "verify_batch",
]
