"""Table specs: which runs, metric, uncertainty and significance rule fill each table cell.

Specs are YAML data, one small file per table. The package ships the study's tables in
``cppo_bench/report/specs/*.yaml``; ``--specs DIR`` adds or replaces tables by file stem (a
file with ``enabled: false`` drops that table). The schema is documented in
``reports/specs/README.md``; every error names the file and the offending key.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.report.spec_extras import (
    parse_external,
    parse_problems,
    parse_study,
)
from cppo_bench.report.spec_types import (  # noqa: F401  (re-exported: the specs' public types)
    BENCH_LABELS,
    ESTIMATORS,
    SELECTS,
    ColumnsSpec,
    Comparison,
    Decomposition,
    MetricSpec,
    Selector,
    Significance,
    TableSpec,
)
from cppo_bench.util.builder import SCALARS, why_not
from cppo_bench.util.termsafe import quote, type_name


class _Reader:
    """Typed access to one mapping of a spec file; errors name the file and key path."""

    def __init__(self, path: str, where: str, data: Any, known: tuple[str, ...]) -> None:
        if not isinstance(data, dict):
            # the whole file when it is the top level: its kind, never its text (a spec
            # linked to another file would print that file)
            got = type_name(data) if not where else quote(data)
            raise DataError(f"{path}: {where or 'top level'}: expected a mapping, got {got}")
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise DataError(
                f"{path}: {where or 'top level'}: unknown key {quote(unknown[0])} "
                f"(known: {', '.join(known)})"
            )
        self.path, self.where, self.data = path, where, data

    def get(self, key: str, typ: type | tuple[type, ...], default: Any = None) -> Any:
        if key not in self.data:
            if default is _REQUIRED:
                raise DataError(f"{self.path}: {self._at(key)}: required key missing")
            return default
        value = self.data[key]
        why = _why_not(typ, value)
        if why:
            raise DataError(f"{self.path}: {self._at(key)}: {why}")
        return float(value) if typ == (int, float) else value

    def ints(self, key: str, default: tuple[int, ...] | None) -> tuple[int, ...] | None:
        value = self.get(key, list, None)
        if value is None:
            return default
        if any(why_not(int, v) for v in value):
            raise DataError(f"{self.path}: {self._at(key)}: expected a list of integers")
        return tuple(value)

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key


_REQUIRED = object()


def _why_not(typ: type | tuple[type, ...], value: Any) -> str | None:
    """The builder's type rules (``cppo_bench.util.builder.why_not``) for scalars, so a spec's
    ``k: true`` or ``alpha: .nan`` is refused as a method option or train config value is;
    ``(int, float)`` is a finite number; mappings and lists by their Python type."""
    options = (float,) if typ == (int, float) else typ if isinstance(typ, tuple) else (typ,)
    whys = [
        why_not(t, value) if t in SCALARS else None if isinstance(value, t) else "no"
        for t in options
    ]
    if None in whys:
        return None
    if len(whys) == 1 and whys[0] != "no":
        return whys[0]
    return f"expected {_name(typ)}, got {quote(value)}"


def _name(typ: type | tuple[type, ...]) -> str:
    types = typ if isinstance(typ, tuple) else (typ,)
    return " or ".join(
        {"dict": "a mapping", "list": "a list"}.get(t.__name__, t.__name__) for t in types
    )


def parse_selector(path: str, where: str, data: Any) -> Selector:
    r = _Reader(
        path,
        where,
        data,
        ("label", "method", "options", "trained", "group", "estimator", "select", "seeds"),
    )
    estimator = r.get("estimator", str, "first")
    select = r.get("select", str, "first")
    if estimator not in ESTIMATORS:
        raise DataError(f"{path}: {where}.estimator: must be one of {', '.join(ESTIMATORS)}")
    if select not in SELECTS:
        raise DataError(f"{path}: {where}.select: must be one of {', '.join(SELECTS)}")
    method = r.get("method", str, _REQUIRED)
    return Selector(
        label=r.get("label", str, method),
        method=method,
        options=dict(r.get("options", dict, {})),
        trained=r.get("trained", str, None),
        group=r.get("group", str, "baseline"),
        estimator=estimator,
        select=select,
        seeds=r.ints("seeds", None),
    )


def _metric(path: str, where: str, data: Any) -> MetricSpec:
    if isinstance(data, str):
        data = {"metric": data}
    r = _Reader(path, where, data, ("metric", "k", "estimator", "label", "digits", "derive"))
    estimator = r.get("estimator", str, None)
    if estimator is not None and estimator not in ESTIMATORS:
        raise DataError(f"{path}: {where}.estimator: must be one of {', '.join(ESTIMATORS)}")
    metric = r.get("metric", str, _REQUIRED)
    k, digits = r.get("k", int, 4), r.get("digits", int, None)
    label, derive = r.get("label", str, None), r.get("derive", bool, None)
    try:  # MetricSpec's own ranges (k, digits) as one line naming the file and the key
        return MetricSpec(metric, k, estimator, label, digits, derive)
    except ValueError as exc:
        raise DataError(f"{path}: {where}.{exc}") from None


def _columns(path: str, data: Any) -> ColumnsSpec:
    r = _Reader(
        path,
        "columns",
        data or {},
        ("models", "model_labels", "benches", "other_benches", "metrics", "average"),
    )
    models = r.get("models", (str, list), "auto")
    if models == "auto":
        models = None
    elif isinstance(models, str):
        raise DataError(f"{path}: columns.models: expected 'auto' or a list of model ids")
    metrics = r.get("metrics", list, ["pass"])
    return ColumnsSpec(
        models=tuple(str(m) for m in models) if models is not None else None,
        model_labels={str(k): str(v) for k, v in r.get("model_labels", dict, {}).items()},
        benches=tuple(str(b) for b in r.get("benches", list, [])),
        other_benches=r.get("other_benches", bool, False),
        metrics=tuple(_metric(path, f"columns.metrics[{i}]", m) for i, m in enumerate(metrics)),
        average=r.get("average", bool, False),
    )


def _file_name(path: str, name: str) -> str:
    """A table's name names its files (tables/NAME.md, figures/NAME-*.png): a plain name,
    refused at the door if it could leave the output folder or hide in a listing."""
    from cppo_bench.files.outdir import safe_part

    why = safe_part(name) or (None if name.isprintable() and not name.startswith(".") else
                              "holds a character that is not printable, or starts with '.'")  # fmt: skip
    if why:
        raise DataError(f"{path}: name {quote(name)}: {why}")
    return name


def parse_spec(path: str, data: Any) -> TableSpec:
    """A TableSpec from one file's parsed YAML; DataError naming the file and key if bad."""
    r = _Reader(
        path,
        "",
        data,
        (
            "name",
            "title",
            "kind",
            "caption",
            "order",
            "columns",
            "rows",
            "significance",
            "seeds",
            "derive_k",
            "metric",
            "comparisons",
            "decompositions",
            "figures",
            "notes",
            "enabled",
            "study",
            "fill",
            "external",
            "problems",
            "interval",
        ),
    )
    interval = r.get("interval", (int, float), None)
    if interval is not None and not 0 < interval < 1:
        raise DataError(f"{path}: interval: a confidence between 0 and 1, got {interval}")
    rows = r.get("rows", list, [])
    seeds = _Reader(path, "seeds", r.get("seeds", dict, {}), ("trained", "inference"))
    sig = r.get("significance", dict, None)
    significance = None
    if sig is not None:
        s = _Reader(
            path, "significance", sig, ("candidates", "alpha", "mark", "metrics", "p_values")
        )
        significance = Significance(
            candidates=_groups(path, s.get("candidates", (str, list), "cppo")),
            alpha=s.get("alpha", (int, float), 0.05),
            mark=s.get("mark", str, "†"),
            metrics=tuple(s.get("metrics", list, ["pass", "maj"])),
            p_values=s.get("p_values", bool, False),
        )
    comparisons = []
    for i, c in enumerate(r.get("comparisons", list, [])):
        cr = _Reader(path, f"comparisons[{i}]", c, ("a", "b", "strongest"))
        pool = cr.get("strongest", list, [])
        b = cr.get("b", dict, None if pool else _REQUIRED)
        comparisons.append(
            Comparison(
                parse_selector(path, f"comparisons[{i}].a", cr.get("a", dict, _REQUIRED)),
                None if b is None else parse_selector(path, f"comparisons[{i}].b", b),
                tuple(
                    parse_selector(path, f"comparisons[{i}].strongest[{j}]", s)
                    for j, s in enumerate(pool)
                ),
            )
        )
    decompositions = []
    for i, d in enumerate(r.get("decompositions", list, [])):
        where = f"decompositions[{i}]"
        dr = _Reader(path, where, d, ("label", "baseline", "iid", "joint"))
        decompositions.append(
            Decomposition(
                dr.get("label", str, _REQUIRED),
                *(
                    parse_selector(path, f"{where}.{part}", dr.get(part, dict, _REQUIRED))
                    for part in ("baseline", "iid", "joint")
                ),
            )
        )
    figures = tuple(r.get("figures", list, []))
    for i, fig in enumerate(figures):
        if not isinstance(fig, dict) or not isinstance(fig.get("kind"), str):
            raise DataError(f"{path}: figures[{i}]: expected a mapping with a 'kind'")
    return TableSpec(
        name=_file_name(path, r.get("name", str, _REQUIRED)),
        title=r.get("title", str, _REQUIRED),
        kind=r.get("kind", str, "grid"),
        path=path,
        caption=r.get("caption", str, "").strip(),
        order=r.get("order", int, 100),
        columns=_columns(path, r.get("columns", dict, {})),
        rows=tuple(parse_selector(path, f"rows[{i}]", row) for i, row in enumerate(rows)),
        significance=significance,
        trained_seeds=seeds.ints("trained", (0, 1, 2)) or (0, 1, 2),
        inference_seeds=seeds.ints("inference", (0,)) or (0,),
        derive_k=r.get("derive_k", bool, False),
        metric=_metric(path, "metric", r.get("metric", (str, dict), "pass")),
        comparisons=tuple(comparisons),
        decompositions=tuple(decompositions),
        figures=figures,
        notes=tuple(str(n) for n in r.get("notes", list, [])),
        study=parse_study(path, r.data.get("study")),
        fill=r.get("fill", str, "").strip(),
        external=parse_external(path, r.get("external", list, [])),
        problems=parse_problems(path, r.get("problems", list, [])),
        interval=interval,
    )


