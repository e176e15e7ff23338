"""Stage 4: the reward-density audit (forward only, no update).

Two numbers from rollouts of the warmed planner with the frozen solver: pass@K (share of tuples
with R_out > 0) and R_plan density (share of tuples with R_plan > 0). Either at or below its
threshold (default 0: "must be non-zero") stops the pipeline before joint training, naming the
stage to revisit: no solver success means the plans are not usable (back to SFT); successes
that the gate vetoes mean the gate is misaligned (back to the RM).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from torch import Tensor

from trainers.harness import quote


class AuditFailed(Exception):
    def __init__(self, report: AuditReport) -> None:
        self.report = report
        super().__init__(
            f"audit failed: {report.reason}; revisit stage {quote(report.revisit)} before joint CPPO"
        )


@dataclass(frozen=True)
class AuditThresholds:
    min_pass_at_k: float = 0.0  # pass@K must exceed this
    min_r_plan_density: float = 0.0  # share of rollouts with R_plan > 0 must exceed this


@dataclass(frozen=True)
class AuditReport:
    tuples: int
    pass_at_k: float
    r_plan_density: float
    j_accept: float
    passed: bool
    revisit: str | None  # "sft" | "rm" | None
    reason: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def audit(j: Tensor, r_out: Tensor, t: AuditThresholds | None = None) -> AuditReport:
    """j, r_out: (N,) over the audit's tuples. R_plan = J * R_out (the CPPO reward)."""
    t = t or AuditThresholds()
    n = int(r_out.numel())
    if n == 0:
        raise ValueError("audit needs at least one rollout")
    pass_k = float((r_out > 0).float().mean())
    density = float(((j * r_out) > 0).float().mean())
    accept = float((j > 0).float().mean())
    if pass_k <= t.min_pass_at_k:
        revisit, reason = "sft", f"frozen-solver pass@K {pass_k:.3f} <= {t.min_pass_at_k}"
    elif density <= t.min_r_plan_density:
        revisit = "rm"
        reason = (
            f"R_plan density {density:.3f} <= {t.min_r_plan_density} (J acceptance {accept:.3f})"
        )
    else:
        revisit, reason = None, "pass@K and R_plan density above their thresholds"
    return AuditReport(n, pass_k, density, accept, revisit is None, revisit, reason)
