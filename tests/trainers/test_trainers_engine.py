"""Engine pieces: config layers and errors, the data stream, decontamination, UpSkill rows."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner
from tests_paths import REPO

from cppo_bench.problem import Problem
from cppo_bench.problem import Test as ProblemTest

torch = pytest.importorskip("torch")

from trainers.algorithms.pkpo import PKPOConfig  # noqa: E402
from trainers.api import resolve  # noqa: E402
from trainers.engine.config import ConfigError, build_flat  # noqa: E402
from trainers.engine.data import decontaminated, step_problems, steps_for  # noqa: E402


def test_config_layers_and_one_line_errors(tmp_path) -> None:
    preset = tmp_path / "mine.yaml"
    preset.write_text("n: 16\nlr: 5.0e-7\n")
    engine, algo = resolve("pkpo", config=preset, overrides={"n": 8, "lr": 1e-6}).config
    assert (algo.n, engine.lr, algo.k_opt, engine.kl_beta, engine.clip_eps) == (
        8,
        1e-6,
        4,
        0.01,
        0.2,
    )
    with pytest.raises(ConfigError, match="unknown config key bogus"):
        build_flat(PKPOConfig, {"bogus": 1})
    with pytest.raises(ConfigError, match="config n: expected int"):
        build_flat(PKPOConfig, {"n": "many"})
    with pytest.raises(ConfigError, match="k_opt"):
        build_flat(PKPOConfig, {"n": 2, "k_opt": 4})
    with pytest.raises(ConfigError, match="aggregation"):
        build_flat(PKPOConfig, {"aggregation": "sum"})
    with pytest.raises(ConfigError, match="prompts_per_step"):
        build_flat(PKPOConfig, {"prompts_per_step": 0})
    with pytest.raises(ConfigError, match="lr: must be a finite number"):
        build_flat(PKPOConfig, {"lr": float("inf")})
    with pytest.raises(ConfigError, match="kl_beta: must be a finite number"):
        build_flat(PKPOConfig, {"kl_beta": float("nan")})
    with pytest.raises(ConfigError, match="kl_beta_solver"):
        build_flat(PKPOConfig, {"kl_beta_solver": -0.1})
    # a KL weight on the solver alone still needs the frozen reference; none at all does not
    solver_only, _ = build_flat(PKPOConfig, {"kl_beta": 0.0, "kl_beta_solver": 0.1})
    no_kl, _ = build_flat(PKPOConfig, {"kl_beta": 0.0})
    assert solver_only.uses_reference and not no_kl.uses_reference


def test_study_defaults_are_the_dataclass_defaults() -> None:
    from trainers.algorithms.upskill import UpSkillConfig

    engine, pk = resolve("pkpo", preset="study").config
    assert (
        engine.lr,
        engine.clip_eps,
        engine.kl_beta,
        engine.temperature,
        engine.max_tokens,
        engine.epochs,
        engine.reference_dtype,
    ) == (5e-7, 0.2, 0.01, 0.7, 2048, 30, "bfloat16")
    assert (pk.n, pk.k_opt, pk.estimator) == (16, 4, "sloo_minus_one")
    _, up = resolve("upskill", preset="study").config
    assert isinstance(up, UpSkillConfig)
    assert (up.n_skills, up.completions_per_skill, up.alpha_mi, up.mi_level) == (
        4,
        1,
        5.0,
        "sequence",
    )


def test_cli_bad_key_is_one_line() -> None:
    from cppo_bench.cli import main

    res = CliRunner().invoke(main, ["train", "pkpo", "--set", "bogus=1"])
    assert res.exit_code != 0
    assert "unknown config key bogus" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["train", "upskill", "--set", "mi_level=word"])
    assert res.exit_code != 0 and "mi_level" in res.output


def _problem(uid: str, statement: str) -> Problem:
    return Problem("t", uid, statement, (ProblemTest("", "1\n"),))


def test_data_stream_is_seeded_epoch_permutations() -> None:
    ps = [_problem(f"p{i}", f"s{i}") for i in range(10)]
    epoch0 = [p.problem_id for s in range(5) for p in step_problems(ps, s, 2, seed=3)]
    assert sorted(epoch0) == sorted(p.problem_id for p in ps)  # each once per epoch
    assert epoch0 == [p.problem_id for s in range(5) for p in step_problems(ps, s, 2, seed=3)]
    assert epoch0 != [p.problem_id for s in range(5) for p in step_problems(ps, s, 2, seed=4)]
    assert steps_for(10, 4, 30, 0) == math.ceil(300 / 4) and steps_for(10, 4, 30, 7) == 7


def test_decontamination_removes_eval_problems() -> None:
    from cppo_bench.benchmarks import load_benchmark

    demo = load_benchmark("demo").problems
    train = load_benchmark("demo_train").problems
    assert not {p.statement for p in demo} & {p.statement for p in train}
    leaked = Problem("mine", "copy", demo[3].statement, demo[3].tests)
    ts = decontaminated([*train, leaked], "mix", ["demo"], allow_overlap=False)
    assert len(ts.problems) == len(train) and ts.eval_sets == ["demo"]
    assert ts.removed == [{"uid": "mine/copy", "matches": [demo[3].uid]}]
    kept = decontaminated([*train, leaked], "mix", ["demo"], allow_overlap=True)
    assert len(kept.problems) == len(train) + 1 and kept.removed == ts.removed
    assert ts.ids_hash != kept.ids_hash


def test_demo_train_problems_pass_their_references() -> None:
    from cppo_bench.benchmarks import load_benchmark
    from cppo_bench.verifier import VerifyJob, verify_batch

    ps = load_benchmark("demo_train").problems
    assert len(ps) >= 40 and all(len(p.tests) >= 5 and p.reference_solutions for p in ps)
    results = verify_batch([VerifyJob(p, p.reference_solutions[0]) for p in ps], workers=2)
    assert all(r.passed for r in results)


def test_upskill_rows_enumerate_skills_and_use_sequence_mi() -> None:
    from trainers.algorithms.upskill import UpSkill, UpSkillConfig
    from trainers.engine.algorithm import StepContext
    from trainers.engine.rewards import Scored
    from trainers.engine.rollout import Rollout

    algo = UpSkill(UpSkillConfig())
    p = _problem("x", "say one")
    logp = {0: -1.0, 1: -2.0, 2: -3.0, 3: -4.0}  # per-token log-prob under each skill prompt

    def completion_logprobs(pairs):  # the skill is the prompt's last id
        return [torch.full((len(c),), logp[prompt[-1]]) for prompt, c in pairs]

    ctx = StepContext(
        step=0,
        seed=0,
        prompt=lambda q: (
            {"role": "system", "content": "s"},
            {"role": "user", "content": q.statement},
        ),
        stop=(),
        generate=None,  # type: ignore[arg-type]  # (requests() never generates)
        score=None,  # type: ignore[arg-type]
        completion_logprobs=completion_logprobs,
        encode=lambda req: [7, int(req.meta["skill"])],
    )
    reqs = algo.requests(p, ctx)
    assert [r.meta["skill"] for r in reqs] == [0, 1, 2, 3]
    assert reqs[2].messages is not None
    assert reqs[2].messages[-1]["content"].startswith("<skill_2>\n")
    assert reqs[2].messages[0]["content"] == "s"
    assert len({r.seed for r in reqs}) == 4
    scored = [
        Scored(Rollout(r, (7, z), (5, 6), "x", "stop"), float(z == 0), z == 0, "")
        for z, r in enumerate(reqs)
    ]
    rows = algo.rows(scored, ctx)
    seq = [2 * logp[z] for z in range(4)]  # two completion tokens
    lme = math.log(sum(math.exp(s) for s in seq) / 4)
    assert rows.values["r_mi"] == pytest.approx([s - lme for s in seq], rel=1e-5)
    combined = [float(z == 0) + 5.0 * (seq[z] - lme) for z in range(4)]
    assert rows.values["combined_reward"] == pytest.approx(combined, rel=1e-5)
    assert len(rows.rows) == 4


def _skill_context() -> Any:
    """A StepContext for UpSkill's rows: the skill is the prompt's last id, and skill z scores
    every completion token at -(z + 1)."""
    from trainers.engine.algorithm import StepContext

    return StepContext(
        step=0,
        seed=0,
        prompt=lambda q: ({"role": "user", "content": q.statement},),
        stop=(),
        generate=None,  # type: ignore[arg-type]  # (requests() never generates)
        score=None,  # type: ignore[arg-type]
        completion_logprobs=lambda pairs: [
            torch.full((len(c),), -(prompt[-1] + 1.0)) for prompt, c in pairs
        ],
        encode=lambda req: [7, int(req.meta["skill"])],
    )


def test_upskill_mi_warmup_trains_on_correctness_alone_until_its_step() -> None:
    # mi_warmup_steps = 2: steps 0 and 1 (0-based) reward correctness only, so their advantages
    # are GRPO's on the correctness alone; step 2 adds alpha_mi * r_MI
    import dataclasses

    import numpy as np

    from trainers.algorithms.upskill import UpSkill, UpSkillConfig
    from trainers.engine.rewards import Scored
    from trainers.engine.rollout import Rollout

    algo = UpSkill(UpSkillConfig(mi_warmup_steps=2))
    ctx = _skill_context()
    reqs = algo.requests(_problem("x", "say one"), ctx)
    correct = [1.0, 0.0, 0.0, 1.0]
    scored = [
        Scored(Rollout(r, (7, z), (5,), "x", "stop"), correct[z], bool(correct[z]), "")
        for z, r in enumerate(reqs)
    ]
    for step in (0, 1):
        rows = algo.rows(scored, dataclasses.replace(ctx, step=step))
        assert rows.values["combined_reward"] == correct and rows.values["alpha_mi"] == [0.0]
        want = (np.array(correct) - np.mean(correct)) / np.std(correct, ddof=1)
        np.testing.assert_allclose([r.segments[1].advantage for r in rows.rows], want, atol=1e-5)
    rows = algo.rows(scored, dataclasses.replace(ctx, step=2))
    assert rows.values["alpha_mi"] == [5.0]
    assert rows.values["combined_reward"] != correct
    mi = rows.values["r_mi"]
    assert rows.values["combined_reward"] == pytest.approx(
        [c + 5.0 * m for c, m in zip(correct, mi, strict=True)], rel=1e-5
    )
    with pytest.raises(ValueError, match="mi_warmup_steps"):
        UpSkillConfig(mi_warmup_steps=-1)


def test_upskill_scale_rewards_none_centres_without_dividing_by_the_std() -> None:
    # Dr. GRPO / TRL scale_rewards="none": A = r - mean over the prompt's group. An all-fail group
    # then keeps MI at alpha_mi's weight; "group" (default) divides by the std, which in such a
    # group is MI's alone, so the advantages come out at unit scale whatever alpha_mi is.
    import numpy as np

    from trainers.algorithms.upskill import UpSkill, UpSkillConfig
    from trainers.engine.rewards import Scored
    from trainers.engine.rollout import Rollout

    ctx = _skill_context()
    advantages = {}
    for scale in ("group", "none"):
        algo = UpSkill(UpSkillConfig(alpha_mi=0.01, scale_rewards=scale))
        reqs = algo.requests(_problem("x", "say one"), ctx)
        scored = [
            Scored(Rollout(r, (7, z), (5,), "x", "stop"), 0.0, False, "")
            for z, r in enumerate(reqs)
        ]
        rows = algo.rows(scored, ctx)
        combined = np.array(rows.values["combined_reward"])
        advantages[scale] = np.array([r.segments[1].advantage for r in rows.rows])
    np.testing.assert_allclose(advantages["none"], combined - combined.mean(), atol=1e-6)
    np.testing.assert_allclose(
        advantages["group"], (combined - combined.mean()) / np.std(combined, ddof=1), atol=1e-4
    )
    assert np.abs(advantages["none"]).max() < 0.05 < np.abs(advantages["group"]).max()
    with pytest.raises(ValueError, match="scale_rewards"):
        UpSkillConfig(scale_rewards="batch")


def test_upskill_mi_cap_and_skill_groups_are_the_released_toys() -> None:
    # mi_cap: r = correct + clamp(alpha r_MI, +-cap); group_by skill: each (prompt, skill)'s two
    # rollouts centred on their own mean (numpy, from the definition)
    import numpy as np

    from trainers.algorithms.upskill import UpSkill, UpSkillConfig
    from trainers.engine.rewards import Scored
    from trainers.engine.rollout import Rollout

    ctx = _skill_context()
    cfg = UpSkillConfig(mi_cap=1.0, group_by="skill", completions_per_skill=2, scale_rewards="none")
    algo = UpSkill(cfg)
    reqs = algo.requests(_problem("x", "say one"), ctx)
    correct = [float(i % 3 == 0) for i in range(len(reqs))]
    scored = [
        Scored(Rollout(r, (7, r.meta["skill"]), (5,), "x", "stop"), c, bool(c), "")
        for r, c in zip(reqs, correct, strict=True)
    ]
    rows = algo.rows(scored, ctx)
    mi = np.array(rows.values["r_mi"])
    assert np.abs(5.0 * mi).max() > 1.0  # the cap binds here
    combined = np.array(correct) + np.clip(5.0 * mi, -1.0, 1.0)
    np.testing.assert_allclose(rows.values["combined_reward"], combined, rtol=1e-5)
    skill = np.array([r.meta["skill"] for r in reqs])
    want = combined - np.array([combined[skill == z].mean() for z in skill])
    np.testing.assert_allclose([r.segments[1].advantage for r in rows.rows], want, atol=1e-5)
    for bad in ({"mi_cap": 0.0}, {"mi_cap": float("nan")}, {"group_by": "batch"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            UpSkillConfig(**bad)
    with pytest.raises(ValueError, match="completions_per_skill >= 2"):
        UpSkillConfig(group_by="skill")


def test_harness_does_not_import_trainers() -> None:
    code = (
        "import sys, cppo_bench.cli, cppo_bench.report.build, cppo_bench.report.training_dynamics;"
        "from cppo_bench.cli import COMMANDS, main, plugin_commands; assert 'train' not in COMMANDS;"
        "assert plugin_commands()['train'] == 'trainers.cli:train';"
        "assert 'train' in main.list_commands(None);"
        "assert not [m for m in sys.modules if m.startswith('trainers')], 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_upskill_prompts_are_the_skills_methods() -> None:
    from cppo_bench.benchmarks import load_benchmark
    from cppo_bench.methods.direct import render_messages
    from cppo_bench.methods.skills import SkillsOptions
    from cppo_bench.methods.skills import skill_messages as eval_messages
    from trainers.algorithms.upskill import UpSkillConfig, skill_messages

    p = load_benchmark("demo").problems[0]
    cfg, opts = UpSkillConfig(), SkillsOptions()
    for z in range(4):
        prefix = cfg.prefix_format.format(i=z)
        assert prefix == opts.prefix(z)
        assert skill_messages(render_messages(p), prefix) == eval_messages(p, prefix)


def test_training_rewards_run_every_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """The early stop is one bit about the hidden answers per program: the default training
    reward runs every test; the early-stopping judge is a named option."""
    from trainers.engine import rewards
    from trainers.engine.rollout import Rollout, RolloutRequest

    seen: list[bool] = []

    def fake_verify(jobs, workers=None, all_tests=False):  # noqa: ANN001, ANN202
        seen.append(all_tests)
        return [
            type("V", (), {"passed": True, "verdict": "AC", "tests_passed": 1, "tests_total": 1})()
            for _ in jobs
        ]

    monkeypatch.setattr(rewards, "verify_batch", fake_verify)
    req = RolloutRequest(_problem("p", "s"), 0, messages=())
    rollout = Rollout(req, (), (1,), "print(1)", "stop")
    assert rewards.REWARDS.get("pass")(1)([rollout])[0].reward == 1.0
    rewards.REWARDS.get("pass_early_stop")(1)([rollout])
    rewards.REWARDS.get("tests_fraction")(1)([rollout])
    assert seen == [True, True, True]  # issue 36: no reward stops at a first failure


@pytest.mark.parametrize("name", ["pkpo", "passk_rl", "upskill", "cppo"])
def test_each_algorithm_generates_the_rollouts_it_declares(name: str) -> None:
    # rollouts_per_prompt is what the engine checks against max_rollouts_per_step before it
    # builds anything; it must be what collect() really asks the rollout engine for
    from trainers.algorithms import ALGORITHMS
    from trainers.engine.rewards import Scored
    from trainers.engine.rollout import Rollout

    assert set(ALGORITHMS.names()) == {"pkpo", "passk_rl", "upskill", "cppo"}  # all covered
    algo = ALGORITHMS.get(name)(ALGORITHMS.get(name).Config())
    if name == "cppo":
        algo.gate = lambda problems, tuples: torch.ones(len(tuples))  # type: ignore[attr-defined]
    asked: list[int] = []

    def generate(reqs):  # a plan text for the planner, a program for anything else
        asked.append(len(reqs))
        text = "A: greedy\nB: dp\nC: graph\nD: math" if name == "cppo" else "print(1)"
        return [Rollout(r, (1,), (2,), text, "stop") for r in reqs]

    ctx = dataclasses.replace(
        _skill_context(),
        generate=generate,
        score=lambda rollouts: [Scored(r, 0.0, False, "") for r in rollouts],
    )
    problems = [_problem(f"p{i}", "say one") for i in range(3)]
    algo.collect(problems, ctx)
    assert sum(asked) == 3 * algo.rollouts_per_prompt() > 0


def test_a_rollout_count_past_the_cap_is_one_line_before_anything_is_built(tmp_path) -> None:
    from trainers.algorithms.pkpo import PKPO
    from trainers.cppo_pipeline.config import CPPOPipelineConfig
    from trainers.engine.data import TrainingSet
    from trainers.engine.layers import build
    from trainers.engine.loop import RunSpec, train

    engine, algo = build_flat(PKPOConfig, {"n": 100_000_000})
    spec = RunSpec(PKPO(algo), engine, TrainingSet([_problem("p", "x")], "t"), tmp_path / "run")
    with pytest.raises(ConfigError, match=r"x 100000000 a prompt \(pkpo\) make 800,000,000"):
        train(spec)  # no model named: the check comes before the embedded model is loaded
    assert not (tmp_path / "run").exists()
    for key, value in [
        ("m", 100_000),
        ("rm", {"samples_per_problem": 10**8}),
        ("sft", {"samples": 10**6}),
        ("engine", {"prompts_per_step": 10**5}),
    ]:
        with pytest.raises(ConfigError, match="max_rollouts_per_step 65,536"):
            build(CPPOPipelineConfig, {key: value})
    build(CPPOPipelineConfig, {"engine": {"max_rollouts_per_step": 10**9}, "m": 100_000})
