"""Issue 36 items 1 and 2: memory the kernel holds for a test, and machine-wide counters and
timestamps that outlive one. In every sandbox mode, one worker, an honest control after
each hostile program (the pattern of test_verifier_integrity.py):

- memory outside the address space (pipes holding spliced pages, extended attributes on
  the scratch, the judge's own stdin / stdout / status files) is refused or MLE;
- a writer that runs the tests after a hidden YES leaves no trace a later reader can see
  in the pidfd inode counter, the scratch's inode counter, inotify's rename cookies or the
  scratch's timestamps.
"""

from __future__ import annotations

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier import sandbox as sandbox_module

ECHO = Problem("i36", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")


def run(*jobs: VerifyJob) -> list:
    out = []
    for job in jobs:
        result, control = verify_batch([job, CONTROL], workers=1)
        assert control.verdict == "AC", control
        out.append(result)
    return out


HOARD = Problem("i36", "hoard", "", tests=(Case("q\n", "done\n"),), checker="lcb",
                time_limit_s=5.0, memory_limit_mb=64)  # fmt: skip

# each: a program that holds ~100 MiB beyond its address space, and prints done; exit code 5
# when the kernel refuses the way it holds it
HOARDS = {
    "vmsplice": (
        "import ctypes, mmap, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "class IOV(ctypes.Structure):\n"
        "    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]\n"
        "pipes = []\n"
        "for _ in range(24):\n"
        "    r, w = os.pipe()\n    pipes.append((r, w))\n"
        "    m = mmap.mmap(-1, 4 << 20)\n    m.madvise(mmap.MADV_HUGEPAGE)\n"
        "    buf = (ctypes.c_char * (4 << 20)).from_buffer(m)\n"
        "    for off in range(0, 4 << 20, 1 << 21):\n"
        "        buf[off] = b'x'\n"
        "        iov = IOV(ctypes.addressof(buf) + off, 1)\n"
        "        if libc.vmsplice(w, ctypes.byref(iov), 1, 0) < 0:\n"
        "            raise SystemExit(5)\n"
        "    del buf\n    m.close()\n"
        "print('done')\n"
    ),
    "xattrs": (
        "import os\nopen('/tmp/f', 'w').close()\nvalue = b'x' * 65000\n"
        "for i in range(1600):\n"
        "    try:\n        os.setxattr('/tmp/f', f'user.k{i}', value)\n"
        "    except OSError:\n        raise SystemExit(5)\n"
        "print('done')\n"
    ),
    "stdin file": (
        "import os\ninput()\nchunk = b'x' * (1 << 20)\n"
        "for _ in range(100):\n"
        "    try:\n        os.write(0, chunk)\n    except OSError:\n        raise SystemExit(5)\n"
        "print('done')\n"
    ),
    "socket buffers": (  # larger buffers held 118 MiB in 29 socket pairs
        "import socket\na, c = socket.socketpair()\n"
        "try:\n    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)\n"
        "except OSError:\n    raise SystemExit(5)\n"
        "print('done')\n"
    ),
    "stdout file": (  # trailing whitespace: the LCB rule strips it
        "import sys\nprint('done')\nchunk = ' ' * (1 << 20)\n"
        "for _ in range(60):\n    sys.stdout.write(chunk)\n"
    ),
    "status file": (  # whitespace after the harness's own report still parses as JSON
        "import os\nchunk = b' ' * (1 << 20)\n"
        "for _ in range(60):\n    os.write(3, chunk)\n"
        "os.lseek(3, 0, 0)\nprint('done')\n"
    ),
}


@pytest.mark.parametrize("hoard", list(HOARDS))
def test_memory_the_kernel_holds_is_mle_or_refused(mode: str, hoard: str) -> None:
    (result,) = run(VerifyJob(HOARD, HOARDS[hoard]))
    refused = result.verdict == "RE" and "exit code 5" in result.detail
    assert refused or result.verdict == "MLE", (hoard, result)
    if result.verdict == "MLE":
        assert result.peak_memory_mb is not None and result.peak_memory_mb > 64, result


def test_the_pipe_size_cannot_be_raised(mode: str) -> None:
    code = ("import fcntl, os\nr, w = os.pipe()\n"
            "try:\n    fcntl.fcntl(w, 1031, 1 << 20)\n    print('raised')\n"
            "except OSError:\n    print('done')\n")  # fmt: skip
    (result,) = run(VerifyJob(HOARD, code))
    assert result.verdict == "AC", result


SOCKETS = (
    "import socket\nps = []\n"
    "for _ in range(29):\n"
    "    a, c = socket.socketpair()\n    ps.append((a, c))\n"
    "    for s in (a, c) if FILL else ():\n"
    "        s.setblocking(False)\n"
    "        try:\n            while True:\n                s.send(b'x' * 65536)\n"
    "        except BlockingIOError:\n            pass\n"
    "print(input())\n"
)


def test_a_memory_cgroup_counts_what_the_kernel_holds(mode: str) -> None:
    """Where the host offers a memory cgroup (root, v1 or v2; a delegated v2 directory),
    each test runs in one and the memory the kernel holds for it (here: socket buffers at
    their default size, that no process's memory shows) is part of its count."""
    from cppo_bench.verifier.launch import MemCgroup

    probe = MemCgroup.create()
    if probe is None:
        pytest.skip("no memory cgroup on this host")
    probe.destroy()
    p = Problem("i36", "sock", "", tests=(Case("hi\n", "hi\n"),), checker="lcb")
    idle, full = run(VerifyJob(p, SOCKETS.replace("FILL", "False")),
                     VerifyJob(p, SOCKETS.replace("FILL", "True")))  # fmt: skip
    assert idle.verdict == full.verdict == "AC", (idle, full)
    # (measured here: 11.5 MiB idle, 14.5 with the buffers full; without the cgroup, equal)
    assert full.peak_memory_mb - idle.peak_memory_mb > 2, (idle.peak_memory_mb, full.peak_memory_mb)


def hidden_yes(pid: str, later_tests: int = 24) -> Problem:
    cases = (Case("first\n", "YES\n"),) + tuple(Case("later\n", "x\n") for _ in range(later_tests))
    return Problem("i36", pid, "", tests=cases, checker="lcb", time_limit_s=5.0)


READER = Problem("i36", "reader", "", tests=(Case("q\n", "YES\n"),), checker="lcb",
                 time_limit_s=5.0)  # fmt: skip

# (what the writer does in each test after the first, what the reader says YES on)
CHANNELS = {
    # pidfs inode numbers count every task the machine made: readable through a pidfd
    "pidfd counter": (
        "import threading\n[threading.Thread(target=int).start() for _ in range(8)]\n",
        "import os, socket\na, b = socket.socketpair()\nyes = False\n"
        "for opt in (77, 76):\n"
        "    try:\n        fd = a.getsockopt(socket.SOL_SOCKET, opt)\n"
        "        yes = yes or os.fstat(fd).st_ino > 0 or opt == 76\n"
        "    except OSError:\n        pass\n",
    ),
    # the scratch tmpfs's inode counter, advanced by files no directory shows
    "scratch inode counter": (
        # (O_TMPFILE: no directory entry, no directory time changed, the inode freed again)
        "import tempfile\nfor _ in range(40):\n    tempfile.TemporaryFile(dir='/tmp').close()\n",
        "import os\nfd = os.open('/tmp/probe', os.O_CREAT | os.O_RDWR)\n"
        "yes = os.fstat(fd).st_ino > 500\n",
    ),
    # inotify's rename cookies come from one machine-wide counter
    "inotify cookie": (
        "open('/tmp/a', 'w').close()\nimport os\n"
        "for _ in range(50):\n    os.rename('/tmp/a', '/tmp/b')\n    os.rename('/tmp/b', '/tmp/a')\n",
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "yes = libc.inotify_init1(0) >= 0\n",
    ),
    # the scratch's own times: a reset skipped or written after a test says when it ended
    "scratch timestamps": (
        "import time\ntime.sleep(0.15)\n",
        "import os, time\nst = os.stat('/tmp')\n"
        "yes = time.time() - min(st.st_ctime, st.st_mtime) > 2.0\n",
    ),
}


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_no_machine_counter_carries_a_hidden_answer(mode: str, channel: str) -> None:
    write, read = CHANNELS[channel]
    body = "".join("    " + line + "\n" for line in write.splitlines())
    writer = "if input() == 'first':\n    print('YES')\nelse:\n" + body + "    print('x')\n"
    reader = read + "print('YES' if yes else 'NO')\n"
    w, r, control = verify_batch(
        [VerifyJob(hidden_yes(f"w-{channel}"), writer), VerifyJob(READER, reader), CONTROL],
        workers=1,
    )
    assert control.verdict == "AC", control
    assert w.verdict == "AC", w
    assert r.verdict == "WA", f"{channel}: the reader saw the writer's bit ({r.detail})"


def test_the_numpy_zygote_holds_no_earlier_programs_data(mode: str) -> None:
    """Programs that name numpy run from a second zygote (forked by the first, numpy
    imported): a later one finds nothing of an earlier one's code, input or output."""
    token = "k3y-" + "7f3a9c" * 4
    plant_p = Problem("i36", "plant", "", tests=(Case("x\n", "plant\n"),), checker="lcb")
    plant = VerifyJob(plant_p, f"import numpy\nT = {token!r} * 3\nprint(T, numpy.int64(1))")
    scan = (
        "import gc, numpy\nneedle = bytes.fromhex(" + repr(token.encode().hex()) + ").decode()\n"
        "found = any(type(r) is str and r.count(needle) > 1\n"
        "            for o in gc.get_objects() for r in gc.get_referents(o))\n"
        "print('ping' if not found and numpy.ones(2).sum() == 2 else 'leak')\n"
    )
    plant_r, scan_r = run(plant, VerifyJob(ECHO, scan.replace("'ping'", "input()")))
    assert plant_r.verdict == "WA"
    assert scan_r.verdict == "AC", scan_r


def test_numpy_programs_without_a_pid_namespace_per_test(monkeypatch) -> None:
    """Without user namespaces (no pid namespace per test) there is no numpy zygote: the
    base zygote reaps every child of its own after a test, and would wait for it forever."""
    from cppo_bench.verifier import launch

    real = launch.launch_spec

    def no_userns(mode: str, nproc: int = 64):
        argv, init = real(mode, nproc)
        return argv, dict(init, userns=False)

    monkeypatch.setattr(sandbox_module, "launch_spec", no_userns)
    p = Problem("i36", "np", "", tests=(Case("2\n", "4\n"), Case("3\n", "6\n")), checker="lcb")
    jobs = [VerifyJob(p, "import numpy as np\nprint(int(np.int64(input()) * 2))"),
            VerifyJob(p, "print(int(input()) * 2)"), CONTROL]  # fmt: skip
    assert [r.verdict for r in verify_batch(jobs, workers=1)] == ["AC", "AC", "AC"]
