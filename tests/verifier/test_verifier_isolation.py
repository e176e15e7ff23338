"""Issue #11: hostile programs against every isolation class, in every sandbox mode, with ONE
worker, so that contamination would show in a later control's verdict.

Most checks are "probe" programs: they print `isolated` only if every attempt to break out
failed, so AC means the class is closed and anything else names what leaked.
"""

from __future__ import annotations

import json
import os
import platform
import time
import uuid
from pathlib import Path

import pytest

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as Case
from cppo_bench.verifier import VerifyJob, verify_batch
from cppo_bench.verifier import launch as launch_module

TOKEN = f"tok{uuid.uuid4().hex}"


def problem(expected: str, pid: str, time_s: float = 2.0, memory_mb: int | None = None,
            tests: int = 1) -> Problem:  # fmt: skip
    cases = tuple(Case("go\n", expected) for _ in range(tests))
    return Problem("iso", pid, "", tests=cases, checker="lcb", time_limit_s=time_s,
                   memory_limit_mb=memory_mb)  # fmt: skip


ISOLATED = problem("isolated\n", "probe")
ECHO = Problem("iso", "echo", "", tests=(Case("ping\n", "ping\n"),), checker="lcb")
CONTROL = VerifyJob(ECHO, "print(input())")


def run(jobs: list[VerifyJob], all_tests: bool = False):
    """The jobs, then an honest control, on one worker: the control must still be AC."""
    results = verify_batch([*jobs, CONTROL], workers=1, all_tests=all_tests)
    assert results[-1].verdict == "AC", results[-1]
    return results[:-1]


PRIVILEGE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
bad = []
if os.getuid() == 0 or os.geteuid() == 0:
    bad.append("uid0")
try:
    status = open("/proc/self/status").read()
except OSError:  # no /proc for tests (issue 26): ask the kernel directly
    status = None
if status is not None:
    if "NoNewPrivs:\\t1" not in status:
        bad.append("no_new_privs unset")
    for line in status.splitlines():
        if line.startswith(("CapBnd", "CapEff", "CapPrm")) and int(line.split()[1], 16):
            bad.append(line)
else:
    if libc.prctl(39, 0, 0, 0, 0) != 1:  # PR_GET_NO_NEW_PRIVS
        bad.append("no_new_privs unset")
    bad += ["CapBnd %d" % c for c in range(41) if libc.prctl(23, c, 0, 0, 0) == 1]
    head, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
    if libc.capget(head, data) != 0 or any(data):
        bad.append("capabilities held")
try:
    open(SECRET).read()
    bad.append("read root file")
except OSError:
    pass
for target in (b"/", b"/tmp"):
    if libc.mount(None, target, None, 32 | 4096, None) == 0:  # MS_REMOUNT | MS_BIND: rw
        bad.append("remount " + target.decode())
if libc.umount2(b"/tmp", 2) == 0:
    bad.append("umount /tmp")
for dev in ("kvm", "fuse", "console", "tty0", "mem", "sda", "vda"):
    if os.path.exists("/dev/" + dev):
        bad.append("/dev/" + dev)
try:
    open(WRITE, "w").write("x")
    bad.append("wrote host file")
except OSError:
    pass
