"""A stored run's method, read back at the reading edge: the run store files what a method
produced and imports no method, so what only a method knows about a stored run is asked
here, by the readers above the store (`cppo_bench.api.load_runs`, `stats`, `report`,
`samples`).

- `options_error`: a run's `method_options`, built by its method's own typed options
  dataclass (the one builder, strictly: stored text is not re-read as JSON, an "@file" list
  is never read), so `select: sideways` or `tuple_size: 0` is one line naming the field.
- `stored_rule`: the pass@k rule a run recorded when it was made (its manifest's `passk`);
  a run made before runs recorded it is given its method's rule for its options, as it was
  then (`passk_rule`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cppo_bench.errors import DataError


def options_error(method: str, options: Mapping[str, Any]) -> str | None:
    """Why a method this install knows refuses the stored `options` (a phrase naming the
    field), or None; a plugin's run (a method this install lacks) is not checked here."""
    from cppo_bench.methods import METHODS
    from cppo_bench.util.builder import build

    try:
        cls = METHODS.get(method)
    except KeyError:
        return None
    try:
        build(cls.options_type, dict(options), label="option")
    except ValueError as exc:  # BuildError is a DataError, a ValueError
        return f"field 'method_options': {str(exc)[:400]}"
    return None


def check_options(manifest: Any, where: object) -> None:
    """One DataError ("WHERE: not a valid run manifest (field 'method_options': ...)") when
    the run's method refuses its stored options."""
    why = options_error(manifest.method, manifest.method_options)
    if why:
        raise DataError(f"{where}: not a valid run manifest ({why})")


def stored_rule(manifest: Any, where: object = "run manifest") -> tuple[str, str]:
    """(estimator, select) of pass@k < K for a stored run: its recorded `passk` (checked by
    the store's schema); without one (a run made before it was recorded), its method's rule
    for its options. The options are checked either way (`check_options`)."""
    from cppo_bench.methods import passk_rule

    check_options(manifest, where)
    recorded = manifest.passk
    if recorded:
        return str(recorded["estimator"]), str(recorded["select"])
    return passk_rule(manifest.method, manifest.method_options)
