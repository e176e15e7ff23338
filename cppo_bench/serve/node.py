"""One verifier pool per node, shared by the node's training processes: local rank 0 starts a
`cppo-bench serve` on a free loopback port with one sandbox per core, the other local ranks
find it, and every rank sends its rewards there, so the node never runs more sandboxes than
it has cores (each rank verifying on its own ran ranks x cores sandboxes).

The ranks meet through a file in a folder only this user can use (`$TMPDIR/cppo-serve-UID`,
0700, refused if anyone else owns it), named by the job (MASTER_ADDR, MASTER_PORT and the
launcher's run id, which torchrun and `accelerate launch` set): the URL and the server's
pid. The server dies with the rank that started it (PR_SET_PDEATHSIG, and at exit)."""

from __future__ import annotations

import atexit
import hashlib
import os
import queue
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from cppo_bench.errors import DataError
from cppo_bench.files import userfiles
from cppo_bench.util import env
from cppo_bench.util.termsafe import echo, quote

READY = "cppo-bench serve: ready on "  # serve.server.READY (not imported: no FastAPI here)
WAIT_S = 600.0  # how long a rank waits for local rank 0's server (a slow node imports slowly)


def _folder() -> Path:
    folder = Path(tempfile.gettempdir()) / f"cppo-serve-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:
        raise DataError(
            f"{folder}: cannot use it for the node's verifier ({exc.strerror})"
        ) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise DataError(f"{folder}: not a private folder of this user; the node's verifier "
                        "will not meet its ranks there")  # fmt: skip
    return folder


def job_file() -> Path:
    key = "|".join(env.raw(k) or "" for k in ("MASTER_ADDR", "MASTER_PORT",
                                               "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"))  # fmt: skip
    return _folder() / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.url"


def _set_pdeathsig() -> None:  # in the child, before exec: die with the rank that started it
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start(workers: int, lanes: int) -> tuple[str, subprocess.Popen[str]]:
    """Local rank 0: the server, ready; its URL."""
    cmd = [sys.executable, "-m", "cppo_bench", "serve", "--port", "0", "--workers",
           str(workers), "--lanes", str(lanes), "--queue-size", str(max(8, 2 * lanes)),
           "--max-programs", "4096", "--reuse-sandboxes"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=_set_pdeathsig)
    lines: queue.Queue[str] = queue.Queue()  # "" when its output ended (it exited)

    def pump() -> None:  # the ready line, then drain the rest so the server never blocks
        for line in proc.stdout or ():
            lines.put(line)
        lines.put("")
        proc.wait()  # its output ended: reap it at once, however it ended (no zombie left)

    threading.Thread(target=pump, daemon=True).start()
    try:
        line = lines.get(timeout=WAIT_S)
    except queue.Empty:
        line = ""
    if not line.startswith(READY):
        proc.kill()
        proc.wait()
        why = quote(line.strip()) if line else f"it exited {proc.returncode}: see above"
        raise DataError(f"the node's verifier did not start ({why})")

    url = line[len(READY) :].strip()

    def stop() -> None:
        if proc.poll() is None:
            echo(f"node verifier: {summary(url)}", err=True)
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

    atexit.register(stop)
    return url, proc


def metrics(url: str) -> dict[str, float]:
    """The server's unlabelled /metrics figures (cppo_serve_ dropped from each name)."""
    from cppo_bench.serve.config import env_token

    token = env_token()  # the server's too: it inherited this environment
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url + "/metrics", headers=headers)
    with urllib.request.urlopen(req, timeout=10) as resp:
        text = resp.read(1 << 20).decode("ascii", "replace")
    found: dict[str, float] = {}
    for row in text.splitlines():
        name, _, value = row.partition(" ")
        if name.startswith("cppo_serve_") and "{" not in name:
            try:
                found[name.removeprefix("cppo_serve_")] = float(value)
            except ValueError:
                continue
    return found


def summary(url: str) -> str:
    """What the pool did, from its own /metrics (measured: its live sandbox processes)."""
    try:
        got = metrics(url)
    except (OSError, ValueError):
        return "stopping (its /metrics did not answer)"
    peak = (
        f", at most {got['sandboxes_peak']:.0f} sandboxes at once"
        if "sandboxes_peak" in got
        else ""
    )
    return f"verified {got.get('programs_total', 0):.0f} programs{peak}; stopping"


def serve_installed() -> bool:
    """Whether this interpreter can run `cppo-bench serve` (the serve extra)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("fastapi", "uvicorn"))


def _alive(url: str, pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with urllib.request.urlopen(url + "/health", timeout=10) as resp:
            return bool(resp.status == 200)
    except (OSError, ValueError):
        return False


_FOUND: dict[Path, str] = {}  # job file -> URL: a second reward of the same process reuses it


def node_service(local_rank: int | None = None, local_world: int | None = None) -> str:
    """The URL of this node's verifier, started here when this is local rank 0 (once per
    process); one line on stderr says which it is."""
    path = job_file()
    if path not in _FOUND:
        _FOUND[path] = _find_or_start(path, local_rank, local_world)
    return _FOUND[path]


def _find_or_start(path: Path, local_rank: int | None, local_world: int | None) -> str:
    from cppo_bench.verifier.cpus import process_cpus

    rank = env.integer("LOCAL_RANK", 0, 0, 1 << 20) if local_rank is None else local_rank
    world = env.world_size("LOCAL_WORLD_SIZE") if local_world is None else local_world
    if rank == 0:
        path.unlink(missing_ok=True)  # a finished job's file
        cores = len(process_cpus())
        url, proc = start(cores, min(max(1, world), cores))  # a lane: >= 1 sandbox
        echo(f"node verifier: started at {url} ({cores} sandboxes for {world} local "
             "processes)", err=True)  # fmt: skip
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{url}\n{proc.pid}\n")
        tmp.replace(path)  # whole or absent for a reader
        return url
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            url, pid = userfiles.read_text(path, max_bytes=4096).split()[:2]
            if _alive(url, int(pid)):
                echo(f"node verifier: local rank {rank} uses {url}", err=True)
                return url
        except (OSError, ValueError, userfiles.UserFileError):
            pass
        time.sleep(0.2)  # local rank 0 is starting its server
    raise DataError(f"no verifier from local rank 0 after {WAIT_S:.0f} s ({path})")