print("isolated" if not bad else bad)
"""


@pytest.mark.parametrize("seccomp", [True, False], ids=["seccomp", "namespaces"])
def test_privilege_no_root_no_caps_minimal_dev(
    mode: str, seccomp: bool, tmp_path: Path, monkeypatch
) -> None:
    """Both paths: the zygote's seccomp filter, or (where it cannot be set) a user namespace
    per test, which starts with a full capability bounding set that must be emptied again."""
    monkeypatch.setenv(launch_module.SECCOMP_ENV, "1" if seccomp else "0")
    secret = tmp_path / "root-only.txt"
    secret.write_text(TOKEN)
    os.chmod(secret, 0o600)
    target = Path("/var/tmp") / f"cppo-iso-{TOKEN}"
    code = f"SECRET = {str(secret)!r}\nWRITE = {str(target)!r}\n" + PRIVILEGE
    [r] = run([VerifyJob(ISOLATED, code)])
    assert r.verdict == "AC", r
    assert not target.exists()


def test_a_later_program_cannot_read_an_earlier_programs_data(mode: str) -> None:
    """The first program holds a token in its code constants, input and output; the next one
    scans every readable byte of its own memory for it."""
    plant = VerifyJob(problem("x\n", "plant"), f"T = {TOKEN!r} * 3\nprint(T)")
    scan = (
        "import ctypes\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"  # dumpable: mem readable
        "needle = bytes.fromhex(" + repr(TOKEN.encode().hex()) + ")\n"
        "found = False\n"
        "import gc, os\n"
        "if not os.path.exists('/proc/self/maps'):  # no /proc for tests: every object\n"
        "    for o in gc.get_objects():\n"
        "        for r in gc.get_referents(o):\n"
        "            if type(r) is str and r.count(needle.decode()) > 1:\n"
        "                found = True\n"
        "maps = open('/proc/self/maps') if os.path.exists('/proc/self/maps') else []\n"
        "mem = open('/proc/self/mem', 'rb') if maps else None\n"
        "for line in maps:\n"
        "    lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "    if 'r' not in line.split()[1] or hi - lo > 1 << 28:\n        continue\n"
        "    try:\n        mem.seek(lo)\n        chunk = mem.read(hi - lo)\n"
        "    except (OSError, ValueError, OverflowError):\n        continue\n"
        "    found = found or chunk.count(needle) > 1\n"  # one copy: `needle` itself
        "print('isolated' if not found else 'leak')\n"
    )
    plant_r, scan_r = run([plant, VerifyJob(ISOLATED, scan)])
    assert plant_r.verdict == "WA"
    assert scan_r.verdict == "AC", scan_r


REACH = """
import ctypes, os, signal, resource
hit = []
# every pid /proc shows, and (where tests have no /proc) every small pid, guessed
for entry in sorted(set(os.listdir("/proc")) | {str(p) for p in range(2, 300)}):
    # pid 1 is this test's own reporter (its pid namespace's init): nothing of other tests
    if not entry.isdigit() or int(entry) in (os.getpid(), 1):
        continue
    pid = int(entry)
    try:
        resource.prlimit(pid, resource.RLIMIT_AS, (1 << 20, 1 << 20))
        hit.append(("prlimit", pid))
    except OSError:
        pass
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(pid, sig)
            hit.append((sig, pid))
        except OSError:
            pass
print("isolated" if not hit else hit)
"""


def test_no_program_can_reach_the_server_or_zygote(mode: str) -> None:
    results = run([VerifyJob(ISOLATED, REACH), VerifyJob(ISOLATED, REACH)])
    assert [r.verdict for r in results] == ["AC", "AC"], results


KEYS = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_add_key, SYS_keyctl = 248, 250
for ring in (-4, -3, -5):  # user, session, user-session keyrings
    libc.syscall(SYS_add_key, b"user", b"{TOKEN}", b"payload", 7, ring)
found = [r for r in (-4, -3, -5) if libc.syscall(SYS_keyctl, 10, r, b"user", b"{TOKEN}", 0) > 0]
print("planted" if found else "no keyrings")
"""
FIND_KEYS = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = [r for r in (-4, -3, -5) if libc.syscall(250, 10, r, b"user", b"{TOKEN}", 0) > 0]
print("isolated" if not found else found)
"""
SYSV = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
key = 0x5EC12E7
if sys.argv and PLANT:
    print("planted" if libc.shmget(key, 4096, 0o1666) >= 0 else "no ipc")
else:
    print("isolated" if libc.shmget(key, 4096, 0o666) < 0 else "leak")
"""


# On these machines the zygote's seccomp filter refuses the keyring and System V IPC
# syscalls outright (stronger than a keyring and an IPC namespace per test); elsewhere each
# test gets its own namespaces and planting works, but nothing reaches the next program.
REFUSED = platform.machine() in ("x86_64", "aarch64")


