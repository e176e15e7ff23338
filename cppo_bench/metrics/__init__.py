"""Pure, vectorised metrics and statistics: pass@K, maj@K, token accounting, the
hierarchical bootstrap, per-seed intervals and the OLS band. Each formula cites the study's
equation it implements."""

from cppo_bench.metrics.bootstrap import (
    BootstrapResult,
    Dagger,
    bootstrap_p_value,
    dagger_marks,
    hierarchical_bootstrap,
)
from cppo_bench.metrics.majk import maj_at_k, maj_at_k_many, majority_answer, normalise_answer
from cppo_bench.metrics.ols import OLSFit, ols_fit
from cppo_bench.metrics.passk import (
    benchmark_pass_at_k,
    pass_at_k,
    pass_at_k_first,
    pass_at_k_unbiased,
    selection_mask,
)
from cppo_bench.metrics.roc import roc_auc, roc_points
from cppo_bench.metrics.seeds import (
    MeanStd,
    SeedCI,
    mean_std,
    paired_seed_deltas,
    seed_difference_ci,
)
from cppo_bench.metrics.tokens import (
    TokenSummary,
    pass_per_10k_tokens,
    summarise_tokens,
    tokens_per_10k,
)

__all__ = [
    "BootstrapResult",
    "Dagger",
    "MeanStd",
    "OLSFit",
    "SeedCI",
    "TokenSummary",
    "benchmark_pass_at_k",
    "bootstrap_p_value",
    "dagger_marks",
    "hierarchical_bootstrap",
    "maj_at_k",
    "maj_at_k_many",
    "majority_answer",
    "mean_std",
    "normalise_answer",
    "ols_fit",
    "paired_seed_deltas",
    "pass_at_k",
    "pass_at_k_first",
    "pass_at_k_unbiased",
    "pass_per_10k_tokens",
    "roc_auc",
    "roc_points",
    "seed_difference_ci",
    "selection_mask",
    "summarise_tokens",
    "tokens_per_10k",
]
