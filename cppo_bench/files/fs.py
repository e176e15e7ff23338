"""Opening run-store files without following links out of the store.

A run store may come from someone else, and one that holds a symbolic link
(`records.jsonl -> ~/.bashrc`, `manifest.json.tmp -> /some/file`, a run directory linked
elsewhere) must never make a resume or a merge write, truncate or append outside it.
Every store file is opened here, with O_NOFOLLOW (a link in the last component fails with
ELOOP) and O_NONBLOCK (a FIFO planted as a store file cannot block the open), then checked
to be a regular file; a file opened for writing must also have no other hard link (a
hard link is a path to a file outside the store too). Directories from the store root
down to a run are checked with lstat and created one level at a time, never through a link.
The root itself (`--out`) is the user's choice and may be a link (a scratch mount).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import IO, Any, Literal, overload

from cppo_bench.errors import DataError, StoreLinkError
from cppo_bench.files.oserrors import refusal

_MODES = {
    "rb": os.O_RDONLY,
    "r+b": os.O_RDWR,
    "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
}
NOT_LINK = "is a symbolic link; a run store's files are never followed through links"


class StoreWriteError(DataError):
    """The file system refused a write (read-only, full, no permission): nothing replaced."""


def write_failed(
    path: Path, exc: BaseException, what: str = "cannot write", kept: str = ""
) -> StoreWriteError:
    """The one line for a write the file system refused (`files.oserrors.refusal`)."""
    return StoreWriteError(refusal(path, exc, what, kept))


def check_root(root: Path) -> None:
    """`--out` may be a link to a folder (the user's choice), but not a dangling link, a file
    or anything else: one line instead of FileExistsError / NotADirectoryError."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        if os.path.lexists(root):
            raise StoreLinkError(f"{root}: is a link to a folder that does not exist") from None
        return
    except NotADirectoryError:
        raise StoreLinkError(f"{root}: a part of this path is a file, not a folder") from None
    except OSError as exc:  # no permission on a parent, a name too long, a link loop
        raise DataError(f"{root}: cannot use as a folder ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StoreLinkError(f"{root}: exists and is not a folder")


def check_dir(path: Path) -> None:
    """`path` is a directory and not a symbolic link (lstat: the link itself is looked at)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise StoreLinkError(f"{path}: a part of this path is a file, not a folder") from None
    except OSError as exc:  # no permission on a parent, a name too long, a link loop
        raise DataError(f"{path}: cannot look at this folder ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise StoreLinkError(f"{path}: {NOT_LINK}")
    if not stat.S_ISDIR(st.st_mode):
        raise StoreLinkError(f"{path}: not a directory")


def check_under(root: Path, path: Path) -> None:
    """Every directory from below `root` down to `path` is a real directory (or absent)."""
    root, path = Path(root), Path(path)
    if root.is_absolute() != path.is_absolute():  # absolute() joins the cwd, resolves nothing
        root, path = root.absolute(), path.absolute()
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise StoreLinkError(f"{path}: not inside the run store {root}") from None
    if ".." in rel.parts:
        raise StoreLinkError(f"{path}: leaves the run store {root}")
    current = root
    for part in rel.parts:
        current = current / part
        check_dir(current)


def make_dirs(root: Path, path: Path) -> None:
    """mkdir -p of `path` below `root`, refusing any link on the way."""
    root, path = Path(root), Path(path)
    check_root(root)
    check_under(root, path)
    if root.is_absolute() != path.is_absolute():
        root, path = root.absolute(), path.absolute()
    current = root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreWriteError(f"{root}: cannot create this folder ({exc.strerror})") from None
    for part in path.relative_to(root).parts:
        current = current / part
        try:
            os.mkdir(current)
        except FileExistsError:
            check_dir(current)
        except OSError as exc:
            raise StoreWriteError(f"{current}: cannot create ({exc.strerror})") from None


def _folders_for(path: Path, root: Path | None, make: bool) -> None:
    """The one check of the folders a store file lies in, made by the writer itself (never
    trusted to a caller): with `root`, every folder from `root` down to the file's is a real
    folder, and (`make`) is created one level at a time; without, the file's own folder."""
    if root is None:
        check_dir(path.parent)
    elif make:
        make_dirs(root, path.parent)
    else:
        check_root(root)
        check_under(root, path.parent)


def _need_root(path: Path, root: Path | None) -> Path:
    if root is None:  # a programming error, not bad data: every writer names its root
        raise TypeError(f"{path}: a store file is written only below a root it checks (root=)")
    return Path(root)


def rename_folder(old: Path, new: Path, *, root: Path) -> None:
    """Rename the run folder `old` to `new`, both below `root`: every folder from `root`
    down to both ends is a real folder (never a link), and nothing is at `new` yet (a link
    or a folder planted there is refused, never replaced or entered)."""
    old, new = Path(old), Path(new)
    check_root(root)
    check_under(root, old)
    make_dirs(root, new.parent)
    if os.path.lexists(new):
        raise StoreLinkError(f"{new}: already there; refusing to move {old.name} over it")
    try:
        os.rename(old, new)
    except OSError as exc:
        raise write_failed(old, exc, f"cannot move it to {new.name}", "left as it was") from None


@overload
def open_file(
    path: Path, mode: Literal["a", "ab"], encoding: str | None = None, *, root: Path | None = None
) -> AppendFile: ...


@overload
def open_file(
    path: Path,
    mode: Literal["r", "rb", "r+b"],
    encoding: str | None = None,
    *,
    root: Path | None = None,
) -> IO[Any]: ...


def open_file(
    path: Path, mode: str, encoding: str | None = None, *, root: Path | None = None
) -> IO[Any] | AppendFile:
    """Open a store file ("rb", "r+b", "ab"; "a"/"r" for text with `encoding`) without
    following a link, and only if it is a regular file (for writing: with one link).
    "a"/"ab" give an `AppendFile`: whole writes, and a refused one is one line (below).
    Writing needs `root` (the store, or output folder, the user named): every folder from
    there down to the file is checked here, and made here for an append."""
    path = Path(path)
    binary = mode if mode.endswith("b") else {"r": "rb", "a": "ab"}[mode]
    if binary != "rb":
        root = _need_root(path, root)
    _folders_for(path, root, make=binary == "ab")
    # O_NOCTTY: a terminal device planted there never becomes our controlling tty
    flags = _MODES[binary] | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreLinkError(f"{path}: {NOT_LINK}") from None
        if binary == "rb" or isinstance(exc, FileNotFoundError):
            raise  # a reader's own concern (absent: callers test for it)
        raise write_failed(path, exc, "cannot open for writing") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreLinkError(f"{path}: not a regular file")
        if binary != "rb" and st.st_nlink > 1:
            raise StoreLinkError(
                f"{path}: has {st.st_nlink} hard links; refusing to write through it"
            )
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    if binary == "ab":
        return AppendFile(fd, path, encoding or "utf-8")
    if mode.endswith("b"):
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding=encoding or "utf-8")


class AppendFile:
    """An append-only store file (records, the generation cache, a metrics log), unbuffered:
    each `write` goes to the kernel whole, so when the file system refuses it (full,
    read-only, quota, I/O error) the file is cut back to where that write began (no torn
    line is left; the lines before it are kept: every such file has one writer, the run's
    lock holder) and the error is one StoreWriteError line naming the file."""

    def __init__(self, fd: int, path: Path, encoding: str) -> None:
        self._fd, self.path, self.encoding = fd, Path(path), encoding
        self.closed = False

    def write(self, data: str | bytes) -> int:
        raw = data.encode(self.encoding) if isinstance(data, str) else bytes(data)
        start = None
        try:
            start = os.fstat(self._fd).st_size  # O_APPEND: this write begins at the end
            view = memoryview(raw)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            if start is not None:
                try:
                    os.ftruncate(self._fd, start)
                except OSError:
                    pass  # read-only now: the readers cut a torn last line themselves
            raise write_failed(self.path, exc, kept="the lines before are kept") from None
        return len(data)

    def flush(self) -> None:
        """Nothing buffered here: every write already reached the kernel."""

    def fsync(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise write_failed(self.path, exc, "cannot sync") from None

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)

    def __enter__(self) -> AppendFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# What a writer may replace, rename over or remove: a regular file, or a link (the link
# itself, never its target). A device, FIFO or socket at a written name belongs to someone
# else: as root, renaming a temporary file over /dev/null destroyed the device.
_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def kind_of(mode: int) -> str:
    """`mode` (from stat) in words: "a character device", "a folder", ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def not_replaceable(path: Path, folder_ok: bool = False) -> str | None:
    """Why the entry at `path` (lstat: a link is looked at, not followed) must not be
    replaced, renamed over, truncated or removed, or None: absent, a regular file, a link,
    or (`folder_ok`) a folder. The one check every writer makes before it does any of those."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None  # nothing there (the write itself reports a bad folder on the way)
    except OSError as exc:
        return f"cannot look at it ({exc.strerror}); left as it was"
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode) or (folder_ok and stat.S_ISDIR(mode)):
        return None
    return f"is {kind_of(mode)}, not a regular file; refusing to replace or remove it"


def exists(path: Path) -> bool:
    """A store file is there (a dangling or foreign link counts as there: it is refused on
    open, never silently treated as absent and recreated through)."""
    return os.path.lexists(path)


def write_atomic(path: Path, data: str, *, root: Path) -> None:
    """Replace `path` with `data` through a fresh temporary file: an old temp file (or a
    link planted under its name) is unlinked, never written through; the rename replaces a
    link at `path` itself, not its target. Every folder from `root` down to the file is made
    and checked here (no link, no file where a folder goes, no `..` out of `root`). The file
    system refusing any step (read-only, full, no permission) is one StoreWriteError line;
    the old file is kept, no temp left."""
    path = Path(path)
    _folders_for(path, _need_root(path, root), make=True)
    tmp = path.with_name(path.name + ".tmp")
    for name in (path, tmp):
        why = not_replaceable(name)
        if why:
            raise StoreLinkError(f"{name}: {why}")
    made = False
    try:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
        )
        made = True
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)  # atomic: a reader never sees half a file
    except OSError as exc:  # read-only folder, disk full: the old file is left as it was
        if made:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise write_failed(path, exc, kept="the old file is kept") from None
