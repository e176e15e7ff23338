"""How the sandboxed server (harness.py) is started, in each isolation mode.

Modes, strongest first; the first that works is used for the whole process
(`CPPO_SANDBOX=bwrap|unshare|rlimits` forces one):

- bwrap: bubblewrap with new pid/net/ipc/uts namespaces; the filesystem is a read-only bind
  of just the Python install (its site-packages hidden) plus numpy, the system libraries,
  /proc, a minimal /dev and a tmpfs /tmp; no $HOME, no network. The server is the pid
  namespace's init, so after each test `kill(-1)` reaps everything the program started.
- unshare: util-linux `unshare --pid --net --ipc --uts --mount-proc --fork`; the server then
  pivots into bwrap's file view (mounts.new_root).
- rlimits: a plain child process (as root: bwrap's file view, mounts.new_root); as root, a
  root supervisor subreaper outlives the server and kills whatever it left.
- command (only when forced): a container command line from $CPPO_SANDBOX_COMMAND.

Outside bwrap, as root, a pids cgroup (when the host has one) caps the sandbox's processes,
because RLIMIT_NPROC does not bind root, and lists them for the final kill.

In every mode the server drops to uid `nobody` when run as root and, where the kernel allows,
enters its own user namespace: RLIMIT_NPROC then counts this sandbox only, the network
namespace is private, and every test child mounts a fresh private tmpfs as scratch.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shlex
import shutil
import site
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

# the sandboxed server measures test trees with the same /proc scan (stdlib-only module)
from cppo_bench.util import env
from cppo_bench.verifier.inside.procs import descendants

MODES = ("bwrap", "unshare", "rlimits")  # probed in this order
SECCOMP_ENV = "CPPO_SANDBOX_SECCOMP"
MODE_ENV = "CPPO_SANDBOX"
# CPPO_SANDBOX=command: start the server with this command line instead (e.g. `docker run -i
# ... cppo-verifier-sandbox`, see sandbox_images/README.md); it speaks the same protocol.
COMMAND_ENV = "CPPO_SANDBOX_COMMAND"
# CPPO_SANDBOX_PIN=0: let each sandbox's processes run on any CPU (see cpus.py)
PIN_ENV = "CPPO_SANDBOX_PIN"
# CPPO_SANDBOX_REUSE=0: fork a fresh child for every test, even where one child may serve all
# the tests of a program (inside/warm.py)
REUSE_ENV = "CPPO_SANDBOX_REUSE"
NOBODY = 65534
# Set by `--unsafe-no-sandbox`: run programs even where no mode can make them unprivileged.
UNSAFE_ENV = "CPPO_UNSAFE_NO_SANDBOX"
HERE = Path(__file__).resolve().parent
INSIDE_DIR = HERE / "inside"  # the stdlib-only files that run in the sandbox
# every stdlib-only file of inside/ (a list by hand once missed a new one: the sandbox died)
SANDBOX_FILES = tuple(sorted(p.name for p in INSIDE_DIR.glob("*.py") if p.name != "__init__.py"))
INSIDE = "/opt/cppo"  # where the harness and numpy appear inside the bwrap sandbox
ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "OPENBLAS_NUM_THREADS": "1",  # one BLAS thread: numpy's import stays ~100 MiB of AS
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


# ---- the Python install and how to launch it ------------------------------------------------


def _real_python() -> str:
    exe = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(exe)  # the real binary, never a pyenv/venv shim


def _numpy_dirs() -> list[tuple[str, str]]:
    """(host dir, name) for numpy and its bundled libraries, if numpy is installed."""
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.submodule_search_locations:
        return []
    pkg = Path(list(spec.submodule_search_locations)[0]).resolve()
    dirs = [(str(pkg), "numpy")]
    libs = pkg.parent / "numpy.libs"
    if libs.is_dir():
        dirs.append((str(libs), "numpy.libs"))
    return dirs


def _site_dirs() -> list[str]:
    dirs = list(site.getsitepackages()) + [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    return sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)})


def _bwrap_argv() -> list[str]:
    argv = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--die-with-parent", "--as-pid-1", "--new-session"]
    argv += ["--hostname", "sandbox", "--clearenv"]
    for key, value in ENV.items():
        argv += ["--setenv", key, value]
    if os.geteuid() == 0:  # root: keep only what dropping to nobody needs
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user"]
    made: set[str] = set()

    def ro(src: str, dst: str) -> None:
        for parent in reversed(Path(dst).parents):
            if str(parent) != "/" and str(parent) not in made:
                made.add(str(parent))  # bwrap would create it 0700: nobody could not enter
                argv.extend(["--perms", "0755", "--dir", str(parent)])
        argv.extend(["--ro-bind", src, dst])

    # /tmp first: a Python environment under /tmp is bound on top of it, not hidden by it
    argv += ["--perms", "1777", "--tmpfs", "/tmp"]
    made.add("/tmp")
    exe, prefix = _real_python(), os.path.realpath(sys.base_prefix)
    bound = ["/usr"] if prefix == "/usr" else [prefix]
    for d in ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libx32"):
        if os.path.isdir(d):
            ro(d, d)
    for d in ("/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(d):
            argv += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            ro(d, d)
    if prefix != "/usr":
        ro(prefix, prefix)
    if not any(exe.startswith(b + "/") for b in bound + ["/usr/lib"]):
        ro(exe, exe)
    if os.path.exists("/etc/ld.so.cache"):
        ro("/etc/ld.so.cache", "/etc/ld.so.cache")
    for d in _site_dirs():  # hide every installed package: Python 3 + numpy only
        if any(d.startswith(b + "/") for b in bound + ["/usr/lib"]):
            argv += ["--tmpfs", d, "--remount-ro", d]
    for src, name in _numpy_dirs():
        ro(src, f"{INSIDE}/site/{name}")
    for name in SANDBOX_FILES:
        ro(str(INSIDE_DIR / name), f"{INSIDE}/{name}")
    argv += ["--proc", "/proc", "--dev", "/dev"]
    return argv + ["--chdir", "/", exe, "-I", "-S", "-B", f"{INSIDE}/harness.py"]


_SITE_FARM: str | None = None
_FARM_LOCK = threading.Lock()


def _site_farm() -> str | None:
    """Outside bwrap: a directory holding only links to numpy, for the server's sys.path."""
    global _SITE_FARM
    with _FARM_LOCK:
        return _SITE_FARM or _make_site_farm()


