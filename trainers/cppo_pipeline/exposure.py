"""Per-stage exposure records: which problems each pipeline component consumed.

Every stage writes ``exposure.json`` (components, their source split and the problems they
read, with statements and source identifiers so the report can run the decontamination index
against every evaluation set). The report builds the exposure-audit table from these files;
nothing in it is written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from trainers.harness import OutDir, Problem

EXPOSURE = "exposure.json"


def problem_record(p: Problem) -> dict[str, object]:
    src = {k: v for k, v in p.source.__dict__.items() if v is not None}
    return {
        "benchmark": p.benchmark,
        "problem_id": p.problem_id,
        "statement": p.statement,
        "source": src,
    }


def write_exposure(
    folder: Path, components: Sequence[tuple[str, str, Sequence[Problem], str]]
) -> str:
    """components: (component, source split, problems, notes)."""
    payload = {
        "components": [
            {"component": c, "source": s, "notes": n, "problems": [problem_record(p) for p in ps]}
            for c, s, ps, n in components
        ]
    }
    OutDir(folder).write_text(EXPOSURE, json.dumps(payload))
    return EXPOSURE
