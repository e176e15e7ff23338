"""Door 3 of docs/untrusted-inputs.md: the one writer under an output folder (`report
--out`, `verify --out`, `decontam --out`, `run --out`'s root).

Names of files written under an output folder come partly from data (a table spec's name,
a run's path), and the folder itself may hold links planted by whoever shared it. So:

- `OutDir(root)` takes the folder the user named. The folder itself may be a link to a
  folder (the user's choice: a scratch mount); a dangling link, a file or a FIFO there is
  one `OutDirError` line, never FileExistsError / NotADirectoryError.
- `name(rel)` accepts only a relative path of plain parts (no `..`, no absolute path, no
  empty part, no control character): a spec named `../../x` is refused by name.
- every directory from the root down is checked with lstat and created one level at a
  time (`storefs.make_dirs`), never through a link;
- files are written to a fresh temporary file (O_EXCL|O_NOFOLLOW) and renamed over the
  target: a link planted at `index.html` is replaced, its target never written;
- `remove(rel)` unlinks a file (or a link, not its target); `clear(rel)` removes a tree
  without following links in it;
- nothing that is not a regular file or a link is ever replaced, renamed over, truncated
  or removed: a device, FIFO or socket (or a folder where a file goes) at a name written,
  removed or cleared is one `OutDirError` line and is left as it was (`_keep`, on
  `storefs.not_replaceable`; as root a rename over `/dev/null` destroyed the device);
- `write_user_file(path, text)`: ONE output file the user named (`verify --out FILE`).
  An existing character device or FIFO there (`/dev/null`, a named pipe) is written into,
  as a shell's `>` would; `/dev/stdout`, `/dev/stderr`, `/dev/fd/1` write to this process's
  own descriptor (never replacing the link in /dev); a block device or socket is one line;
  anything else goes through `OutDir` like every other file;
- for the trainers (`train --out`, a CPPO stage folder): `writing(rel)` streams a large file
  to the same temporary file; `fresh_folder(rel)` makes an empty folder (whatever was at that
  name, a planted link included, is removed, never followed) for a library that writes a
  folder itself (`save_pretrained`, accelerate / DeepSpeed `save_state`); `rename` and
  `link` swap artifacts in and point `checkpoints/final` at a sibling.

`tests/files/test_untrusted_writer.py` walks the code and fails on a write under an output
folder that goes another way (exceptions listed there).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from cppo_bench.errors import DataError
from cppo_bench.files import fs as storefs
from cppo_bench.files.oserrors import refusal
from cppo_bench.util.termsafe import quote


class OutDirError(DataError):
    """An output folder that cannot be one, or a name that would leave it."""


def refused(path: Path, exc: BaseException, what: str = "cannot write",
            kept: str = "the old file is kept") -> OutDirError:  # fmt: skip
    """A step the file system refused (full, read-only, quota...): `oserrors.refusal`."""
    return OutDirError(refusal(path, exc, what, kept))


def check_root(root: str | Path) -> Path:
    """`root` as an output folder: absent (created later), a folder, or a link to a folder."""
    root = Path(root)
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return root
    except OSError as exc:
        raise OutDirError(f"{root}: cannot use as an output folder ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(root)
        except OSError:
            raise OutDirError(
                f"{root}: is a link to {quote(os.readlink(root))}, which does not exist; "
                "name a folder (or remove the link)"
            ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutDirError(f"{root}: exists and is not a folder; name a folder for the output")
    return root


def make_root(root: str | Path) -> Path:
    """`check_root`, then create it (and its parents) if absent, as one line on failure."""
    root = check_root(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutDirError(f"{root}: cannot create the output folder ({exc.strerror})") from None
    return root


def check_real_folder(path: str | Path) -> None:
    """`path` is absent or a real folder (lstat: a link there is looked at, not followed);
    one OutDirError line otherwise. For a folder below the one the user named, which is
    never taken as a root that may be a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutDirError(f"{path}: cannot use as a folder ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutDirError(
            f"{path}: is a symbolic link; an output folder's files are never written through links"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise OutDirError(f"{path}: exists and is not a folder")


def safe_part(part: str) -> str | None:
    """Why `part` cannot be one component of a file name written from data, or None."""
    if part in ("", ".", ".."):
        return f"{quote(part)} is not a plain name"
    if "/" in part or "\\" in part or "\0" in part:
        return "holds a path separator"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in part):
        return "holds a control character"
    return None


