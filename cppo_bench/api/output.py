"""Files the user names on the command line: a command's output (`verify --out FILE`), written
through the one door for it, cppo_bench.files.outdir.write_user_file (a link planted there is
replaced, not followed; /dev/null, a FIFO or /dev/stdout is written into, never renamed over),
and read through the one reader, cppo_bench.files.userfiles."""

from __future__ import annotations

from cppo_bench.files.outdir import write_user_file
from cppo_bench.files.userfiles import is_file, read_text

__all__ = ["is_file", "read_text", "write_user_file"]
