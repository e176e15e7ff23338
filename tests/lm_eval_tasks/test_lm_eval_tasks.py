"""The cppo_* lm-eval tasks: discovery, loading, data sources, and scoring through lm-eval's
own evaluator (with a scripted model, so no weights are needed; the real-model run is in
test_lm_eval_parity.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from math import comb
from pathlib import Path

import pytest
import yaml

from cppo_bench.lm_eval_tasks import DATA_ENV, GROUP, TASKS, include_path

lm_eval = pytest.importorskip("lm_eval")
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _manager(**kwargs) -> TaskManager:
    return TaskManager(include_path=include_path(), include_defaults=False, **kwargs)


def _demo_task(**kwargs):
    return _manager(**kwargs).load(["cppo_demo"])["tasks"]["cppo_demo"]


def _unbiased(n: int, c: int, k: int) -> float:  # written out here, independently of metrics
    return 1.0 - comb(n - c, k) / comb(n, k)


# --- configs -------------------------------------------------------------------------------


def test_include_path_holds_every_task_and_the_group():
    folder = Path(include_path())
    configs = [yaml.load(p.read_text(), Loader=yaml.BaseLoader) for p in folder.glob("*.yaml")]
    assert sorted(c["task"] for c in configs if "task" in c and "group" not in c) == sorted(TASKS)
    (group,) = [c for c in configs if c.get("group") == GROUP]
    assert set(group["task"]) <= set(TASKS)
    assert set(_manager().all_tasks) >= {*TASKS, GROUP}


def test_template_declares_the_metrics_it_reports_and_enough_repeats():
    template = yaml.load(
        (Path(include_path()) / "_cppo_template.yaml").read_text(), Loader=yaml.BaseLoader
    )
    ks = [int(k) for k in template["metadata"]["pass_at"]]
    assert int(template["repeats"]) >= max(ks)
    assert [m["metric"] for m in template["metric_list"]] == [f"pass@{k}" for k in ks]
    assert template["unsafe_code"] == "true"


def test_cppo_demo_loads_with_our_prompt_and_all_k_samples_kept():
    from cppo_bench.benchmarks import load_benchmark
    from cppo_bench.lm_eval_tasks.docs import render_prompt

    task = _demo_task()
    problems = load_benchmark("demo").problems
    docs = list(task.eval_docs)
    assert [d["uid"] for d in docs] == [p.uid for p in problems]
    assert task.UNSAFE_CODE is True
    assert task.config.repeats == 4
    assert [f.name for f in task._filters] == ["verified"]  # not lm-eval's take_first
    for doc, problem in zip(docs, problems, strict=True):
        system, user = render_prompt(problem)
        assert task.doc_to_text(doc) == user
        assert doc["system"] == system


# --- data sources -----------------------------------------------------------------------------


def _write_subset(path: Path, n: int) -> list[str]:
    lines = (REPO / "cppo_bench/benchmarks/demo_problems.jsonl").read_text().splitlines()[:n]
    path.write_text("\n".join(lines) + "\n")
    return ["demo/" + json.loads(line)["problem_id"] for line in lines]


def test_local_data_from_env_var(tmp_path, monkeypatch):
    uids = _write_subset(tmp_path / "few.jsonl", 5)
    monkeypatch.setenv(DATA_ENV["demo"], str(tmp_path / "few.jsonl"))
    assert [d["uid"] for d in _demo_task().eval_docs] == uids


def test_metadata_path_wins_over_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV["demo"], str(tmp_path / "missing.jsonl"))
    uids = _write_subset(tmp_path / "few.jsonl", 3)
    task = _demo_task(metadata={"demo_data": str(tmp_path / "few.jsonl")})
    assert [d["uid"] for d in task.eval_docs] == uids


def test_bad_local_path_names_the_file_and_the_knobs(tmp_path, monkeypatch):
    from cppo_bench.errors import DataError

    monkeypatch.setenv(DATA_ENV["demo"], str(tmp_path / "missing.jsonl"))
    with pytest.raises(DataError, match=r"missing\.jsonl.*CPPO_BENCH_DATA_DEMO"):
        _demo_task()


# --- scoring through lm-eval's evaluator ------------------------------------------------------


class ScriptedLM(LM):
    """Answers by script: per problem, which of its K repeats get the reference solution.
    Other repeats get a syntax error or no code at all."""

    def __init__(self, problems, script):
        super().__init__()
        self.problems, self.script, self.calls = problems, script, {}

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        for req in requests:
            context = req.args[0]
            (uid,) = [p.uid for p in self.problems if p.statement in context]
            i = self.calls[uid] = self.calls.get(uid, -1) + 1
            problem = next(p for p in self.problems if p.uid == uid)
            if i in self.script[uid]:
                out.append(f"Sure.\n```python\n{problem.reference_solutions[0]}```\n")
            else:
                out.append("```python\ndef broken(:\n```" if i % 2 else "I cannot solve this.")
        return out

    def loglikelihood(self, requests):  # pragma: no cover - generate_until tasks only
        raise NotImplementedError

    def loglikelihood_rolling(self, requests):  # pragma: no cover
        raise NotImplementedError


def _evaluate(script, **kwargs):
    from lm_eval import simple_evaluate

    from cppo_bench.benchmarks import load_benchmark

    problems = load_benchmark("demo", limit=len(script)).problems
    script = dict(zip((p.uid for p in problems), script, strict=True))
    return simple_evaluate(
        model=ScriptedLM(problems, script),
        tasks=["cppo_demo"],
        task_manager=_manager(),
        limit=len(script),
        log_samples=True,
        bootstrap_iters=0,
        **kwargs,
    )


def test_lm_eval_refuses_to_run_code_without_the_opt_in():
    with pytest.raises(ValueError, match="unsafe"):
        _evaluate([{0}])


def test_pass_at_k_through_lm_eval_matches_independent_count():
    script = [{0, 1, 2, 3}, {2}, set(), {0, 3}]  # repeats that get the reference solution
    results = _evaluate(script, confirm_run_unsafe_code=True)
    metrics = results["results"]["cppo_demo"]
    n = 4
    expected = {k: sum(_unbiased(n, len(s), k) for s in script) / len(script) for k in (1, 4)}
    assert metrics["pass@1,verified"] == pytest.approx(expected[1])
    assert metrics["pass@4,verified"] == pytest.approx(expected[4])
    samples = results["samples"]["cppo_demo"]
    for sample, passing in zip(samples, script, strict=True):
        (records,) = sample["filtered_resps"]
        verdicts = [json.loads(r) for r in records]  # JSON text, readable in the logs
        assert len(verdicts) == n  # all K kept
        assert {i for i, v in enumerate(verdicts) if v["passed"]} == passing
        for i, v in enumerate(verdicts):
            if i not in passing:  # odd repeats: syntax error; even: no code block at all
                assert v["verdict"] == ("CE" if i % 2 else "EMPTY")


def test_k_larger_than_the_samples_is_skipped_not_invented():
    from cppo_bench.lm_eval_tasks.scoring import process_results

    doc = {"pass_at": [1, 2, 8]}
    verdicts = [{"passed": True}, {"passed": False}]
    assert process_results(doc, [verdicts]) == {"pass@1": 0.5, "pass@2": 1.0}


def test_process_results_refuses_unverified_responses():
    from cppo_bench.errors import DataError
    from cppo_bench.lm_eval_tasks.scoring import process_results

    with pytest.raises(DataError, match="verified"):
        process_results({"pass_at": [1]}, ["print(1)"])


# --- CLI --------------------------------------------------------------------------------------


def test_cli_path_is_fast_to_import():
    code = (
        "import sys\n"
        "from cppo_bench.cli import main\n"
        "main(['lm-eval', '--path'], standalone_mode=False)\n"
        "heavy = {'lm_eval', 'datasets', 'torch', 'transformers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == include_path()


def test_cli_adds_include_path_and_refuses_a_second_one():
    from cppo_bench.api.lmeval import lm_eval_argv
    from cppo_bench.errors import DataError

    argv = lm_eval_argv(["run", "--tasks", "cppo_demo"])
    assert argv[1:] == [
        "-m",
        "lm_eval",
        "run",
        "--tasks",
        "cppo_demo",
        "--include_path",
        include_path(),
    ]
    for bad in (["--include_path", "x"], ["--include_path=x"]):
        with pytest.raises(DataError, match="include_path"):
            lm_eval_argv(["run", *bad])


def test_lm_eval_ls_tasks_lists_ours_through_the_wrapper():
    out = subprocess.run(
        [sys.executable, "-m", "cppo_bench", "lm-eval", "ls", "tasks"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    listed = {line.split("|")[1].strip() for line in out.stdout.splitlines() if "|" in line}
    assert {*TASKS, GROUP} <= listed


def test_generation_settings_are_those_of_cppo_bench_run_direct():
    from cppo_bench.backends.base import SamplingParams
    from cppo_bench.methods.direct import stop_strings

    task = _demo_task()
    gen = task.config.generation_kwargs
    defaults = SamplingParams()
    assert gen["until"] == list(stop_strings())
    assert gen["do_sample"] is True
    assert (gen["temperature"], gen["top_p"], gen["max_gen_toks"]) == (
        defaults.temperature,
        defaults.top_p,
        defaults.max_tokens,
    )
    assert "seed" not in gen  # one seed for all K clones would repeat one sample K times


def test_group_loads_the_study_benchmarks_from_local_copies(shared_data, monkeypatch):
    from cppo_bench.benchmarks import load_benchmark

    files = {
        "apps": shared_data / "apps/introductory.jsonl",
        "codecontests": shared_data / "codecontests/test_split_derived.json",
        "lcb": shared_data / "livecodebench/code_generation_release_v1_public.jsonl",
    }
    for bench, path in files.items():
        monkeypatch.setenv(DATA_ENV[bench], str(path))
    loaded = _manager().load([GROUP])
    tasks = loaded["tasks"]
    assert set(tasks) == {"cppo_apps", "cppo_codecontests", "cppo_lcbv6"}
    for name, bench in [("cppo_apps", "apps"), ("cppo_codecontests", "codecontests")]:
        expected = [p.uid for p in load_benchmark(bench, str(files[bench])).problems]
        assert [d["uid"] for d in tasks[name].eval_docs] == expected
    lcb = load_benchmark("lcb", str(files["lcb"]), release_version="release_v6").problems
    assert [d["uid"] for d in tasks["cppo_lcbv6"].eval_docs] == [p.uid for p in lcb]


def test_offline_without_local_data_says_what_to_set(monkeypatch):
    from cppo_bench.errors import DataError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv(DATA_ENV["apps"], raising=False)
    with pytest.raises(DataError, match="CPPO_BENCH_DATA_APPS=PATH or --metadata apps_data=PATH"):
        _manager().load(["cppo_apps"])


def test_a_document_finds_its_problem_even_in_a_fresh_process(tmp_path, monkeypatch):
    from cppo_bench.lm_eval_tasks import docs

    _write_subset(tmp_path / "few.jsonl", 2)
    doc = _demo_task(metadata={"demo_data": str(tmp_path / "few.jsonl")}).eval_docs[1]
    monkeypatch.setattr(docs, "_PROBLEMS", {})  # what a process that never loaded it holds
    problem = docs.problem_for(doc)
    assert problem.uid == doc["uid"] and problem.tests
