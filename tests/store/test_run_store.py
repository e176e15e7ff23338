"""The generation cache, torn-line repair and resumable runs (scripted backend, real
verifier, real run store)."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from run_scripted import ScriptedBackend

from cppo_bench.backends.base import GenRequest, GenResult, SamplingParams
from cppo_bench.backends.streaming import LazyBackend
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.errors import DataError
from cppo_bench.runner.cached import CachedBackend
from cppo_bench.runner.pipeline import EvalSpec, execute
from cppo_bench.store.gencache import GEN_CACHE, GenCache
from cppo_bench.store.runs import RECORDS, read_manifest, read_records, repair_tail


@pytest.fixture(scope="module")
def problems():
    # stdin problems: the scripted wrong program is then a WA (on a call problem it is an RE)
    return load_benchmark("demo", difficulty="medium", limit=4).problems


def spec(method="cppo", seed=0, chunk_size=2, **kw) -> EvalSpec:
    return EvalSpec(
        method=method,
        bench="demo",
        model="scripted-model",
        backend="scripted",
        k=4,
        seed=seed,
        sampling=SamplingParams(max_tokens=128),
        chunk_size=chunk_size,
        **kw,
    )


def comparable(records) -> list[dict]:
    """Records minus wall-clock fields (verification time varies run to run)."""
    out = []
    for r in records:
        d = asdict(r)
        for b in d["branches"]:
            b.pop("time_s")
        out.append(d)
    return out


def req(seed: int, text: str = "hi") -> GenRequest:
    return GenRequest(
        params=SamplingParams(seed=seed), messages=({"role": "user", "content": text},)
    )


def test_repair_tail_cuts_only_a_torn_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c":')
    assert repair_tail(path, root=tmp_path) == len('{"c":')
    assert path.read_text() == '{"a": 1}\n{"b": 2}\n'
    assert repair_tail(path, root=tmp_path) == 0
    path.write_text('{"only": ')
    repair_tail(path, root=tmp_path)
    assert path.read_text() == ""
    assert repair_tail(tmp_path / "missing.jsonl", root=tmp_path) == 0


def test_cached_backend_serves_hits_and_batches_misses(tmp_path):
    inner = ScriptedBackend(respond=lambda r: f"seed {r.params.seed}")
    cache = GenCache(tmp_path / GEN_CACHE, root=tmp_path)
    cached = CachedBackend(inner, cache, model_id="m")
    first = cached.generate([req(1), req(2), req(1)])  # the duplicate is generated once
    assert [r.text for r in first] == ["seed 1", "seed 2", "seed 1"]
    assert [len(c) for c in inner.calls] == [2]
    again = CachedBackend(inner, GenCache(tmp_path / GEN_CACHE, root=tmp_path), model_id="m")
    out = again.generate([req(2), req(3), req(1)])
    assert [r.text for r in out] == ["seed 2", "seed 3", "seed 1"]
    assert [len(c) for c in inner.calls] == [2, 1] and again.stats.hits == 2
    other_model = CachedBackend(inner, GenCache(tmp_path / GEN_CACHE, root=tmp_path), model_id="m2")
    other_model.generate([req(1)])  # the model is part of the key
    assert [len(c) for c in inner.calls] == [2, 1, 1]


def test_errors_are_not_cached_and_torn_cache_lines_are_regenerated(tmp_path):
    class Flaky(ScriptedBackend):
        def generate(self, requests, progress=None):
            self.calls.append(list(requests))
            return [GenResult("", 0, "error") for _ in requests]

    path = tmp_path / GEN_CACHE
    CachedBackend(Flaky(), GenCache(path, root=tmp_path), "m").generate([req(1)])
    assert not path.exists() or path.read_text() == ""
    inner = ScriptedBackend(respond=lambda r: "ok")
    CachedBackend(inner, GenCache(path, root=tmp_path), "m").generate([req(1), req(2)])
    path.write_text(path.read_text()[:-10])  # a kill in the middle of the last line
    cache = GenCache(path, root=tmp_path)
    assert len(cache) == 1
    inner2 = ScriptedBackend(respond=lambda r: "ok")
    CachedBackend(inner2, cache, "m").generate([req(1), req(2)])
    assert inner2.n_requests == 1
    assert len(GenCache(path, root=tmp_path)) == 2  # the repaired file reads cleanly


def test_lazy_backend_loads_only_when_needed():
    built = []

    def factory():
        built.append(1)
        return ScriptedBackend(respond=lambda r: "x")

    lazy = LazyBackend(factory, "scripted")
    assert not lazy.loaded and built == []
    lazy.generate([req(1)])
    assert lazy.loaded and built == [1] and lazy.model_id == "scripted-model"
    lazy.close()
    assert not lazy.loaded


def test_run_stores_manifest_and_records(tmp_path, problems):
    backend = ScriptedBackend(problems)
    result = execute(spec(), problems, backend, tmp_path, data_source="demo")
    m = read_manifest(result.run_dir)
    assert m.status == "complete" and m.problem_ids == [p.problem_id for p in problems]
    assert m.method_options["inference"] == "joint" and m.sampling["max_tokens"] == 128
    assert m.package_version and m.data_source == "demo" and len(m.problem_ids_hash) == 64
    assert m.extra["summary"]["problems"] == 4 and m.extra["model_id"] == "scripted-model"
    assert result.run_dir.relative_to(tmp_path).parts[:3] == ("demo", "cppo", "scripted-model")
    records = read_records(result.run_dir)
    assert list(records) == [p.problem_id for p in problems]
    for p, rec in zip(problems, result.records, strict=True):
        assert len(rec.branches) == 4 and len(rec.plans) == 1 and rec.plan_validity[0]["valid"]
        for b in rec.branches:  # scripted: even seed -> reference program -> AC
            assert b.passed == (b.seed % 2 == 0) and b.verdict == ("AC" if b.passed else "WA")
            assert b.plan in rec.plans[0] and b.finish_reason == "stop"
            assert (b.code.strip() == p.reference_solutions[0].strip()) == b.passed
        assert rec.solver_tokens == sum(b.solver_tokens for b in rec.branches)
    # chunks of 2: two planner batches and two solver batches
    assert [len(c) for c in backend.calls] == [2, 8, 2, 8]


def test_rerun_is_served_entirely_from_the_store(tmp_path, problems):
    first = execute(spec(), problems, ScriptedBackend(problems), tmp_path)
    again_backend = ScriptedBackend(problems)
    again = execute(spec(), problems, again_backend, tmp_path)
    assert again_backend.calls == [] and again.new == 0
    assert comparable(again.records) == comparable(first.records)


def test_torn_record_line_is_recomputed_from_the_cache(tmp_path, problems):
    first = execute(spec(), problems, ScriptedBackend(problems), tmp_path)
    path = first.run_dir / RECORDS
    path.write_text(path.read_text()[:-40])  # killed while writing the last record
    assert len(read_records(first.run_dir)) == 3
    backend = ScriptedBackend(problems)
    again = execute(spec(), problems, backend, tmp_path)
    assert again.new == 1 and backend.calls == []  # regenerated nothing: all cached
    assert comparable(again.records) == comparable(first.records)
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines)


def test_lost_generations_are_regenerated_with_the_same_seeds(tmp_path, problems):
    full = execute(spec(), problems, ScriptedBackend(problems), tmp_path / "a")
    # a run killed after its first chunk: the second chunk's generations never happened
    partial = execute(spec(), problems[:2], ScriptedBackend(problems), tmp_path / "b")
    src = partial.run_dir
    dst = tmp_path / "b" / full.run_dir.relative_to(tmp_path / "a")
    dst.mkdir(parents=True)
    for name in (RECORDS, GEN_CACHE):
        (dst / name).write_text((src / name).read_text())
    backend = ScriptedBackend(problems)
    resumed = execute(spec(), problems, backend, tmp_path / "b")
    assert resumed.run_dir == dst and resumed.new == 2
    assert backend.n_requests == 2 + 8  # only the missing chunk's planner and solver calls
    assert comparable(resumed.records) == comparable(full.records)


def test_seeds_and_configs_get_their_own_directories(tmp_path, problems):
    dirs = {
        execute(spec(seed=s), problems[:1], ScriptedBackend(problems), tmp_path).run_dir
        for s in (0, 1)
    }
    dirs.add(
        execute(
            spec(method_options={"inference": "iid"}),
            problems[:1],
            ScriptedBackend(problems),
            tmp_path,
        ).run_dir
    )
    assert len(dirs) == 3
    assert {d.name.split("-")[1] for d in dirs} == {"seed0", "seed1"}


def test_problem_list_mismatch_is_refused(tmp_path, problems):
    result = execute(spec(), problems[:1], ScriptedBackend(problems), tmp_path)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    manifest["problem_ids"] = ["other"]
    (result.run_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="different run configuration"):
        execute(spec(), problems[:1], ScriptedBackend(problems), tmp_path)


def test_output_prediction_is_scored_by_answer_and_maj_at_k(tmp_path):
    from cppo_bench.problem import Problem

    probs = [
        Problem(
            benchmark="lcb_execution",
            problem_id=str(i),
            statement=f"def f(x):\n    return x + {i}\n",
            tests=(),
            task="execution",
            label=label,
            metadata={"input": f"f({i})"},
        )
        for i, label in enumerate(["0", "1", "2"])
    ]
    backend = ScriptedBackend()  # answers seed % 3
    result = execute(spec(method="output_prediction", chunk_size=8), probs, backend, tmp_path)
    for p, rec in zip(probs, result.records, strict=True):
        answers = [str(r.params.seed % 3) for r in backend.calls[0][int(p.problem_id) * 4 :][:4]]
        assert [b.answer for b in rec.branches] == answers
        assert [b.passed for b in rec.branches] == [a == p.label for a in answers]
        majority = max(answers, key=lambda a: (answers.count(a), -answers.index(a)))
        assert rec.extra["maj_at_k"] == (majority == p.label) and rec.label == p.label
    assert result.summary["maj_at_k"] is not None


def test_a_failing_generation_still_stores_the_chunk_being_verified(tmp_path, problems):
    """Chunk 1 is verified while chunk 2 generates; chunk 2 failing must not lose chunk 1."""
    backend = ScriptedBackend(problems)
    inner = backend.respond

    def respond(r):
        if any(p.statement.strip() in r.messages[-1]["content"] for p in problems[2:]):
            raise RuntimeError("backend died")
        return inner(r)

    backend.respond = respond
    with pytest.raises(RuntimeError, match="backend died"):
        execute(spec(), problems, backend, tmp_path)
    (run_dir,) = [p.parent for p in tmp_path.rglob("manifest.json")]
    assert list(read_records(run_dir)) == [p.problem_id for p in problems[:2]]
    again = execute(spec(), problems, ScriptedBackend(problems), tmp_path)
    assert again.new == 2 and again.manifest.status == "complete"
