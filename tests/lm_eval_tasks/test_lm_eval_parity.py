"""lm-eval's `--model hf` on cppo_demo against `cppo-bench run --method direct`, with the
embedded SmolLM2-135M-Instruct, on the CPU, offline.

Greedy decoding: both harnesses must produce the same completions, verdicts and pass@k
(same prompt and chat template, same stop string and fence handling, same extraction and
verifier, same estimator).

Sampling: the two harnesses draw different samples by design, so their pass@k differ.
lm-eval's hf model calls `model.generate`, which draws every token from torch's global RNG,
seeded once per run by `--seed`; which random numbers a request gets depends on the
requests generated before it (lm-eval sends the K repeats as K copies of one request).
cppo-bench gives each request its own `torch.Generator`, seeded with
derive_seed(run seed, problem, "sample", branch), and samples top-p from the sorted
distribution. No choice of seeds makes the two streams coincide. What must hold instead:
re-scoring lm-eval's logged samples with this toolkit's verifier and pass@k reproduces
the numbers lm-eval reports, exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cppo_bench.lm_eval_tasks import DATA_ENV, include_path

pytest.importorskip("lm_eval")
pytestmark = pytest.mark.slow

LIMIT, K, MAX_TOKENS, SEED = 3, 2, 128, 0


@pytest.fixture(scope="module")
def model_dir() -> Path:
    from cppo_bench.backends.base import ModelLoadError
    from cppo_bench.backends.default_model import ensure_default_model

    try:
        return ensure_default_model()
    except ModelLoadError as exc:
        pytest.skip(str(exc))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DATA_ENV.values()}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _run(cmd: list[str]) -> None:
    out = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, f"{' '.join(cmd)}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


def _variant(tmp: Path, name: str, k: int, sampling: dict) -> Path:
    """cppo_demo with K repeats and short generations: a YAML that includes ours."""
    from cppo_bench.methods.direct import stop_strings

    ks = sorted({1, k})
    config = {
        "include": f"{include_path()}/cppo_demo.yaml",
        "task": name,
        "repeats": k,
        "generation_kwargs": {
            "until": list(stop_strings()),
            "max_gen_toks": MAX_TOKENS,
            **sampling,
        },
        "metric_list": [
            {"metric": f"pass@{x}", "aggregation": "mean", "higher_is_better": True} for x in ks
        ],
        "metadata": {"version": 1.0, "pass_at": ks},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _lm_eval(tmp: Path, task_yaml: Path, model: Path) -> tuple[dict, list[dict]]:
    out = tmp / "lm_eval_out"
    _run(
        [sys.executable, "-m", "cppo_bench", "lm-eval", "run", "--model", "hf",
         "--model_args", f"pretrained={model},dtype=float32", "--device", "cpu",
         "--batch_size", "1", "--tasks", str(task_yaml), "--limit", str(LIMIT),
         "--apply_chat_template", "--confirm_run_unsafe_code", "--seed", str(SEED),
         "--log_samples", "--output_path", str(out)]
    )  # fmt: skip
    task = task_yaml.stem
    (results_file,) = out.rglob("results_*.json")
    (samples_file,) = out.rglob(f"samples_{task}_*.jsonl")
    results = json.loads(results_file.read_text())["results"][task]
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    return results, sorted(samples, key=lambda s: s["doc_id"])


def _cppo_bench_run(tmp: Path, k: int, temperature: float) -> dict:
    from cppo_bench.store.runs import iter_runs, read_records

    out = tmp / "runs"
    _run(
        [sys.executable, "-m", "cppo_bench", "run", "--method", "direct", "--bench", "demo",
         "--limit", str(LIMIT), "--k", str(k), "--temperature", str(temperature),
         "--max-tokens", str(MAX_TOKENS), "--seeds", str(SEED), "--batch-size", "1",
         "--out", str(out), "--quiet"]
    )  # fmt: skip
    (run_dir,) = iter_runs(out)
    return read_records(run_dir)


def test_greedy_lm_eval_and_cppo_bench_agree_sample_for_sample(tmp_path, model_dir):
    from cppo_bench.methods.base import close_fence

    # greedy: K copies are identical, so K = 1 tests the same thing at half the cost
    task_yaml = _variant(tmp_path, "cppo_demo_greedy", 1, {"do_sample": False})
    results, samples = _lm_eval(tmp_path, task_yaml, model_dir)
    records = _cppo_bench_run(tmp_path, 1, 0.0)
    assert len(samples) == len(records) == LIMIT
    for sample in samples:
        record = records[sample["doc"]["problem_id"]]
        (completions,) = sample["resps"]
        (verdicts,) = sample["filtered_resps"]
        assert [close_fence(c) for c in completions] == [b.completion for b in record.branches]
        assert [json.loads(v)["verdict"] for v in verdicts] == [b.verdict for b in record.branches]
    ours = sum(r.passed for r in records.values()) / LIMIT
    assert results["pass@1,verified"] == pytest.approx(ours)


def test_sampled_lm_eval_numbers_are_reproduced_by_rescoring_its_samples(tmp_path, model_dir):
    from cppo_bench.benchmarks import load_benchmark
    from cppo_bench.methods.base import close_fence
    from cppo_bench.metrics import pass_at_k
    from cppo_bench.verifier import VerifyJob, verify_batch

    sampling = {"do_sample": True, "temperature": 0.7, "top_p": 0.95}
    task_yaml = _variant(tmp_path, "cppo_demo_sampled", K, sampling)
    results, samples = _lm_eval(tmp_path, task_yaml, model_dir)
    problems = {p.problem_id: p for p in load_benchmark("demo", limit=LIMIT).problems}
    assert [s["doc"]["problem_id"] for s in samples] == list(problems)

    jobs = [
        VerifyJob(problems[s["doc"]["problem_id"]], close_fence(text))
        for s in samples
        for text in s["resps"][0]
    ]
    verdicts = iter(verify_batch(jobs))
    per_problem = {1: [], K: []}
    for sample in samples:
        (completions,) = sample["resps"]
        assert len(completions) == K  # all K samples reached the verifier
        mine = [next(verdicts) for _ in completions]
        logged = [json.loads(v) for v in sample["filtered_resps"][0]]
        assert [v.verdict for v in mine] == [v["verdict"] for v in logged]
        c = sum(v.passed for v in mine)
        for k in per_problem:
            score = pass_at_k(K, c, k)
            assert sample[f"pass@{k}"] == score
            per_problem[k].append(score)
    for k, scores in per_problem.items():
        assert results[f"pass@{k},verified"] == pytest.approx(sum(scores) / LIMIT, abs=1e-12)
