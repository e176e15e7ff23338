"""Run under ``torchrun --nproc_per_node 2``: the CPPO stage runner's rank awareness with
stand-in stages. ``python tests/helpers/stages_probe.py OUT``; each process appends to OUT/calls.txt
which stages it ran, and writes OUT/done{R}.json with run_stages' answer."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main() -> None:
    from trainers.cppo_pipeline.stages import StageResult, run_stages

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rank = os.environ["RANK"]

    def stand_in(ctx):  # noqa: ANN001, ANN202
        with (out / "calls.txt").open("a") as fh:
            fh.write(f"{ctx.name} {rank}\n")
        (ctx.folder / f"from_{rank}.txt").write_text("x")
        return StageResult((), {"rank": rank})

    stages = {name: stand_in for name in ("sft", "rm", "warmup")}
    if os.environ.get("STAGES_PROBE_SLOW") and rank == "1":
        # the race a loaded machine gives: this process looks at "rm" only once the main
        # process could have finished it (bounded: where the runner decides before any stage
        # runs, the manifest never comes and this waits out its cap)
        from trainers.cppo_pipeline import stages as runner

        real = runner.is_complete

        def late(folder: Path) -> bool:
            if folder.name == "rm":
                manifest = folder / "train_manifest.json"
                for _ in range(100):
                    if manifest.exists():
                        break
                    time.sleep(0.1)
            return real(folder)

        runner.is_complete = late
    done = run_stages(out / "pipe", stages, list(stages), {}, echo=lambda _: None)
    (out / f"done{rank}.json").write_text(json.dumps(done))


if __name__ == "__main__":
    main()
