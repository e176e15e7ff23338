"""A real small file system for the full-disk / read-only tests: a 256 KiB tmpfs mounted
under the test's folder (as root; the test is skipped, with the reason, where mount is
refused), filled with ballast files of one page each, and remounted read-only on request."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PAGE = 4096
SIZE = "256k"
FULL = "No space left on device"
READ_ONLY = "Read-only file system"


def _mount(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextmanager
def small_fs(folder: Path, size: str = SIZE) -> Iterator[SmallFs]:
    folder.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or 'not root'}")
    fs = SmallFs(folder)
    try:
        yield fs
    finally:
        _mount("-o", "remount,rw", str(folder))
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


class SmallFs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ballast = root / ".ballast"

    def fill(self, leave_pages: int = 0) -> None:
        """Fill the file system with one-page files, then free `leave_pages` of them."""
        self.ballast.mkdir(exist_ok=True)
        n = 0
        while True:
            try:
                (self.ballast / str(n)).write_bytes(b"\0" * PAGE)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                (self.ballast / str(n)).unlink(missing_ok=True)
                break
            n += 1
        for i in range(min(leave_pages, n)):
            (self.ballast / str(n - 1 - i)).unlink()
        assert n > leave_pages, "the file system was full before: give it a larger size"

    def free(self) -> None:
        for name in os.listdir(self.ballast) if self.ballast.is_dir() else []:
            (self.ballast / name).unlink()

    def read_only(self) -> None:
        done = _mount("-o", "remount,ro", str(self.root))
        assert done.returncode == 0, done.stderr

    def writable(self) -> None:
        done = _mount("-o", "remount,rw", str(self.root))
        assert done.returncode == 0, done.stderr

    def apply(self, state: str) -> None:
        """`state` "full" or "read-only" (the parametrized cases of every test)."""
        self.fill() if state == "full" else self.read_only()

    def restore(self, state: str) -> None:
        self.free() if state == "full" else self.writable()


REASON = {"full": FULL, "read-only": READ_ONLY}


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder` (but the ballast) -> its bytes."""
    out = {}
    for top, _dirs, files in os.walk(folder):
        if ".ballast" in Path(top).parts:
            continue
        for name in files:
            path = Path(top, name)
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


def kept(before: dict[str, bytes], after: dict[str, bytes]) -> bool:
    """Every file of `before` is there unchanged, and nothing new holds data (an append that
    was refused may leave the file it opened, empty)."""
    return all(after.get(name) == data for name, data in before.items()) and not any(
        after[name] for name in after.keys() - before.keys()
    )


def one_error_line(result, reason: str, names: str) -> str:  # noqa: ANN001 - a click Result
    """The command stopped (exit 1) with exactly one `Error:` line, holding `reason` and
    `names` (a part of the refused path), and no traceback; returns that line."""
    text = result.output
    assert result.exit_code == 1, text
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, text
    assert reason in errors[0] and names in errors[0], errors[0]
    return errors[0]
