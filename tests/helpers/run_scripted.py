"""A scripted Backend for the method and run-store tests (not a model: a deterministic
function of each request), and `make`, a factory `cppo-bench run --backend
run_scripted:make` can load in a subprocess.

Replies follow the prompt contracts: planner prompts get labelled methods, PlanSearch
prompts get observations, solver prompts get a program. A solver reply is the problem's
reference solution when the request seed is even and a wrong program when it is odd, so
verdicts are known in advance from the seeds alone.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cppo_bench.backends.base import GenRequest, GenResult
from cppo_bench.problem import Problem

WRONG = "```python\nprint('wrong')\n```"
OBSERVATIONS = ("values are small.", "order does not matter.", "sorting first is safe.")


class ScriptedBackend:
    name = "scripted"

    def __init__(
        self,
        problems: Sequence[Problem] = (),
        model_id: str = "scripted-model",
        respond: Callable[[GenRequest], str] | None = None,
        delay_s: float = 0.0,
        pause_after: int = 0,
        ready: str = "",
    ) -> None:
        self.model_id = model_id
        # after `pause_after` results have been handed on, create the file `ready` and block
        # until the process is interrupted (unless `ready` exists already): a test then signals a run at a known point, by
        # an event rather than by timing a sleep (which a loaded machine outruns)
        self.pause_after, self.ready = pause_after, ready
        self.handed = 0
        self.references = {
            p.statement.strip(): p.reference_solutions[0] for p in problems if p.reference_solutions
        }
        self.respond = respond or self.default_reply
        self.delay_s = delay_s
        self.calls: list[list[GenRequest]] = []
        self.closed = False

    def user(self, req: GenRequest) -> str:
        assert req.messages is not None
        return req.messages[-1]["content"]

    def default_reply(self, req: GenRequest) -> str:
        text, seed = self.user(req), req.params.seed
        reply = self.plansearch_reply(req, text, seed)
        if reply is not None:
            return reply
        match = re.search(r"labelled A: to ([A-Z]):", text)
        if match:  # the PLAN contract: letter labels, one method per line
            n = ord(match.group(1)) - ord("A") + 1
            return "\n".join(
                f"{chr(64 + i)}: idea {i} variant {seed % 97}." for i in range(1, n + 1)
            )
        if "[ANSWER]" in text:
            return f"[ANSWER]{seed % 3}[/ANSWER]"
        for statement, ref in self.references.items():
            if statement in text:
                return f"```python\n{ref}\n```" if seed % 2 == 0 else WRONG
        return WRONG

    def plansearch_reply(self, req: GenRequest, text: str, seed: int) -> str | None:
        """PlanSearch's stages: 3 observations, a filter keeping the first 2 claims, one
        derived observation per subset, then sketch / critique / fix / pseudocode texts."""
        if "non-obvious observations about properties" in text:
            return "\n".join(
                f"Observation {i}:\nReasoning: because.\nClaim: {c}"
                for i, c in enumerate(OBSERVATIONS, 1)
            )
        if text.startswith("Keep only the most useful"):
            assert req.messages is not None
            kept = re.findall(r"Claim: (.*)", req.messages[-2]["content"])[:2]
            return "\n".join(f"Observation {i}: {c}" for i, c in enumerate(kept, 1))
        if "Observations known to be correct" in text:
            return f"Observation 1:\nReasoning: quoted.\nClaim: derived fact {seed % 1009}."
        if "write a natural-language solution" in text:
            return f"Sketch {seed % 1009}: count values with a hash map."
        if "give a counter-example" in text:
            return "The sketch fails when n = 1."
        if "how would you repair" in text:
            return f"Fixed sketch {seed % 1009}: handle n = 1 first, then count."
        if "Write pseudocode that follows" in text:
            return f"PSEUDO {seed % 1009}: read the input, count, print."
        return None

    streams_results = True  # hands each result to on_result as it finishes, as hf does

    def generate(
        self, requests: Sequence[GenRequest], progress=None, on_result=None
    ) -> list[GenResult]:
        self.calls.append(list(requests))
        out = []
        for i, req in enumerate(requests):
            if self.delay_s:
                time.sleep(self.delay_s)
            text = self.respond(req)
            out.append(GenResult(text=text, num_tokens=len(text.split()), finish_reason="stop"))
            if on_result:
                on_result(i, out[-1])
            if progress:
                progress(1)
            self.handed += 1
            if self.pause_after and self.handed == self.pause_after:
                self.hold()
        return out

    def hold(self) -> None:
        """Say so through the `ready` file, then wait for the signal (SIGINT in the test).
        Once per `ready` file: the run resumed with the same options does not hold."""
        if self.ready:
            if Path(self.ready).exists():
                return
            Path(self.ready).touch()
        while True:
            time.sleep(3600)

    def close(self) -> None:
        self.closed = True

    @property
    def n_requests(self) -> int:
        return sum(len(c) for c in self.calls)


def make(
    model: str | None = None,
    delay_s: float = 0.0,
    pause_after: int = 0,
    ready: str = "",
    **_: object,
) -> ScriptedBackend:
    """Factory for `--backend run_scripted:make`: knows the demo references."""
    from cppo_bench.benchmarks import load_benchmark

    problems = load_benchmark("demo").problems
    return ScriptedBackend(
        problems,
        model_id=model or "scripted-model",
        delay_s=float(delay_s),
        pause_after=int(pause_after),
        ready=str(ready),
    )


LIVE: list = []  # what `--backend run_scripted:live` hands out: a backend a test made


def live(model: str | None = None, **_: object):
    """Factory for `--backend run_scripted:live`: the backend a test put in LIVE, so the test
    can look at it after the command (the production `run` has no hook for this)."""
    return LIVE[-1]


live.default_model = "scripted-model"  # type: ignore[attr-defined]  # the runs' model label


def invoke(args: list[str], backend: ScriptedBackend | None = None):
    """`cppo-bench ARGS` in process; with `backend`, the run generates with that live backend."""
    from click.testing import CliRunner

    from cppo_bench.cli import main

    if backend is not None:
        LIVE[:] = [backend]
        args = [*args, "--backend", "run_scripted:live"]
    return CliRunner().invoke(main, args, catch_exceptions=False)