def _groups(path: str, value: str | list[Any]) -> tuple[str, ...]:
    """significance.candidates: one row group, or a list of them (tested in that order)."""
    groups = [value] if isinstance(value, str) else value
    if not groups or any(not isinstance(g, str) or not g for g in groups):
        raise DataError(f"{path}: significance.candidates: a group name or a list of them")
    if len(set(groups)) != len(groups):
        raise DataError(f"{path}: significance.candidates: a group is listed twice")
    return tuple(groups)


def _load_file(path: Path | Any, label: str) -> tuple[dict[str, Any], str]:
    if isinstance(path, Path):  # a user's spec: the bounded reader, aliases refused
        from cppo_bench.files import userfiles

        return userfiles.read_yaml(path), label
    from cppo_bench.files import userfiles  # a spec shipped in the package: the same loader

    return userfiles.load_yaml(path.read_text(encoding="utf-8"), label), label


def load_specs(override_dir: Path | None = None) -> list[TableSpec]:
    """The shipped table specs, with `override_dir`'s files replacing or adding by stem."""
    files: dict[str, tuple[Any, str]] = {}
    shipped = resources.files("cppo_bench.report") / "specs"
    for entry in sorted(shipped.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            files[entry.name[:-5]] = (entry, f"cppo_bench/report/specs/{entry.name}")
    if override_dir is not None:
        override_dir = Path(override_dir)
        if not override_dir.is_dir():
            raise DataError(f"{override_dir}: --specs must be a directory of table spec YAML files")
        for p in sorted(override_dir.glob("*.y*ml")):
            files[p.stem] = (p, str(p))
    specs = []
    for source, label in files.values():
        data, label = _load_file(source, label)
        if isinstance(data, dict) and data.get("enabled", True) is False:
            continue
        specs.append(parse_spec(label, data))
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DataError(f"table name {quote(dupes[0])} is defined by more than one spec file")
    return sorted(specs, key=lambda s: (s.order, s.name))
