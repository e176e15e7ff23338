"""The file system refusing a write, in words: one line naming the path and the OS reason.

Every writer (the run store's, `OutDir`, the verdict cache, a trainer's artifact save) words
a refusal (full, read-only, quota, no permission, an I/O error) here, so the lines agree.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

# errno values whose strerror may only be found in a library's message (safetensors, torch
# and tokenizers raise their own types for a full disk, quoting the OS's words or number)
_FS_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO,
              errno.EMFILE, errno.ENFILE, errno.ENAMETOOLONG, errno.EFBIG)  # fmt: skip


def os_reason(exc: BaseException, where: Path | None = None) -> str | None:
    """The file system's reason in an exception, or None: an OSError's strerror, or the OS
    message a library quoted ("No space left on device", "os error 28"); failing those, with
    `where`, the state of the file system it was writing to (torch's writer says only "file
    write failed"): full or read-only."""
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    text = str(exc)
    for code in _FS_ERRNOS:
        if os.strerror(code) in text or f"os error {code})" in text:
            return os.strerror(code)
    return fs_state(where) if where is not None else None


def fs_state(where: Path) -> str | None:
    """ "Read-only file system" or "No space left on device" for the file system holding
    `where` (or its nearest existing parent), else None."""
    path = Path(where)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return os.strerror(errno.EROFS)
    if st.f_bavail == 0 or st.f_favail == 0:
        return os.strerror(errno.ENOSPC)
    return None


def refusal(path: Path, exc: BaseException, what: str = "cannot write", kept: str = "") -> str:
    """The one line for a write the file system refused: the path, the OS reason, and what
    is kept ("the old file is kept": said only where there is one)."""
    kept = kept if os.path.lexists(path) else ""
    return f"{path}: {what} ({os_reason(exc)})" + (f"; {kept}" if kept else "")
