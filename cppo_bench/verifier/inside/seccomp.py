"""The test child's seccomp filter (stdlib + ctypes only, inside the sandbox).

Installed by each test child at the end of its set-up, just before the program runs (never
in the zygote, which must still fork): after it, the program's process can

- create no process: fork, vfork, clone without CLONE_THREAD and posix_spawn fail (EPERM;
  threads still work: clone3 answers ENOSYS, and glibc falls back to clone with
  CLONE_THREAD), and execve/execveat fail. This is what the official evaluators do with
  `reliability_guard` (no fork, no subprocess), at the kernel level: every CPU second and
  every page of the test is then its own process's, where the accounting sees it;
- hold no memory outside its address space through memfd_create / memfd_secret (tmpfs
  pages a limit never sees; the scratch tmpfs is counted by the server instead);
- neither probe nor change the host's page cache: mincore, cachestat, readahead,
  fadvise64, preadv2/pwritev2 (RWF_NOWAIT tells resident pages apart; ENOSYS, so glibc's
  preadv falls back), madvise other than the plain advices (no WILLNEED, COLD, PAGEOUT,
  POPULATE, MERGEABLE), io_uring (its own path to all of these);
- not read the machine's global counters through sysinfo (process count, loads, memory);
- make no namespace, mount, BPF program, perf counter or userfaultfd, and not ptrace or
  read another process's memory;
- hold no memory the kernel keeps for it outside every count (issue 36): no vmsplice (a
  pipe keeps the user pages spliced into it, a whole huge page for one byte, after they
  are unmapped), no extended attributes (kept in kernel memory, not in the scratch's
  blocks), no F_SETPIPE_SZ (a pipe stays at its default 64 KiB), no SO_SNDBUF / SO_RCVBUF
  set (a socket stays at its default buffers: socket buffers of 29 pairs held 118 MiB);
- read no machine-wide counter that outlives a test: no inotify or fanotify (rename
  cookies come from one machine-wide counter), no statmount / listmount, and never hold a
  pidfd (issue 42): a pidfd's inode number counts every task the machine made. Every door
  to one is shut: pidfd_open, clone with CLONE_PIDFD (threads too: the clone rule reads
  both flags), clone3 (its flags sit in a struct no filter can read: ENOSYS, and glibc
  falls back to clone), SO_PEERPIDFD and SO_PASSPIDFD (so no SCM_PIDFD is ever
  delivered), open_by_handle_at (pidfs file handles open a pidfd; name_to_handle_at with
  it), and, should one exist anyway, everything that takes one: pidfd_getfd,
  pidfd_send_signal, process_madvise, process_mrelease, setns, and the pidfd and nsfs
  ioctls (types 0xFF and 0xB7: PIDFD_GET_INFO, PIDFD_GET_*_NAMESPACE, NS_GET_*);
- not leave the CPU its sandbox is bound to (no sched_setaffinity): its threads would run
  on CPUs where other sandboxes' tests hold their turn (cpus.py, host side), and stretch
  their wall time past the backstop.
"""

from __future__ import annotations

import ctypes
import os

import nsutil

ALLOW, ERRNO, KILL = 0x7FFF0000, 0x00050000, 0x80000000
EPERM, ENOSYS = 1, 38
CLONE_THREAD = 0x10000
# madvise advices a program may give: NORMAL RANDOM SEQUENTIAL DONTNEED FREE DONTFORK
# DOFORK HUGEPAGE NOHUGEPAGE DONTDUMP DODUMP WIPEONFORK KEEPONFORK
MADV_OK = (0, 1, 2, 4, 8, 10, 11, 14, 15, 16, 17, 18, 19)

# Syscall numbers by machine: (AUDIT_ARCH, {name: nr}).
_X86_64 = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone3": 435, "clone": 56,
    "memfd_create": 319, "memfd_secret": 447, "mincore": 27, "cachestat": 451,
    "readahead": 187, "fadvise64": 221, "preadv2": 327, "pwritev2": 328, "madvise": 28,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "sysinfo": 99,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424, "process_madvise": 440,
    "process_mrelease": 448, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "statmount": 457, "listmount": 458, "kcmp": 312, "ioctl": 16,
    "vmsplice": 278, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463,
    "inotify_init": 253, "inotify_init1": 294, "inotify_add_watch": 254, "fanotify_init": 300,
    "fcntl": 72, "getsockopt": 55, "setsockopt": 54, "sched_setaffinity": 203,
}  # fmt: skip
_AARCH64 = {
    "execve": 221, "execveat": 281, "clone3": 435, "clone": 220, "memfd_create": 279,
    "memfd_secret": 447, "mincore": 232, "cachestat": 451, "readahead": 213,
    "fadvise64": 223, "preadv2": 286, "pwritev2": 287, "madvise": 233,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "sysinfo": 179,
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424, "process_madvise": 440,
    "process_mrelease": 448, "open_by_handle_at": 265, "name_to_handle_at": 264,
    "statmount": 457, "listmount": 458, "kcmp": 272, "ioctl": 29,
    "vmsplice": 75, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463,
    "inotify_init1": 26, "inotify_add_watch": 27, "fanotify_init": 262,
    "fcntl": 25, "getsockopt": 209, "setsockopt": 208, "sched_setaffinity": 122,
}  # fmt: skip
ARCHES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}
# answered ENOSYS (callers fall back to what the filter allows), the rest of the names EPERM
_NOSYS = ("clone3", "preadv2", "pwritev2")
_CHECKED = ("clone", "madvise", "fcntl", "getsockopt", "setsockopt", "ioctl")  # on an argument
CLONE_PIDFD = 0x1000
# ioctl types (bits 8-15 of the request) refused: pidfs' (0xFF) and nsfs' (0xB7)
IOCTL_TYPES = (0xFF, 0xB7)
F_SETPIPE_SZ = 1031
SO_PASSPIDFD, SO_PEERPIDFD = 76, 77  # (refused at every level: no other needs these numbers)
SO_SNDBUF, SO_RCVBUF = 7, 8  # set: refused (a socket keeps its default buffers)

