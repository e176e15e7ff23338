"""A file the user names for a command's output (`verify --out FILE`): written through the
one door for it, cppo_bench.files.outdir.write_user_file (a link planted there is replaced,
not followed; /dev/null, a FIFO or /dev/stdout is written into, never renamed over)."""

from __future__ import annotations

from cppo_bench.files.outdir import write_user_file

__all__ = ["write_user_file"]
