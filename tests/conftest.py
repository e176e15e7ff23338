"""Shared fixtures. Tests that read ../shared/data skip (saying why) where a clone has none."""

from __future__ import annotations

import os

# OpenMP threads spin-wait by default; on a shared 2-core box that slows torch ~10x.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402

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


# Tests too long for CI (tens of minutes on a 2-core CPU): run them with CPPO_RUN_MANUAL=1.
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("CPPO_RUN_MANUAL") == "1":
        return
    skip = pytest.mark.skip(reason="manual: tens of minutes on a CPU; set CPPO_RUN_MANUAL=1")
    for item in items:
        if item.get_closest_marker("manual"):
            item.add_marker(skip)
