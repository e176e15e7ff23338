"""`reward_verifier=local`: the node's training processes share one verifier, started by
local rank 0, with no more sandboxes than the node has cores; both ranks' rewards are the
in-process ones, and the server dies with the rank that started it (even a SIGKILL)."""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from tests_paths import free_port, rendezvous_env

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
RANK = """
import json, sys
import cppo_bench as cb
from trainers.engine.config import TrainConfig
from trainers.engine.rewards import reward_from_config
from trainers.engine.rollout import Rollout, RolloutRequest
from cppo_bench.serve.node import job_file
rollouts = [Rollout(RolloutRequest(p, 0, messages=()), (), (1,), code, "stop")
            for p in cb.load_benchmark("demo")[:3] for code in (p.reference_solutions[0], "print(0)")]
scored = reward_from_config(TrainConfig(reward_verifier="local"))(rollouts)
url, pid = job_file().read_text().split()[:2]
print(json.dumps({"url": url, "pid": int(pid), "rewards": [s.reward for s in scored]}), flush=True)
sys.stdin.readline()  # hold (local rank 0 keeps the server) until the test says
"""


def first_line(proc: subprocess.Popen[str]) -> dict:
    got: queue.Queue[str] = queue.Queue()
    out, err = proc.stdout, proc.stderr
    assert out is not None and err is not None  # (started with both as pipes)
    threading.Thread(target=lambda: got.put(out.readline()), daemon=True).start()
    line = got.get(timeout=300)
    assert line, err.read() if proc.poll() is not None else "no line"
    return json.loads(line)


