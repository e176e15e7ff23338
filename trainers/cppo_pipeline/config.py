"""CPPO's keys, typed: one frozen dataclass per stage and one for the pipeline, study defaults.

Top-level keys (``k``, ``m``, ``tau``, ...) and one section per stage; the ``engine`` section is
the engine's ``TrainConfig`` for warm-up and joint training. ``--set`` takes dotted keys
(``--set rm.epochs=3 --set m=4 --set tau=null``). Presets (``trainers/configs/cppo.*.yaml``)
hold only what differs from these defaults. Sources: the study's "Making the Sparse Joint
Reward Trainable", "Reward-Model Training Details" and "Practical Rollout Recipe".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trainers.core.cppo_ablation import ABLATIONS, DEFAULT_M, STUDY_K, step_rollouts
from trainers.engine.config import TrainConfig, check_rollouts
from trainers.harness import TAU, quote


@dataclass(frozen=True)
class SFTStageConfig:
    problems: int = 0  # 0 = every training problem
    n_candidates: int = 6  # candidates per sample (study: 6)
    samples: int = 1  # candidate samples per problem
    min_examples: int = 1  # fewer SFT problems than this stops the pipeline at stage 1
    candidate_max_tokens: int = 400
    temperature: float = 0.8
    epochs: int = 2
    batch_size: int = 4
    lr: float = 1e-5
    seed_candidates: str | None = None  # JSONL of extra candidates per problem (judged alike)


@dataclass(frozen=True)
class RMStageConfig:
    kind: str = "generative"  # generative (the study's p_psi) | ngram (fast alternative)
    model: str | None = None  # generative base; None = gpu_model on a GPU, embedded on a CPU
    gpu_model: str = "Qwen/Qwen3.5-0.8B-Base"  # the study's p_psi base (model-checkpoints table)
    epochs: int = 2
    batch_size: int = 8
    lr: float = 5e-5
    min_recall: float = 0.9  # used when tau is null
    problems: int = 0
    samples_per_problem: int = 8
    negatives_per_tuple: int = 1
    val_fraction: float = 0.2


@dataclass(frozen=True)
class WarmupStageConfig:
    """Plateau rule: stop when J acceptance gains <= min_gain over ``patience`` steps, reaches
    ``target``, or at ``max_steps``."""

    patience: int = 3
    min_gain: float = 0.02
    target: float = 0.98
    max_steps: int = 50
    prompts_per_step: int | None = None  # None: the engine section's


@dataclass(frozen=True)
class AuditStageConfig:
    problems: int = 16
    min_pass_at_k: float = 0.0  # the audit passes only above these
    min_r_plan_density: float = 0.0


@dataclass(frozen=True)
class JointStageConfig:
    phases: int = 3  # the RM is refreshed between phases
    max_steps: int = 300
    refresh_problems: int = 16


@dataclass(frozen=True)
class CPPOPipelineConfig:
    k: int = STUDY_K  # strategies per tuple = solver branches (pass@K budget)
    m: int = DEFAULT_M  # planner tuples per prompt
    tau: float | None = TAU  # gate threshold; None = choose on RM val for rm.min_recall
    ablation: str = "cppo"  # a row of trainers.core.cppo_ablation.ABLATIONS
    planner_max_tokens: int = 256
    problem_ids: tuple[str, ...] | None = None  # None = the whole decontaminated training set
    sft: SFTStageConfig = field(default_factory=SFTStageConfig)
    rm: RMStageConfig = field(default_factory=RMStageConfig)
    engine: TrainConfig = field(default_factory=TrainConfig)
    warmup: WarmupStageConfig = field(default_factory=WarmupStageConfig)
    audit: AuditStageConfig = field(default_factory=AuditStageConfig)
    joint: JointStageConfig = field(default_factory=JointStageConfig)

    def __post_init__(self) -> None:
        if self.k < 1 or self.m < 1:
            raise ValueError("k and m must be >= 1")
        if self.ablation not in ABLATIONS:
            raise ValueError(
                f"ablation: unknown {quote(self.ablation)}; known: {ABLATIONS.names()}"
            )
        if self.rm.kind not in ("generative", "ngram"):
            raise ValueError(f"rm.kind: {quote(self.rm.kind)} is not one of generative, ngram")
        if self.tau is not None and not 0.0 <= self.tau <= 1.0:
            raise ValueError(f"tau: must be in [0, 1] or null, got {self.tau}")
        if self.engine.problem_ids:  # the pipeline picks its problems once, for every stage
            raise ValueError("engine.problem_ids: a CPPO pipeline takes problem_ids (top level)")
        self._check_rollouts()

    def _check_rollouts(self) -> None:
        """Every stage's generation counts against max_rollouts_per_step, before stage 1: a
        joint stage's count found wrong after hours of SFT and RM training is found too late.
        (The RL stages ask again in the engine, as every engine run does.)"""
        cap, pps = self.engine.max_rollouts_per_step, self.engine.prompts_per_step
        warm = self.warmup.prompts_per_step or pps
        check_rollouts(
            warm * step_rollouts(self.m, self.k, joint=False),
            f"warmup.prompts_per_step {warm} x m {self.m}",
            cap,
        )
        check_rollouts(
            pps * step_rollouts(self.m, self.k, joint=True),
            f"engine.prompts_per_step {pps} x m {self.m} x (1 + k {self.k}) (the joint stage)",
            cap,
        )
        sft = self.sft
        check_rollouts(
            sft.samples * sft.n_candidates,
            f"sft.samples {sft.samples} x sft.n_candidates {sft.n_candidates} a problem",
            cap,
        )
        check_rollouts(self.rm.samples_per_problem, "rm.samples_per_problem a problem", cap)
