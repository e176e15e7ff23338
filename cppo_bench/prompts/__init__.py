"""Versioned prompt templates, shipped as package data (`prompts/<version>/<name>.yaml`).

A template holds a system and a user message and the stop strings of its output contract;
`${var}` placeholders are filled with `string.Template`, so statements and code may contain
braces freely. A prompt's text never changes within a version: a new wording is a new
version directory, and the version is recorded in every run's manifest (method options).
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from cppo_bench.errors import DataError
from cppo_bench.problem import Problem
from cppo_bench.util.termsafe import quote, safe

# v2: the study's PLAN contract (A:..D: labels), SFT-candidate rules and SOLVE clause, and
# the released PlanSearch stages (issue #15); v1 stays as it was, so v1 runs replay exactly
DEFAULT_VERSION = "v2"

Messages = tuple[dict[str, str], ...]


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: str
    description: str
    user: str
    system: str = ""
    stop: tuple[str, ...] = ()

    def render(self, **values: Any) -> Messages:
        """Chat messages with every placeholder filled; a missing value is an error."""
        messages: list[dict[str, str]] = []
        if self.system:
            messages.append({"role": "system", "content": _fill(self, self.system, values)})
        messages.append({"role": "user", "content": _fill(self, self.user, values)})
        return tuple(messages)

    def render_stop(self, **values: Any) -> tuple[str, ...]:
        return tuple(_fill(self, s, values) for s in self.stop)


def _letter(index: int) -> str:
    return chr(ord("A") + index - 1) if 1 <= index <= 26 else str(index)


def _fill(template: PromptTemplate, text: str, values: dict[str, Any]) -> str:
    # PLAN-style prompts label methods A:, B:, ...; callers pass counts (n: methods asked
    # for, n_next: the method whose label stops generation), the letters follow from them.
    values = dict(values)
    if "n" in values:
        values.setdefault("last_label", _letter(int(values["n"])))
    if "n_next" in values:
        values.setdefault("next_label", _letter(int(values["n_next"])))
    try:
        return string.Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise ValueError(
            f"prompt {template.version}/{template.name} needs a value for {quote(exc.args[0])}"
        ) from None


def _package_root() -> Path:
    return Path(str(resources.files("cppo_bench.prompts")))


def _read_yaml(version: str, name: str) -> dict[str, Any]:
    """`version` comes from a run's manifest (a stranger's, for `samples`): it names a
    folder of the package's prompts, resolved by the one resolver (`/proc/self/cwd/...`,
    `../..` or a link out of the package is refused) and read by the one reader (a FIFO, a
    device, a file over 16 MiB refused), its YAML by the one loader (no aliases)."""
    from cppo_bench.files import userfiles

    folder = userfiles.inside(_package_root(), version, "prompt version")
    path = userfiles.inside(folder, f"{name}.yaml", "prompt")
    if folder.parent != _package_root().resolve() or not path.is_file():
        known = ", ".join(available(version)) or "(none)"
        raise DataError(
            f"no prompt {safe(version)}/{safe(name)}; known in {safe(version)}: {known}"
        )
    data = userfiles.load_yaml(userfiles.read_text(path, userfiles.MAX_SMALL), str(path))
    if not isinstance(data, dict):
        raise DataError(f"prompt {version}/{name}.yaml: expected a mapping")
    return data


@functools.cache
def load_prompt(name: str, version: str = DEFAULT_VERSION) -> PromptTemplate:
    data = _read_yaml(version, name)
    if "user" not in data:
        raise DataError(f"prompt {version}/{name}.yaml: no 'user' message")
    return PromptTemplate(
        name=name,
        version=version,
        description=str(data.get("description", "")).strip(),
        user=data["user"],
        system=data.get("system") or "",
        stop=tuple(data.get("stop") or ()),
    )


def available(version: str = DEFAULT_VERSION) -> list[str]:
    """Names of the prompts shipped under `version` (a plain folder name of the package)."""
    from cppo_bench.files import userfiles

    try:
        root = userfiles.inside(_package_root(), version, "prompt version")
    except userfiles.UserFileError:
        return []
    if root.parent != _package_root().resolve() or not root.is_dir():
        return []
    return sorted(
        p.name[: -len(".yaml")]
        for p in root.iterdir()
        if p.name.endswith(".yaml") and p.name != "fragments.yaml"
    )


def versions() -> list[str]:
    root = resources.files("cppo_bench.prompts")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("v"))


@functools.cache
def _fragments(version: str) -> dict[str, str]:
    return {k: v for k, v in _read_yaml(version, "fragments").items() if isinstance(v, str)}


def io_note(problem: Problem, version: str = DEFAULT_VERSION) -> str:
    """How the program talks to the tests: stdin/stdout, or the function to implement."""
    frags = _fragments(version)
    fn_name = problem.fn_name
    if fn_name is None:
        return frags["stdin_note"]
    if not problem.starter_code.strip():
        key = "call_note_no_starter"
    elif "class Solution" in problem.starter_code:
        key = "class_note"
    else:
        key = "call_note"
    return string.Template(frags[key]).substitute(
        fn_name=fn_name, starter_code=problem.starter_code.rstrip()
    )


def problem_vars(problem: Problem, version: str = DEFAULT_VERSION) -> dict[str, str]:
    """The per-problem placeholder values every code prompt uses."""
    return {"statement": problem.statement.strip(), "io_note": io_note(problem, version)}


def render(
    name: str, problem: Problem | None = None, version: str = DEFAULT_VERSION, **values: Any
) -> Messages:
    """Render prompt `name`; with a problem, its statement and io note are filled in too."""
    merged = dict(problem_vars(problem, version)) if problem is not None else {}
    merged.update(values)
    return load_prompt(name, version).render(**merged)


__all__ = [
    "DEFAULT_VERSION",
    "Messages",
    "PromptTemplate",
    "available",
    "io_note",
    "load_prompt",
    "problem_vars",
    "render",
    "versions",
]
