"""The labelled tuple pool a reward model is trained on, saved beside its weights."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trainers.cppo_pipeline.negatives import LabelledTuple
from trainers.harness import DataError, OutDir, read_jsonl

if TYPE_CHECKING:
    from trainers.harness import Problem

POOL = "pool.jsonl"


def pool_records(items: Sequence[LabelledTuple]) -> list[dict[str, object]]:
    return [
        {"problem_id": t.prompt_id, "plans": list(t.plans), "label": t.label, "source": t.source}
        for t in items
    ]


def write_pool(folder: Path, items: Sequence[LabelledTuple]) -> None:
    with OutDir(folder).writing(POOL) as fh:
        for rec in pool_records(items):
            fh.write(json.dumps(rec) + "\n")


def read_pool(folder: Path, problems: Mapping[str, Problem]) -> list[LabelledTuple]:
    """The labelled pool saved with a reward model; records of unknown problems are an error."""
    out = []
    for lineno, r in read_jsonl(folder / POOL):
        try:
            item = LabelledTuple(
                problems[r["problem_id"]], tuple(map(str, r["plans"])), int(r["label"]),
                str(r["source"]),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError):
            raise DataError(f"{folder / POOL}:{lineno}: not a pool record of this run") from None
        out.append(item)
    return out
