"""The one range of each sampling setting, below both of its readers: `SamplingParams`
(cppo_bench.backends.base) checks itself with these, the run door (cppo_bench.api.run)
checks before any data loads, and the run store's readers (cppo_bench.store.schema) accept
back exactly these, so no run is started that is unreadable. Kept here, not in the backends,
so the store that files what a backend produced need not import one."""

from __future__ import annotations

from typing import Any

from cppo_bench.util.checks import Check, integer, number

TEMPERATURE = (0.0, 100.0)  # 0 = greedy
MAX_NEW_TOKENS = 1 << 24
# the largest K (attempts a problem) a run may have: what the store's readers accept back,
# and the bound of every count that becomes requests (method options, a report's k)
MAX_K = 1 << 16


def _top_p(v: Any) -> str | None:
    # 0 keeps no token at all: vLLM and transformers both refuse it
    return number(0.0, 1.0)(v) or (f"{v} is outside (0, 1]" if v == 0 else None)


SAMPLING_RANGES: dict[str, Check] = {
    "temperature": number(*TEMPERATURE),
    "top_p": _top_p,
    "max_tokens": integer(1, MAX_NEW_TOKENS),
}
