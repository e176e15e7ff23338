"""Door 3 of docs/untrusted-inputs.md: the writer never replaces, renames over, truncates or
removes what is not a regular file or a link. `verify --out /dev/null` once renamed a
temporary file over the real /dev/null (as root). These tests NEVER touch the real /dev:
a character device is a /dev/null twin made in tmp_path (`os.mknod`, needs root), a FIFO
is `os.mkfifo`, a socket is bound in tmp_path.

An output FOLDER's names: anything but a file or a link planted there is one line, left as
it was. ONE output file the user named (`write_user_file`): a character device or FIFO is
written INTO, never replaced."""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cppo_bench.cli import main
from cppo_bench.files import fs as storefs
from cppo_bench.files.outdir import OutDir, OutDirError, _own_stream, write_user_file

ROOT = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a device twin needs root")


def _null_twin(path: Path) -> Path:
    """A /dev/null twin (char 1:3) in tmp_path: safe to write into, or to destroy."""
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return path


@pytest.fixture
def sock_path(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s"  # AF_UNIX paths are short: bind in tmp_path itself
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        yield path


def _plant(kind: str, path: Path) -> Callable[[int], bool]:
    """Plant `kind` at `path`; return the stat test that says it is still there."""
    if kind == "chardev":
        _null_twin(path)
        return stat.S_ISCHR
    if kind == "fifo":
        os.mkfifo(path)
        return stat.S_ISFIFO
    if kind == "folder":
        path.mkdir()
        (path / "keep.txt").write_text("keep\n")
        return stat.S_ISDIR
    raise AssertionError(kind)


KINDS = [pytest.param("chardev", marks=needs_root), "fifo", "folder"]


def _one_line(err: pytest.ExceptionInfo[OutDirError], path: Path) -> None:
    text = str(err.value)
    assert text.startswith(f"{path}: ") and "\n" not in text, text


# --- names under an output folder -------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_write_never_replaces_what_is_planted(tmp_path: Path, kind: str) -> None:
    out = OutDir(tmp_path / "out")
    still = _plant(kind, out.root / "verdicts.jsonl")
    with pytest.raises(OutDirError) as err:
        out.write_text("verdicts.jsonl", "x\n")
    _one_line(err, out.root / "verdicts.jsonl")
    assert still(os.lstat(out.root / "verdicts.jsonl").st_mode)
    assert sorted(p.name for p in out.root.iterdir()) == ["verdicts.jsonl"]  # no temp left


def test_a_socket_is_left_as_it_was(sock_path: Path) -> None:
    out = OutDir(sock_path.parent)
    for act in (lambda: out.write_text("s", "x"), lambda: out.remove("s"),
                lambda: out.clear("s"), lambda: out.rename("s", "t"),
                lambda: out.link("s", "u")):  # fmt: skip
        with pytest.raises(OutDirError) as err:
            act()
        _one_line(err, sock_path)
        assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)


@pytest.mark.parametrize("kind", [pytest.param("chardev", marks=needs_root), "fifo"])
def test_remove_clear_link_and_rename_leave_it(tmp_path: Path, kind: str) -> None:
    out = OutDir(tmp_path / "out")
    still = _plant(kind, out.root / "final")
    out.write_text("a.txt", "a\n")
    for act in (lambda: out.remove("final"), lambda: out.clear("final"),
                lambda: out.link("final", "a.txt"), lambda: out.rename("a.txt", "final"),
                lambda: out.rename("final", "b")):  # fmt: skip
        with pytest.raises(OutDirError) as err:
            act()
        assert "\n" not in str(err.value) and "final" in str(err.value)
        assert still(os.lstat(out.root / "final").st_mode)
    assert (out.root / "a.txt").read_text() == "a\n" and not (out.root / "b").exists()


@pytest.mark.parametrize("kind", [pytest.param("chardev", marks=needs_root), "fifo"])
def test_a_tree_holding_one_is_not_removed(tmp_path: Path, kind: str) -> None:
    """clear / fresh_folder remove a whole tree: a device deep inside stops them first."""
    out = OutDir(tmp_path / "out")
    deep = out.root / ".tmp-x" / "a"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("f\n")
    still = _plant(kind, deep / "node")
    for act in (lambda: out.clear(".tmp-x"), lambda: out.fresh_folder(".tmp-x")):
        with pytest.raises(OutDirError) as err:
            act()
        _one_line(err, deep / "node")
        assert still(os.lstat(deep / "node").st_mode) and (deep / "f.txt").exists()


