"""Run under ``torchrun --nproc_per_node 2`` (gloo, CPU) on a folder that
``tests.helpers.cppo_stage_fixture.prepared`` filled: the joint CPPO stage (4 steps, an RM refresh
after step 2, accepted whatever its metrics so that the gate changes). Each process writes
OUT/gates{R}.json: a fingerprint of every gate it held (the gate's probabilities of fixed
tuples, in the order the stage set them)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> None:
    from tests.helpers.cppo_stage_fixture import settings
    from tests.helpers.cppo_tiny import METHODS, problems
    from trainers.core.gate_metrics import AcceptanceRule
    from trainers.cppo_pipeline import stage_rl
    from trainers.cppo_pipeline.judge import RulesJudge
    from trainers.cppo_pipeline.negatives import LabelledTuple
    from trainers.cppo_pipeline.pipeline import run_pipeline
    from trainers.cppo_pipeline.reward_model import probabilities
    from trainers.cppo_pipeline.stage_data import PipelineInputs

    tmp = Path(sys.argv[1])
    fixed = [LabelledTuple(p, tuple(METHODS[p.problem_id][:2]), 0, "x") for p in problems()]
    fingerprints: list[list[float]] = []
    real_gate, real_refresh = stage_rl.gate_fn, stage_rl.refresh

    def gate_fn(rm):  # noqa: ANN001, ANN202
        fingerprints.append([round(float(x), 6) for x in probabilities(rm, fixed)])
        return real_gate(rm)

    def refresh(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the tiny RM: accepted
        return real_refresh(*args, rule=AcceptanceRule(0.0, 0.0, 0.0, 0.0), **kwargs)

    def load(folder, rule=None):  # noqa: ANN001, ANN202 - the accepted tiny RM loads
        return real_load(folder, rule=None)

    real_load = stage_rl.rmod.load
    stage_rl.gate_fn, stage_rl.refresh, stage_rl.rmod.load = gate_fn, refresh, load
    inputs = PipelineInputs(problems(), "tiny", str(tmp / "tiny"), RulesJudge(), settings())
    run_pipeline(tmp / "pipe", inputs, ["joint"], echo=lambda s: None)
    (tmp / f"gates{os.environ['RANK']}.json").write_text(json.dumps(fingerprints))


if __name__ == "__main__":
    main()
