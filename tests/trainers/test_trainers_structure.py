"""The training half's shape (issue "One training system"): imports run one way, each study
default is written once, one KEY=VALUE parser, one front door with --print-config."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from tests.helpers.import_graph import graph, imports, module_name
from tests.helpers.tests_paths import REPO

TRAINERS = REPO / "trainers"
# modules that are clients of the engine (algorithms, CPPO stages, the front door)
UPPER = ("trainers.cppo_pipeline", "trainers.algorithms.cppo", "trainers.algorithms.pkpo", "trainers.algorithms.passk_rl",
         "trainers.algorithms.upskill", "trainers.cli", "trainers.api", "trainers.recipes")  # fmt: skip


def _imports(path: Path) -> set[str]:
    """Every module a file imports (tests/helpers/import_graph.py says what counts: lazy
    imports, names taken from ancestor packages, modules named by a string)."""
    return imports(path, module_name(path, REPO), set())


def _graph(package: Path) -> dict[str, set[str]]:
    return graph(package, REPO)


def _is(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_engine_and_core_never_import_a_stage_or_an_algorithm() -> None:
    graph = _graph(TRAINERS)
    bad = [
        f"{m} -> {i}"
        for m, deps in graph.items()
        if _is(m, ("trainers.engine", "trainers.core"))
        for i in deps
        if _is(i, UPPER)
    ]
    bad += [
        f"{m} -> {i}"
        for m, deps in graph.items()
        if _is(m, ("trainers.core",))
        for i in deps
        if _is(i, ("trainers.engine",))
    ]
    assert not bad, bad


def test_no_import_cycle_in_trainers() -> None:
    graph = _graph(TRAINERS)
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1 and not cycle:
                cycle.extend(path[path.index(d) :] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycle, " -> ".join(cycle)


def test_the_harness_never_imports_trainers() -> None:
    # (by statement or by string: the CLI once registered `train` as "trainers.cli:train",
    # closing a loop; the trainers now plug in through an entry point, pyproject.toml)
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / "cppo_bench").rglob("*.py")
        if any(_is(i, ("trainers",)) for i in imports(p, module_name(p, REPO), {"trainers"}))
    ]
    assert not offenders


@pytest.mark.parametrize(
    "code",
    ["import trainers.cli\n", "def f():\n    from trainers import api\n",
     "COMMANDS = {'train': 'trainers.cli:train'}\n", "import importlib\nimportlib.import_module('trainers')\n"],
)  # fmt: skip
def test_the_harness_check_sees_every_way_to_the_trainers(tmp_path: Path, code: str) -> None:
    (tmp_path / "cppo_bench").mkdir()
    path = tmp_path / "cppo_bench" / "cli.py"
    path.write_text(code, encoding="utf-8")
    found = imports(path, "cppo_bench.cli", {"trainers"})
    assert any(_is(i, ("trainers",)) for i in found), (code, found)


def _preset_cases() -> list[tuple[str, Path]]:
    from trainers.engine.layers import CONFIG_DIR
    from trainers.recipes import RECIPES

    cases = [
        (name, path)
        for name in RECIPES.names()
        for path in RECIPES.get(name).presets("demo", "demo_train")
    ]
    # the GPU study configs a user passes with --config (docs/gpu.md, the preflight's tests)
    cases += [("cppo", path) for path in CONFIG_DIR.glob("cppo.study-*.yaml")]
    # the strategies task's presets (docs/learning.md): strategies.ALGO[.VARIANT].yaml
    cases += [(path.name.split(".")[1], path) for path in CONFIG_DIR.glob("strategies.*.yaml")]
    return sorted(set(cases))


def test_every_preset_file_is_used_and_holds_only_real_differences() -> None:
    from trainers.algorithms import ALGORITHMS
    from trainers.cppo_pipeline.config import CPPOPipelineConfig
    from trainers.engine.config import TrainConfig
    from trainers.engine.layers import CONFIG_DIR, build, read_preset, repeated_defaults

    cases = _preset_cases()
    shipped = {p.name for p in CONFIG_DIR.glob("*.yaml")}
    assert shipped == {p.name for _, p in cases}  # no preset that nothing reads
    for algo, path in cases:
        layer = read_preset(path)
        if algo == "cppo":
            build(CPPOPipelineConfig, layer)  # every key is a field (else ConfigError)
            repeated = repeated_defaults(CPPOPipelineConfig, layer)
        else:
            algo_cls = ALGORITHMS.get(algo).Config
            own = {
                k: v
                for k, v in layer.items()
                if k in {f.name for f in dataclasses.fields(algo_cls)}
            }
            rest = {k: v for k, v in layer.items() if k not in own}
            build(algo_cls, own)
            build(TrainConfig, rest)
            repeated = repeated_defaults(algo_cls, own) + repeated_defaults(TrainConfig, rest)
        assert not repeated, f"{path.name} repeats the dataclass default of {repeated}"


def test_a_preset_repeating_a_default_is_caught(tmp_path: Path) -> None:
    from trainers.cppo_pipeline.config import CPPOPipelineConfig
    from trainers.engine.layers import repeated_defaults

    assert repeated_defaults(CPPOPipelineConfig, {"tau": 0.17, "rm": {"epochs": 2}}) == [
        "tau",
        "rm.epochs",
    ]
    assert repeated_defaults(CPPOPipelineConfig, {"tau": 0.3, "rm": {"epochs": 3}}) == []


def _print_config(*args: str) -> dict:
    res = CliRunner().invoke(main, ["train", *args, "--print-config"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_print_config_shows_the_studys_defaults() -> None:
    from trainers.cppo_pipeline.config import CPPOPipelineConfig
    from trainers.engine.config import TrainConfig

    pk = _print_config("pkpo", "--preset", "study")
    assert pk["preset"] == "study"
    assert (pk["config"]["n"], pk["config"]["k_opt"], pk["config"]["lr"]) == (16, 4, 5e-7)
    assert pk["config"]["aggregation"] == TrainConfig().aggregation == "sequence-mean"
    cp = _print_config("cppo", "--preset", "study")["config"]
    assert (cp["k"], cp["m"], cp["tau"]) == (4, 8, 0.17)
    assert cp["rm"]["gpu_model"] == CPPOPipelineConfig().rm.gpu_model
    assert cp["engine"]["temperature"] == 0.7
    demo = _print_config("cppo")  # no --model/--config: the CPU demo preset
    assert demo["preset"] == "demo" and demo["config"]["m"] == 2


def test_one_key_value_parser_for_run_and_train() -> None:
    from cppo_bench.util.keyvals import KeyValueError, nest, parse_pairs

    assert parse_pairs(["a=yes", "b=2025-02-01", "c=3", "d=null", "e=[1,2]"]) == {
        "a": "yes",  # no YAML coercion
        "b": "2025-02-01",
        "c": 3,
        "d": None,
        "e": [1, 2],
    }
    with pytest.raises(KeyValueError, match="given twice"):
        parse_pairs(["a=1", "a=2"])
    with pytest.raises(KeyValueError, match="finite"):
        parse_pairs(["lr=NaN"])
    with pytest.raises(KeyValueError, match="KEY=VALUE"):
        parse_pairs(["rm.epochs=3"])  # dotted keys only where the caller allows them
    assert nest(parse_pairs(["rm.epochs=3", "m=4"], dotted=True)) == {"rm": {"epochs": 3}, "m": 4}
    # the same rules through both commands
    res = CliRunner().invoke(main, ["train", "pkpo", "--set", "n=8", "--set", "n=9"])
    assert res.exit_code != 0 and "n given twice" in res.output
    res = CliRunner().invoke(main, ["data", "show", "--bench", "demo", "-o", "a=1", "-o", "a=2"])
    assert res.exit_code != 0 and "a given twice" in res.output
    cp = _print_config("cppo", "--set", "rm.epochs=3", "--set", "tau=null", "--set", "m=4")
    assert (cp["config"]["rm"]["epochs"], cp["config"]["tau"], cp["config"]["m"]) == (3, None, 4)


@pytest.mark.parametrize(
    "sets, message",
    [
        (("lr=inf",), "lr: must be a finite number"),
        (("kl_beta=NaN",), "not a finite number"),
        (("temperature=0",), "temperature"),
        (("n=yes",), "config n: expected int"),
        (("bogus=1",), "unknown config key bogus"),
    ],
)
def test_bad_values_are_one_line(sets: tuple[str, ...], message: str) -> None:
    args = ["train", "pkpo", "--print-config"]
    for s in sets:
        args += ["--set", s]
    res = CliRunner().invoke(main, args)
    assert res.exit_code != 0 and message in res.output, res.output
    errors = [line for line in res.output.splitlines() if "Error" in line]
    assert "Traceback" not in res.output and len(errors) == 1, res.output


def test_config_files_are_bounded(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    lines += [f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]"
              for p, c in zip("abcdefgh", "bcdefghi", strict=True)]  # fmt: skip
    bomb.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    res = CliRunner().invoke(main, ["train", "pkpo", "--config", str(bomb), "--print-config"])
    assert res.exit_code != 0 and "aliases (*name) are not accepted" in res.output
    assert time.monotonic() - started < 10
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * (2 << 20))
    res = CliRunner().invoke(main, ["train", "pkpo", "--config", str(big), "--print-config"])
    assert res.exit_code != 0 and "larger than" in res.output
    tagged = tmp_path / "tag.yaml"
    tagged.write_text("n: !!python/object/apply:os.system ['echo pwned']\n")
    res = CliRunner().invoke(main, ["train", "pkpo", "--config", str(tagged), "--print-config"])
    assert res.exit_code != 0 and "pwned" not in res.output and "Traceback" not in res.output


def test_cppo_only_options_are_refused_for_other_algorithms() -> None:
    for flag in (["--stages", "sft"], ["--judge", "rules"], ["--rm", "ngram"]):
        res = CliRunner().invoke(main, ["train", "pkpo", *flag, "--print-config"])
        assert res.exit_code != 0 and "for cppo only" in res.output, flag
    res = CliRunner().invoke(main, ["train", "cppo", "--stages", "sft,nope", "--print-config"])
    assert res.exit_code != 0 and "unknown stage" in res.output


def _train_cli(*args: str) -> subprocess.CompletedProcess[str]:
    from tests.helpers.tests_paths import toy_env

    return subprocess.run(
        [sys.executable, "-m", "cppo_bench", "train", *args],
        cwd=REPO,
        env=toy_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_cppo_takes_the_common_options_stages_seed_and_resume(tmp_path: Path) -> None:
    """`cppo-bench train cppo --stages sft,rm --seed 1 --resume` works like the others: a
    second run without --resume is refused, with it the complete stage is skipped."""
    from tests.helpers.train_helpers import tiny_model_dir

    model = tiny_model_dir(tmp_path / "tiny")
    preset = tmp_path / "tiny.yaml"
    preset.write_text(
        "k: 2\nm: 2\nplanner_max_tokens: 8\n"
        "problem_ids: [double-it, square-it, difference, product-two, max-of-three, absolute]\n"
        "sft: {candidate_max_tokens: 4, n_candidates: 2, epochs: 1, "
        "seed_candidates: cppo.demo_seed.jsonl}\n"
        "rm: {kind: ngram, samples_per_problem: 1, epochs: 3, lr: 0.01, val_fraction: 0.34}\n"
    )
    out = tmp_path / "pipe"
    common = ["cppo", "--model", str(model), "--config", str(preset), "--judge", "rules",
              "--out", str(out), "--seed", "1", "--quiet"]  # fmt: skip
    first = _train_cli(*common, "--stages", "sft")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "training set demo_train" in first.stderr and "read 50 records" in first.stderr
    sft = json.loads((out / "sft" / "train_manifest.json").read_text())
    assert sft["status"] == "complete" and sft["stage_config"]["seed"] == 1
    assert (out / "sft" / "planner" / "artifact.json").is_file()
    assert sft["outputs"]["planner"] == "sft/planner"  # relative to the run folder
    again = _train_cli(*common, "--stages", "sft,rm")
    assert again.returncode == 1 and "pass --resume" in again.stderr
    resumed = _train_cli(*common, "--stages", "sft,rm", "--resume")
    # the tiny RM may be refused by the acceptance rule: a clean stop (exit 3) naming it
    assert resumed.returncode in (0, 3), resumed.stderr[-3000:]
    assert "[sft] complete, skipped" in resumed.stderr and "[rm] running" in resumed.stderr
    rm = json.loads((out / "rm" / "train_manifest.json").read_text())
    assert rm["status"] in ("complete", "stopped") and "sft/planner" in rm["consumed"]
    assert (rm["status"] == "stopped") == (resumed.returncode == 3)
    assert "Traceback" not in resumed.stderr


_YAMLISH = [b"n: ", b"rm:\n  epochs: ", b"- ", b"&a ", b"*a", b"!!python/name:os.system ", b"{", b"}",
            b"[", b"]", b": ", b"\n", b"1e999", b".nan", b"-.inf", b"yes", b"~", b"\xff\xfe", b"'",
            b'"', b"%YAML 1.1\n", b"--- ", b"engine: {lr: ", b"problem_ids: [", b"\t", b"? "]  # fmt: skip


def test_config_reader_fuzz(tmp_path: Path) -> None:
    """Random and YAML-shaped bytes as --config: a config or one ConfigError, never anything
    else (no traceback, no hang, nothing executed)."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    from trainers.api import resolve
    from trainers.engine.layers import ConfigError

    path = tmp_path / "fuzz.yaml"
    pieces = st.lists(st.one_of(st.sampled_from(_YAMLISH), st.binary(max_size=12)), max_size=30)

    @hypothesis.settings(max_examples=150, deadline=None, database=None)
    @hypothesis.given(pieces, st.sampled_from(["pkpo", "cppo", "upskill"]))
    def check(parts: list[bytes], algo: str) -> None:
        path.write_bytes(b"".join(parts))
        try:
            resolve(algo, config=path)
        except ConfigError as exc:
            assert "\n" not in str(exc).strip()

    check()