def test_two_local_ranks_share_one_pool_that_dies_with_rank_0() -> None:
    env = {**os.environ, "LOCAL_WORLD_SIZE": "2", **rendezvous_env(free_port()),
           "TORCHELASTIC_RUN_ID": f"test-{os.getpid()}-{random.random()}"}  # fmt: skip
    ranks = [subprocess.Popen([sys.executable, "-c", RANK], cwd=ROOT, text=True,
                              env={**env, "LOCAL_RANK": str(r)}, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r in (0, 1)]  # fmt: skip
    try:
        rank0, rank1 = (first_line(p) for p in ranks)
        assert rank0["url"] == rank1["url"] and rank0["pid"] == rank1["pid"]  # one server
        assert rank0["rewards"] == rank1["rewards"] == [1.0, 0.0] * 3
        with urllib.request.urlopen(rank0["url"] + "/health", timeout=60) as resp:
            health = json.loads(resp.read())
        assert 1 <= health["sandboxes"] <= (os.cpu_count() or 1)  # never more than cores
        with urllib.request.urlopen(rank0["url"] + "/metrics", timeout=60) as resp:
            assert "cppo_serve_programs_total 12" in resp.read().decode()  # both ranks' 6
        ranks[1].communicate("\n", timeout=120)
        ranks[0].send_signal(signal.SIGKILL)  # no atexit: the server must still go
        ranks[0].wait(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                os.kill(rank0["pid"], 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)  # the server's drain after its SIGTERM
        else:
            raise AssertionError("the node's server outlived the rank that started it")
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=60)


def poll_metrics(url: str, done: threading.Event, seen: list[dict[str, float]]) -> None:
    """Every /metrics the pool answers until `done` (it stops with rank 0): the measured
    figures (serve.sandboxes: its live child processes) as the run goes."""
    from cppo_bench.serve.node import metrics

    while not done.is_set():
        try:
            seen.append(metrics(url))
        except OSError:  # not yet listening, or gone with rank 0
            pass
        done.wait(0.05)


@pytest.mark.xdist_group("multiprocess")
def test_a_two_process_gloo_run_uses_one_node_pool_by_default(tmp_path: Path, toy_model) -> None:
    """No reward_verifier set: torchrun's LOCAL_WORLD_SIZE=2 alone puts both ranks' rewards on
    one pool, whose own /metrics (sampled through the run, and its last figures at exit)
    never counts more live sandboxes than the cores."""
    from tests_paths import REPO, torchrun, toy_env

    from cppo_bench.verifier.cpus import process_cpus

    out = tmp_path / "two"
    # torchrun, with this interpreter (the one that has the serve extra); no reward_verifier
    cmd = [*torchrun(), str(REPO / "tests" / "helpers" / "toy_task.py"),
           str(out), "--model", str(toy_model), "--steps", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, env=toy_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    done = threading.Event()
    seen: list[dict[str, float]] = []
    errs: list[str] = []
    pollers: list[threading.Thread] = []

    def read_stderr() -> None:
        for line in proc.stderr or ():
            errs.append(line)
            if "node verifier: started at" in line and not pollers:
                url = line.split(" at ", 1)[1].split()[0]
                pollers.append(threading.Thread(target=poll_metrics, args=(url, done, seen)))
                pollers[0].start()

    reader = threading.Thread(target=read_stderr)
    reader.start()
    try:
        proc.stdout.read()  # type: ignore[union-attr]
        assert proc.wait(timeout=600) == 0, "".join(errs)[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=60)
        done.set()
        for t in pollers:
            t.join(timeout=60)
    stderr = "".join(errs)
    started = [ln for ln in errs if "node verifier: started at" in ln]
    joined = [ln for ln in errs if "node verifier: local rank 1 uses" in ln]
    assert len(started) == 1 and len(joined) == 1, stderr[-3000:]  # one pool, two ranks
    url = started[0].split(" at ", 1)[1].split()[0]
    assert joined[0].strip().endswith(url)
    cores = len(process_cpus())
    assert int(started[0].split("(", 1)[1].split()[0]) <= cores
    # measured by the pool itself: its live sandbox processes, every sample and the peak
    assert seen, "the pool's /metrics never answered"
    assert all(0 <= m["sandboxes"] <= m["sandboxes_peak"] <= cores for m in seen), seen
    assert max(m["sandboxes_peak"] for m in seen) >= 1  # it did run sandboxes
    last = [ln for ln in errs if "node verifier: verified" in ln]
    assert len(last) == 1, stderr[-3000:]  # rank 0's exit line, from the pool's /metrics
    programs, peak = (int(w) for w in last[0].split() if w.isdigit())
    assert programs >= 2 and 1 <= peak <= cores, last[0]  # both ranks' rollouts, <= cores
    assert (out / "checkpoints" / "final" / "model.safetensors").is_file()


def test_more_local_processes_than_cores_get_no_more_sandboxes(monkeypatch) -> None:
    """A node with more training processes than cores: the pool's lanes are capped at its
    cores (a lane runs at least one sandbox), and under load from every process at once
    its measured sandboxes stay within the cores."""
    from concurrent.futures import ThreadPoolExecutor

    import cppo_bench as cb
    from cppo_bench.serve import node
    from cppo_bench.verifier.cpus import process_cpus

    cores = len(process_cpus())
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", f"test-{os.getpid()}-{random.random()}")
    url = node.node_service(local_rank=0, local_world=cores + 2)
    pid = int(node.job_file().read_text().split()[1])
    try:
        with urllib.request.urlopen(url + "/health", timeout=60) as resp:
            assert 1 <= json.loads(resp.read())["sandboxes"] <= cores
        problems = cb.load_benchmark("demo")[:4]
        codes = [p.reference_solutions[0] for p in problems]
        with ThreadPoolExecutor(cores + 2) as pool:  # every "process" sends at once
            done = list(pool.map(lambda _: cb.VerifierClient(url).verify(problems, codes),
                                 range(cores + 2)))  # fmt: skip
        assert all(r.passed for batch in done for r in batch)
        figures = node.metrics(url)
        assert 1 <= figures["sandboxes_peak"] <= cores
        assert figures["programs_total"] == 4 * (cores + 2)
    finally:
        _kill_and_see_reaped(pid)


def _kill_and_see_reaped(pid: int) -> None:
    """SIGKILL the node's server and wait until the process that started it has reaped it
    (its /proc entry gone; the pump thread waits on it once its output ends)."""
    os.kill(pid, signal.SIGKILL)
    deadline, state = time.monotonic() + 60, "?"
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return  # reaped
        time.sleep(0.05)
    raise AssertionError(f"server {pid} was never reaped (state {state})")


def test_the_node_service_leaves_no_zombie_however_it_ends(monkeypatch) -> None:
    """Killed from outside (an OOM kill, a test's SIGKILL), the server is reaped by the
    process that started it as soon as its output ends: no zombie child stays behind."""
    from cppo_bench.serve import node

    monkeypatch.setenv("TORCHELASTIC_RUN_ID", f"test-{os.getpid()}-{random.random()}")
    node.node_service(local_rank=0, local_world=1)
    _kill_and_see_reaped(int(node.job_file().read_text().split()[1]))
