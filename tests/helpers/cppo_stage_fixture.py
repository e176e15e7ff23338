"""Moved to `benchmarks/fixtures/cppo_stage_fixture.py`: the GPU smoke test and `benchmarks/train_step.py`
run from a plain checkout without tests/ on the path. This name keeps the tests' imports
(and their launch commands) working: it is the same module object, so a patch through either
name reaches both."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.fixtures import cppo_stage_fixture as _real  # noqa: E402

if TYPE_CHECKING:  # (what the importers see: the same names, for the type checker)
    from benchmarks.fixtures.cppo_stage_fixture import *  # noqa: F403

if __name__ == "__main__":
    _real.main()
else:
    sys.modules[__name__] = _real
