"""Kernel isolation primitives for the code inside the sandbox (stdlib + ctypes only).

Namespaces, mounts, capabilities and keyrings: what the server, the zygote and each test
child use to put a program out of reach of everything else (see harness.py).
"""

from __future__ import annotations

import ctypes
import os

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]  # fmt: skip
LIBC.syscall.restype = ctypes.c_long
# resolved once here, not in every test child (a fresh lookup costs page faults)
_CAPSET = LIBC.capset

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS = 36, 38, 39
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
SYS_KEYCTL = 250  # x86_64
KEYCTL_JOIN_SESSION_KEYRING = 1
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")  # a minimal /dev


def check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int = 0) -> int:
    return LIBC.prctl(option, ctypes.c_ulong(arg), 0, 0, 0)


def set_name(name: bytes) -> None:
    """This process's name in ps and perf (PR_SET_NAME, at most 15 bytes)."""
    LIBC.prctl(15, ctypes.c_char_p(name[:15]), 0, 0, 0)


def unshare(flags: int) -> int:
    return LIBC.unshare(flags)


def mount(src: bytes | None, dst: str, fstype: bytes | None, flags: int, data: bytes | None):
    check(LIBC.mount(src, dst.encode(), fstype, flags, data), f"mount {dst}")


def make_private() -> None:
    """Mount events of this namespace never propagate back to the host's."""
    check(LIBC.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")


def map_ids(uid: int, gid: int) -> None:
    """After unshare(CLONE_NEWUSER): map our own ids (the only mapping allowed unprivileged)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def drop_bounding_set() -> bool:
    """Empty the capability bounding set (no capability can come back at an execve). Done
    once in the zygote: the set is inherited by every test child. False: not allowed here
    (no CAP_SETPCAP; then there is no capability to lose either)."""
    for cap in range(64):
        if prctl(PR_CAPBSET_DROP, cap) != 0:
            return ctypes.get_errno() == 22 and cap > 0  # EINVAL: past the last capability
    return True


_CAP_HEADER = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
_CAP_NONE = (ctypes.c_uint32 * 6)()


def clear_capabilities(nnp_inherited: bool = False) -> None:
    """No capability now or after any execve: capset 0 for this thread. no_new_privs is set
    in one place, by the server (harness.Server.setup), and inherited by everything below
    it; a test child that does not hold it fails its set-up rather than set it itself."""
    if not nnp_inherited:
        raise OSError("no_new_privs is not set (the server sets it for every test)")
    check(_CAPSET(_CAP_HEADER, _CAP_NONE), "capset")


def new_session_keyring() -> None:
    """A fresh anonymous session keyring: keys of earlier tests are not reachable by name."""
    LIBC.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None)


# Seccomp, once in the zygote, inherited by every test child: the kernel keyrings (the user
# keyring is shared by every process of a uid) and System V / POSIX message-queue IPC are
# channels between tests, and no program needs them. Refusing their syscalls replaces a user
# and an IPC namespace per test. Syscalls of a foreign ABI (i386 via int 0x80, x32) are
# refused too, so the numbers below cannot be dodged.
_ARCH = {  # machine: (AUDIT_ARCH_*, keyring syscalls, IPC syscalls)
    "x86_64": (0xC000003E, (248, 249, 250),
               (29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, *range(240, 246))),
    "aarch64": (0xC00000B7, (217, 218, 219), tuple(range(180, 198))),
}  # fmt: skip
_SECCOMP_ALLOW, _SECCOMP_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]  # fmt: skip


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def deny_shared_kernel_state() -> bool:
    """Install the seccomp filter above on this process and all it forks from now on. Needs
    no_new_privs. False where the machine is not known or the kernel refuses."""
    arch = _ARCH.get(os.uname().machine)
    if arch is None:
        return False
    audit_arch, keys, ipc = arch
    denied = (*keys, *ipc)
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
    n = len(denied)
    prog = [(ld, 0, 0, 4), (jeq, 0, n + 4, audit_arch), (ld, 0, 0, 0), (jge, n + 2, 0, 1 << 30)]
    # the i-th test jumps to the EPERM return past the rest of the tests and the ALLOW
    prog += [(jeq, n - i, 0, nr) for i, nr in enumerate(denied)]
    prog += [(ret, 0, 0, _SECCOMP_ALLOW), (ret, 0, 0, _SECCOMP_ERRNO | _EPERM)]
    prog += [(ret, 0, 0, _SECCOMP_ERRNO | _ENOSYS)]  # a foreign ABI
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), filters)
    # PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2
    return LIBC.prctl(22, ctypes.c_ulong(2), ctypes.byref(fprog), 0, 0) == 0


def open_paths(paths: list[str]) -> list[tuple[str, int]]:
    """O_PATH fds of `paths`, opened now, so they can be bound back after a tmpfs hides them."""
    out = []
    for p in paths:
        try:
            out.append((p, os.open(p, os.O_PATH | os.O_CLOEXEC)))
        except OSError:
            pass
    return out


def outermost(paths: list[str]) -> list[str]:
    """`paths` without those inside another one of them (binding the outer one covers it)."""
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any((p + "/").startswith(o + "/") for o in out):
            out.append(p)
    return out


def under(paths: list[str], top: str) -> list[str]:
    return [p for p in outermost(paths) if (p + "/").startswith(top.rstrip("/") + "/")]


def bind_back(kept: list[tuple[str, int]], proc_fd: int | None = None) -> None:
    """Re-mount, read-only at their own paths, kept paths that a fresh tmpfs now hides (e.g.
    a Python environment in /tmp under a private /tmp). The O_PATH fds must have been opened
    in this mount namespace, before the tmpfs was mounted. `proc_fd`: a /proc opened before
    a tmpfs hid /proc itself (the zygote's, see mounts.hide_proc)."""
    if proc_fd is not None:
        os.fchdir(proc_fd)  # "self/fd/N" below then resolves in that hidden /proc
    try:
        for path, fd in kept:
            src = f"self/fd/{fd}" if proc_fd is not None else f"/proc/self/fd/{fd}"
            if os.path.isdir(src):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
            mount(src.encode(), path, None, MS_BIND | MS_REC, None)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    finally:
        if proc_fd is not None:
            os.chdir("/")


def minimal_dev() -> None:
    """Replace /dev by a tmpfs holding only the harmless devices (no kvm, fuse, consoles,
    disks). Needs CAP_SYS_ADMIN in the mount namespace's owner."""
    kept = open_paths([f"/dev/{name}" for name in DEVICES])
    mount(b"tmpfs", "/dev", b"tmpfs", MS_NOSUID | MS_NOEXEC, b"size=64k,mode=0755")
    for path, fd in kept:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o666))
        mount(f"/proc/self/fd/{fd}".encode(), path, None, MS_BIND, None)
        os.close(fd)
    for name in ("shm", "pts", "mqueue"):
        os.mkdir(f"/dev/{name}", 0o755)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"/dev/{name}")
    mount(None, "/dev", None, MS_REMOUNT | MS_NOSUID | MS_NOEXEC | MS_RDONLY, None)