def test_the_temporary_name_is_checked_too(tmp_path: Path) -> None:
    out = OutDir(tmp_path / "out")
    tmp = out.root / f".a.txt.{os.getpid()}.tmp"
    os.mkfifo(tmp)
    with pytest.raises(OutDirError) as err:
        out.write_text("a.txt", "x")
    _one_line(err, tmp)
    assert stat.S_ISFIFO(os.lstat(tmp).st_mode) and not (out.root / "a.txt").exists()


def test_a_file_and_a_link_behave_as_before(tmp_path: Path) -> None:
    out, victim = OutDir(tmp_path / "out"), tmp_path / "victim.txt"
    victim.write_text("keep\n")
    out.write_text("a.txt", "old\n")
    out.write_text("a.txt", "new\n")
    (out.root / "b.txt").symlink_to(victim)
    out.write_text("b.txt", "b\n")
    assert (out.root / "a.txt").read_text() == "new\n" and victim.read_text() == "keep\n"
    assert not (out.root / "b.txt").is_symlink() and (out.root / "b.txt").read_text() == "b\n"
    (out.root / "c").symlink_to(victim)
    out.remove("c")
    out.clear("a.txt")  # a regular file where a tree was expected: left, as before
    assert not os.path.lexists(out.root / "c") and victim.exists()


def test_the_run_store_writer_refuses_too(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "manifest.json")
    with pytest.raises(storefs.StoreLinkError, match="FIFO"):
        storefs.write_atomic(tmp_path / "manifest.json", "{}", root=tmp_path)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "manifest.json").st_mode)


# --- one file the user named -----------------------------------------------------------


