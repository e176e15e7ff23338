"""Door 2 of docs/untrusted-inputs.md: the one reader of files a user names or a stranger
sent (benchmark files and folders, `verify --programs` / `--tests`, test sets, audits,
report specs, training logs and manifests, prompt files, `@file` options).

Every read goes through `open_bytes`, which:

- opens with O_NONBLOCK, so a FIFO cannot block the open, then refuses anything that is
  not a regular file (`fstat` of the opened file, so a link to `/dev/zero`, a device or a
  FIFO is one line, never a hang or a read without end);
- checks the size against a cap *before* reading a byte;
- hands back a stream whose reads stop at the cap even if the file grows meanwhile.

On top: `read_bytes` / `read_text` / `read_json` / `read_yaml` (whole documents, capped),
`lines` (split on `\\n` only, a cap per line, streamed: nothing is held before it is
counted). Every failure is a `UserFileError` (a DataError): one line naming the file.
`tests/files/test_untrusted_reader.py` walks the code and fails on an `open()`, `read_text`,
`json.load`, `yaml.load` ... of a path anywhere else (exceptions listed there).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cppo_bench.errors import DataError
from cppo_bench.files import jsonio

MAX_FILE = 1 << 30  # a whole document (benchmark JSON, input_output.json): 1 GiB
MAX_SMALL = 16 << 20  # a config-like file (report spec, prompt, manifest, audit): 16 MiB
MAX_LINE = jsonio.MAX_LINE


class UserFileError(DataError):
    """A user-named file that is missing, not a regular file, too large or unreadable."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):  # fmt: skip
        if test(mode):
            return name
    return "not a regular file"


