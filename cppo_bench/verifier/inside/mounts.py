"""Mounts inside the sandbox (stdlib + ctypes only, imported by child.py and zygote.py).

The zygote's shared mount namespace and the scratch tmpfs it remounts between tests, or,
where that is not possible, each test's own private mounts.
"""

from __future__ import annotations

import os
import re

import nsutil

LIBC = nsutil.LIBC
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
# Inodes of a scratch tmpfs: each holds kernel memory its blocks do not show (~1 KiB), so
# their number is bounded too (a few MiB at most)
SCRATCH_INODES = 4096


def shared_mounts(iso: dict) -> bool:
    """Once, in the zygote: its own private mount namespace holding what is the same for every
    test (/dev/shm and /var/tmp empty and read-only, outside bwrap every host mount read-only,
    then the scratch tmpfs of reset_scratch). Test children share it (they cannot change it:
    no capabilities), so they inherit all of it without paying for it per test. False: each
    test sets them up itself in a mount namespace of its own."""
    if not iso["private"] or nsutil.unshare(nsutil.CLONE_NEWNS) != 0:
        return False
    try:
        nsutil.make_private()  # copies of private mounts are private: tests skip this step
        for other in ("/dev/shm", "/var/tmp"):
            _empty_readonly(other, iso["scratch"])
        if iso["readonly_host"]:
            _readonly_mounts(keep=os.path.realpath(iso["scratch"]))
    except OSError:
        return False
    return True


def reset_scratch(iso: dict, size: int) -> bool:
    """In the zygote, just before every test (the last one's processes are all dead): a
    new empty tmpfs of `size` bytes over the scratch path, the kept paths bound
    back read-only. Whatever a test left there (files, modes, xattrs) is gone, without the
    zygote ever reading it, and no test pays for a mount namespace of its own. False: not
    possible here (each test then mounts its own, see _private_mounts)."""
    path = iso["scratch"]
    try:
        if iso.get("scratch_ready"):
            nsutil.check(nsutil.LIBC.umount2(path.encode(), 2), "umount scratch")  # MNT_DETACH
        iso["scratch_ready"] = False
        if "kept_fds" not in iso:  # opened once, before any tmpfs hides them
            iso["kept_fds"] = nsutil.open_paths(nsutil.under(iso["keep"], path))
            iso["kept_parents"] = _parents_below(path, [k for k, _ in iso["kept_fds"]])
        _mount_scratch(path, size, iso["kept_fds"], iso.get("proc_fd"))
    except OSError:
        return False
    iso["scratch_ready"], iso["scratch_size"] = True, size
    iso["scratch_clean"] = scratch_state(iso)
    if iso.get("scratch_fd") is not None:
        os.close(iso["scratch_fd"])
    # handed to the server with each long test: it counts the tmpfs's pages as the test's
    iso["scratch_fd"] = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return True


