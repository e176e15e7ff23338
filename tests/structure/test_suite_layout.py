"""The suite runs in parallel safely (pytest-xdist, the README's test command): a test module
that launches several processes (torchrun, DeepSpeed's launcher, mp.spawn, a side venv's vLLM)
is in the one `multiprocess` xdist group, so no two launches share the machine at once
(rendezvous ports, cores, memory); conftest.py keeps every other module on one worker."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = next(p for p in Path(__file__).resolve().parents if p.name == "tests")
MULTIPROCESS = "multiprocess"  # conftest.MULTIPROCESS
LAUNCHES = re.compile(r"torchrun|mp\.spawn|nproc_per_node|main_process_port|venv_python\(")


def test_every_module_that_launches_processes_is_in_the_multiprocess_group():
    unmarked = [
        p.name
        for p in sorted(TESTS.rglob("test_*.py"))  # the test folders mirror the package
        if p.name != Path(__file__).name
        and LAUNCHES.search(p.read_text())
        and f'xdist_group("{MULTIPROCESS}")' not in p.read_text()
    ]
    assert not unmarked, (
        f"launch several processes without xdist_group({MULTIPROCESS!r}): {unmarked}"
    )


# A launch inside a script a test runs counts too: gpu_smoke.py's ckpt-wrapper check starts
# `torch.distributed.run` with 2 ranks; its test module was in no group, the regex above never
# saw the launch, and it failed once in CI beside another launch. A benchmark script launches
# when it, or a benchmarks package it imports, starts torchrun or mp.spawn in code; a module
# that runs it (a line naming it without `--only`, which picks checks) joins the group.
SCRIPT_LAUNCH = re.compile(r'"torch\.distributed\.run"|"torchrun"|mp\.spawn\(')


def _launching_scripts() -> list[str]:
    bench = TESTS.parent / "benchmarks"
    found = []
    for script in sorted(bench.glob("*.py")):
        text = script.read_text()
        for pkg in set(re.findall(r"(?:from|import) benchmarks\.(\w+)", text)):
            sub = bench / pkg
            files = sorted(sub.rglob("*.py")) if sub.is_dir() else [bench / f"{pkg}.py"]
            text += "".join(f.read_text() for f in files if f.is_file())
        if SCRIPT_LAUNCH.search(text):
            found.append(script.name)
    return found


def test_every_module_that_runs_a_launching_script_is_in_the_multiprocess_group():
    scripts = _launching_scripts()
    assert "gpu_smoke.py" in scripts  # the detector still sees the one we know
    unmarked = [
        p.name
        for p in sorted(TESTS.rglob("test_*.py"))
        if p.name != Path(__file__).name
        and any(s in line and "--only" not in line
                for line in p.read_text().splitlines() for s in scripts)
        and f'xdist_group("{MULTIPROCESS}")' not in p.read_text()
    ]  # fmt: skip
    assert not unmarked, f"run a script that launches processes, not in the group: {unmarked}"


# A launch's rendezvous port comes from tests/helpers/tests_paths.py (torchrun --standalone,
# accelerate's port 0, free_port): a port a test computes (29000 + pid % 500) collided with
# another launch and failed CI where two launches met.
PORT_NAMES = re.compile(r"master_port|MASTER_PORT|main_process_port|rdzv.endpoint")
PORT_DOOR = TESTS / "helpers" / "tests_paths.py"


def test_only_the_launch_helpers_name_a_rendezvous_port():
    naming = [
        str(p.relative_to(TESTS))
        for p in sorted(TESTS.rglob("*.py"))
        if p not in (PORT_DOOR, Path(__file__).resolve()) and PORT_NAMES.search(p.read_text())
    ]
    assert not naming, f"name a rendezvous port outside tests_paths.py: {naming}"
    assert PORT_NAMES.search(PORT_DOOR.read_text())  # the door still exists


def test_no_test_imports_a_conftest() -> None:
    # tests/conftest.py and tests/verifier/conftest.py are both the module "conftest": which
    # one `from conftest import X` finds depends on what else the process collected (it broke
    # tests/stats/test_lcb_slices.py beside tests/verifier/ in one xdist worker)
    found = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
             if re.search(r"^\s*(from conftest import|import conftest)", p.read_text(), re.M)]  # fmt: skip
    assert not found, f"import shared test values from tests/helpers/, not conftest: {found}"


def test_every_launch_in_the_scripts_takes_a_free_port() -> None:
    # a torchrun launched by a script a user runs (benchmarks/, the package) with the default
    # rendezvous port 29500 fails with EADDRINUSE beside any other job (gpu_smoke's
    # ckpt-wrapper did, under the parallel test run): --standalone picks a free one
    repo = TESTS.parent
    found = []
    for folder in ("benchmarks", "cppo_bench", "trainers"):
        for path in (repo / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for m in re.finditer(r'"torch\.distributed\.run"|"torchrun"', text):
                statement = text[m.start() : text.find("\n\n", m.start())]
                if "--standalone" not in statement and "master_port" not in statement:
                    found.append(
                        f"{path.relative_to(repo)}:{text.count(chr(10), 0, m.start()) + 1}"
                    )
    assert not found, f"a launch on the default rendezvous port: {found}"