@contextmanager
def _fifo_reader(path: Path) -> Iterator[Callable[[], bytes]]:
    """The FIFO's read end, opened first (non-blocking, so the writer's open never waits and
    no thread can be left hanging): what was written (< the pipe buffer) is read after the
    writer closed; a writer that never came reads as b"" (no writer: end-of-file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def read_all() -> bytes:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)

    try:
        yield read_all
    finally:
        os.close(fd)


def test_user_file_fifo_is_written_into(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with _fifo_reader(fifo) as read_all:
        write_user_file(fifo, "one\ntwo\n")
        assert read_all() == b"one\ntwo\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@needs_root
def test_user_file_device_twin_is_written_into(tmp_path: Path) -> None:
    twin = _null_twin(tmp_path / "null")
    link = tmp_path / "to-null"
    link.symlink_to(twin)  # /dev/stdout -> /proc/self/fd/1 -> a tty: the link is followed
    write_user_file(twin, "x\n")
    write_user_file(link, "y\n")
    assert stat.S_ISCHR(os.lstat(twin).st_mode) and os.lstat(twin).st_rdev == os.makedev(1, 3)
    assert link.is_symlink()


@needs_root
def test_user_file_full_device_is_one_line(tmp_path: Path) -> None:
    full = tmp_path / "full"  # a /dev/full twin (char 1:7): every write is ENOSPC
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    with pytest.raises(OutDirError) as err:
        write_user_file(full, "x\n")
    _one_line(err, full)
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_user_file_socket_and_folder_are_one_line(sock_path: Path, tmp_path: Path) -> None:
    for path in (sock_path, tmp_path / "d"):
        if path.name == "d":
            path.mkdir()
        with pytest.raises(OutDirError) as err:
            write_user_file(path, "x\n")
        _one_line(err, path)
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode) and (tmp_path / "d").is_dir()


def test_user_file_regular_and_link_as_before(tmp_path: Path) -> None:
    victim, link = tmp_path / "victim.txt", tmp_path / "out.jsonl"
    victim.write_text("keep\n")
    link.symlink_to(victim)
    write_user_file(link, "new\n")
    write_user_file(tmp_path / "plain.jsonl", "p\n")
    assert victim.read_text() == "keep\n" and not link.is_symlink()
    assert link.read_text() == "new\n" and (tmp_path / "plain.jsonl").read_text() == "p\n"


def test_dev_stdout_names_this_process_stream(tmp_path: Path) -> None:
    """/dev/stdout with stdout redirected to a file: written to fd 1, never a regular file
    renamed over the link in /dev (the names are only resolved here, never written)."""
    assert _own_stream(Path("/dev/stdout")) == 1 and _own_stream(Path("/dev/stderr")) == 2
    assert _own_stream(Path("/dev/fd/1")) == 1
    assert _own_stream(Path(f"/proc/{os.getpid()}/fd/2")) == 2
    (tmp_path / "mine").symlink_to("/proc/self/fd/1")
    assert _own_stream(tmp_path / "mine") == 1
    assert _own_stream(Path("/proc/1/fd/1")) in (None, 1)  # another process's: not ours
    assert _own_stream(tmp_path / "x.jsonl") is None


# --- the CLI ----------------------------------------------------------------------------


def _programs(tmp_path: Path) -> Path:
    programs = tmp_path / "programs.jsonl"
    programs.write_text(json.dumps({"problem_id": "add-two", "code": "print(0)\n"}) + "\n")
    return programs


def _verify(programs: Path, out: Path) -> Result:
    return CliRunner().invoke(
        main, ["verify", "--bench", "demo", "--programs", str(programs), "--out", str(out)]
    )


def test_verify_out_fifo_gets_the_lines(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with _fifo_reader(fifo) as read_all:
        result = _verify(_programs(tmp_path), fifo)
        got = read_all()
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [json.loads(line)["problem_id"] for line in got.splitlines()] == ["add-two"]


@needs_root
def test_verify_out_device_twin_stays_a_device(tmp_path: Path) -> None:
    twin = _null_twin(tmp_path / "null")
    result = _verify(_programs(tmp_path), twin)
    assert result.exit_code == 0, result.output
    st = os.lstat(twin)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "programs.jsonl"]


def test_verify_out_socket_is_one_line(sock_path: Path) -> None:
    programs = _programs(sock_path.parent)
    result = _verify(programs, sock_path)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{sock_path}: is a socket" in result.output
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)


def test_verify_out_stdout_link_writes_to_the_redirected_file(tmp_path: Path) -> None:
    """`verify --out /dev/stdout > res.txt`, with a link of our own to /proc/self/fd/1 in
    tmp_path standing in for /dev/stdout: the lines reach res.txt, the link stays a link."""
    import subprocess
    import sys

    mine = tmp_path / "stdout"
    mine.symlink_to("/proc/self/fd/1")
    res = tmp_path / "res.txt"
    with res.open("wb") as fh:
        done = subprocess.run(
            [sys.executable, "-m", "cppo_bench.cli", "verify", "--bench", "demo",
             "--programs", str(_programs(tmp_path)), "--out", str(mine)],
            stdout=fh, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert mine.is_symlink() and os.readlink(mine) == "/proc/self/fd/1"
    first = res.read_text().splitlines()[0]
    assert json.loads(first)["problem_id"] == "add-two"


@pytest.mark.parametrize("kind", [pytest.param("chardev", marks=needs_root), "fifo"])
def test_a_stale_looking_lock_that_is_a_device_is_never_broken(tmp_path: Path, kind: str) -> None:
    """The run lock breaks a stale lock by renaming it aside and unlinking it: an old device
    or FIFO at `<run>.lock` would have gone the same way."""
    from cppo_bench.errors import DataError
    from cppo_bench.files.lock import RunLock, lock_path

    run = tmp_path / "run"
    run.mkdir()
    still = _plant(kind, lock_path(run))
    os.utime(lock_path(run), (0, 0), follow_symlinks=False)  # older than STALE_AFTER_S
    with pytest.raises(DataError) as err:
        RunLock(run).acquire()
    assert str(err.value).startswith(f"{lock_path(run)}: ") and "\n" not in str(err.value)
    assert still(os.lstat(lock_path(run)).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", lock_path(run).name]
