"""The reward adapters, each called the way its library calls it, against a real `cppo-bench
serve`: TRL's GRPOTrainer (a real one-step run on a tiny random model), verl's
custom_reward_function (loaded by file path, reward_kwargs bound, called per row and per
batch), OpenRLHF's remote reward client (a JSON POST of query / prompts / labels). The
oracle is in-process `verify_batch` on the same programs."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from serve_process import Service, raw  # noqa: E402

from cppo_bench.problem import Problem  # noqa: E402
from cppo_bench.problem import Test as Case  # noqa: E402
from cppo_bench.serve.adapters import verl as verl_adapter  # noqa: E402
from cppo_bench.serve.adapters.trl import VerifierReward  # noqa: E402
from cppo_bench.verifier import VerifyJob, verify_batch  # noqa: E402

STDIN = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}  # APPS input_output
CALL = {"inputs": [[2, 3], [4, 4]], "outputs": [5, 8], "fn_name": "add"}
OURS = {"tests": [{"input": "hi\n", "output": "hi\n"}], "checker": "lcb"}
FENCE = "```python\n{}\n```"
SUM = "a, b = map(int, input().split())\nprint(a + b)"
CASES = [  # (completion, label, expected reward)
    (f"Here it is:\n{FENCE.format(SUM)}", json.dumps(STDIN), 1.0),
    (FENCE.format("print(3)"), json.dumps(STDIN), 0.0),
    (FENCE.format("def add(a, b):\n    return a + b"), CALL, 1.0),
    (FENCE.format("def add(a, b):\n    return a * b"), json.dumps(CALL), 0.0),
    (FENCE.format("print(input())"), OURS, 1.0),
    ("no code at all", OURS, 0.0),
    (FENCE.format("import os\nos.system('echo hi')"), OURS, 0.0),
]


@pytest.fixture(scope="module")
def service():
    svc = Service("--workers", "2")
    yield svc
    svc.stop()


def in_process(completions: list[str], labels: list) -> list[float]:
    """The oracle: the same tests as Problems, judged by verify_batch here."""
    from cppo_bench.benchmarks.apps import parse_tests

    jobs = []
    for i, (text, label) in enumerate(zip(completions, labels, strict=True)):
        d = json.loads(label) if isinstance(label, str) else label
        if "inputs" in d:
            p = Problem("o", str(i), "", tests=parse_tests(d), checker="apps")
        else:
            tests = tuple(Case(t["input"], t["output"]) for t in d["tests"])
            p = Problem("o", str(i), "", tests=tests, checker=d["checker"])
        jobs.append(VerifyJob(p, text))
    return [1.0 if r.passed else 0.0 for r in verify_batch(jobs, workers=2, all_tests=True)]


def test_the_oracle_agrees_with_the_expected_rewards() -> None:
    assert in_process([c for c, _, _ in CASES], [lab for _, lab, _ in CASES]) == [
        r for _, _, r in CASES
    ]


def test_trl_reward_function_as_grpo_trainer_calls_it(service) -> None:
    reward = VerifierReward(service.url)
    completions = [[{"role": "assistant", "content": c}] for c, _, _ in CASES]  # conversational
    got = reward(prompts=[[{"role": "user", "content": "solve"}]] * len(CASES),
                 completions=completions, completion_ids=[[1, 2]] * len(CASES),
                 tests=[lab for _, lab, _ in CASES], trainer_state=None,
                 log_extra=lambda *a: None, log_metric=lambda *a: None)  # fmt: skip
    assert got == [r for _, _, r in CASES]
    local = VerifierReward(None)  # no URL: verified in this process, the same rewards
    assert local(prompts=["p"] * len(CASES), completions=[c for c, _, _ in CASES],
                 tests=[lab for _, lab, _ in CASES]) == got  # fmt: skip


def test_a_real_grpo_trainer_step_takes_its_rewards_from_the_service(service, tmp_path) -> None:
    pytest.importorskip("trl")
    from datasets import Dataset
    from tiny_models import build
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    model_dir = build("llama", tmp_path / "model")
    seen: list[tuple[list[str], list, list[float]]] = []
    adapter = VerifierReward(service.url)

    def cppo_verifier(prompts, completions, **kwargs):  # records what TRL passed and got
        rewards = adapter(prompts, completions, **kwargs)
        seen.append((list(completions), list(kwargs["tests"]), rewards))
        return rewards

    rows = [{"prompt": "print the sum", "tests": json.dumps(STDIN)},
            {"prompt": "echo the line", "tests": json.dumps(OURS)}]  # fmt: skip
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=8, max_steps=1,
                      use_cpu=True, report_to=[], logging_steps=1, save_strategy="no",
                      bf16=False, seed=0)  # fmt: skip
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir),
                          reward_funcs=[cppo_verifier], args=args,
                          train_dataset=Dataset.from_list(rows * 2),
                          processing_class=AutoTokenizer.from_pretrained(model_dir))  # fmt: skip
    trainer.train()
    assert seen, "TRL never called the reward function"
    completions, labels, rewards = seen[0]
    assert len(rewards) == len(completions) == len(labels) == 4
    assert rewards == in_process(completions, labels)  # what the service said, judged here
    logged = [h for h in trainer.state.log_history if "rewards/cppo_verifier/mean" in h]
    assert logged and logged[0]["rewards/cppo_verifier/mean"] == pytest.approx(
        sum(rewards) / len(rewards)
    )


def load_like_verl(path: str, name: str, reward_kwargs: dict):
    """verl's get_custom_reward_fn: the file by path, the function by name, kwargs bound."""
    spec = importlib.util.spec_from_file_location("custom_module", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return functools.partial(getattr(module, name), **reward_kwargs)


def test_verl_compute_score_as_its_reward_managers_call_it(service) -> None:
    fn = load_like_verl(verl_adapter.__file__, "compute_score", {"url": service.url})
    per_row = [fn(data_source="cppo", solution_str=c, ground_truth=lab, extra_info={"index": i})
               for i, (c, lab, _) in enumerate(CASES)]  # fmt: skip
    assert per_row == [r for _, _, r in CASES]
    batch = load_like_verl(verl_adapter.__file__, "compute_score_batch", {"url": service.url})
    got = batch(data_sources=["cppo"] * len(CASES), solution_strs=[c for c, _, _ in CASES],
                ground_truths=[lab for _, lab, _ in CASES], extra_infos=[{}] * len(CASES))  # fmt: skip
    assert got == per_row
    with pytest.raises(ValueError, match="row 0: label is not JSON"):
        fn(data_source="cppo", solution_str="x", ground_truth="{oops", extra_info=None)


def test_openrlhf_remote_reward_protocol(service) -> None:
    import requests  # what OpenRLHF's remote reward client posts with

    prompts = [f"<|user|>problem {i}<|assistant|>" for i in range(len(CASES))]
    data = {"query": [p + c for p, (c, _, _) in zip(prompts, CASES, strict=True)],
            "prompts": prompts,
            "labels": [lab if isinstance(lab, str) else json.dumps(lab) for _, lab, _ in CASES],
            "datasources": ["cppo"] * len(CASES)}  # fmt: skip
    resp = requests.post(service.url + "/get_reward", json=data,
                         headers={"Content-Type": "application/json"}, timeout=600)  # fmt: skip
    resp.raise_for_status()
    assert resp.json()["rewards"] == [r for _, _, r in CASES]
    # a wrong label or unequal lists: one line, 422, and the endpoint still serves
    bad = dict(data, labels=["{oops"] + data["labels"][1:])
    code, reply, _ = raw(service.url + "/get_reward", json.dumps(bad).encode())
    assert code == 422 and "labels[0]: label is not JSON" in reply["error"]
    code, reply, _ = raw(service.url + "/get_reward", json.dumps(dict(data, prompts=[])).encode())
    assert code == 422 and "expected one of each" in reply["error"]
    ok = requests.post(service.url + "/get_reward", json=data, timeout=600)
    assert ok.status_code == 200


def test_the_verl_file_verifies_in_process_without_a_url(monkeypatch) -> None:
    monkeypatch.delenv("CPPO_VERIFIER_URL", raising=False)
    got = [verl_adapter.compute_score("cppo", c, lab) for c, lab, _ in CASES[:2]]
    assert got == [1.0, 0.0]
    assert Path(verl_adapter.__file__).is_file()


TOKEN = "openrlhf-adapter-token-0123456789"  # a service that needs one (any public bind)


@pytest.fixture(scope="module")
def guarded():
    svc = Service("--workers", "2", env={"CPPO_SERVE_TOKEN": TOKEN})
    yield svc
    svc.stop()


def openrlhf_request() -> tuple[list[str], list[str], list[str]]:
    prompts = [f"<|user|>problem {i}<|assistant|>" for i in range(len(CASES))]
    queries = [p + c for p, (c, _, _) in zip(prompts, CASES, strict=True)]
    labels = [lab if isinstance(lab, str) else json.dumps(lab) for _, lab, _ in CASES]
    return queries, prompts, labels


@pytest.mark.parametrize("host", ["cpu-node.example:8600", "10.0.0.7:8600", None])
def test_get_reward_refuses_a_request_without_the_token_and_serves_one_with_it(
    guarded, host
) -> None:
    """OpenRLHF's HTTP client as it reaches a CPU node (its Host a public name or address):
    no token, one line and 401; the token, the rewards."""
    queries, prompts, labels = openrlhf_request()
    body = json.dumps({"query": queries, "prompts": prompts, "labels": labels}).encode()
    headers = {"Host": host} if host else None
    code, reply, _ = raw(guarded.url + "/get_reward", body, headers=headers)
    assert code == 401 and reply == {"error": "missing or wrong bearer token"}
    code, reply, _ = raw(guarded.url + "/get_reward", body, token=TOKEN[:-1] + "x",
                         headers=headers)  # fmt: skip
    assert code == 401
    code, reply, _ = raw(guarded.url + "/get_reward", body, token=TOKEN, headers=headers)
    assert code == 200 and reply["rewards"] == [r for _, _, r in CASES]


def test_a_token_less_service_answers_get_reward_only_under_a_loopback_host(service) -> None:
    queries, prompts, labels = openrlhf_request()
    body = json.dumps({"query": queries[:1], "prompts": prompts[:1], "labels": labels[:1]})
    code, reply, _ = raw(service.url + "/get_reward", body.encode(),
                         headers={"Host": "cpu-node.example:8600"})  # fmt: skip
    assert code == 403 and "loopback" in reply["error"]


def test_openrlhf_reward_file_carries_the_token_as_every_client(guarded, monkeypatch) -> None:
    """`--remote_rm_url .../openrlhf_reward.py`: loaded by path and called as OpenRLHF does
    (a batch, and one query at a time); the token comes from $CPPO_SERVE_TOKEN, the reader
    every client shares: without it the service refuses, with it the rewards are the
    in-process verifier's."""
    pytest.importorskip("torch")
    from cppo_bench.serve.adapters import openrlhf_reward
    from cppo_bench.serve.client import VerifierServiceError

    spec = importlib.util.spec_from_file_location("reward_func", openrlhf_reward.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    queries, prompts, labels = openrlhf_request()
    monkeypatch.setenv("CPPO_VERIFIER_URL", guarded.url)
    monkeypatch.delenv("CPPO_SERVE_TOKEN", raising=False)
    with pytest.raises(VerifierServiceError) as err:
        module.reward_func(queries, prompts, labels)
    assert err.value.status == 401
    monkeypatch.setenv("CPPO_SERVE_TOKEN", TOKEN)
    got = module.reward_func(queries, prompts, labels)
    oracle = in_process([c for c, _, _ in CASES], labels)
    assert got["rewards"].tolist() == oracle == [r for _, _, r in CASES]
    assert got["scores"].tolist() == oracle
    assert len(got["extra_logs"]["tests_passed_fraction"]) == len(CASES)
    one = module.reward_func(queries[:1], prompts[:1], labels[:1])  # OpenRLHF's per-sample call
    assert one["rewards"].tolist() == [1.0]
    with pytest.raises(ValueError, match="one of each"):
        module.reward_func(queries, prompts[:-1], labels)


def test_the_node_pools_metrics_reader_carries_the_token(guarded, monkeypatch) -> None:
    """The node pool's own client (rank 0's exit figures) reads the token where every
    client does: a pool started under $CPPO_SERVE_TOKEN is still read."""
    import urllib.error

    from cppo_bench.serve.node import metrics

    monkeypatch.delenv("CPPO_SERVE_TOKEN", raising=False)
    with pytest.raises(urllib.error.HTTPError) as err:
        metrics(guarded.url)
    assert err.value.code == 401
    monkeypatch.setenv("CPPO_SERVE_TOKEN", TOKEN)
    assert metrics(guarded.url)["queue_capacity"] >= 1


def test_the_token_has_one_reader() -> None:
    """$CPPO_SERVE_TOKEN is named in code (not prose) only by serve.config, whose env_token()
    the server, cb.VerifierClient (so every adapter and trainer reward) and the node pool
    call: a client that read it another way could drift (a token file, a strip)."""
    import io
    import tokenize

    root = Path(__file__).resolve().parents[2]
    named = []
    for folder in ("cppo_bench", "trainers", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            if path == root / "cppo_bench" / "serve" / "config.py":
                continue
            toks = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            for tok in toks:
                if (tok.type == tokenize.NAME and tok.string == "TOKEN_ENV") or (
                    tok.type == tokenize.STRING and "CPPO_SERVE_TOKEN" in tok.string
                    and tok.string.strip("\"'") == "CPPO_SERVE_TOKEN"
                ):  # fmt: skip
                    named.append(f"{path.relative_to(root)}:{tok.start[0]}")
    assert named == []
