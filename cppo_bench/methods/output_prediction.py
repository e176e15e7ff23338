"""LiveCodeBench code execution / test output prediction: K predicted values per problem.

execution problems (statement = a program, metadata["input"] = the call) and
output_prediction problems (statement = a problem, one call-mode test whose input is to
be answered) each have their prompt; the model answers between [ANSWER] tags. The
pipeline scores each branch by comparing its canonical answer with the problem's expected
answer, and the problem by maj@K (cppo_bench.metrics.maj_at_k).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from cppo_bench.backends.base import Backend
from cppo_bench.errors import DataError
from cppo_bench.files import jsonio
from cppo_bench.methods.base import (
    Attempt,
    Method,
    MethodOutput,
    RunContext,
    generate,
    per_problem,
    request,
)
from cppo_bench.problem import Problem
from cppo_bench.prompts import Messages, load_prompt, render

_TAGGED = re.compile(r"\[ANSWER\](.*?)(?:\[/ANSWER\]|$)", re.DOTALL | re.IGNORECASE)
_FENCED = re.compile(r"```[\w]*\n(.*?)```", re.DOTALL)


def extract_answer(completion: str) -> str | None:
    """The predicted value: the last [ANSWER] span (an unclosed one counts: the stop string
    ends it), else the last code block, else the last non-empty line. `assert f(x) == v`
    answers keep only v. None when nothing is left."""
    spans = _TAGGED.findall(completion) or _FENCED.findall(completion)
    if spans:
        answer = spans[-1].strip()
    else:
        lines = [line.strip() for line in completion.splitlines() if line.strip()]
        answer = lines[-1] if lines else ""
    if answer.startswith("assert") and "==" in answer:
        answer = answer.rsplit("==", 1)[1]
    return answer.strip() or None


def canonical_answer(answer: str | None) -> str | None:
    """metrics.normalise_answer, after reading JSON spellings (true, null) as Python values:
    test outputs are stored as JSON, models answer in Python."""
    from cppo_bench.util.answers import normalise_answer

    if answer is None or not answer.strip():
        return None
    text = answer.strip()
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            return repr(jsonio.loads(text))
        except ValueError:
            pass
    return normalise_answer(text)


def _call_args(problem: Problem) -> str:
    raw = problem.tests[0].input
    try:
        args = jsonio.loads(raw)
        if isinstance(args, list):
            return ", ".join(repr(a) for a in args)
    except ValueError:
        pass
    return ", ".join(line.strip() for line in raw.splitlines() if line.strip())


def render_prediction(problem: Problem, version: str) -> tuple[Messages, tuple[str, ...]]:
    """The prompt (messages, stop strings) for one execution or output_prediction problem."""
    if problem.task == "execution":
        call = problem.metadata.get("input")
        if not call:
            raise DataError(f"{problem.uid}: execution problem without a call (metadata input)")
        msgs = render("execution", None, version, code=problem.statement.rstrip(), call=call)
        return msgs, load_prompt("execution", version).render_stop()
    if not problem.tests or not problem.fn_name:
        raise DataError(f"{problem.uid}: output prediction needs one call-mode test")
    starter = problem.starter_code.rstrip() or f"def {problem.fn_name}(...): ..."
    call = f"{problem.fn_name}({_call_args(problem)})"
    msgs = render(
        "output_prediction",
        None,
        version,
        statement=problem.statement.strip(),
        starter_code=starter,
        call=call,
    )
    return msgs, load_prompt("output_prediction", version).render_stop()


class OutputPrediction(Method):
    name = "output_prediction"
    tasks = ("execution", "output_prediction")

    def answer(
        self, problems: Sequence[Problem], backend: Backend, ctx: RunContext
    ) -> list[MethodOutput]:
        reqs, seeds = [], []
        for p in problems:
            messages, stop = render_prediction(p, ctx.version)
            for i in range(ctx.k):
                seeds.append(ctx.seed_for(p, "predict", i))
                reqs.append(request(messages, ctx.sampling, seeds[-1], stop, tag="solver"))
        results = generate(backend, reqs)
        attempts = [
            Attempt(r.text, r.num_tokens, r.finish_reason, seed=s, answer=extract_answer(r.text))
            for r, s in zip(results, seeds, strict=True)
        ]
        groups = per_problem(attempts, ctx.k)
        return [MethodOutput(p.problem_id, g) for p, g in zip(problems, groups, strict=True)]
