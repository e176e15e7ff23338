"""The Method interface: Problems + Backend + K + seed -> K attempts per problem.

A method builds every request of one stage for all problems it is given and sends them to
the backend in one `generate` call, so an engine sees big batches (and vLLM's prefix cache
sees the K solver calls that share a problem prompt together). Every request carries its
own seed, derived from the run seed, the problem and the branch, so a resumed run asks for
exactly the generations the interrupted one asked for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cppo_bench.backends.base import Backend, GenRequest, GenResult, SamplingParams
from cppo_bench.errors import UserError
from cppo_bench.problem import Problem
from cppo_bench.prompts import DEFAULT_VERSION, Messages, load_prompt, render
from cppo_bench.util.builder import coerce
from cppo_bench.util.sampling import MAX_K
from cppo_bench.util.termsafe import quote


@dataclass
class Attempt:
    """One of the K branches of a problem, before verification."""

    completion: str
    tokens: int  # decoded solver tokens
    finish_reason: str
    plan: str | None = None  # the strategy this branch was asked to implement
    tuple_index: int = 0  # which independent planner tuple it came from
    seed: int = 0
    answer: str | None = None  # output prediction: the extracted (raw) answer


@dataclass
class MethodOutput:
    """Everything a method produced for one problem."""

    problem_id: str
    attempts: list[Attempt]
    plans: list[list[str]] = field(default_factory=list)  # one list per planner tuple
    planner_tokens: int = 0
    plan_validity: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def solver_tokens(self) -> int:
        return sum(a.tokens for a in self.attempts)


@dataclass(frozen=True)
class MethodOptions:
    """Options every method has; subclasses add their own fields (all with defaults)."""

    prompt_version: str = DEFAULT_VERSION

    def require_at_least(self, minimum: int, *names: str) -> None:
        """The one range check options need: each named integer option is >= minimum
        (raised as ValueError, which parse_options reports under the method's name)."""
        for name in names:
            value = getattr(self, name)
            if value < minimum:
                raise ValueError(f"{name} must be >= {minimum}, got {value}")


# the most any integer method option may be (a count of candidates, skills, observations, or a
# planner's token cap): the largest K a run may have. Each count becomes that many requests a
# problem, so a mistyped 100000000 is one line, never a run that fills the host's memory.
MAX_OPTION_INT = MAX_K


class OptionError(UserError, ValueError):
    """A method option that does not exist or does not parse."""


def _text_list(name: str, value: str) -> list[str]:
    """A tuple option given as text: ";" separates items (strategy hints contain commas);
    "@file" reads one item per line."""
    if not value.startswith("@"):
        return [v.strip() for v in value.split(";") if v.strip()]
    from cppo_bench.files import userfiles  # the one reader: a FIFO or a device is one line

    try:
        text = userfiles.read_text(value[1:], userfiles.MAX_SMALL)
    except userfiles.UserFileError as exc:
        raise OptionError(f"option {name}: {exc}") from None
    return [line.strip() for line in text.split("\n") if line.strip()]


def parse_options(cls: type[MethodOptions], raw: Mapping[str, Any], method: str) -> MethodOptions:
    """Typed options from the CLI's values or a Python dict, naming bad keys and values.

    The type rules are the harness's one strict builder (``cppo_bench.util.builder``): text is
    read as the CLI reads a value (JSON where it parses), then checked, so ``tuple_size=3.7``
    and ``planner_max_tokens=true`` are refused, never truncated to 3 or taken as 1."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name not in known:
            raise OptionError(
                f"method {quote(method)} has no option {quote(key)}; its options: {', '.join(sorted(known))}"
            )
        hint = hints[name]
        if typing.get_origin(hint) is tuple and isinstance(value, str):
            value = _text_list(name, value)
        values[name] = coerce(name, hint, value, label="option", error=OptionError, from_text=True)
        if type(values[name]) is int and values[name] > MAX_OPTION_INT:
            raise OptionError(
                f"method {quote(method)}: option {name}: {values[name]} is past "
                f"{MAX_OPTION_INT:,}, the most any count or token cap of a method may be"
            )
    try:
        return cls(**values)
    except ValueError as exc:
        raise OptionError(f"method {quote(method)}: {exc}") from None


def derive_seed(run_seed: int, problem_uid: str, role: str, index: int) -> int:
    """A request's seed: stable across runs, chunkings and resumes (31 bits for any engine)."""
    digest = hashlib.sha256(f"{run_seed}|{problem_uid}|{role}|{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def close_fence(text: str) -> str:
    """Re-close a code block cut by the closing-fence stop string (engines drop the stop)."""
    return text + "\n```" if text.count("```") % 2 == 1 else text


def request(
    messages: Messages,
    base: SamplingParams,
    seed: int,
    stop: Sequence[str] = (),
    tag: str = "",
    max_tokens: int | None = None,
) -> GenRequest:
    params = dataclasses.replace(
        base,
        seed=seed,
        stop=tuple(stop),
        max_tokens=min(base.max_tokens, max_tokens) if max_tokens else base.max_tokens,
    )
    return GenRequest(params=params, messages=tuple(dict(m) for m in messages), tag=tag)


def prompt_request(
    name: str,
    problem: Problem | None,
    ctx: RunContext,
    seed: int,
    *,
    tag: str,
    max_tokens: int | None = None,
    history: Messages = (),
    **values: Any,
) -> GenRequest:
    """A request for prompt `name` with the prompt's own stop strings. `history` holds
    earlier turns of the same conversation: the prompt's messages are then a follow-up."""
    prompt = load_prompt(name, ctx.version)
    messages = render(name, problem, ctx.version, **values)
    if history:  # a follow-up turn: the earlier conversation, then only the new user turn
        messages = (*history, *(m for m in messages if m["role"] != "system"))
    req = request(messages, ctx.sampling, seed, prompt.render_stop(**values), tag, max_tokens)
    return dataclasses.replace(req, stage=name)


def follow_up(request_: GenRequest, reply: str) -> Messages:
    """The conversation of `request_` with its reply appended, for a follow-up turn."""
    assert request_.messages is not None
    return (*request_.messages, {"role": "assistant", "content": reply})


def generate(backend: Backend, requests: Sequence[GenRequest]) -> list[GenResult]:
    """One batched backend call; checks the backend kept its side of the contract."""
    if not requests:
        return []
    results = backend.generate(list(requests))
    if len(results) != len(requests):
        raise RuntimeError(
            f"backend {backend.name} returned {len(results)} results for {len(requests)} requests"
        )
    return results


@dataclass(frozen=True)
class RunContext:
    """What one `Method.run` call fixes for every request it builds."""

    k: int
    seed: int
    sampling: SamplingParams
    version: str = DEFAULT_VERSION

    def seed_for(self, problem: Problem, role: str, index: int) -> int:
        return derive_seed(self.seed, problem.uid, role, index)


class Method(ABC):
    """A way of spending the K-attempt budget. Subclasses register in METHODS by name and
    implement `answer`; `run` is the public entry point."""

    name: ClassVar[str]
    options_type: ClassVar[type[MethodOptions]] = MethodOptions
    tasks: ClassVar[tuple[str, ...]] = ("codegen",)  # Problem.task values it can answer

    @classmethod
    def passk_rule(cls, options: Mapping[str, Any]) -> tuple[str, str]:
        """(estimator, select) that scores pass@k for k < K on a run of this method with the
        manifest's `options`. The default: the K branches are exchangeable samples, so the
        unbiased estimator (as lm-eval, LiveCodeBench and evalplus compute it). A method
        whose branches follow an order (a planner's tuple, a fixed hint list) returns
        ("first", its K-of-tuple rule): a k-attempt run gets the first k of that order."""
        return ("unbiased", "first")

    def __init__(self, options: MethodOptions | None = None) -> None:
        self.options = options if options is not None else self.options_type()
        if not isinstance(self.options, self.options_type):
            raise OptionError(f"method {quote(self.name)} takes {self.options_type.__name__}")

    @classmethod
    def from_options(cls, raw: Mapping[str, Any] | None = None) -> Method:
        return cls(parse_options(cls.options_type, raw or {}, cls.name))

    def options_dict(self) -> dict[str, Any]:
        """Resolved options (defaults included), JSON-ready: part of the run's identity."""
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(self.options).items()
        }

    def check(self, problems: Sequence[Problem], k: int) -> None:
        """Refuse problems or K this method cannot answer, before any generation."""
        if k < 1:
            raise OptionError(f"K must be >= 1, got {k}")
        wrong = [p.uid for p in problems if p.task not in self.tasks]
        if wrong:
            raise OptionError(
                f"method {quote(self.name)} answers {'/'.join(self.tasks)} problems; "
                f"{wrong[0]} is a {next(p.task for p in problems if p.uid == wrong[0])} problem"
                f"{' (use --method output_prediction)' if 'codegen' in self.tasks else ''}"
            )

    def run(
        self,
        problems: Sequence[Problem],
        backend: Backend,
        *,
        k: int,
        seed: int,
        sampling: SamplingParams,
    ) -> list[MethodOutput]:
        """K attempts for every problem, in the order given."""
        ctx = RunContext(k, seed, sampling, self.options.prompt_version)
        return self.answer(problems, backend, ctx)

    @abstractmethod
    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        """K = ctx.k attempts for every problem, in the order given."""


def per_problem(items: Sequence[Any], size: int) -> list[list[Any]]:
    """A flat list of `size` items per problem, cut back into one list per problem."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def branch_attempts(
    backend: Backend,
    problems: Sequence[Problem],
    ctx: RunContext,
    prompt: str,
    role: str,
    plans: Sequence[Sequence[str]] | None = None,
    messages: Callable[[Problem, int], Messages] | None = None,
    tuple_index: Sequence[Sequence[int]] | None = None,
) -> list[list[Attempt]]:
    """The K solver branches of every problem in one batch, one list per problem.

    Branch i of problem j is prompt `prompt` (its stop strings too), with `plan` =
    plans[j][i] when plans are given, or the messages `messages(problem, i)` build; its
    seed derives from (run seed, problem, role, i), so it is stable across resumes."""
    jobs = []
    for j, p in enumerate(problems):
        for i in range(ctx.k):
            plan = plans[j][i] if plans is not None else None
            if messages is not None:
                msgs = messages(p, i)
            elif plan is not None:
                msgs = render(prompt, p, ctx.version, plan=plan)
            else:
                msgs = render(prompt, p, ctx.version)
            t = tuple_index[j][i] if tuple_index is not None else 0
            jobs.append((msgs, ctx.seed_for(p, role, i), plan, t))
    stop = load_prompt(prompt, ctx.version).render_stop()
    return per_problem(solver_attempts(backend, jobs, ctx.sampling, stop), ctx.k)


def solver_attempts(
    backend: Backend,
    jobs: Sequence[tuple[Messages, int, str | None, int]],
    sampling: SamplingParams,
    stop: Sequence[str],
) -> list[Attempt]:
    """Run solver jobs (messages, seed, plan, tuple index) in one batch."""
    reqs = [request(m, sampling, seed, stop, tag="solver") for m, seed, _, _ in jobs]
    results = generate(backend, reqs)
    return [
        Attempt(
            completion=close_fence(r.text),
            tokens=r.num_tokens,
            finish_reason=r.finish_reason,
            plan=plan,
            tuple_index=t,
            seed=seed,
        )
        for (_, seed, plan, t), r in zip(jobs, results, strict=True)
    ]
