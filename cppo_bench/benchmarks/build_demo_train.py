"""Build cppo_bench/benchmarks/demo_train_problems.jsonl: the shipped `demo_train` set.

Original easy stdin problems written for this project (disjoint from `demo`:
build_demo_train_stdin.py), then the call-based ones of build_demo_train_call.py. Each entry is
(id, title, task sentence, input format, output format, reference, test inputs); expected
outputs are produced by running the reference, so they cannot disagree with it.
Run: python -m cppo_bench.benchmarks.build_demo_train
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cppo_bench.benchmarks.build_demo_train_call import CALL, call_record, demo_record
from cppo_bench.benchmarks.build_demo_train_stdin import P

OUT = Path(__file__).resolve().parent / "demo_train_problems.jsonl"


def run(code: str, stdin: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return out.stdout


def record(pid, title, task, inp, outp, ref, inputs):
    tests = []
    for i, raw in enumerate(inputs):
        stdin = raw + "\n"
        tests.append(
            {
                "input": stdin,
                "output": run(ref, stdin),
                "mode": "stdin",
                "fn_name": None,
                "kind": "public" if i == 0 else "hidden",
            }
        )
    example = tests[0]
    statement = (
        f"{task}\n\nInput\n\n{inp}\n\nOutput\n\n{outp}\n\nExample\n\nInput\n\n"
        f"{example['input']}\nOutput\n\n{example['output']}"
    )
    return demo_record(pid, title, statement, tests, ref)


def main() -> None:
    ids = [p[0] for p in P]
    assert len(ids) == len(set(ids)) and len(ids) >= 40, len(ids)
    lines = [json.dumps(record(*p), ensure_ascii=False) for p in P]
    lines += [json.dumps(call_record(*p), ensure_ascii=False) for p in CALL]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} problems -> {OUT}")


if __name__ == "__main__":
    main()