def _make_site_farm() -> str | None:
    global _SITE_FARM
    if _numpy_dirs():
        farm = tempfile.mkdtemp(prefix="cppo-site-")
        os.chmod(farm, 0o755)
        for src, name in _numpy_dirs():
            os.symlink(src, os.path.join(farm, name))
        atexit.register(shutil.rmtree, farm, True)
        _SITE_FARM = farm
    return _SITE_FARM


def launch_spec(mode: str, nproc: int = 64) -> tuple[list[str], dict]:
    """(argv, init message) that start a server in `mode` with a cap of `nproc` processes."""
    root = os.geteuid() == 0
    init = {
        "op": "init",
        "nproc": nproc,
        "userns": True,
        "scratch": "/tmp",
        "drop_uid": None,
        # CPPO_SANDBOX_SECCOMP=0: per-test user and IPC namespaces instead of the seccomp
        # filter (what machines without the filter get; the tests exercise it here)
        "seccomp": env.flag(SECCOMP_ENV, True),
        "reuse": env.flag(REUSE_ENV, True),
    }
    harness = [_real_python(), "-I", "-S", "-B", str(INSIDE_DIR / "harness.py")]
    exe, prefix = _real_python(), os.path.realpath(sys.base_prefix)
    if mode == "bwrap":
        # keep: what each test's private /tmp must not hide (bound back read-only)
        init.update(site=f"{INSIDE}/site", drop_uid=NOBODY if root else None, private_tmp=True,
                    keep=[prefix, exe])  # fmt: skip
        return _bwrap_argv(), init
    if mode == "command":
        argv = shlex.split(env.text(COMMAND_ENV, "") or "")
        if not argv:
            raise ValueError(f"{MODE_ENV}=command needs {COMMAND_ENV}")
        return argv, dict(init, site=f"{INSIDE}/site")
    # Outside bwrap the server, as root, first makes its own mount namespace with a minimal
    # /dev and these paths reachable by uid nobody (e.g. a Python under /root), then drops.
    farm = _site_farm()
    needed = [prefix, exe, *(src for src, _ in _numpy_dirs()), *([farm] if farm else [])]
    init.update(site=farm, drop_uid=NOBODY if root else None, readonly_host=True,
                fix_mounts=True, reveal=needed, keep=needed)  # fmt: skip
    can_drop = root
    if mode == "unshare":
        ns = ["unshare", "--fork", "--pid", "--mount-proc", "--net", "--ipc", "--uts"]
        ns += ["--kill-child"] + ([] if root else ["--user", "--map-root-user"])
        return ns + harness, init
    return harness + (["--supervise"] if can_drop else []), init


# ---- a memory cgroup per sandbox, one child group per test ----------------------------------

