"""The registry of table kinds and the labels of a table's columns (model and benchmark
names as printed). Below `tables` and `extra_tables`, which both register kinds here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cppo_bench.report.cells import CellEngine
from cppo_bench.report.model import Table
from cppo_bench.report.specs import BENCH_LABELS, TableSpec
from cppo_bench.util.registry import Registry

Builder = Callable[[TableSpec, CellEngine], Table]
TABLE_KINDS: Registry[Builder] = Registry("table kind")
NO_MODEL = "(no runs yet)"


def model_label(spec: TableSpec, model: str | None) -> str:
    if model is None:
        return NO_MODEL
    if model in spec.columns.model_labels:
        return spec.columns.model_labels[model]
    name = model.rstrip("/").rsplit("/", 1)[-1]
    return name.removesuffix(".gguf") or model


def bench_label(bench: str, index: Any = None) -> str:
    """The column name of a benchmark; with the run index, the release its runs' data
    really is (recorded in the manifests' identity), e.g. "LCB release_v1"."""
    label = BENCH_LABELS.get(bench, bench)
    if index is None:
        return label
    releases = sorted({
        str((r.manifest.extra.get("identity") or {}).get("release"))
        for r in index.runs
        if r.manifest.bench == bench and (r.manifest.extra.get("identity") or {}).get("release")
    })  # fmt: skip
    return f"{label} {'/'.join(releases)}" if releases else label
