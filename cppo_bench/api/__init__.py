"""The Python API: the functions behind the CLI commands, callable from a script or a notebook.
Each command builds one config object (``RunConfig``, ...: docs/options.md) and calls one
function here, so the two cannot drift. Re-exported from `cppo_bench` (``from cppo_bench import
load_benchmark, verify, run``); `load_runs` and `stats` are in cppo_bench.stats.

Every function raises one-line errors (cppo_bench.errors: DataError, UnknownNameError, ...,
all UserError) naming the input that is wrong.
"""

from __future__ import annotations

from cppo_bench.api import data
from cppo_bench.api.config import build_config
from cppo_bench.api.data import load_benchmark
from cppo_bench.api.run import Run, RunConfig, run
from cppo_bench.api.samples import samples
from cppo_bench.api.verify import rejudge, verify

__all__ = [
    "Run",
    "data",
    "RunConfig",
    "build_config",
    "load_benchmark",
    "rejudge",
    "run",
    "samples",
    "verify",
]

# `stats` subcommands: one config each (cppo_bench.api.stats; the statistics on a frame are
# cppo_bench.stats, public as `cb.stats`)
from cppo_bench.api.diversity import DiversityConfig  # noqa: E402
from cppo_bench.api.stats import (  # noqa: E402
    BootstrapConfig,
    PassKConfig,
    SeedsConfig,
    StatsConfig,
    TokensConfig,
)

__all__ += [
    "BootstrapConfig",
    "DiversityConfig",
    "PassKConfig",
    "SeedsConfig",
    "StatsConfig",
    "TokensConfig",
]

# `report`, `decontam`, `augment`, `audit`: one config each (cppo_bench.api.<command>)
from cppo_bench.api.audit import AuditConfig  # noqa: E402
from cppo_bench.api.augment import AugmentConfig  # noqa: E402
from cppo_bench.api.decontam import DecontamConfig  # noqa: E402
from cppo_bench.api.report import ReportConfig  # noqa: E402

__all__ += ["AuditConfig", "AugmentConfig", "DecontamConfig", "ReportConfig"]