def scratch_bytes(fd: int) -> int:
    """Bytes held in the scratch tmpfs (pages no rlimit or PSS counts): the test's memory."""
    st = os.fstatvfs(fd)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def hide_proc(iso: dict) -> bool:
    """Once, in the zygote's mount namespace (so for every test, not for the server): an
    empty read-only tmpfs over /proc. A program sees neither pid numbers of the sandbox's
    pid namespace (/proc/self is its pid there: a counter of every task the sandbox made)
    nor the machine's counters (/proc/stat, vmstat, loadavg, ...). The zygote keeps the real
    /proc open for its own bind mounts (nsutil.bind_back)."""
    try:
        proc_fd = os.open("/proc", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        nsutil.mount(b"tmpfs", "/proc", b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k")
    except OSError:
        return False
    iso["proc_fd"] = proc_fd
    return True


def _mount_scratch(path: str, size: int, kept: list[tuple[str, int]], proc_fd=None) -> None:
    """An empty tmpfs of `size` bytes over `path`, owner-only, the kept paths (O_PATH fds
    opened before it hid them) bound back read-only."""
    opts = f"size={size},nr_inodes={SCRATCH_INODES},mode=0700"
    nsutil.mount(b"tmpfs", path, b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode())
    nsutil.bind_back(kept, proc_fd)
    os.chmod(path, 0o700)


def _parents_below(top: str, paths: list[str]) -> list[str]:
    """The directories strictly between `top` and each of `paths` (bind_back makes them)."""
    out: set[str] = set()
    for p in paths:
        d = os.path.dirname(p)
        while d.startswith(top.rstrip("/") + "/"):
            out.add(d)
            d = os.path.dirname(d)
    return sorted(out)


def scratch_state(iso: dict) -> tuple | None:
    """What a test could have changed in the fresh scratch, read without reading anything a
    program wrote: free blocks and inodes, the metadata (times included: ctime cannot be set
    back) of the directories the reset made, and the size of their xattr name lists. Equal to
    the state right after a reset: the last test left nothing there, so the zygote skips
    the remount before the next test OF THE SAME PROGRAM (a new program always gets a new
    tmpfs: zygote._serve). None: unknown (remount)."""
    path = iso["scratch"]
    try:
        fs = os.statvfs(path)
        dirs = [path, *iso.get("kept_parents", [])]
        meta = []
        for d in dirs:
            st = os.lstat(d)
            xattrs = len(os.listxattr(d, follow_symlinks=False))
            meta.append((st.st_mode, st.st_uid, st.st_gid, st.st_nlink, st.st_size,
                         st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns, xattrs))  # fmt: skip
    except OSError:
        return None
    return (fs.f_bfree, fs.f_ffree, fs.f_favail, tuple(meta))


def private_mounts(iso: dict, size: int) -> None:
    """A private mount and IPC namespace: fresh /proc for the test's pid namespace (where
    allowed), fresh tmpfs scratch, kept paths (a Python environment under /tmp) bound back,
    and (unless the zygote did it once for all tests, `premounted`) /dev/shm and /var/tmp
    empty and read-only, and outside bwrap every host mount read-only."""
    nsutil.check(nsutil.unshare(nsutil.CLONE_NEWNS | nsutil.CLONE_NEWIPC), "unshare mount")
    premounted = iso.get("premounted", False)
    if not premounted:
        nsutil.make_private()
    if iso["pidns"]:
        try:  # only this test's processes in /proc (refused where /proc is partly covered)
            nsutil.mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | nsutil.MS_NOEXEC, None)
        except OSError:
            pass
    path = iso["scratch"]
    _mount_scratch(path, size, nsutil.open_paths(nsutil.under(iso["keep"], path)))
    if premounted:
        return
    for other in ("/dev/shm", "/var/tmp"):
        _empty_readonly(other, path)
    if iso["readonly_host"]:
        _readonly_mounts(keep=os.path.realpath(path))


def _empty_readonly(other: str, scratch: str) -> None:
    """Another writable place: an empty read-only tmpfs over it."""
    if os.path.isdir(other) and os.path.realpath(other) != os.path.realpath(scratch):
        try:
            nsutil.mount(b"tmpfs", other, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k")
        except OSError:
            pass


def _readonly_mounts(keep: str) -> None:
    """Remount every mount point but `keep` read-only (bind remounts keep their other flags)."""
    with open("/proc/self/mountinfo", "rb") as f:
        points = [line.split()[4] for line in f]
    for raw in points:
        point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), raw)
        # /proc stays writable: the per-test user namespace's maps are written there (its
        # sysctls still need privileges the program never has)
        if point.decode(errors="replace") in (keep, "/dev/shm", "/var/tmp", "/proc"):
            continue
        try:
            flags = os.statvfs(point).f_flag | MS_RDONLY | MS_REMOUNT | MS_BIND
        except OSError:
            continue
        LIBC.mount(None, point, None, flags, None)


SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32", "/lib", "/lib64",
               "/lib32", "/libx32", "/etc/ld.so.cache")  # fmt: skip


def new_root(paths: list[str], scratch: str) -> None:
    """Outside bwrap (as root, or root of our own user namespace), in our own mount
    namespace: the same view bwrap gives. A fresh tmpfs becomes `/`, holding only the
    system libraries, `paths` (the Python install, numpy), read-only, at their own paths, a
    fresh /proc, the host's /dev (minimal_dev trims it next) and an empty `scratch`. The
    host's files (the benchmark being judged, the repository, home directories) are gone."""
    nsutil.make_private()
    wanted = nsutil.outermost([os.path.realpath(p) for p in paths if os.path.exists(p)])
    links = {d: os.readlink(d) for d in SYSTEM_DIRS if os.path.islink(d)}
    wanted += nsutil.outermost([d for d in SYSTEM_DIRS if d not in links and os.path.exists(d)])
    kept = nsutil.open_paths(nsutil.outermost(wanted) + ["/dev"])
    # a tmpfs over /tmp first, in this namespace only: the new root is made inside it and
    # nothing is created in the host's /tmp
    nsutil.mount(b"tmpfs", "/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    root = "/tmp/root"
    os.mkdir(root, 0o755)
    nsutil.mount(b"tmpfs", root, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    # the scratch first: kept paths under it (numpy's link farm, a Python under /tmp) are
    # bound on top of it, and the zygote binds them back into every test's fresh scratch
    os.makedirs(root + scratch, mode=0o755, exist_ok=True)
    nsutil.mount(b"tmpfs", root + scratch, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64m,mode=1777")
    for path, fd in kept:
        target = root + path
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        nsutil.mount(f"/proc/self/fd/{fd}".encode(), target, None, MS_BIND | nsutil.MS_REC, None)
        if path != "/dev":
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
            nsutil.mount(None, target, None, flags, None)
        os.close(fd)
    for link, dest in links.items():
        os.makedirs(os.path.dirname(root + link), mode=0o755, exist_ok=True)
        os.symlink(dest, root + link)
    os.makedirs(root + "/proc", mode=0o555, exist_ok=True)
    os.mkdir(root + "/old", 0o700)
    pivot_root = {"x86_64": 155, "aarch64": 41}[os.uname().machine]
    nsutil.check(LIBC.syscall(pivot_root, root.encode(), (root + "/old").encode()), "pivot_root")
    os.chdir("/")
    nsutil.check(LIBC.umount2(b"/old", 2), "umount the old root")  # MNT_DETACH
    os.rmdir("/old")
    # our own pid namespace's processes where we have one (the host's in plain rlimits
    # mode: the server measures tests there; the tests themselves see no /proc at all)
    nsutil.mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | nsutil.MS_NOEXEC, None)
    nsutil.mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
