"""OpenRLHF's remote reward protocol on `cppo-bench serve`: `--remote_rm_url
http://host:8600/get_reward`.

OpenRLHF's remote reward client POSTs ``{"query": [prompt + response, ...], "prompts":
[prompt, ...], "labels": [label, ...]}`` (more keys in some versions: ignored) and reads
``rewards`` from the JSON reply (``scores`` too, where it logs them). The response is the
query after its prompt; the label holds the row's tests (adapters/labels.py). Same door as
`/verify`: token, body cap, queue, one-line errors. OpenRLHF's HTTP client sends no token:
for a service that needs one, OpenRLHF takes `openrlhf_reward.py` (its `.py` form) instead."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from cppo_bench.serve.adapters.labels import problem_payload, response_of
from cppo_bench.serve.pipeline import JSONResponse, judge
from cppo_bench.serve.schema import VerifyRequest

if TYPE_CHECKING:
    from fastapi import FastAPI

    from cppo_bench.serve.pipeline import ServeState


class RewardRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    query: list[str]
    prompts: list[str]
    labels: list[Any]


def to_verify_request(raw: Any) -> VerifyRequest:
    req = RewardRequest.model_validate(raw)
    if not len(req.query) == len(req.prompts) == len(req.labels):
        raise ValueError(f"{len(req.query)} queries, {len(req.prompts)} prompts and "
                         f"{len(req.labels)} labels: expected one of each per sample")  # fmt: skip
    items = [{"code": response_of(q, p), "problem": problem_payload(label, f"labels[{i}]")}
             for i, (q, p, label) in enumerate(zip(req.query, req.prompts, req.labels,
                                                   strict=True))]  # fmt: skip
    return VerifyRequest.model_validate({"items": items}, strict=False)


def add_routes(app: FastAPI, state: ServeState) -> None:
    @app.post("/get_reward")
    async def get_reward(request: Request) -> Response:
        outcome = await judge(state, request, to_verify_request)
        if isinstance(outcome, Response):
            return outcome
        rewards = [1.0 if r.passed else 0.0 for r in outcome]
        return JSONResponse({"rewards": rewards, "scores": rewards,
                             "extra_logs": {"tests_passed_fraction": [
                                 r.tests_passed / r.tests_total if r.tests_total else 0.0
                                 for r in outcome]}})  # fmt: skip
