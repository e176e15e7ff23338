"""Shared fixtures. Tests that read ../shared/data skip (saying why) where a clone has none."""

from __future__ import annotations

import os
import sys

# OpenMP threads spin-wait by default; on a shared 2-core box that slows torch ~10x.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402

# shared helpers (toy_task, tiny_models, run_scripted, ...) live in tests/helpers/; tests in
# the per-package folders import them by their plain names
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no real benchmark samples at {SHARED_DATA} (this clone has no ../shared)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def toy_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy task's tiny random policy (tests/helpers/toy_task.py), saved once per session."""
    pytest.importorskip("transformers")
    from toy_task import toy_model_dir

    return toy_model_dir(tmp_path_factory.mktemp("toy") / "model")


MULTIPROCESS = "multiprocess"  # the xdist group of the tests that launch several processes


# Under pytest-xdist (the README's `-n 2 --dist loadgroup`) the tests of one module run on
# one worker, in order, as without xdist: they share module-level state (fixtures, a process
# mark the hostile-program tests look for in /proc). A module that launches several processes
# (torchrun, DeepSpeed, mp.spawn, vLLM) marks itself `xdist_group(MULTIPROCESS)`, so two such
# launches never compete for rendezvous ports, cores and memory at once
# (tests/structure/test_suite_layout.py checks the marks). tryfirst: before xdist reads the groups.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # Tests too long for CI (tens of minutes on a 2-core CPU): run them with CPPO_RUN_MANUAL=1.
    if os.environ.get("CPPO_RUN_MANUAL") == "1":
        return
    skip = pytest.mark.skip(reason="manual: tens of minutes on a CPU; set CPPO_RUN_MANUAL=1")
    for item in items:
        if item.get_closest_marker("manual"):
            item.add_marker(skip)


class _GroupsHold:
    """The groups hold only if xdist's own hook (after the one above, before this one) tagged
    each test's node id with its group: pytest 9.2 silently undid that (pytest-xdist#1386) and
    every launch ran at once, fighting over ports and cores. Then every test fails, naming why,
    instead of a few failing at random where two launches meet. (An error raised in a worker's
    collection reaches the terminal as xdist's INTERNALERROR, without the reason.)"""

    def __init__(self) -> None:
        self.why = ""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not getattr(config.option, "loadgroup", False):  # set on xdist's workers only
            return
        loose = [item.nodeid for item in items if "@" not in item.nodeid]
        if loose:
            self.why = (
                f"--dist loadgroup does not group tests under pytest {pytest.__version__} "
                f"(pytest-xdist#1386; e.g. {loose[0]}): install the dev extra's pytest<9.2"
            )

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.why:
            pytest.fail(self.why, pytrace=False)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_GroupsHold(), "cppo-bench-groups-hold")
