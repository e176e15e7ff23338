"""The judge's own CPU time on hostile wrong answers (issue 36 item 4), per checker.

A wrong answer is judged in the verifier's process: its cost is the trainer's. Each case is
an output of about `--mb` MB made to be slow for one comparison stage (huge floats that
round() prints in full, one line of many tokens, many lines, long tokens); every stdin
checker judges it against a small expected output and a large one.

    python benchmarks/judge_time.py [--mb 2]

Prints CPU seconds per case and checker, and the worst, with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cppo_bench.verifier.compare import CHECKERS  # noqa: E402


def cases(mb: float) -> dict[str, str]:
    n = int(mb * 2**20)
    return {
        "huge floats": " ".join(["1e308"] * (n // 6)),
        "huge floats, lines": "\n".join(["1.7976931348623157e308"] * (n // 23)),
        "one long line": " ".join(str(i) for i in range(n // 8)),
        "many lines": "\n".join(str(i) for i in range(n // 8)),
        "long token": "9" * n,
        "spellings of one float": " ".join(
            f"1{'0' * (i % 40)}e{300 - i % 40}" for i in range(n // 48)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=2.0)
    args = parser.parse_args()
    expected = {"small": "0 1 2\n", "large": " ".join(str(i) for i in range(100_000)) + "\n"}
    rows, worst = [], 0.0
    for name, out in cases(args.mb).items():
        for checker in sorted(CHECKERS.names()):
            rule = CHECKERS.get(checker).stdin
            for which, want in expected.items():
                t = time.process_time()
                rule(out, want)
                cpu = time.process_time() - t
                worst = max(worst, cpu)
                rows.append({"case": name, "checker": checker, "expected": which,
                             "cpu_s": round(cpu, 3)})  # fmt: skip
    print(json.dumps({"mb": args.mb, "load": os.getloadavg()[0], "worst_cpu_s": round(worst, 3),
                      "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