class OutDir:
    """The files under one output folder, written only through here."""

    @staticmethod
    def _keep(path: Path, verb: str, folder_ok: bool = False) -> None:
        """The one check before any replace / rename / unlink / rmtree: one line if the entry
        at `path` is a device, FIFO, socket (or a folder where a file goes)."""
        why = storefs.not_replaceable(path, folder_ok)
        if why:
            raise OutDirError(f"{path}: cannot {verb} it: {why}")

    def _keep_tree(self, path: Path, verb: str) -> None:
        """`_keep` for every entry of the real folder `path` (rmtree would remove them all)."""
        self._keep(path, verb, folder_ok=True)
        if not os.path.isdir(path) or os.path.islink(path):
            return
        for top, dirs, files in os.walk(path):  # os.walk follows no link to a folder
            for name in dirs + files:
                self._keep(Path(top, name), verb, folder_ok=True)

    def __init__(self, root: str | Path) -> None:
        self.root = make_root(root)

    def name(self, rel: str | Path) -> Path:
        """The path of `rel` under the root, or OutDirError if it would leave it."""
        pure = PurePosixPath(str(rel))
        if pure.is_absolute() or not pure.parts:
            raise OutDirError(f"{rel}: not a relative name under {self.root}")
        for part in pure.parts:
            why = safe_part(part)
            if why:
                raise OutDirError(f"{rel}: {why}; refusing to write it under {self.root}")
        return self.root.joinpath(*pure.parts)

    def _dir_for(self, path: Path) -> None:
        try:
            storefs.make_dirs(self.root, path.parent)
        except storefs.StoreLinkError as exc:
            text = str(exc).replace("a run store", "an output folder")
            raise OutDirError(text.replace("run store", "output folder")) from None

    def folder(self, rel: str | Path) -> Path:
        """The folder `rel` under the root, created level by level, never through a link."""
        path = self.name(rel)
        self._dir_for(path / "x")
        return path

    @contextmanager
    def writing(self, rel: str | Path, fsync: bool = False) -> Iterator[TextIO]:
        """A text handle on a fresh temporary file, renamed over `rel` when the block ends
        without an error (an error leaves `rel` as it was)."""
        path = self.name(rel)
        self._dir_for(path)
        self._keep(path, "write")
        # the pid: two processes of one run writing the same name never share a temp file
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self._keep(tmp, "use as a temporary file")
        try:
            if os.path.lexists(tmp):  # (unlinking nothing on a read-only disk is EROFS)
                os.unlink(tmp)  # an old one, or a link planted under its name: never written
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            raise OutDirError(f"{tmp}: is a folder where a temporary file goes") from None
        except OSError as exc:
            raise refused(path, exc, f"cannot remove the old temporary file {tmp.name}") from None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o644)
        except OSError as exc:
            raise refused(path, exc) from None
        try:
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    yield fh
                    if fsync:
                        fh.flush()
                        os.fsync(fh.fileno())
            except OSError as exc:
                # the file system refused our write, flush or close (full, quota, I/O
                # error): no file name in it. One naming a file is the caller's own.
                if exc.filename is None:
                    raise refused(path, exc) from None
                raise
            self._keep(path, "write")  # again: planted while the file was being written
            try:
                os.replace(tmp, path)  # replaces a link at `path` itself, never its target
            except OSError as exc:  # a folder planted at the name, a read-only folder
                raise refused(path, exc) from None
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def write_bytes(self, rel: str | Path, data: bytes, fsync: bool = False) -> Path:
        path = self.name(rel)
        with self.writing(rel, fsync) as fh:
            fh.buffer.write(data)
        return path

    def write_text(self, rel: str | Path, text: str, fsync: bool = False) -> Path:
        return self.write_bytes(rel, text.encode("utf-8"), fsync)

    def save_figure(self, fig: Any, rel: str | Path, **kwargs: Any) -> Path:
        """A matplotlib figure rendered in memory, then written like any file (savefig to a
        path would follow a link planted there)."""
        import io

        fmt = PurePosixPath(str(rel)).suffix.lstrip(".")
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, **kwargs)
        return self.write_bytes(rel, buf.getvalue())

    def remove(self, rel: str | Path) -> None:
        """Unlink a file written earlier (a link there is removed, not followed)."""
        path = self.name(rel)
        self._dir_for(path)
        self._keep(path, "remove")
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            raise OutDirError(f"{path}: is a folder where a file was expected") from None
        except OSError as exc:
            raise refused(path, exc, "cannot remove", "left as it was") from None

    def clear(self, rel: str | Path) -> None:
        """Remove the tree `rel` (shutil.rmtree never follows links inside it; a link at
        `rel` itself is unlinked, its target left alone)."""
        path = self.name(rel)
        self._dir_for(path)
        self._keep_tree(path, "remove")
        try:
            if os.path.islink(path):
                os.unlink(path)
            elif os.path.isdir(path):
                shutil.rmtree(path)
        except OSError as exc:
            raise refused(path, exc, "cannot remove", "what remains is left as it was") from None

    def files(self, rel: str | Path, pattern: str) -> list[Path]:
        """The files matching `pattern` in the folder `rel` (absent: none; a link: refused)."""
        path = self.name(rel)
        self._dir_for(path / "x")
        return sorted(path.glob(pattern)) if path.is_dir() else []

    def fresh_folder(self, rel: str | Path) -> Path:
        """An empty folder at `rel`, made here without following a link: an unfinished
        folder left there is removed (rmtree follows no link inside it); a link or a file
        at that name is refused, one line. A library that writes a folder itself
        (save_pretrained, accelerate / DeepSpeed save_state) is given only such a folder."""
        path = self.name(rel)
        self._dir_for(path)
        self.check_not_link(rel)
        self._keep_tree(path, "empty")
        try:
            if os.path.isdir(path):
                shutil.rmtree(path)
            os.mkdir(path)
        except OSError as exc:
            raise refused(path, exc, "cannot create this folder", "") from None
        return path

    def check_not_link(self, rel: str | Path) -> Path:
        """`rel` is absent or a real folder, one line if it is a link or anything else."""
        path = self.name(rel)
        check_real_folder(path)
        return path

    def rename(self, src: str | Path, dst: str | Path) -> Path:
        """Rename `src` to `dst`, both under the root (a link at either end is moved or
        replaced itself, never followed)."""
        a, b = self.name(src), self.name(dst)
        self._dir_for(a)
        self._dir_for(b)
        self._keep(a, "move", folder_ok=True)
        # a folder may replace an empty folder (os.replace); a file never replaces a folder
        moving_folder = os.path.isdir(a) and not os.path.islink(a)
        self._keep(b, "replace", folder_ok=moving_folder)
        try:
            os.replace(a, b)
        except OSError as exc:
            raise refused(a, exc, f"cannot move it to {b.name}", "both left as they were") from None
        return b

    def link(self, rel: str | Path, target: str) -> Path:
        """`rel` as a relative link to its sibling `target` (a plain name): whatever was at
        `rel` is unlinked first, not followed."""
        why = safe_part(target)
        if why:
            raise OutDirError(f"{target}: {why}; not a link target under {self.root}")
        path = self.name(rel)
        self.remove(rel)
        try:
            os.symlink(target, path)
        except OSError as exc:
            raise refused(path, exc, "cannot make this link", "") from None
        return path


