"""Where the CPPO pipeline's parts live, and what they run at (issue 43 item 6).

* The judge is built on this process's device (``ranks.device()``), not the hf backend's
  "auto" (every process's cuda:0: each rank's copy of a large judge ran GPU 0 out of memory
  at start). On the CPU the device string shows which was asked for.
* The rm stage's base model (on a GPU the study's hub id) must load on the node: a hub id
  that is neither a folder nor cached is one line before any stage runs, not a failure at
  stage rm hours in.
* Every stage runs at the engine section's ``matmul_precision`` (SFT, the RM and the audit
  build no engine, where an engine run sets it, so they ran at torch's "highest").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cppo_stage_fixture import settings
from trainers.cppo_pipeline import pipeline, ranks, rm_base
from trainers.cppo_pipeline.config import RMStageConfig
from trainers.cppo_pipeline.judge import RulesJudge, make_judge
from trainers.cppo_pipeline.stage_data import PipelineInputs
from trainers.cppo_pipeline.stages import STAGES, StageResult
from trainers.engine.layers import ConfigError

torch = pytest.importorskip("torch")


def test_an_hf_judge_is_built_on_this_processs_device(
    toy_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranks, "device", lambda: "cpu:0")  # what cuda:LOCAL_RANK is to a GPU
    judge: Any = make_judge(f"combined=hf:{toy_model}")
    assert judge.llm.backend.device == "cpu:0"  # "auto" would have said "cpu" (or "cuda")
    assert make_judge("rules").name == "rules"  # no backend, nothing placed


def test_the_rm_base_on_a_gpu_is_the_studys_and_a_missing_one_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = RMStageConfig()
    assert rm_base.resolve(None, c, cuda=True) == c.gpu_model
    assert rm_base.resolve(None, c, cuda=False) is None  # the embedded model
    assert rm_base.resolve("mine", c, cuda=True) == "mine"  # --rm-model wins
    assert rm_base.problem(None) is None and rm_base.problem(str(tmp_path)) is None
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    inputs = PipelineInputs(
        [],
        "t",
        None,
        RulesJudge(),
        settings(rm={"kind": "generative", "model": "nobody/absent-rm"}),
    )
    out = tmp_path / "pipe"
    with pytest.raises(ConfigError, match=r"^rm: base model 'nobody/absent-rm' is neither"):
        pipeline.run_pipeline(out, inputs, ["sft", "rm"], echo=lambda s: None)
    assert not (out / "sft").exists()  # refused before the first stage
    # the n-gram RM loads no model; a run without the rm stage needs none
    ngram = PipelineInputs([], "t", None, RulesJudge(), settings())
    pipeline._check_rm_base(out, ngram, ["rm"])  # (no ConfigError)
    pipeline._check_rm_base(out, inputs, ["warmup"])


def test_every_stage_runs_at_the_configured_matmul_precision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, str] = {}

    def recorder(name: str) -> Any:
        def stage(ctx: Any, inp: Any) -> StageResult:
            seen[name] = torch.get_float32_matmul_precision()
            return StageResult(())

        return stage

    monkeypatch.setattr(pipeline, "STAGE_FNS", {name: recorder(name) for name in STAGES})
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")  # what a vLLM engine leaves behind
        inputs = PipelineInputs(
            [], "t", None, RulesJudge(), settings(engine={"matmul_precision": "medium"})
        )
        pipeline.run_pipeline(tmp_path / "pipe", inputs, STAGES, echo=lambda s: None)
    finally:
        torch.set_float32_matmul_precision(before)
    assert seen == dict.fromkeys(STAGES, "medium")
