"""Issue 26: reward integrity. In every sandbox mode, one worker, an honest control after
each hostile program:

- channels between programs: a writer program that runs the tests after a hidden YES
  (the judge stops at the first failure, so whether they ran is one bit about the answers)
  leaves a trace; a reader program prints YES only if it sees one, so a closed channel
  makes the reader WA;
- hoards outside the accounting (memfd, the scratch tmpfs) are MLE or refused;
- process creation is refused, so a SIGCHLD-ignoring CPU burner gets no unaccounted CPU;
- a program that looks its answers up in the host's files finds nothing.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch

ECHO = Problem("i26", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")


def run(*jobs: VerifyJob) -> list:
    """The jobs in this order on one worker, an honest control after each one."""
    out = []
    for job in jobs:
        result, control = verify_batch([job, CONTROL], workers=1)
        assert control.verdict == "AC", control
        out.append(result)
    return out


def hidden_yes(pid: str, later_tests: int = 24) -> Problem:
    """Test 0's answer is YES; the tests after it run only if a program answered YES."""
    cases = (Case("first\n", "YES\n"),) + tuple(Case("later\n", "x\n") for _ in range(later_tests))
    return Problem("i26", pid, "", tests=cases, checker="lcb", time_limit_s=5.0)


READER = Problem("i26", "reader", "", tests=(Case("q\n", "YES\n"),), checker="lcb",
                 time_limit_s=5.0)  # fmt: skip

# Each channel: (what the writer does in every test after the first, what the reader prints
# YES on). The writer answers YES on test 0 (so the later tests run, and it writes its bit).
CHANNELS = {
    # the sandbox's pid counter: 24 more tests (and their threads) advanced it
    "pid counter": (
        "import threading\n[threading.Thread(target=int).start() for _ in range(8)]\n",
        "import os, threading\n"
        "seen = [os.getpid(), threading.get_native_id()]\n"
        "t = threading.Thread(target=lambda: seen.append(threading.get_native_id()))\n"
        "t.start(); t.join()\n"
        "try:\n    seen.append(int(os.readlink('/proc/self')))\nexcept (OSError, ValueError):\n"
        "    pass\n"
        "try:\n    seen.append(int(open('/proc/loadavg').read().split()[-1]))\n"
        "except (OSError, ValueError):\n    pass\n"
        "yes = max(seen) > 20\n",
    ),
    # the host's page cache: make a cold file resident; the reader probes without reading
    "page cache": (
        "import os\nfd = os.open(PAGE_FILE, os.O_RDONLY)\n"
        "try:\n    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)\nexcept OSError:\n"
        "    pass\n",
        "import ctypes, os\nfd = os.open(PAGE_FILE, os.O_RDONLY)\nyes = False\n"
        "try:\n    yes = os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT) > 0\n"
        "except OSError:\n    pass\n"
        "try:\n    vec = (ctypes.c_ubyte * 1)()\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n    libc.mmap.restype = ctypes.c_void_p\n"
        "    base = ctypes.c_void_p(libc.mmap(None, 4096, 1, 1, fd, 0))\n"
        "    if libc.mincore(base, 4096, vec) == 0 and vec[0] & 1:\n        yes = True\n"
        "except OSError:\n    pass\n",
    ),
    # the scratch directory and its timestamps
    "scratch": (
        "open('/tmp/bit', 'w').write('1')\nimport os\nos.utime('/tmp', (1, 1))\n",
        "import os\nyes = os.path.exists('/tmp/bit') or os.stat('/tmp').st_mtime < 100\n",
    ),
    # a file's access time in the read-only install (reading updates it where writable)
    "atime": (
        "open(PAGE_FILE, 'rb').read()\n",
        "import os, time\nyes = time.time() - os.stat(PAGE_FILE).st_atime < 600\n",
    ),
    # the machine's counters in /proc and /sys (forks, page faults, disk reads)
    "global counters": (
        "import threading\n[threading.Thread(target=int).start() for _ in range(8)]\n",
        "import os\nyes = any(os.path.exists(p) for p in ('/proc/stat', '/proc/vmstat',\n"
        "    '/proc/diskstats', '/sys/block', '/sys/kernel', '/proc/loadavg'))\n",
    ),
}
# a cold file every mode shows (chosen per run, so no earlier run warmed it on purpose)
PRELUDE = (
    "import os, sys\n"
    "lib = os.path.dirname(os.__file__)\n"
    "PAGE_FILE = os.path.join(lib, sorted(f for f in os.listdir(lib) if f.endswith('.py'))"
    "[SALT % 50])\n"
)


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_no_channel_carries_a_hidden_answer_to_a_later_program(mode: str, channel: str) -> None:
    write, read = CHANNELS[channel]
    salt = uuid.uuid4().int % 1000
    prelude = PRELUDE.replace("SALT", str(salt))
    # YES on test 0; on every later test (they run only because YES was right), the write
    body = "".join("    " + line + "\n" for line in write.splitlines())
    writer = (
        prelude + "if input() == 'first':\n    print('YES')\nelse:\n" + body + "    print('x')\n"
    )
    reader = prelude + read + "print('YES' if yes else 'NO')\n"
    # one batch, one worker: the same sandbox judges both, the writer first (long jobs first)
    w, r, control = verify_batch(
        [VerifyJob(hidden_yes(f"w-{channel}"), writer), VerifyJob(READER, reader), CONTROL],
        workers=1,
    )
    assert control.verdict == "AC", control
    assert w.verdict == "AC", w  # YES was right: every later test ran, and wrote
    assert r.verdict == "WA", f"{channel}: the reader saw the writer's bit ({r.detail})"


