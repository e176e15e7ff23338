"""One catch site (issue 48 item 2): every error a user can fix is a `cppo_bench.errors.UserError`
and becomes its one line in `cli.LazyGroup.invoke` only. A command that catches an error to
print it, or to re-raise it as a click exception, is a second catch site: the walk below finds
it in every CLI module (the harness's and the trainers'), so a new one fails here."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import cppo_bench
import trainers
from cppo_bench.cli import main
from cppo_bench.errors import UserError

ROOT = Path(cppo_bench.__file__).resolve().parents[1]
CLI_FILES = [*sorted((ROOT / "cppo_bench" / "cli").glob("*.py")), ROOT / "trainers" / "cli.py"]
THE_SITE = ROOT / "cppo_bench" / "cli" / "__init__.py"
# exceptions that are control flow or protocol, never shown to a user as an error line
INTERNAL = {
    "cppo_bench.files.jsonio.TooMany",  # a reader's limit, turned into a DataError by its caller
    "cppo_bench.files.jsonio.DuplicateKey",  # a ValueError of the parser, as its syntax errors
    "cppo_bench.backends.openai._Retry",  # a retry within the backend; the last becomes its line
    "cppo_bench.backends.openai._Rejected",  # a 4xx the backend turns into its BackendError  # a reader's limit, turned into a DataError by its caller
    "cppo_bench.serve.jobs.RequestError",  # an HTTP 4xx body, never reaches a terminal
    "cppo_bench.serve.queue.QueueFull",  # HTTP 429 with Retry-After
    "cppo_bench.report.figures.Skipped",  # a figure left out, named in the report
    "trainers.cppo_pipeline.stages.PipelineStop",  # recorded in the stage manifest first
    "trainers.cppo_pipeline.reward_model.RMRejected",  # becomes a PipelineStop
    "trainers.cppo_pipeline.audit.AuditFailed",  # becomes the audit's report
}


def _raises_click(handler: ast.ExceptHandler) -> bool:
    return any(
        isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ClickException")
        for stmt in handler.body
        for node in ast.walk(stmt)
    )


def test_no_command_turns_an_error_into_a_line_itself() -> None:
    second = []
    for path in CLI_FILES:
        if path == THE_SITE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler) and _raises_click(node):
                second.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not second, (
        f"a second catch site (raise a cppo_bench.errors.UserError instead): {second}"
    )


def _exception_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for package in (cppo_bench, trainers):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".inside" in info.name or info.name.endswith("__main__"):
                continue  # the sandbox's side runs programs, not commands
            try:
                module = importlib.import_module(info.name)
            except ImportError:  # an optional extra (vllm, fastapi) that is not installed
                continue
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, Exception) and cls.__module__ == info.name:
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_class_is_a_user_error_or_named_internal() -> None:
    classes = _exception_classes()
    assert (
        "cppo_bench.errors.DataError" in classes
        and "cppo_bench.verifier.sandbox.SandboxError" in classes
    )
    loose = sorted(
        n for n, c in classes.items() if not issubclass(c, UserError) and n not in INTERNAL
    )
    assert not loose, f"an exception class that is neither a UserError nor named internal: {loose}"
    assert not INTERNAL - set(classes), f"named internal but gone: {INTERNAL - set(classes)}"


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--method", "no-such-method", "--bench", "demo"],
        ["data", "show", "--bench", "no-such-bench"],
        ["samples", "--run", "."],
        ["stats", "passk", "--runs", "."],
    ],
)
def test_each_becomes_one_line_at_the_one_site(args: list[str], tmp_path: Path) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1 and res.exception is not None
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.output
    assert "Traceback" not in res.output
