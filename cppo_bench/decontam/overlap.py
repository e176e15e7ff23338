"""Overlap between problem sources, and the training set with evaluation problems removed.

Every source is compared with every source (the diagonal counts duplicates inside one source).
A training record is removed when it matches any record of any evaluation source; evaluation
sources are never changed, so scores stay comparable with published numbers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from cppo_bench.decontam.matching import KINDS, Match, Metric, find_matches, fingerprints
from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import quote

Role = Literal["train", "eval"]


@dataclass(frozen=True)
class Source:
    """One side of the comparison: a named list of problems with its role."""

    name: str
    role: Role
    problems: Sequence[Problem]
    origin: str = ""  # the spec or path it was loaded from, for the report

    @property
    def label(self) -> str:
        return f"{self.role}:{self.name}"


@dataclass(frozen=True)
class DecontamConfig:
    ngram: int = 13
    threshold: float = 0.5
    metric: Metric = "containment"
    max_df: int | None = 100  # n-grams in more documents than this are boilerplate

    def __post_init__(self) -> None:
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.metric not in ("containment", "jaccard"):
            raise ValueError(f"metric must be containment or jaccard, got {quote(self.metric)}")
        if self.max_df is not None and self.max_df < 2:
            raise ValueError(f"max_df must be >= 2, got {self.max_df}")


@dataclass(frozen=True)
class Cell:
    """Records of the row source with at least one match (of each kind) in the column source."""

    exact: int = 0
    fuzzy: int = 0
    id: int = 0
    any: int = 0


@dataclass(frozen=True)
class Removal:
    """A training record dropped from the filtered set, and the evaluation records it matched."""

    source: str  # Source.label
    uid: str
    matches: list[dict[str, Any]]


@dataclass
class DecontamResult:
    sources: list[Source]
    config: DecontamConfig
    matrix: dict[tuple[int, int], Cell]  # (row source, column source) -> Cell
    removed: list[Removal]
    filtered_train: list[Problem]
    empty_statements: list[str] = field(default_factory=list)  # uids never text-matched

    def report(self) -> dict[str, Any]:
        """The JSON report: parameters, sources, the overlap matrix and every removal."""
        labels = [s.label for s in self.sources]
        n_train = sum(len(s.problems) for s in self.sources if s.role == "train")
        return {
            "config": asdict(self.config),
            "sources": [
                {
                    "label": s.label,
                    "name": s.name,
                    "role": s.role,
                    "origin": s.origin,
                    "problems": len(s.problems),
                }
                for s in self.sources
            ],
            "matrix": {
                labels[i]: {labels[j]: asdict(self.matrix[(i, j)]) for j in range(len(labels))}
                for i in range(len(labels))
            },
            "train_total": n_train,
            "train_kept": len(self.filtered_train),
            "train_removed": len(self.removed),
            "removed": [asdict(r) for r in self.removed],
            "empty_statements": self.empty_statements,
        }

    def write(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Write out_dir/filtered_train.jsonl and out_dir/overlap.json; return their paths.
        Each file is written to a temporary name first, so a crash never leaves half a file."""
        from cppo_bench.files.outdir import OutDir  # no link in --out followed

        out = OutDir(out_dir)
        lines = "".join(
            json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in self.filtered_train
        )
        train_path = out.write_text("filtered_train.jsonl", lines)
        report = json.dumps(self.report(), indent=2, ensure_ascii=False) + "\n"
        return train_path, out.write_text("overlap.json", report)


def overlap_matrix(
    owner: Sequence[int], n_sources: int, matches: Sequence[Match]
) -> dict[tuple[int, int], Cell]:
    """Cell (i, j) counts the distinct records of source i matched by some record of source j.
    `owner[d]` is the source index of document d."""
    hit: dict[tuple[int, int, str], set[int]] = defaultdict(set)
    for m in matches:
        for doc, other in ((m.a, m.b), (m.b, m.a)):
            cell = (owner[doc], owner[other])
            for kind in (*m.kinds, "any"):
                hit[cell + (kind,)].add(doc)
    return {
        (i, j): Cell(**{k: len(hit.get((i, j, k), ())) for k in (*KINDS, "any")})
        for i in range(n_sources)
        for j in range(n_sources)
    }


def decontaminate(
    sources: Sequence[Source],
    config: DecontamConfig | None = None,
    *,
    on_fingerprint: Callable[[int], None] | None = None,
) -> DecontamResult:
    """Compare all sources, build the overlap matrix, and filter the training sources.

    `on_fingerprint(k)` is called after each source is fingerprinted with its problem count
    (progress reporting at the edge, not in here)."""
    config = config or DecontamConfig()
    sources = list(sources)
    docs: list[tuple[int, Problem]] = []
    fps = []
    for si, source in enumerate(sources):
        fps.extend(fingerprints(source.problems, config.ngram))
        docs.extend((si, p) for p in source.problems)
        if on_fingerprint is not None:
            on_fingerprint(len(source.problems))
    owner = [si for si, _ in docs]
    matches = find_matches(
        fps, threshold=config.threshold, metric=config.metric, max_df=config.max_df
    )
    matrix = overlap_matrix(owner, len(sources), matches)

    # training document -> its matches against evaluation documents
    against_eval: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for m in matches:
        for doc, other in ((m.a, m.b), (m.b, m.a)):
            if sources[owner[doc]].role == "train" and sources[owner[other]].role == "eval":
                against_eval[doc].append(
                    {
                        "eval_source": sources[owner[other]].label,
                        "eval_uid": docs[other][1].uid,
                        "kinds": list(m.kinds),
                        "score": m.score,
                        "shared_ids": list(m.shared_ids),
                    }
                )
    removed = [
        Removal(sources[owner[d]].label, docs[d][1].uid, against_eval[d])
        for d in sorted(against_eval)
    ]
    filtered = [
        p for d, (si, p) in enumerate(docs) if sources[si].role == "train" and d not in against_eval
    ]
    empty = [p.uid for fp, (_, p) in zip(fps, docs, strict=True) if fp.sha256 is None]
    return DecontamResult(sources, config, matrix, removed, filtered, empty)
