"""The commit of the checkout the code runs from, for the provenance of run and training
manifests (one helper for both halves: one time-out, and no git call outside a checkout)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout holding cppo_bench/ and trainers/
TIMEOUT_S = 10  # a git call on a slow network file system; provenance never blocks a run longer


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


@functools.cache
def git_commit(mark_dirty: bool = False) -> str | None:
    """HEAD of the checkout, or None where the package is not a git checkout (an installed
    wheel: a `.git` elsewhere up the tree is not ours). ``mark_dirty`` appends ``-dirty``
    when tracked files differ from HEAD (a training run's code may be uncommitted)."""
    if not (ROOT / ".git").exists():  # a folder, or a file in a worktree
        return None
    head = _git("rev-parse", "HEAD")
    if not head:
        return None
    if mark_dirty and _git("status", "--porcelain", "--untracked-files=no"):
        return head + "-dirty"
    return head