# CPPO_SANDBOX_CGROUP=DIR: a cgroup v2 directory delegated to this user (empty, writable, with
# the memory controller), for hosts where the verifier does not run as root
CGROUP_ENV = "CPPO_SANDBOX_CGROUP"
# the files of the test group the sandbox uses, per cgroup version: usage now, the peak since
# the last reset (a write resets it), the limit
_MEMCG_FILES = {1: ("memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.limit_in_bytes"),
                2: ("memory.current", "memory.peak", "memory.max")}  # fmt: skip


class MemCgroup:
    """A memory cgroup per sandbox: `main` (where the zygote lives) and `test` (where it
    stands only while it forks a test child, so that the child and everything it makes,
    kernel memory included: pipes, sockets, tmpfs pages, page tables, is charged there). The
    sandbox gets its files as descriptors (`fds`), opened here: inside, nothing of
    /sys/fs/cgroup is visible, and a uid-nobody server may still use them."""

    def __init__(self, path: Path, version: int) -> None:
        self.path, self.version = path, version
        self.fds: dict[str, int] = {}

    @classmethod
    def create(cls) -> MemCgroup | None:
        for base, version in _memcg_bases():
            path = base / f"cppo-mem-{os.getpid()}-{threading.get_ident()}-{time.time_ns()}"
            try:
                path.mkdir()
                box = cls(path, version)
                if version == 2:  # leaves only: a v2 group with children holds no process
                    (path / "cgroup.subtree_control").write_text("+memory")
                for name in ("main", "test"):
                    (path / name).mkdir()
                box._open()
                return box
            except OSError:
                cls(path, version).destroy()
        return None

    def _open(self) -> None:
        usage, peak, limit = _MEMCG_FILES[self.version]
        files = {"main": "main/cgroup.procs", "test": "test/cgroup.procs",
                 "usage": f"test/{usage}", "peak": f"test/{peak}", "limit": f"test/{limit}"}  # fmt: skip
        for key, rel in files.items():
            self.fds[key] = os.open(self.path / rel, os.O_RDWR | os.O_CLOEXEC)

    def close_fds(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}

    def destroy(self) -> None:
        """Kill what is left in it, then remove it (the sandbox has ended)."""
        self.close_fds()
        for _ in range(200):
            left = False
            for group in (self.path / "test", self.path / "main", self.path):
                for p in _read(group / "cgroup.procs").split():
                    left = True
                    try:
                        os.kill(int(p), 9)
                    except OSError:
                        pass
            try:
                for group in (self.path / "test", self.path / "main", self.path):
                    if group.exists():
                        group.rmdir()
                return
            except OSError:
                if not left:
                    time.sleep(0.005)
                time.sleep(0.001)


def _memcg_bases() -> list[tuple[Path, int]]:
    """Where a memory cgroup can be made here: a delegated v2 directory ($CPPO_SANDBOX_CGROUP),
    or, as root, the v1 memory hierarchy or the v2 root."""
    out = []
    delegated = env.text(CGROUP_ENV)
    if delegated and "memory" in _read(Path(delegated) / "cgroup.controllers").split():
        out.append((Path(delegated), 2))
    if os.geteuid() == 0:
        v1 = Path("/sys/fs/cgroup/memory")
        if (v1 / "memory.usage_in_bytes").exists():
            out.append((v1, 1))
        v2 = Path("/sys/fs/cgroup")
        if "memory" in _read(v2 / "cgroup.subtree_control").split():
            out.append((v2, 2))
    return out


# ---- a pids cgroup for the fallback modes --------------------------------------------------


class PidsCgroup:
    """A cgroup capping a sandbox's processes (v1 `pids` hierarchy or v2 with `pids`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
            controllers = base / "cgroup.controllers"
            if base.name != "pids" and "pids" not in _read(controllers).split():
                continue
            path = base / f"cppo-sandbox-{os.getpid()}-{threading.get_ident()}-{time.time_ns()}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(limit))
                return cls(path)
            except OSError:
                shutil.rmtree(path, ignore_errors=True) if path.exists() else None
        return None

    def adopt(self, pid: int) -> None:
        """Move `pid` and everything below it into the cgroup."""
        for p in [pid, *descendants(pid)]:
            try:
                (self.path / "cgroup.procs").write_text(str(p))
            except OSError:
                pass

    def destroy(self) -> None:
        for _ in range(200):
            pids = [int(p) for p in _read(self.path / "cgroup.procs").split()]
            for p in pids:
                try:
                    os.kill(p, 9)
                except OSError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.005)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
