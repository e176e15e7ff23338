"""UpSkill-style inference: one sample per latent skill, the skill named by a prefix.

Sample i is generated under skill z_(i mod n_skills): the prefix string for that skill is
prepended to the direct-solve user message (a trained UpSkill checkpoint learned to write
differently per prefix; an untrained model sees K slightly different prompts). The prefix
format must match the one the checkpoint was trained with: `prefix_format` ("{i}" is the
0-based skill index) or an explicit list in `prefixes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cppo_bench.backends.base import Backend
from cppo_bench.methods.base import Method, MethodOptions, MethodOutput, RunContext, branch_attempts
from cppo_bench.methods.direct import render_messages
from cppo_bench.problem import Problem
from cppo_bench.prompts import DEFAULT_VERSION, Messages


@dataclass(frozen=True)
class SkillsOptions(MethodOptions):
    n_skills: int = 4
    prefix_format: str = "<skill_{i}>"
    prefixes: tuple[str, ...] = ()  # overrides prefix_format when given

    def __post_init__(self) -> None:
        self.require_at_least(1, "n_skills")
        if self.prefixes and len(self.prefixes) != self.n_skills:
            raise ValueError(f"{len(self.prefixes)} prefixes for n_skills={self.n_skills}")

    def prefix(self, skill: int) -> str:
        return self.prefixes[skill] if self.prefixes else self.prefix_format.format(i=skill)


def skill_messages(problem: Problem, prefix: str, version: str = DEFAULT_VERSION) -> Messages:
    """The direct prompt with the skill prefix in front of the user message (trainers use
    this same function, so inference and training see one format)."""
    messages = [dict(m) for m in render_messages(problem, version)]
    messages[-1]["content"] = f"{prefix}\n{messages[-1]['content']}"
    return tuple(messages)


class Skills(Method):
    name = "skills"
    options_type = SkillsOptions

    @classmethod
    def passk_rule(cls, options: Mapping[str, Any]) -> tuple[str, str]:
        return ("first", "first")  # sample i uses skill i mod n: a k-attempt run gets 0..k-1

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        opts = self.options
        assert isinstance(opts, SkillsOptions)
        skills = [i % opts.n_skills for i in range(ctx.k)]
        # a skill prefix is not a plan: the branch keeps plan None, the skill goes in extra
        groups = branch_attempts(
            backend,
            problems,
            ctx,
            "direct",
            "skill",
            messages=lambda p, i: skill_messages(p, opts.prefix(skills[i]), ctx.version),
        )
        outputs = []
        # K above n_skills repeats skills: those branches are not distinct skills
        repeated = max(0, ctx.k - opts.n_skills)
        for p, mine in zip(problems, groups, strict=True):
            extra: dict[str, object] = {"skills": list(skills)}
            if repeated:
                extra["fallbacks"] = {"skills_repeated": repeated}
            outputs.append(MethodOutput(p.problem_id, mine, extra=extra))
        return outputs