def test_memory_held_outside_the_address_space_is_mle_or_refused(mode: str) -> None:
    limit = Problem("i26", "hoard", "", tests=(Case("q\n", "done\n"),), checker="lcb",
                    time_limit_s=5.0, memory_limit_mb=64)  # fmt: skip
    memfd = (
        "import os\nchunk = b'x' * (1 << 20)\n"
        "kept = []\n"
        "for _ in range(10):\n"
        "    try:\n        kept.append(os.memfd_create('h'))\n"
        "    except OSError:\n        raise SystemExit(3)\n"
        "    for _ in range(32):\n        os.write(kept[-1], chunk)\n"
        "print('done')\n"
    )
    tmpfs = (
        "import time\nchunk = b'x' * (1 << 20)\nf = open('/tmp/hoard', 'wb')\n"
        "for _ in range(60):\n    f.write(chunk)\nf.flush()\ntime.sleep(0.3)\nprint('done')\n"
    )
    fds = (
        "import os\nkept = []\n"
        "try:\n    for _ in range(1000):\n        kept.append(os.pipe())\n"
        "except OSError:\n    raise SystemExit(4)\nprint('done')\n"
    )
    m, t, f = run(VerifyJob(limit, memfd), VerifyJob(limit, tmpfs), VerifyJob(limit, fds))
    assert m.verdict in ("MLE", "RE"), m  # memfd_create refused (RE) or counted (MLE)
    assert m.verdict == "MLE" or "exit code 3" in m.detail, m
    assert t.verdict == "MLE", t  # 60 MiB of tmpfs + the interpreter > 64 MiB
    assert f.verdict == "RE" and "exit code 4" in f.detail, f  # RLIMIT_NOFILE


def test_no_process_creation_so_no_unaccounted_cpu(mode: str) -> None:
    """Children of a SIGCHLD-ignoring program were reaped by the kernel: their CPU never
    reached the test's. Now there are no children: fork, spawn and exec are refused."""
    p = Problem("i26", "burn", "", tests=(Case("q\n", "done\n"),), checker="lcb",
                time_limit_s=1.0)  # fmt: skip
    burner = (
        "import os, signal, time\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
        "made = 0\nend = time.time() + 3\n"
        "while time.time() < end:\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        t = time.process_time() + 0.04\n"
        "        while time.process_time() < t:\n            pass\n        os._exit(0)\n"
        "    made += 1\n    time.sleep(0.01)\n"
        "print('done' if made > 10 else 'refused')\n"
    )
    spawn = (
        "import subprocess, sys\n"
        "try:\n    subprocess.run([sys.executable, '-c', 'pass'])\n    print('done')\n"
        "except OSError:\n    print('refused')\n"
    )
    threads = (
        "import threading\nout = []\n"
        "ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]\n"
        "[t.start() for t in ts]\n[t.join() for t in ts]\nprint('done' if len(out) == 4 else 'no')\n"
    )
    b, s, t = run(VerifyJob(p, burner), VerifyJob(p, spawn), VerifyJob(p, threads))
    assert b.verdict == "WA" and "refused" in b.detail, b
    assert b.cpu_s is not None and b.cpu_s < 1.0
    assert s.verdict == "WA" and "refused" in s.detail, s
    assert t.verdict == "AC", t  # threads still work


def test_a_program_finds_no_answers_in_the_host_files(mode: str, tmp_path: Path) -> None:
    """The benchmark file being judged lives on the host (its path in the verifier's command
    line); a program that walks / and reads /proc/*/cmdline for it must find nothing."""
    answer = f"answer-{uuid.uuid4().hex}"
    data = tmp_path / "bench.jsonl"
    data.write_text(answer + "\n")
    # a generous limit: the walk reads every visible .jsonl, and under a loaded CI machine
    # the interpreter's own tree (visible by design, no answers in it) made it TLE
    p = Problem("i26", "lookup", "", tests=(Case("q\n", answer + "\n"),), checker="lcb",
                time_limit_s=20.0)  # fmt: skip
    cheat = (
        "import os, re, sys\nfound = []\n"
        "python = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)}\n"
        f"paths = [{str(data)!r}]\n"
        "for pid in os.listdir('/proc') if os.path.isdir('/proc') else []:\n"
        "    try:\n"
        "        paths += re.findall(r'/[^\\x00 ]+', open(f'/proc/{pid}/cmdline').read())\n"
        "    except OSError:\n        pass\n"
        "for root, dirs, files in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev')\n"
        "               and os.path.realpath(os.path.join(root, d)) not in python]\n"
        "    paths += [os.path.join(root, f) for f in files if f.endswith('.jsonl')]\n"
        "for path in paths:\n"
        "    try:\n        found += re.findall(r'answer-[0-9a-f]{32}', open(path).read(1 << 20))\n"
        "    except (OSError, UnicodeDecodeError):\n        pass\n"
        "print(found[0] if found else 'nothing')\n"
    )
    [r] = run(VerifyJob(p, cheat))
    assert r.verdict == "WA" and "nothing" in r.detail, r
