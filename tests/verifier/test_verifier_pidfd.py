"""Issue 42 item 2: no program ever holds a pidfd. A pidfd's inode number is the machine-wide
count of tasks made (pidfs), so a program that reads one learns how many tasks ran since the
last program read one: it carried a hidden answer between programs. One hostile program per
door the kernel (6.x) offers, raw syscalls through ctypes, in every sandbox mode and both
reuse modes, one worker, an honest control after each. Each prints `refused` only when the
kernel said no for the filter's reason (EPERM, or ENOSYS for clone3): with the defence
removed each prints something else (or dies), and its test fails.
"""

from __future__ import annotations

import os

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch

ECHO = Problem("i42", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")
# two tests: in a kept child the second runs in the process the first one left
PROBE = Problem("i42", "probe", "", tests=(Case("a\n", "refused\n"), Case("b\n", "refused\n")),
                checker="lcb", time_limit_s=5.0)  # fmt: skip

HEAD = (
    "import ctypes, errno, os, socket, struct\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    "X86 = os.uname().machine == 'x86_64'\n"
    "def call(nr, *args):\n"
    "    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a\n"
    "                                          for a in args])\n"
    "    return r, ctypes.get_errno()\n"
    "def verdict(r, err, refused=(errno.EPERM,)):\n"
    "    print('refused' if r < 0 and err in refused else f'open {r} {err}')\n"
    "input()\n"
)

ROUTES = {
    # a thread with CLONE_PIDFD (the old thread rule read only CLONE_THREAD). Should the kernel
    # make the thread, it starts on a stack whose return address is pause(): it just waits.
    "clone thread pidfd": (
        "import mmap\n"
        "CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND = 0x100, 0x200, 0x400, 0x800\n"
        "CLONE_THREAD, CLONE_SYSVSEM, CLONE_PIDFD = 0x10000, 0x40000, 0x1000\n"
        "flags = (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD\n"
        "         | CLONE_SYSVSEM | CLONE_PIDFD)\n"
        "stack = mmap.mmap(-1, 1 << 16)\n"
        "base = ctypes.addressof(ctypes.c_char.from_buffer(stack))\n"
        "top = (base + (1 << 16) - 64) & ~15\n"
        "ctypes.c_void_p.from_address(top).value = ctypes.cast(libc.pause, ctypes.c_void_p).value\n"
        "pidfd = ctypes.c_int(-1)\n"
        "nr = 56 if X86 else 220\n"
        "r, err = call(nr, flags, top, ctypes.byref(pidfd), 0, 0)\n"
        "verdict(r, err)\n"
    ),
    # a process with CLONE_PIDFD (fork-like): the child, if made, leaves at once
    "clone process pidfd": (
        "pidfd = ctypes.c_int(-1)\n"
        "nr = 56 if X86 else 220\n"
        "r, err = call(nr, 0x1000 | 17, 0, ctypes.byref(pidfd), 0, 0)\n"
        "if r == 0:\n    os._exit(0)\n"
        "verdict(r, err)\n"
    ),
    # clone3 carries its flags in a struct a filter cannot read: refused whole (ENOSYS)
    "clone3 pidfd": (
        "pidfd = ctypes.c_int(-1)\n"
        "args = struct.pack('11Q', 0x1000, ctypes.addressof(pidfd), 0, 0, 17, 0, 0, 0, 0, 0, 0)\n"
        "buf = ctypes.create_string_buffer(args, len(args))\n"
        "r, err = call(435, buf, len(args))\n"
        "if r == 0:\n    os._exit(0)\n"
        "verdict(r, err, (errno.ENOSYS,))\n"
    ),
    "pidfd_open": (
        "r, err = call(434, os.getpid(), 0)\n"
        "r2, err2 = call(434, os.getpid(), os.O_EXCL)\n"  # PIDFD_THREAD
        "verdict(max(r, r2), err if r < 0 and r2 < 0 and err == err2 else -1)\n"
    ),
    "SO_PEERPIDFD": (
        "a, b = socket.socketpair()\n"
        "try:\n    fd = a.getsockopt(socket.SOL_SOCKET, 77)\n    verdict(fd, 0)\n"
        "except OSError as e:\n    verdict(-1, e.errno)\n"
    ),
    # SCM_PIDFD comes only to a socket with SO_PASSPIDFD set: try to set it, then look
    "SO_PASSPIDFD / SCM_PIDFD": (
        "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
        "try:\n    b.setsockopt(socket.SOL_SOCKET, 76, 1)\n    err = 0\n"
        "except OSError as e:\n    err = e.errno\n"
        "a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS,\n"
        "                    struct.pack('3i', os.getpid(), os.getuid(), os.getgid()))])\n"
        "_, anc, _, _ = b.recvmsg(8, 256)\n"
        "got = [lvl for lvl, kind, data in anc if kind == 4]\n"  # SCM_PIDFD
        "verdict(0 if got or not err else -1, err)\n"
    ),
    # should a pidfd or nsfs file exist anyway, its ioctls are refused (on fd 0 here: without
    # the filter the kernel would answer ENOTTY)
    "pidfd and nsfs ioctls": (
        "libc.ioctl.restype = ctypes.c_int\n"
        "buf = ctypes.create_string_buffer(256)\n"
        "errs = set()\n"
        "for req in (0xC050FF0B, 0xFF01, 0xFF02, 0xFF03, 0xB701, 0xB702, 0x8008B705):\n"
        "    r = libc.ioctl(0, ctypes.c_ulong(req), buf)\n"
        "    errs.add(ctypes.get_errno() if r < 0 else 0)\n"
        "verdict(-1 if errs == {errno.EPERM} else 0, errno.EPERM)\n"
    ),
    # the calls that take a pidfd: refused before the kernel looks at the descriptor
    "pidfd_getfd, pidfd_send_signal, process_madvise, process_mrelease": (
        "errs = {call(nr, 0, 0, 0)[1] for nr in (438, 424, 440, 448)}\n"
        "verdict(-1 if errs == {errno.EPERM} else 0, errno.EPERM)\n"
    ),
    # pidfs file handles (FD_PIDFS_ROOT) open a pidfd by the task's inode number
    "open_by_handle_at": (
        "handle = ctypes.create_string_buffer(struct.pack('IiQ', 8, 0xFF, 1 << 32), 16)\n"
        "r, err = call(304 if X86 else 265, -10002, handle, os.O_RDONLY)\n"
        "r2, err2 = call(303 if X86 else 264, -100, b'/tmp', handle, ctypes.byref(ctypes.c_int()), 0)\n"
        "verdict(max(r, r2), err if err == err2 else -1)\n"
    ),
}


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="no filter here")
@pytest.mark.parametrize("route", list(ROUTES))
def test_no_program_obtains_a_pidfd(mode: str, route: str) -> None:
    result, control = verify_batch(
        [VerifyJob(PROBE, HEAD + ROUTES[route]), CONTROL], workers=1, all_tests=True
    )
    assert control.verdict == "AC", control
    assert (result.verdict, result.tests_passed) == ("AC", 2), f"{route}: {result.detail}"
