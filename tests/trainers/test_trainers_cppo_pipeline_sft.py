"""Stage 1: the funnel keeps >= K admissible, non-duplicate candidates; SFT trains plan tokens only."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from cppo_bench.backends import GenRequest, GenResult
from tests.helpers.cppo_tiny import METHODS, problems
from tests.helpers.train_helpers import tiny_model_dir
from trainers.core.batch import Region, collate
from trainers.cppo_pipeline.judge import LLMJudge, RulesJudge
from trainers.cppo_pipeline.sft import sft_loss, sft_rows
from trainers.cppo_pipeline.sft_funnel import SFTExample, run_funnel


class Scripted:
    name, model_id = "scripted", "scripted"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def generate(self, requests: Sequence[GenRequest], progress=None) -> list[GenResult]:
        return [
            GenResult(self.texts[i % len(self.texts)], 10, "stop") for i in range(len(requests))
        ]

    def close(self) -> None:
        pass


def test_funnel_counts_and_selection() -> None:
    ps = problems()[:2]
    good = "\n".join(f"Method {i + 1}: {m}" for i, m in enumerate(METHODS["graph"]))
    # problem 0 gets four good methods, a code leak and a near duplicate; problem 1 only junk
    text0 = (
        good + "\nMethod 5: Run for i in range(n): dist[i] = 0\nMethod 6: " + METHODS["graph"][0]
    )
    text1 = "Method 1: Think step by step.\nMethod 2: print(42)"
    examples, counts = run_funnel(ps, Scripted([text0, text1]), RulesJudge(), k=4)
    assert [e.problem.problem_id for e in examples] == ["graph"]
    assert examples[0].methods == tuple(METHODS["graph"])
    assert (counts.problems_in, counts.candidates, counts.sft_size) == (2, 8, 1)
    assert counts.admissible == 5 and counts.kept == 4  # the exact repeat is dropped
    assert counts.rejected_reasons["near_duplicate"] == 1
    assert {r["origin"] for r in counts.records} == {"model"}


def test_funnel_counts_an_llm_refusal_as_one_reason() -> None:
    # The LLM judge's reasons are a tuple of lines, like every judge's: its refusal once
    # went out as a bare string, which the funnel counted one character at a time.
    ps = problems()[:1]
    good = "\n".join(f"Method {i + 1}: {m}" for i, m in enumerate(METHODS["graph"]))
    judge = LLMJudge(Scripted(["INVALID", "no verdict here"]))
    _, counts = run_funnel(ps, Scripted([good]), judge, k=4)
    assert [r["reasons"] for r in counts.records] == [["llm: INVALID"], ["llm: ?"]] * 2
    assert counts.rejected_reasons == {"llm:": 4}


def test_sft_loss_is_masked_to_the_plan_region(tmp_path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny_model_dir(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    ex = SFTExample(problems()[0], tuple(METHODS["graph"]))
    rows = sft_rows(tok, [ex], 4)
    batch = collate(rows, tok.pad_token_id)
    plan = batch.region == Region.PLANNER
    assert int(plan.sum()) == len(tok.encode(ex.target, add_special_tokens=False)) + 1  # + EOS
    loss = sft_loss(model, batch)
    loss.backward()
    # the loss is the mean negative log-likelihood of the plan tokens and of nothing else
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids).logits
        lp = torch.log_softmax(logits[0, :-1], -1).gather(-1, batch.input_ids[0, 1:, None])[:, 0]
    manual = -(lp * plan[0, 1:]).sum() / plan.sum()
    assert torch.allclose(loss.detach(), manual, atol=1e-5)
