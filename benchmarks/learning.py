"""The study's comparison on the `strategies` task, made by the toolkit itself (docs/learning.md).

For each method and training seed: `cppo-bench train` from the one random base with the
method's preset (trainers/configs/strategies.*.yaml), then `cppo-bench run` of the checkpoint
on the held-out split (K = 4: independent samples for the direct-sampling trainers, the four
skill prefixes for UpSkill), and of the untrained base; then `cppo-bench report` over the
run store writes the study's tables and figures (OUT/report/) and this prints its table for
this task (benchmarks/specs/strategies_main.yaml: one row per method, its training
seeds pooled; pass@1 / pass@4 with hierarchical bootstrap intervals and p-values) and how
long each phase took. Every step is the documented command in a subprocess; on a rerun a
training finished with the same command and preset is kept (one trained otherwise stops the
script), one stopped before its end resumes from its last state, and a finished evaluation
only reloads its stored records.

    python benchmarks/learning.py                       # 3 seeds, every method
    python benchmarks/learning.py --smallest            # 1 seed, 8 steps: a smoke run, minutes

CPPO and UpSkill start from the same random base after a supervised stand-in for their
pretrained start (`strategy_task.py --cppo-base`, `--upskill-base`), each evaluated as a row
of its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Method:
    """How one trainer is trained and evaluated here."""

    algo: str  # cppo-bench train ALGO
    preset: str  # trainers/configs/...
    sample: str  # cppo-bench run --method
    base: str = "base"  # the folder under OUT it starts from
    train_args: tuple[str, ...] = ()
    checkpoint: str = "checkpoints/final"  # the policy, under the training folder
    eval_args: tuple[str, ...] = ("--max-tokens", "1")  # every strategy program is one token


# CPPO starts from the same random base after its supervised stand-in for SFT (the plan
# format and the implement skill: strategy_task.py --cppo-base, run here and evaluated as the
# row "CPPO's SFT stand-in"); its planner writes a 9-token tuple under the short prompts it
# was trained with, and its judge has no topic rule (a strategy name is not prose). UpSkill
# starts from skills with preferences of their own (--upskill-base, the row "UpSkill's skill
# stand-in"): from the plain random base its skills go category-blind (docs/learning.md).
BASES = {"base": [], "cppo-base": ["--cppo-base"], "upskill-base": ["--upskill-base"]}
CPPO_EVAL = ("--max-tokens", "9", "-m", "prompt_version=v2-short")
METHODS = {
    "pass1": Method("passk_rl", "strategies.passk_rl.pass1.yaml", "direct"),
    "pkpo": Method("pkpo", "strategies.pkpo.yaml", "direct"),
    "passk_rl": Method("passk_rl", "strategies.passk_rl.yaml", "direct"),
    "upskill": Method("upskill", "strategies.upskill.yaml", "skills", base="upskill-base"),
    "cppo": Method("cppo", "strategies.cppo.yaml", "cppo", base="cppo-base",
                   train_args=("--judge", "rules_no_topic"),
                   checkpoint="joint/checkpoints/final", eval_args=CPPO_EVAL),
}  # fmt: skip
TABLE = "strategies_main"  # this task's table: benchmarks/specs/, beside the study's specs
SAMPLING = ["-k", "4", "--temperature", "1", "--top-p", "1"]


def _cli() -> str:
    found = Path(sys.executable).with_name("cppo-bench")
    return str(found) if found.is_file() else (shutil.which("cppo-bench") or "cppo-bench")


def _call(cmd: list[str]) -> float:
    print("$", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, cwd=REPO)
    return time.monotonic() - t0


STAMP = "learning.json"  # beside a training: the command and the preset it was trained with


def _stamp(cmd: list[str], preset: Path) -> dict[str, object]:
    digest = hashlib.sha256(preset.read_bytes()).hexdigest()
    return {"command": cmd, "preset": preset.name, "preset_sha256": digest}


def _train(out: Path, run: Path, how: Method, seed: int, extra: list[str]) -> float | None:
    """Train one seed, or resume it (a run stopped before its end continues from its last
    saved state), or reuse it when it finished with this very command and preset. A finished
    run trained otherwise stops the script: its checkpoint, and the stored evaluation of it,
    would stand for a training this script no longer does. Returns the seconds spent."""
    preset = REPO / "trainers" / "configs" / how.preset
    cmd = [_cli(), "train", how.algo, "--model", str(out / how.base), "--bench", "strategies"]
    cmd += ["--config", f"trainers/configs/{how.preset}", "--seed", str(seed)]
    cmd += ["--out", str(run), "--quiet", *how.train_args, *extra]
    stamp = _stamp(cmd[1:], preset)
    stamp_file = run / STAMP
    recorded = json.loads(stamp_file.read_text()) if stamp_file.is_file() else None
    if run.exists() and recorded != stamp:
        what = "another preset or command" if recorded else "no record of how it was trained"
        sys.exit(
            f"learning.py: {run} holds a training with {what} ({how.preset} now): move it "
            "away, with its evaluations under OUT/store, to train it again, or use another --out"
        )
    if (run / how.checkpoint).is_dir():
        return None
    resume = ["--resume"] if run.exists() else []
    run.mkdir(parents=True, exist_ok=True)
    stamp_file.write_text(json.dumps(stamp, indent=1) + "\n")
    return _call([*cmd, *resume])


def _evaluate(store: Path, model: Path, how: Method, tag: list[str], limit: list[str]) -> float:
    cmd = [_cli(), "run", "--method", how.sample, "--bench", "strategies", "-o", "split=heldout"]
    cmd += ["--model", str(model), *SAMPLING, *how.eval_args, "--runs", str(store)]
    cmd += limit
    cmd += ["-b", "device=cpu", "-b", "dtype=float32", *tag]
    return _call(cmd)


def _report(store: Path, report: Path) -> float:
    """`cppo-bench report` over the run store, then its table for this task, as written."""
    cmd = [_cli(), "report", "--runs", str(store), "--out", str(report)]
    spent = _call([*cmd, "--specs", str(REPO / "benchmarks" / "specs")])
    table = report / "tables" / f"{TABLE}.md"
    print(f"\n{table}:\n\n{table.read_text(encoding='utf-8')}", flush=True)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/learning"))
    ap.add_argument("--seeds", default="0,1,2", help="training seeds (comma-separated)")
    ap.add_argument(
        "--methods", help=f"{', '.join(METHODS)} (default: all; with --smallest, all but cppo)"
    )
    ap.add_argument("--smallest", action="store_true", help="1 seed, 8 steps, 16 problems")
    ap.add_argument(
        "--heldout-size",
        type=int,
        default=None,
        help="held-out statements to evaluate on (4 instances each; default the split's 16, "
        "a larger N extends them): its own store and report, OUT/store-heldoutN",
    )
    args = ap.parse_args()
    start = time.monotonic()
    seeds = [0] if args.smallest else [int(s) for s in args.seeds.split(",")]
    # --smallest alone (as the docs run it) takes the one-stage trainers: CPPO's five stages
    # take minutes even when short, and an explicit --methods cppo is refused below
    every = [m for m in METHODS if not (args.smallest and m == "cppo")]
    methods = args.methods.split(",") if args.methods else every
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    if args.smallest and "cppo" in methods:  # its five stages take minutes even when short
        ap.error("--smallest runs the one-stage trainers; CPPO's short run is the slow test "
                 "tests/trainers/test_trainers_strategies.py")  # fmt: skip
    extra = ["--set", "max_steps=8", "--set", "save_every=8"] if args.smallest else []
    limit = ["--limit", "16"] if args.smallest else []
    out = args.out.resolve()
    suffix = "" if args.heldout_size is None else f"-heldout{args.heldout_size}"
    store, report = out / f"store{suffix}", out / f"report{suffix}"
    if args.heldout_size is not None:
        limit += ["-o", f"size={args.heldout_size}"]
    base = out / "base"
    fixture = REPO / "benchmarks" / "fixtures" / "strategy_task.py"
    times: dict[str, float] = {}
    for origin in dict.fromkeys(["base", *(METHODS[x].base for x in methods)]):
        label = origin if origin == "base" else f"{origin} (SFT stand-in)"
        times[label] = _call([sys.executable, str(fixture), str(out / origin), *BASES[origin]])
    evals = 0.0
    for name in dict.fromkeys(
        next(x for x in methods if METHODS[x].sample == m)
        for m in dict.fromkeys(METHODS[x].sample for x in methods)
    ):
        evals += _evaluate(store, base, METHODS[name], [], limit)  # the base, as each samples
    for name in methods:
        how = METHODS[name]
        if how.base != "base":  # its start, as a row of its own: what training added to it
            tag = ["--trained", f"{name}_sft", "--base-model", str(base), "--train-seed", "0"]
            evals += _evaluate(store, out / how.base, how, tag, limit)
        for seed in seeds:
            run = out / "train" / f"{name}-s{seed}"
            spent = _train(out, run, how, seed, extra)
            if spent is not None:
                times[f"train {name}-s{seed}"] = spent
            # every trainer's row sits in the one base's column: CPPO's SFT stand-in is part
            # of its training here, as the study's SFT stage is part of its pipeline
            tag = ["--trained", name, "--base-model", str(base), "--train-seed", str(seed)]
            evals += _evaluate(store, run / how.checkpoint, how, tag, limit)
    times["evaluations (all)"] = evals
    times["report"] = _report(store, report)
    print("time per phase (this invocation; a training finished earlier is not rerun):")
    for key, spent in times.items():
        print(f"  {key}: {spent:.0f} s")
    print(f"  total: {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