def test_reward_tests_flag_sets_the_reward_test_set(tmp_path: Path) -> None:
    """`--tests DIR --reward-tests augmented` (issue "Stronger tests") is the config key
    reward_tests, in the engine section for cppo; each flag alone is a one-line error."""
    pk = _print_config("pkpo", "--tests", str(tmp_path), "--reward-tests", "augmented")
    assert pk["config"]["reward_tests"] == str(tmp_path)
    cp = _print_config("cppo", "--tests", str(tmp_path), "--reward-tests", "augmented")
    assert cp["config"]["engine"]["reward_tests"] == str(tmp_path)
    assert _print_config("pkpo", "--reward-tests", "original")["config"]["reward_tests"] == ""
    for args in (["--reward-tests", "augmented"], ["--tests", str(tmp_path)]):
        res = CliRunner().invoke(main, ["train", "pkpo", *args, "--print-config"])
        assert res.exit_code == 2 and "--reward-tests augmented" in res.output


# -- one door from the trainers to the harness (issue 48 item 3) ----------------------------

FACADE = TRAINERS / "harness.py"
HARNESS_NAME = re.compile(r"cppo_bench(\.\w+)*(:\w*)?")


def _reaches_harness(path: Path) -> list[str]:
    """Each way `path` reaches cppo_bench: an import (at the top, inside a function, or for
    the type checker only) or a module named in a string (importlib, a registration)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if HARNESS_NAME.fullmatch(node.value) else []
        else:
            continue
        found += [f"{node.lineno}: {n}" for n in names if _is(n, ("cppo_bench",))]
    return found


def test_the_trainers_reach_the_harness_through_one_door() -> None:
    offenders = [
        f"{p.relative_to(REPO)}:{line}"
        for p in sorted(TRAINERS.rglob("*.py"))
        if p != FACADE
        for line in _reaches_harness(p)
    ]
    assert not offenders, "import it through trainers.harness:\n" + "\n".join(offenders)


def test_the_door_walk_sees_each_way_in(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import cppo_bench\nfrom cppo_bench.errors import DataError\n"
        "def f():\n    from cppo_bench import verifier\n"
        "if TYPE_CHECKING:\n    import cppo_bench.store.runs as runs\n"
        "importlib.import_module('cppo_bench.verifier')\nTARGET = 'cppo_bench.cli.run:run'\n"
        "fine = 'cppo_bench is a name'\nfrom trainers.harness import DataError\n"
    )
    assert len(_reaches_harness(module)) == 6


def _door_table() -> tuple[dict[str, str], dict[str, str]]:
    """The facade's HARNESS table, and the same names as its TYPE_CHECKING block spells them."""
    from trainers import harness

    typed: dict[str, str] = {}
    for node in ast.walk(ast.parse(FACADE.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module
                for a in stmt.names:
                    sub = f"{stmt.module}.{a.name}"
                    is_module = (
                        importlib.util.find_spec(sub) is not None if _pkg(stmt.module) else False
                    )
                    typed[a.asname or a.name] = (
                        f"{sub}:" if is_module else f"{stmt.module}:{a.name}"
                    )
    return dict(harness.HARNESS), typed


def _pkg(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


def test_the_door_names_what_the_trainers_use_and_nothing_else() -> None:
    """Every name of the facade is real (it imports), spelled the same for the type checker,
    and used by some trainers/ module; every name a trainers/ module takes from it is listed."""
    table, typed = _door_table()
    assert typed == table
    used: set[str] = set()
    for path in TRAINERS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "trainers.harness":
                used |= {a.name for a in node.names}
    assert used <= set(table), sorted(used - set(table))
    assert set(table) <= used, f"names no trainers/ module uses: {sorted(set(table) - used)}"
    from trainers import harness

    for name in table:
        assert getattr(harness, name) is not None
    with pytest.raises(AttributeError, match="add it to HARNESS"):
        harness.__getattr__("verify_everything")


def test_the_harness_names_no_trainers_module_even_in_a_string() -> None:
    """The harness CLI finds the trainers' `train` as an entry point (pyproject.toml); a
    registration by string ("trainers.cli:train") is an import the layer tests cannot see."""
    named = re.compile(r"trainers(\.\w+)+(:\w*)?")
    offenders = [
        f"{p.relative_to(REPO)}:{node.lineno}: {node.value}"
        for p in sorted((REPO / "cppo_bench").rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and named.fullmatch(node.value)
    ]  # fmt: skip
    assert not offenders, offenders
