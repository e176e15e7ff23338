"""The README is a landing page and the docs hold the rest (issue 28): the README stays short,
every section it used to have has a home under docs/, links resolve, and the examples of
docs/ run: the worked examples of extending.md here, the README quick start (CLI and Python)
and python-api.md in tests/docs/test_docs_quickstart.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

# the README's section headings before it became a landing page (commit 657b1d5)
FORMER_HEADINGS = (
    "Set-up",
    "Running a method (`cppo-bench run`)",
    "Benchmarks",
    "Demo benchmark",
    "Decontamination",
    "Trainer core (`trainers/core`)",
    "Training (`cppo-bench train`)",
    "Training CPPO (`cppo-bench train cppo`)",
    "Metrics and statistics (`cppo-bench stats`)",
    "Verifier (`cppo-bench verify`)",
    "Inference backends",
    "Tables and figures (`cppo-bench report`)",
    "lm-evaluation-harness tasks (`cppo-bench lm-eval`)",
)
# pages other branches write at the same time (the verifier's guarantees, GPU use): linked
# now, present once merged
PENDING: set[str] = set()  # links to pages still being written (none now)


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file (a fence closes only at the start of a line)."""
    return re.findall(r"(?ms)^```python\n(.*?)^```$", path.read_text())


def headings(path: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```$", "", path.read_text())  # not the comments in code
    return {m.strip() for m in re.findall(r"(?m)^#+ (.+)$", text)}


def test_readme_is_a_landing_page():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 200
    for section in ("## Set-up", "## Quick start", "## Documentation"):
        assert section in text
    assert "```bash" in text.split("## Quick start", 1)[1]
    assert "```python" in text.split("## Quick start", 1)[1]


def test_every_former_readme_section_has_a_home_in_docs():
    found = set().union(*(headings(p) for p in DOCS.glob("*.md")))
    missing = [h for h in FORMER_HEADINGS if h not in found]
    assert not missing, f"no docs/ page has the heading(s) {missing}"


def test_every_docs_page_is_in_the_table_of_contents():
    readme = (REPO / "README.md").read_text()
    unlinked = [p.name for p in DOCS.glob("*.md") if f"(docs/{p.name})" not in readme]
    assert not unlinked, f"README's table of contents lacks {unlinked}"


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))]
)
def test_relative_links_resolve(page):
    path = REPO / page
    text = re.sub(r"(?ms)^```.*?^```$", "", path.read_text())
    broken = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # http:, mailto:
        resolved = (path.parent / target).resolve()
        rel = resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else target
        if not resolved.exists() and rel not in PENDING:
            broken.append(target)
    assert not broken, f"{page}: links to missing files {broken}"


def test_extending_examples_run(tmp_path, monkeypatch):
    """docs/extending.md's worked examples, run in order as one session: a benchmark, a
    method and a backend registered and run end to end, a trainer's advantage checked."""
    blocks = python_blocks(DOCS / "extending.md")
    assert len(blocks) == 4
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/extending.md, python block {i + 1}", "exec"), namespace)
    finally:  # the registries are process-wide: leave them as the other tests expect
        from cppo_bench.benchmarks import BENCHMARKS
        from cppo_bench.methods import METHODS

        for registry, name in ((BENCHMARKS, "tiny"), (METHODS, "direct_hint")):
            registry._entries.pop(name, None)
        try:
            from trainers.algorithms import ALGORITHMS
            from trainers.recipes import RECIPES

            for registry in (ALGORITHMS, RECIPES):
                registry._entries.pop("mean_baseline", None)
        except ImportError:
            pass
    assert (tmp_path / "runs-extending").is_dir()


# paths a page cites in backticks: repository paths from the root, and in a package's own
# README paths below that package (`engine/loop.py` in trainers/README.md); placeholders
# (`benchmarks/NAME.py`), globs and run-store folders (`runs/...`) are not files of the tree
REPO_PREFIXES = ("cppo_bench/", "trainers/", "tests/", "docs/", "benchmarks/", ".ci/",
                 "sandbox_images/", "reports/specs/", "reports/README.md")  # fmt: skip
ROOT_FILES = ("README.md", "CONTRIBUTING.md", "pyproject.toml", ".pre-commit-config.yaml")
SOURCE_DIRS = ("cppo_bench", "trainers", "reports", "sandbox_images", "benchmarks", "tests")
CITING_PAGES = sorted(
    {"README.md", "CONTRIBUTING.md", *(f"docs/{p.name}" for p in DOCS.glob("*.md"))}
    | {p.relative_to(REPO).as_posix() for d in SOURCE_DIRS for p in (REPO / d).rglob("README.md")}
)


def cited_paths(page: Path) -> list[str]:
    text = re.sub(r"(?ms)^```.*?^```$", "", page.read_text())
    out = []
    for token in re.findall(r"`([^`\s]+)`", text):
        path = re.split(r"::|:(?=[A-Za-z_])", token)[0].rstrip(".,")  # file.py:function
        if any(c in path for c in "*<{$~") or "..." in path or path.startswith("/"):
            continue
        if any(re.match(r"[A-Z][A-Z_]+(\.|$)", part) for part in path.split("/")):
            continue  # a placeholder segment: NAME.py, ALGO/
        out.append(path)
    return out


@pytest.mark.parametrize("page", CITING_PAGES)
def test_paths_cited_in_backticks_exist(page):
    path = REPO / page
    missing = []
    for cited in cited_paths(path):
        if cited.startswith(REPO_PREFIXES) or cited in ROOT_FILES:
            where = REPO / cited
        elif path.parent != REPO and "/" in cited and (path.parent / cited.split("/")[0]).is_dir():
            where = path.parent / cited  # below the package whose README this is
        else:
            continue
        if not where.exists():
            missing.append(cited)
    assert not missing, f"{page} cites files that do not exist: {missing}"


def test_the_backtick_check_sees_a_missing_file(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "See `tests/test_docs_examples.py` and `trainers/engine/loop.py:_train`, not\n"
        "`cppo_bench/benchmarks/NAME.py` or `tests/test_train_*.py`.\n"
        "```bash\ncat `docs/in-a-code-block.md`\n```\n"
    )
    assert cited_paths(page) == ["tests/test_docs_examples.py", "trainers/engine/loop.py"]