# classic BPF: LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, JMP|JSET|K, RET|K, ALU|AND|K
_LD, _JEQ, _JGE, _JSET, _RET, _AND = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
_NR, _ARCH, _ARG0, _ARG1, _ARG2 = 0, 4, 16, 24, 32  # in struct seccomp_data (low 32 bits)


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]  # fmt: skip


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _assemble(prog: list[tuple]) -> list[tuple[int, int, int, int]]:
    """(code, true target, false target, k) with targets as labels (str) or 0 -> jumps."""
    labels = {ins[1]: i for i, ins in enumerate(prog) if ins[0] == "label"}
    out: list[tuple[int, int, int, int]] = []
    index: dict[int, int] = {}
    for ins in prog:
        if ins[0] != "label":
            index[id(ins)] = len(out)
            out.append(ins)
    where = {name: sum(1 for ins in prog[:at] if ins[0] != "label") for name, at in labels.items()}
    code = []
    for i, (op, jt, jf, k) in enumerate(out):
        rel = [0 if t == 0 else where[t] - i - 1 for t in (jt, jf)]
        if any(r < 0 or r > 255 for r in rel):
            raise ValueError("seccomp jump out of range")
        code.append((op, rel[0], rel[1], k))
    return code


def build_filter() -> object | None:
    """The filter program of this module's doc, ready to install (built once, in the
    zygote, so that a test child only makes the one prctl call). None: unknown machine."""
    arch = ARCHES.get(os.uname().machine)
    if arch is None:
        return None
    audit, nr = arch
    names = [n for n in nr if n not in _CHECKED]
    prog: list[tuple] = [
        (_LD, 0, 0, _ARCH), (_JEQ, 0, "nosys", audit),  # a foreign ABI: refused
        (_LD, 0, 0, _NR), (_JGE, "nosys", 0, 1 << 30),  # x32 numbers on x86_64
        (_JEQ, "clone", 0, nr["clone"]), (_JEQ, "madvise", 0, nr["madvise"]),
        (_JEQ, "fcntl", 0, nr["fcntl"]), (_JEQ, "sockopt", 0, nr["getsockopt"]),
        (_JEQ, "setsockopt", 0, nr["setsockopt"]), (_JEQ, "ioctl", 0, nr["ioctl"]),
    ]  # fmt: skip
    for name in names:
        prog.append((_JEQ, "nosys" if name in _NOSYS else "eperm", 0, nr[name]))
    prog += [(_RET, 0, 0, ALLOW), ("label", "fcntl"), (_LD, 0, 0, _ARG1)]
    prog += [(_JEQ, "eperm", "allow", F_SETPIPE_SZ), ("label", "setsockopt"), (_LD, 0, 0, _ARG2)]
    prog += [(_JEQ, "eperm", 0, SO_SNDBUF), (_JEQ, "eperm", 0, SO_RCVBUF)]
    prog += [("label", "sockopt"), (_LD, 0, 0, _ARG2)]
    prog += [(_JEQ, "eperm", 0, SO_PASSPIDFD), (_JEQ, "eperm", "allow", SO_PEERPIDFD)]
    prog += [("label", "ioctl"), (_LD, 0, 0, _ARG1), (_AND, 0, 0, 0xFF00)]
    prog += [(_JEQ, "eperm", 0, t << 8) for t in IOCTL_TYPES] + [(_RET, 0, 0, ALLOW)]
    # a thread (CLONE_THREAD) and never a pidfd (CLONE_PIDFD, a thread's included)
    prog += [("label", "clone"), (_LD, 0, 0, _ARG0), (_JSET, "eperm", 0, CLONE_PIDFD)]
    prog += [(_JSET, "allow", "eperm", CLONE_THREAD), ("label", "madvise"), (_LD, 0, 0, _ARG2)]
    prog += [(_JEQ, "allow", 0, advice) for advice in MADV_OK]
    prog += [("label", "eperm"), (_RET, 0, 0, ERRNO | EPERM), ("label", "nosys")]
    prog += [(_RET, 0, 0, ERRNO | ENOSYS), ("label", "allow"), (_RET, 0, 0, ALLOW)]
    code = _assemble(prog)
    filters = (_SockFilter * len(code))(*[_SockFilter(*ins) for ins in code])
    fprog = _SockFprog(len(code), filters)
    fprog.keep = filters  # (the array must live as long as the header pointing at it)
    return fprog


def install(fprog: _SockFprog) -> bool:
    """Install a built filter on this process (needs no_new_privs, set by the server)."""
    # PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2
    return nsutil.LIBC.prctl(22, ctypes.c_ulong(2), ctypes.byref(fprog), 0, 0) == 0


def works(fprog: _SockFprog | None) -> bool:
    """Can a child of ours install it? (Once, in the zygote: a throwaway fork.)"""
    if fprog is None:
        return False
    pid = os.fork()
    if pid == 0:
        os._exit(0 if install(fprog) else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