@pytest.mark.parametrize("seccomp", [True, False], ids=["seccomp", "namespaces"])
def test_keyrings_and_ipc_are_per_test(mode: str, seccomp: bool, monkeypatch) -> None:
    monkeypatch.setenv(launch_module.SECCOMP_ENV, "1" if seccomp else "0")
    # (a fresh child per test: a kept one shares its program's scratch between tests, see
    # tests/verifier/test_verifier_warm.py)
    monkeypatch.setenv(launch_module.REUSE_ENV, "0")
    refused = REFUSED and seccomp
    two = problem("isolated\n", "two", tests=2)
    results = run([
        VerifyJob(problem("no keyrings\n" if refused else "planted\n", "keys"), KEYS),
        VerifyJob(ISOLATED, FIND_KEYS),
        VerifyJob(problem("no ipc\n" if refused else "planted\n", "shm"), "PLANT = True\n" + SYSV),
        VerifyJob(ISOLATED, "PLANT = False\n" + SYSV),
        # the same program, test after test: nothing of test 0 is visible to test 1
        VerifyJob(two, "import os, glob\nleft = glob.glob('/tmp/*mark*')\n"
                  "open('/tmp/mark', 'w').write('x')\nprint('isolated' if not left else left)"),
    ], all_tests=True)  # fmt: skip
    assert [r.verdict for r in results] == ["AC"] * 5, results


def test_limits_hold_for_the_whole_process_tree(mode: str) -> None:
    # (no test may fork since issue 26: threads now, and the limits still bind them all)
    burn = (
        "import threading\ndef spin():\n    x = 0\n    while True:\n        x += 1\n"
        "kids = [threading.Thread(target=spin) for _ in range(3)]\n"
        "[k.start() for k in kids]\n[k.join() for k in kids]\nprint('isolated')"
    )
    hog = (  # one address space for all threads now: RLIMIT_AS binds the sum
        "import time\nheld = [bytearray(90 << 20) for _ in range(3)]\n"
        "time.sleep(30)\nprint('isolated')"
    )
    raise_soft = (
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))\nwhile True:\n    pass"
    )
    results = run([
        VerifyJob(problem("isolated\n", "burn", time_s=1.0), burn),
        VerifyJob(problem("isolated\n", "hog", time_s=20.0, memory_mb=128), hog),
        VerifyJob(problem("isolated\n", "soft", time_s=1.0), raise_soft),
    ])  # fmt: skip
    assert [r.verdict for r in results] == ["TLE", "MLE", "TLE"], results


def test_liveness_warnings_parked_stdout_and_exit_codes(mode: str) -> None:
    noisy = "x = 1\n" + "y = x is 1\n" * 4000 + "print(input())"  # 4000 SyntaxWarnings
    park = (
        "import os, socket\na, b = socket.socketpair(socket.AF_UNIX)\n"
        "socket.send_fds(a, [b'x'], [1, 2])\nsocket.send_fds(b, [b'y'], [a.fileno(), b.fileno()])\n"
        "a.close()\nb.close()\nprint('ping')"
    )
    results = run([
        VerifyJob(ECHO, noisy),
        VerifyJob(ECHO, park),
        VerifyJob(ECHO, "import os\nos._exit(120)"),  # the harness's own status code
    ])  # fmt: skip
    assert [r.verdict for r in results] == ["AC", "AC", "RE"], results
    assert results[2].detail.endswith("exit code 120") and "sandbox" not in results[2].detail


KILLED_VERIFIER = """
import sys
from cppo_bench.problem import Problem, Test
from cppo_bench.verifier import VerifyJob, verify_batch
p = Problem("iso", "sleep", "", tests=(Test("", "x"),), checker="lcb", time_limit_s=30.0)
print("started", flush=True)
verify_batch([VerifyJob(p, "import threading, time\\n"
              "threading.Thread(target=time.sleep, args=(120,)).start()\\ntime.sleep(120)")],
             workers=1)
"""