class _Capped(io.RawIOBase):
    """A raw stream over `fd` that ends after `cap` bytes (a file that grows while read)."""

    def __init__(self, fd: int, cap: int) -> None:
        self._fd, self._left = fd, cap

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[: self._left]
        n = os.readv(self._fd, [view])
        self._left -= n
        return n

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def open_bytes(path: str | Path, max_bytes: int = MAX_FILE) -> IO[bytes]:
    """`path` opened for reading if it is a regular file of at most `max_bytes` bytes."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        why = "no such file" if exc.errno == errno.ENOENT else (exc.strerror or str(exc))
        raise UserFileError(f"{path}: cannot read: {why}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserFileError(f"{path}: is {_kind(st.st_mode)}; only regular files are read")
        if st.st_size > max_bytes:
            raise UserFileError(
                f"{path}: {st.st_size} bytes, larger than the {_size(max_bytes)} this file may hold"
            )
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(_Capped(fd, max_bytes + 1))


MAX_HASHED = 1 << 42  # a file hashed whole (a data file, a weights shard): any real size


def file_sha256(path: str | Path, max_bytes: int = MAX_HASHED) -> str | None:
    """sha256 of a file's bytes, streamed through `open_bytes`; None for anything that is not
    a readable regular file (a FIFO, a device, a folder: never read)."""
    digest = hashlib.sha256()
    try:
        with open_bytes(path, max_bytes=max_bytes) as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except (UserFileError, OSError):
        return None
    return digest.hexdigest()


def check(path: str | Path, max_bytes: int = MAX_FILE) -> None:
    """`path` is a regular file of at most `max_bytes` (for a library that opens the path
    itself: parquet, safetensors; it can no longer be handed a FIFO or a device)."""
    open_bytes(path, max_bytes).close()


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_bytes(path: str | Path, max_bytes: int = MAX_FILE) -> bytes:
    with open_bytes(path, max_bytes) as fh:
        try:
            data = jsonio.read_capped(fh, max_bytes)
        except OSError as exc:
            raise UserFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if data is None:  # grew past the cap after the size check
        raise UserFileError(f"{path}: larger than the {_size(max_bytes)} this file may hold")
    return data


def read_text(path: str | Path, max_bytes: int = MAX_FILE) -> str:
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserFileError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def read_json(path: str | Path, max_bytes: int = MAX_FILE) -> Any:
    """One JSON document, nested at most jsonio.MAX_DEPTH levels."""
    text = read_text(path, max_bytes)
    try:
        return jsonio.loads(text)
    except ValueError as exc:
        raise UserFileError(f"{path}: {getattr(exc, 'msg', None) or exc}") from None


def load_yaml(text: str, where: str) -> Any:
    """The one YAML loader (specs, prompts, configs, package files alike): plain data of a
    safe loader, aliases and anchors refused (a few hundred bytes of nested aliases expand
    to billions of nodes, the 'billion laughs'; nothing here ever needs them), nested at
    most jsonio.MAX_DEPTH levels. One UserFileError line naming `where` otherwise."""
    import yaml

    from cppo_bench.util.termsafe import quote

    class _NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not accepted", event.start_mark
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # a key given twice: PyYAML keeps the last silently, so `lr: 1e-3` above a
            # later `lr: 1` in a stranger's config would read as one value and run as another
            seen: set[Any] = set()
            for key_node, _ in getattr(node, "value", ()):
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: SafeLoader's own error says so
                    break
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {quote(key)} appears twice", key_node.start_mark
                    )
            return super().construct_mapping(node, deep=deep)

    try:
        value = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["?"])[0]
        raise UserFileError(f"{where}{at}: not valid YAML ({problem})") from None
    except RecursionError:
        raise UserFileError(f"{where}: YAML nested too deeply") from None
    why = jsonio.depth_error(value)
    if why:
        raise UserFileError(f"{where}: {why}")
    return value


def read_yaml(path: str | Path, max_bytes: int = MAX_SMALL) -> Any:
    """One YAML document of plain data, read by `read_text` and parsed by `load_yaml`."""
    return load_yaml(read_text(path, max_bytes), str(path))


def inside(root: str | Path, name: object, what: str) -> Path:
    """The one resolver of a file named by a value read from a file (a manifest's
    `prompt_version`, its `data_source`): `name` joined to `root`, every link and `..`
    resolved, must still lie inside `root` (resolved too). `/proc/self/cwd/...`, `../..`,
    an absolute path elsewhere or a link out of `root` is one UserFileError line naming the
    value (quoted, clipped); nothing is opened here (read the result with this module)."""
    from cppo_bench.util.termsafe import quote

    if not isinstance(name, str) or not name or "\0" in name or len(name) > 4096:
        raise UserFileError(f"{what} {quote(name)}: not a file name")  # (PATH_MAX: 4096)
    base = os.path.realpath(root)
    full = os.path.realpath(os.path.join(base, name))
    if full != base and os.path.commonpath([base, full]) != base:
        raise UserFileError(
            f"{what} {quote(name)}: names a file outside {base}; refusing to read it"
        )
    return Path(full)


def lines(
    path: str | Path, max_line: int = MAX_LINE, max_bytes: int | None = None
) -> Iterator[jsonio.Line]:
    """The lines of `path` (split on \\n only, each decoded on its own, a line longer than
    `max_line` skipped unread), streamed. `max_bytes` caps the whole file (default: none,
    a JSONL file is read a line at a time)."""
    cap = max_bytes if max_bytes is not None else 1 << 62
    with open_bytes(path, cap) as fh:
        try:
            yield from jsonio.split_lines(fh, max_line)
        except OSError as exc:
            raise UserFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


MAX_FOLDER_ENTRIES = 100_000  # a model or state folder: a few hundred files at most


def check_folder(
    folder: str | Path, listed: set[str] | None = None, links_to_files: bool = False
) -> None:
    """The one check of a folder handed to a library loader (transformers
    `from_pretrained`, safetensors, torch / accelerate / DeepSpeed `load_state`): such a
    loader opens files by name or by listing the folder, so EVERY entry is checked, not
    only the ones a manifest lists. Each must be a regular file or a real folder: a FIFO
    (an open without end), a device, a socket, a link to `/dev/zero`, a folder where a
    file goes are one UserFileError line naming the entry. `listed` (relative names an
    artifact manifest lists): a file not listed is refused too (a loader would open it).
    `links_to_files`: a link to a regular file is accepted (a hub cache's snapshot folder
    is links into its blobs); otherwise no link at all."""
    folder = Path(folder)
    try:
        st = os.stat(folder)
    except OSError as exc:
        raise UserFileError(f"{folder}: cannot read this folder ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UserFileError(f"{folder}: is {_kind(st.st_mode)}, not a folder")
    seen = 0
    for top, dirs, files in os.walk(folder, onerror=_walk_error):  # follows no folder link
        for name in sorted(dirs + files):
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                raise UserFileError(f"{folder}: more than {MAX_FOLDER_ENTRIES} entries")
            path = Path(top, name)
            rel = path.relative_to(folder).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                try:
                    mode = os.stat(path).st_mode
                except OSError:
                    raise UserFileError(
                        f"{path}: a link to nothing; refusing this folder"
                    ) from None
                if not (links_to_files and stat.S_ISREG(mode)):
                    raise UserFileError(
                        f"{path}: a link to {_kind(mode) if not stat.S_ISREG(mode) else 'a file'}"
                        "; refusing to hand this folder to a loader"
                    )
            elif stat.S_ISDIR(mode):
                continue
            elif not stat.S_ISREG(mode):
                raise UserFileError(
                    f"{path}: is {_kind(mode)}; refusing to hand this folder to a loader"
                )
            if listed is not None and rel not in listed:
                raise UserFileError(
                    f"{path}: not listed in the folder's manifest; a loader would open it"
                )
    if listed is not None:
        for rel in sorted(listed):
            inside(folder, rel, f"{folder}: listed file")  # a listed `../x`: not in the folder
            try:
                mode = os.lstat(folder / rel).st_mode
            except OSError:
                mode = 0
            if not stat.S_ISREG(mode):
                raise UserFileError(f"{folder}: {rel[:80]} is missing or not a regular file")


def _walk_error(exc: OSError) -> None:
    raise UserFileError(f"{exc.filename}: cannot read this folder ({exc.strerror})")


def is_file(path: str | Path) -> bool:
    """`path` is there as something to read (a FIFO or device counts: `open_bytes` then
    refuses it by name instead of it being silently ignored)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return not stat.S_ISDIR(st.st_mode)
