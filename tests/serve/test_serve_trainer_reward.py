"""Trainers take their reward from `cppo-bench serve` with `reward_verifier=URL[,URL]`: the
same rewards as in-process, the programs spread over the URLs, and a real (toy) training run
pointed at a service trains with every reward verified there."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("torch")

from serve_process import Service  # noqa: E402

import cppo_bench as cb  # noqa: E402


@pytest.fixture(scope="module")
def services():
    pair = [Service("--workers", "1"), Service("--workers", "1")]
    yield pair
    for svc in pair:
        svc.stop()


def programs_verified(svc: Service) -> int:
    with urllib.request.urlopen(svc.url + "/metrics", timeout=60) as resp:
        text = resp.read().decode()
    return int(next(line.split()[1] for line in text.splitlines()
                    if line.startswith("cppo_serve_programs_total ")))  # fmt: skip


def rollouts() -> list:
    from trainers.engine.rollout import Rollout, RolloutRequest

    out = []
    for p in cb.load_benchmark("demo")[:4]:
        for code in (p.reference_solutions[0], "print(0)"):
            out.append(Rollout(RolloutRequest(p, 0, messages=()), (), (1,), code, "stop"))
    return out


@pytest.mark.parametrize("reward", ["pass", "tests_fraction"])
def test_rewards_through_two_services_equal_in_process(services, reward) -> None:
    from trainers.engine.config import TrainConfig
    from trainers.engine.rewards import reward_from_config

    before = [programs_verified(s) for s in services]
    urls = ",".join(s.url for s in services)
    remote = reward_from_config(TrainConfig(reward=reward, reward_verifier=urls))(rollouts())
    local = reward_from_config(TrainConfig(reward=reward, verify_workers=1))(rollouts())
    assert [(s.reward, s.passed, s.verdict) for s in remote] == [
        (s.reward, s.passed, s.verdict) for s in local
    ]
    assert any(s.passed for s in remote) and not all(s.passed for s in remote)
    after = [programs_verified(s) for s in services]
    assert all(a > b for a, b in zip(after, before, strict=True))  # spread over both URLs
    assert sum(after) - sum(before) == len(remote)


@pytest.mark.parametrize("bad", ["ftp://host:1", "host:8600", "http://a b"])
def test_reward_verifier_must_be_http_urls(bad) -> None:
    from trainers.engine.config import ConfigError, TrainConfig

    with pytest.raises(ConfigError, match="reward_verifier") as err:
        TrainConfig(reward_verifier=f"http://ok:1,{bad}")
    assert "\n" not in str(err.value)


def test_train_refuses_a_bad_url_in_one_line() -> None:
    from cli_subprocess import cli

    proc = cli("train", "pkpo", "--set", "reward_verifier=ftp://x", "--out", "/nonexistent/x")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "Error: config reward_verifier: 'ftp://x' is not an http(s) URL"


def test_a_toy_run_pointed_at_the_service_trains(services, tmp_path: Path, toy_model) -> None:
    from toy_task import run

    svc = services[0]
    before = programs_verified(svc)
    result = run(tmp_path / "run", toy_model, steps=1, reward_verifier=svc.url)
    assert result is not None
    # one step: 4 prompts x 8 samples, every one verified by the service
    assert programs_verified(svc) - before == 32
    # the manifest says where the rewards were verified, not just the setting
    manifest = json.loads((tmp_path / "run" / "train_manifest.json").read_text())
    assert manifest["reward_verified_by"] == "service"


@pytest.mark.parametrize(
    ("setting", "local_world", "pooled"),
    [("", None, False), ("", "1", False), ("auto", "1", False), ("", "2", True),
     ("auto", "2", True), ("local", "1", True), ("inprocess", "2", False)],
)  # fmt: skip
def test_where_rewards_are_verified_by_setting_and_launch(
    services, monkeypatch, setting, local_world, pooled
) -> None:
    """ "" (auto): the node's pool only when a launcher started several local processes, else
    this process; "inprocess" always here, "local" always the pool. Observed at both doors:
    the node pool's lookup and the in-process verifier."""
    from cppo_bench.serve import node
    from trainers.engine import rewards
    from trainers.engine.config import TrainConfig

    asked: list[int] = []
    here: list[int] = []
    real = rewards.verify_batch

    def node_service() -> str:
        asked.append(1)
        return services[0].url

    def verify_batch(jobs: Any, **kw: Any) -> Any:
        here.append(1)
        return real(jobs, **kw)

    monkeypatch.setattr(node, "node_service", node_service)
    monkeypatch.setattr(rewards, "verify_batch", verify_batch)
    if local_world is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_world)
    before = programs_verified(services[0])
    scored = rewards.reward_from_config(TrainConfig(reward_verifier=setting))(rollouts())
    assert [s.passed for s in scored] == [True, False] * 4
    assert bool(asked) is pooled and bool(here) is not pooled
    assert (programs_verified(services[0]) - before == len(scored)) is pooled
    # what the training manifest records is what happened at those doors
    assert rewards.verifier_mode(setting) == ("node pool" if pooled else "inprocess")


def test_named_settings_are_not_urls_and_others_are_checked() -> None:
    from trainers.engine.config import ConfigError, TrainConfig

    for name in ("", "auto", "local", "inprocess"):
        assert TrainConfig(reward_verifier=name).reward_verifier == name
    with pytest.raises(ConfigError, match="reward_verifier"):
        TrainConfig(reward_verifier="in-process")


def test_without_the_serve_extra_the_default_verifies_in_process_and_says_so(
    monkeypatch, capsys
) -> None:
    import sys

    from trainers.engine import rewards
    from trainers.engine.config import TrainConfig

    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the extra were not installed
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    here: list[int] = []
    real = rewards.verify_batch

    def verify_batch(jobs: Any, **kw: Any) -> Any:
        here.append(1)
        return real(jobs, **kw)

    monkeypatch.setattr(rewards, "verify_batch", verify_batch)
    scored = rewards.reward_from_config(TrainConfig())(rollouts())
    assert [s.passed for s in scored] == [True, False] * 4 and here
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "serve extra is not installed" in err[0]


def test_the_manifest_schema_knows_where_a_reward_ran() -> None:
    from cppo_bench.store.training_schema import TRAINING_MANIFEST

    base = {"kind": "training"}
    for mode in ("inprocess", "node pool", "service", None):
        assert not TRAINING_MANIFEST.check({**base, "reward_verified_by": mode}), mode
    for bad in ("elsewhere", 3, ["service"]):
        assert TRAINING_MANIFEST.check({**base, "reward_verified_by": bad}), bad