def test_a_killed_verifier_leaves_no_process(mode: str) -> None:
    """SIGKILL the verifier mid-test: its sandbox, server, zygote and program all go."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", KILLED_VERIFIER], stdout=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2])))  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"started\n"
    below: list[int] = []
    for _ in range(400):  # until the program runs (its sleep is the deepest process)
        below = launch_module.descendants(proc.pid)
        if any(b"sleep" in _cmd(p) or _depth(p, proc.pid) >= 4 for p in below):
            break
        time.sleep(0.05)
    assert below
    proc.kill()
    proc.wait()
    for _ in range(200):
        alive = [p for p in below if not _zombie(p)]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive


def _cmd(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _depth(pid: int, root: int) -> int:
    depth = 0
    while pid not in (root, 0, 1) and depth < 20:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return 0
        depth += 1
    return depth


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_packages_under_tmp_stay_importable(mode: str, monkeypatch, tmp_path: Path) -> None:
    """A Python environment under /tmp (a CI venv): the private /tmp must not hide it."""
    site = Path(f"/tmp/cppo-venv-{TOKEN}/site-packages/numpy")
    site.mkdir(parents=True)
    try:
        (site / "__init__.py").write_text("VALUE = 42\n")
        os.chmod(site.parents[1], 0o755)
        os.chmod(site.parent, 0o755)
        os.chmod(site, 0o755)
        monkeypatch.setattr(launch_module, "_numpy_dirs", lambda: [(str(site), "numpy")])
        monkeypatch.setattr(launch_module, "_SITE_FARM", None)
        [r] = run([VerifyJob(problem("42\n", "np"), "import numpy\nprint(numpy.VALUE)")])
        assert r.verdict == "AC", r
    finally:
        import shutil

        shutil.rmtree(site.parents[1], ignore_errors=True)


def test_results_stay_json_contract(mode: str) -> None:
    [r] = run([VerifyJob(ISOLATED, "print('isolated')")])
    row = json.loads(json.dumps(r.to_dict()))
    assert {"verdict", "passed", "tests_passed", "tests_total", "first_failed", "time_s",
            "peak_memory_mb", "detail", "code", "cpu_s", "sandbox"} <= set(row)  # fmt: skip


def test_a_program_cannot_unwrite_that_its_set_up_succeeded(mode: str) -> None:
    """stdout and the status report are files the program may rewrite from the start; the
    mark that the sandbox set-up succeeded is not among them, so the program is judged on
    its own (a corrupt report is its runtime error), never taken for a sandbox failure."""
    rewrite = "import os\nos.pwrite(3, b'X' * 64, 0)\nprint('isolated')"
    truncate = "import os\nos.ftruncate(3, 0)\nos.ftruncate(1, 0)\nos._exit(0)"
    forge = "import os\nos.write(3, b'R{\"ok\": true}')\nprint('isolated')\nos._exit(0)"
    results = run([VerifyJob(ISOLATED, rewrite), VerifyJob(ISOLATED, truncate),
                   VerifyJob(ISOLATED, forge)])  # fmt: skip
    assert [r.verdict for r in results] == ["RE", "WA", "RE"], results
    assert not any("sandbox" in r.detail for r in results), results


def test_a_program_dies_by_the_signals_it_sends_itself(mode: str) -> None:
    """The program may be its pid namespace's init, which the kernel shields from its own
    default-action signals: it must still die by them as a normal process would (RE, named),
    and a handler it installs itself must still run."""
    ok = problem("isolated\n", "sig")
    results = run([
        VerifyJob(ok, "import os, signal\nprint('isolated', flush=True)\n"
                  "os.kill(os.getpid(), signal.SIGTERM)\nprint('survived')"),
        VerifyJob(ok, "import signal\nsignal.alarm(1)\nprint('isolated', flush=True)\n"
                  "while True:\n    pass"),
        VerifyJob(ok, "import os, signal\nsignal.signal(signal.SIGUSR1, lambda *a: "
                  "print('isolated'))\nos.kill(os.getpid(), signal.SIGUSR1)"),
    ])  # fmt: skip
    assert [r.verdict for r in results] == ["RE", "RE", "AC"], results
    assert "SIGTERM" in results[0].detail and "SIGALRM" in results[1].detail, results
