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
    threading.Thread(target=lambda: got.put(proc.stdout.readline()), daemon=True).start()
    line = got.get(timeout=300)
    assert line, proc.stderr.read() if proc.poll() is not None else "no line"
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


@pytest.mark.xdist_group("multiprocess")
def test_a_two_process_gloo_run_trains_on_one_node_pool(tmp_path: Path, toy_model) -> None:
    from tests_paths import REPO, torchrun, toy_env

    out = tmp_path / "two"
    # torchrun, with this interpreter (the one that has the serve extra)
    cmd = [*torchrun(), str(REPO / "tests" / "helpers" / "toy_task.py"),
           str(out), "--model", str(toy_model), "--steps", "1",
           "--set", "reward_verifier=local"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=toy_env(), capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    started = [ln for ln in proc.stderr.splitlines() if "node verifier: started at" in ln]
    joined = [ln for ln in proc.stderr.splitlines() if "node verifier: local rank 1 uses" in ln]
    assert len(started) == 1 and len(joined) == 1, proc.stderr[-3000:]  # one pool, two ranks
    url = started[0].split(" at ", 1)[1].split()[0]
    assert joined[0].endswith(url)
    cores = int(started[0].split("(", 1)[1].split()[0])
    assert cores <= (os.cpu_count() or 1)  # the node's sandboxes: its cores, not 2 x cores
    assert (out / "checkpoints" / "final" / "model.safetensors").is_file()
