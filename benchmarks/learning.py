"""The study's comparison on the `strategies` task, made by the toolkit itself (docs/learning.md).

For each method and training seed: `cppo-bench train` from the one random base with the
method's preset (trainers/configs/strategies.*.yaml), then `cppo-bench run` of the checkpoint
on the held-out split (K = 4: independent samples for the direct-sampling trainers, the four
skill prefixes for UpSkill), and of the untrained base; then `cppo-bench report` over the
run store writes the study's tables and figures (OUT/report/) and this prints its table for
this task (benchmarks/specs/strategies_main.yaml: one row per method, its training
seeds pooled; pass@1 / pass@4 with hierarchical bootstrap intervals and p-values) and how
long each phase took. Every step is the documented command in a subprocess; a finished
training is skipped on a rerun, and a finished evaluation only reloads its stored records.

    python benchmarks/learning.py                       # 3 seeds, every method
    python benchmarks/learning.py --smallest            # 1 seed, 8 steps: a smoke run, minutes

A method evaluated with `--method cppo` and tagged `--trained cppo` fills the table's CPPO
row (with its plan validity) as soon as METHODS names it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# method -> (cppo-bench train ALGO, preset file, cppo-bench run --method)
METHODS = {
    "pass1": ("passk_rl", "strategies.passk_rl.pass1.yaml", "direct"),
    "pkpo": ("pkpo", "strategies.pkpo.yaml", "direct"),
    "passk_rl": ("passk_rl", "strategies.passk_rl.yaml", "direct"),
    "upskill": ("upskill", "strategies.upskill.yaml", "skills"),
    # from strategy_task.py --cppo-base, --judge rules_no_topic, policy at joint/checkpoints/
    # final, run with --max-tokens 9 -m prompt_version=v2-short (strategies.cppo.yaml says)
    "cppo": ("cppo", "strategies.cppo.yaml", "cppo"),
}
TABLE = "strategies_main"  # this task's table: benchmarks/specs/, beside the study's specs
SAMPLING = ["-k", "4", "--max-tokens", "1", "--temperature", "1", "--top-p", "1"]


def _cli() -> str:
    found = Path(sys.executable).with_name("cppo-bench")
    return str(found) if found.is_file() else (shutil.which("cppo-bench") or "cppo-bench")


def _call(cmd: list[str]) -> float:
    print("$", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, cwd=REPO)
    return time.monotonic() - t0


def _evaluate(out: Path, model: Path, method: str, tag: list[str], limit: list[str]) -> float:
    cmd = [_cli(), "run", "--method", method, "--bench", "strategies", "-o", "split=heldout"]
    cmd += ["--model", str(model), *SAMPLING, "--out", str(out / "store"), *limit]
    cmd += ["-b", "device=cpu", "-b", "dtype=float32", *tag]
    return _call(cmd)


def _report(out: Path) -> float:
    """`cppo-bench report` over the run store, then its table for this task, as written."""
    cmd = [_cli(), "report", "--runs", str(out / "store"), "--out", str(out / "report")]
    spent = _call([*cmd, "--specs", str(REPO / "benchmarks" / "specs")])
    table = out / "report" / "tables" / f"{TABLE}.md"
    print(f"\n{table}:\n\n{table.read_text(encoding='utf-8')}", flush=True)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/learning"))
    ap.add_argument("--seeds", default="0,1,2", help="training seeds (comma-separated)")
    ap.add_argument("--methods", default=",".join(METHODS), help=", ".join(METHODS))
    ap.add_argument("--smallest", action="store_true", help="1 seed, 8 steps, 16 problems")
    args = ap.parse_args()
    start = time.monotonic()
    seeds = [0] if args.smallest else [int(s) for s in args.seeds.split(",")]
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    extra = ["--set", "max_steps=8", "--set", "save_every=8"] if args.smallest else []
    limit = ["--limit", "16"] if args.smallest else []
    out = args.out.resolve()
    base = out / "base"
    fixture = REPO / "benchmarks" / "fixtures" / "strategy_task.py"
    times: dict[str, float] = {"base": _call([sys.executable, str(fixture), str(base)])}
    evals = 0.0
    for m in dict.fromkeys(METHODS[x][2] for x in methods):  # the base, as each samples
        evals += _evaluate(out, base, m, [], limit)
    for name in methods:
        algo, preset, method = METHODS[name]
        for seed in seeds:
            run = out / "train" / f"{name}-s{seed}"
            if not (run / "checkpoints" / "final").is_dir():
                shutil.rmtree(run, ignore_errors=True)  # a run killed before its end: again
                cmd = [_cli(), "train", algo, "--model", str(base), "--bench", "strategies"]
                cmd += ["--config", f"trainers/configs/{preset}", "--seed", str(seed)]
                cmd += ["--out", str(run), "--quiet", *extra]
                times[f"train {name}-s{seed}"] = _call(cmd)
            tag = ["--trained", name, "--base-model", str(base), "--train-seed", str(seed)]
            evals += _evaluate(out, run / "checkpoints" / "final", method, tag, limit)
    times["evaluations (all)"] = evals
    times["report"] = _report(out)
    print("time per phase (this invocation; a training finished earlier is not rerun):")
    for key, spent in times.items():
        print(f"  {key}: {spent:.0f} s")
    print(f"  total: {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
