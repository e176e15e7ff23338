"""Field helpers shared by the loaders: dates, date windows, JSON-or-decoded fields (within
`cppo_bench.files.jsonio`'s nesting bound), option checks."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.util.termsafe import quote


def iso_date(value: Any) -> str | None:
    """'YYYY-MM-DD' from a datetime, date or ISO string; None for empty."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    try:
        return datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        raise ValueError(f"bad date {quote(value)}") from None


def parse_date_option(name: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    try:
        return iso_date(value)
    except ValueError:
        raise DataError(
            f"option {name}={quote(value)}: expected an ISO date like 2025-02-01"
        ) from None


def in_window(contest_date: str | None, start: str | None, end: str | None) -> bool:
    """Inclusive date window; records without a date pass only when no window is set."""
    if not (start or end):
        return True
    if contest_date is None:
        raise ValueError("no contest_date to apply the date window to")
    return not ((start and contest_date < start) or (end and contest_date > end))


def json_field(record: dict[str, Any], key: str, *, default: Any = None) -> Any:
    """A field that is either a JSON string or already decoded; '' and None give `default`."""
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    if isinstance(value, str):
        try:
            return jsonio.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{key}: invalid JSON ({exc.msg})") from None
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    why = jsonio.depth_error(value)  # already decoded (a hub or parquet row): same bound
    if why:
        raise ValueError(f"{key}: {why}")
    return value


def reject_unknown(bench: str, options: dict[str, Any]) -> None:
    if options:
        raise DataError(f"{bench} benchmark: unknown option(s): {', '.join(sorted(options))}")


def as_int(name: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DataError(f"option {name}={quote(value)}: expected an integer") from None