# /dev/stdout -> /proc/self/fd/1, /dev/fd/2: a name for one of this process's descriptors
_OWN_FD = re.compile(r"/(?:proc/(?:self|thread-self|(\d+))/fd|dev/fd)/([12])")


def _own_stream(path: Path) -> int | None:
    """1 or 2 when `path` names this process's stdout / stderr through links, else None."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        match = _OWN_FD.fullmatch(current)
        if match and match.group(1) in (None, str(os.getpid())):
            return int(match.group(2))
        try:
            target = os.readlink(current)
        except OSError:
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    return None


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:  # /dev/full, a reader that closed its end of the pipe
        raise refused(path, exc, kept="") from None


def write_user_file(path: str | Path, text: str) -> Path:
    """Write `text` to ONE output file the user named on the command line.

    A name under an output folder may be planted by a stranger; this one is the user's own
    choice, so an existing character device or FIFO there (`/dev/null`, a named pipe, a
    terminal) is written INTO, as a shell's `>` does: opened without O_CREAT / O_TRUNC (it
    exists; a device has nothing to truncate), never renamed over. `/dev/stdout`,
    `/dev/stderr` and `/dev/fd/1|2` are this process's own descriptors, written directly
    (when stdout is a file, the link in /dev is never replaced by one). A block device or a
    socket is one line. Anything else (absent, a regular file, a link to one: the link is
    replaced, its target kept) goes through `OutDir` like every other written file."""
    path, data = Path(path), text.encode("utf-8")
    stream = _own_stream(path)
    if stream is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        _write_all(stream, data, path)
        return path
    try:
        mode = os.stat(path).st_mode  # followed: the user named what the link points at
    except OSError:
        mode = None
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC  # a FIFO waits for its reader
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            raise OutDirError(f"{path}: cannot open it for writing ({exc.strerror})") from None
        try:
            now = os.fstat(fd).st_mode
            if not (stat.S_ISCHR(now) or stat.S_ISFIFO(now)):  # swapped since the stat
                raise OutDirError(f"{path}: changed while it was opened; nothing written")
            _write_all(fd, data, path)
        finally:
            os.close(fd)
        return path
    if mode is not None and (stat.S_ISBLK(mode) or stat.S_ISSOCK(mode)):
        raise OutDirError(
            f"{path}: is {storefs.kind_of(mode)}; refusing to write into it or replace it"
        )
    return OutDir(path.parent).write_bytes(path.name, data)
